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

"""One store, the schema check and the failure bookkeeping."""

import os
from unittest import mock

import fixtures
from oslo_config import cfg
from oslotest import base as test_base

from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import api as db_api
from ironic_partition.db import health
from ironic_partition.db import migration
from ironic_partition.db import store
from ironic_partition import exception
from ironic_partition import settings as settings_mod


class TestStore(test_base.BaseTestCase):

    def test_open(self):
        conf = cfg.ConfigOpts()
        conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
        conf([])
        tmp = self.useFixture(fixtures.TempDir()).path
        conf.set_override('state_path', tmp, 'ironic_partition')
        s = store.Store.open(
            settings_mod.for_tests('CN1', conf=conf, service_down_time=60),
            'agent', takeover=True)
        self.addCleanup(s.dispose)
        self.assertIn(database_conf.GROUP, conf)
        self.assertEqual(('cn1', 'agent', 60, True),
                         (s.identity.host, s.identity.role,
                          s.identity.service_down_time,
                          s.identity.takeover))
        self.assertIs(s.db, s.identity.db)
        self.assertIs(s.db.services, s.services)
        self.assertIs(s.db.claims, s.claims)
        self.assertEqual('sqlite', s.dialect)
        self.assertEqual(migration.head_revision(), s.ensure_schema())
        self.assertTrue(os.path.exists(os.path.join(
            tmp, 'ironic_partition.sqlite')))

    def test_given_connection(self):
        db = db_api.Connection('postgresql+psycopg2://u:pw@db/ip')
        s = store.Store.open(settings_mod.for_tests('h'), 'agent',
                             connection=db)
        self.assertIs(db, s.db)
        self.assertEqual('postgresql+psycopg2://u:***@db/ip',
                         s.masked_connection)


class TestEnsureSchema(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.db = db_api.Connection('postgresql+psycopg2://u:pw@db/ip')

    def _at(self, revision):
        self.useFixture(fixtures.MockPatchObject(
            self.db, 'schema_revision', return_value=revision))

    def test_current(self):
        self._at(migration.head_revision())
        self.assertEqual(migration.head_revision(), self.db.ensure_schema())

    def test_server_database_is_never_upgraded_here(self):
        self._at(None)
        with mock.patch.object(self.db, 'upgrade', autospec=True) as upgrade:
            e = self.assertRaises(exception.DatabaseNotMigrated,
                                  self.db.ensure_schema)
        upgrade.assert_not_called()
        self.assertIn('u:***@db/ip', str(e))
        self.assertNotIn('pw', str(e))

    def test_too_new(self):
        self._at('9999_future')
        self.useFixture(fixtures.MockPatchObject(
            migration, 'read_contract', return_value=None))
        self.assertRaises(exception.DatabaseTooNew, self.db.ensure_schema)

    def test_sqlite_is_upgraded_unless_read_only(self):
        path = self.useFixture(fixtures.TempDir()).join('m.sqlite')
        db = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(db.dispose)
        self.assertRaises(exception.DatabaseNotMigrated, db.ensure_schema,
                          upgrade=False)
        self.assertEqual(migration.head_revision(), db.ensure_schema())


class TestHealth(test_base.BaseTestCase):

    def test_bookkeeping(self):
        now = [100.0]
        h = health.Health(clock=lambda: now[0])
        self.assertEqual((0, None, None),
                         (h.failures, h.last_error, h.seconds_since_ok()))
        self.assertEqual(1, h.failed(RuntimeError('down')))
        self.assertEqual(2, h.failed('again'))
        self.assertEqual('again', h.last_error)
        self.assertEqual(2, h.succeeded(at=90.0))
        self.assertEqual((0, None), (h.failures, h.last_error))
        self.assertEqual(10.0, h.seconds_since_ok())
        h.failed(ValueError('x'))
        self.assertEqual('ValueError: x', h.last_error)

    def test_worth_logging(self):
        self.assertEqual([1, 10, 20],
                         [n for n in range(1, 25)
                          if health.Health.worth_logging(n)])
