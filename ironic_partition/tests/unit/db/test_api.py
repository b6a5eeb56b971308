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

"""The membership database API on SQLite, with mocks for rare faults."""

import io
import os
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslotest import base as test_base

from ironic_partition import _urls
from ironic_partition.cmd import dbsync
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import api as db_api
from ironic_partition.db import migration


class TestConnection(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'sub', 'dir', 'm.sqlite')
        self.conn = db_api.Connection('sqlite:///%s' % self.path)
        self.addCleanup(self.conn.dispose)
        self.services = self.conn.services

    def test_creates_directory_and_upgrades(self):
        self.assertIsNone(self.conn.schema_revision())
        self.assertEqual(migration.head_revision(), self.conn.upgrade())
        self.assertTrue(os.path.exists(self.path))
        self.assertEqual(migration.head_revision(), self.conn.upgrade())

    def test_heartbeat_insert_then_update(self):
        self.conn.upgrade()
        self.assertTrue(self.services.heartbeat('HOST', 'agent', 'K', 'v1'))
        self.assertFalse(self.services.heartbeat('host', 'agent', 'K', 'v2'))
        (svc,) = self.services.services('agent', 60).services
        self.assertEqual(('host', 'k', 'v2', True),
                         (svc.host, svc.partition_key, svc.version,
                          svc.alive))

    def test_lost_insert_race_updates_instead(self):
        # NOTE(ironic-partition): the window between UPDATE and INSERT
        # cannot be hit on purpose on SQLite; pretend the UPDATE missed.
        self.conn.upgrade()
        self.services.heartbeat('h', 'agent', None, 'v1')
        real_update = self.services._update
        results = iter([0])

        def update(*args):
            try:
                next(results)
                return 0
            except StopIteration:
                return real_update(*args)

        with mock.patch.object(self.services, '_update', autospec=True,
                               side_effect=update):
            self.assertFalse(self.services.heartbeat('h', 'agent', None, 'v2'))
        self.assertEqual(1, self.conn.stats['duplicate_retries'])
        (svc,) = self.services.services('agent', 60).services
        self.assertEqual('v2', svc.version)

    def test_deadlock_is_retried(self):
        self.conn.upgrade()
        real_update = self.services._update
        calls = []

        def update(*args):
            calls.append(args)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
            return real_update(*args)

        with mock.patch.object(self.services, '_update', autospec=True,
                               side_effect=update):
            self.services.heartbeat('h', 'agent')
        # The deadlock, then the retried UPDATE that misses (and INSERTs).
        self.assertEqual(2, len(calls))
        self.assertEqual(1, len(self.services.services('agent', 60).services))

    def test_mask_url(self):
        self.assertEqual('mysql+pymysql://u:***@h/db',
                         _urls.mask('mysql+pymysql://u:pw@h/db'))


class TestConf(test_base.BaseTestCase):

    def test_default_connection_under_state_path(self):
        conf = cfg.ConfigOpts()
        conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
        database_conf.register_opts(conf)
        conf([])
        conf.set_override('state_path', '/srv/ip', 'ironic_partition')
        self.assertEqual('sqlite:////srv/ip/ironic_partition.sqlite',
                         conf.ironic_partition_database.connection)

    def test_list_opts(self):
        ((group, opts),) = database_conf.list_opts()
        self.assertEqual('ironic_partition_database', group)
        names = {o.name for o in opts}
        self.assertLessEqual({'connection', 'max_pool_size', 'max_retries',
                              'connection_recycle_time'}, names)
        self.assertTrue(all(not o.deprecated_opts for o in opts))


class TestDbsync(test_base.BaseTestCase):

    def test_upgrade_and_version_on_sqlite(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf_file = os.path.join(tmp, 'ip.conf')
        with open(conf_file, 'w') as f:
            f.write('[ironic_partition]\nstate_path = %s\n' % tmp)
        for command in ('upgrade', 'version'):
            out = io.StringIO()
            self.assertEqual(0, dbsync.main(
                ['--config-file', conf_file, command],
                conf=cfg.ConfigOpts(), out=out))
        self.assertIn('current: %s' % migration.head_revision(),
                      out.getvalue())
        self.assertTrue(os.path.exists(os.path.join(
            tmp, 'ironic_partition.sqlite')))

    def test_failure_masks_password(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf_file = os.path.join(tmp, 'ip.conf')
        with open(conf_file, 'w') as f:
            f.write('[ironic_partition_database]\nconnection = '
                    'mysql+pymysql://u:s3cret@127.0.0.1:1/db\n')
        err = self.useFixture(fixtures.StringStream('stderr')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        self.assertEqual(1, dbsync.main(['--config-file', conf_file,
                                         'version'],
                                        conf=cfg.ConfigOpts(),
                                        out=io.StringIO()))
        err.seek(0)
        text = err.read()
        self.assertIn('u:***@127.0.0.1:1', text)
        self.assertNotIn('s3cret', text)
