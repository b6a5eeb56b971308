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
* PostgreSQL and MariaDB/MySQL: a database named ``ipart_test_<random>``
  created through an administrative URL, taken from the environment
  variables ``IRONIC_PARTITION_TEST_PG_URL`` and
  ``IRONIC_PARTITION_TEST_MYSQL_URL`` and defaulting to the local servers
  (``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres`` and
  ``mysql+pymysql://root@127.0.0.1:3306/``). The user needs the right to
  create and drop databases.

A server that cannot be reached skips its scenario, unless
``IRONIC_PARTITION_TEST_REQUIRE_DB=1``, which makes it fail instead (CI).
"""

import os
import uuid

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base as oslotest_base
from sqlalchemy.engine import url as sa_url
import testscenarios

from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.testing import db as harness_db

SCENARIOS = [
    ('sqlite', {'backend': 'sqlite'}),
    ('postgresql', {'backend': 'postgresql'}),
    ('mysql', {'backend': 'mysql'}),
]


class DatabaseFixture(fixtures.Fixture):
    """A fresh, empty database, dropped at clean-up.

    :param backend: ``sqlite``, ``postgresql`` or ``mysql``.
    """

    def __init__(self, backend):
        super().__init__()
        self.backend = backend
        self.url = None
        self.name = None

    def _setUp(self):
        if self.backend == 'sqlite':
            tmp = self.useFixture(fixtures.TempDir())
            self.name = os.path.join(tmp.path, 'membership.sqlite')
            self.url = 'sqlite:///%s' % self.name
            return
        self.name = 'ipart_test_%s' % uuid.uuid4().hex[:12]
        harness_db.create_database(self.backend, self.name)
        self.addCleanup(harness_db.drop_database, self.backend, self.name)
        url = sa_url.make_url(harness_db.admin_url(self.backend)).set(
            database=self.name)
        self.url = url.render_as_string(hide_password=False)


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
                       oslotest_base.BaseTestCase):
    """A test case run once per database backend, each with its own DB."""

    scenarios = SCENARIOS

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, self.backend)
        self.db = self.useFixture(DatabaseFixture(self.backend))
        self.url = self.db.url
