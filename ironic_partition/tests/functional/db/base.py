# Copyright 2026 The ironic-partition Authors.
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Run one test suite on SQLite, PostgreSQL and MariaDB/MySQL.

Every test gets a database of its own, created before and dropped after
it:

* SQLite: a file in a temporary directory;
* PostgreSQL and MariaDB/MySQL: an opportunistic database provisioned by
  oslo.db's :mod:`~oslo_db.sqlalchemy.test_fixtures`, on a server that
  answers as the conventional user ``openstack_citest`` (password
  ``openstack_citest``, created by ``tools/test-setup.sh``) on
  ``localhost``, or at the URLs of ``OS_TEST_DBAPI_ADMIN_CONNECTION``
  (``;``-separated).

A server that cannot be reached skips its scenario, unless
``IRONIC_PARTITION_TEST_REQUIRE_DB=1`` (tox's functional env, CI), which
makes it fail instead.
"""

import os
import uuid

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import provision
from oslo_db.sqlalchemy import test_fixtures
from oslotest import base as oslotest_base
import testscenarios

from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.testing.services import db as harness_db

SCENARIOS = [
    ('sqlite', {'backend': 'sqlite', 'FIXTURE': None}),
    ('postgresql', {'backend': 'postgresql',
                    'FIXTURE': test_fixtures.PostgresqlOpportunisticFixture}),
    ('mysql', {'backend': 'mysql',
               'FIXTURE': test_fixtures.MySQLOpportunisticFixture}),
]


def make_conf(test, **overrides):
    """Build a ConfigOpts with our options, for one test.

    :param test: the test case (for clean-up).
    :param overrides: ``[ironic_partition]`` option values.
    :returns: the ``ConfigOpts``.
    """
    conf = cfg.ConfigOpts()
    fixture = test.useFixture(config_fixture.Config(conf))
    conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
    database_conf.register_opts(conf)
    conf([], project='ironic-partition-tests')
    for name, value in overrides.items():
        fixture.config(group=partition_conf.GROUP, **{name: value})
    return conf


class DatabaseTestCase(testscenarios.WithScenarios,
                       test_fixtures.OpportunisticDBTestMixin,
                       oslotest_base.BaseTestCase):
    """A test case run once per database backend, each with its own DB.

    :attr:`url` is the SQLAlchemy URL of the test's database, password
    included.
    """

    scenarios = SCENARIOS

    SKIP_ON_UNAVAILABLE_DB = os.environ.get(harness_db.REQUIRE_DB_ENV) != '1'

    def generate_fixtures(self):
        # NOTE(ironic-partition): oslo.db provisions SQLite in memory, which
        # only the engine that made it sees; the services and the claims
        # open several connections, so SQLite gets a file instead.
        if self.FIXTURE is None:
            return []
        return super().generate_fixtures()

    def setUp(self):
        super().setUp()
        if self.FIXTURE is None:
            tmp = self.useFixture(fixtures.TempDir())
            self.url = 'sqlite:///%s' % os.path.join(tmp.path,
                                                     'membership.sqlite')
        else:
            # NOTE(ironic-partition): the fixture puts the provisioned
            # database behind oslo.db's global transaction context for
            # the test; our code opens it by its URL.
            self.url = enginefacade.writer.get_engine().url.render_as_string(
                hide_password=False)

    def other_database_url(self):
        """Create another empty database on the same backend, for one test.

        It is dropped at clean-up.

        :returns: its URL, password included.
        """
        if self.FIXTURE is None:
            tmp = self.useFixture(fixtures.TempDir())
            return 'sqlite:///%s' % os.path.join(tmp.path, 'other.sqlite')
        backend = provision.Backend.backend_for_database_type(self.backend)
        ident = 'ipart_%s' % uuid.uuid4().hex[:12]
        backend.create_named_database(ident)
        self.addCleanup(backend.drop_named_database, ident)
        return backend.provisioned_database_url(ident).render_as_string(
            hide_password=False)
