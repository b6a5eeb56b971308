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

"""Migrations on SQLite, PostgreSQL and MariaDB, and models agreement."""

import io
import subprocess
import sys
import threading

import fixtures
from oslo_config import cfg
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

import ironic_partition
from ironic_partition.cmd import dbsync
from ironic_partition.db import api as db_api
from ironic_partition.db import migration
from ironic_partition.db import models
from ironic_partition.tests.functional.db import base


class TestMigrations(base.DatabaseTestCase):

    def setUp(self):
        super().setUp()
        self.connection = db_api.Connection(self.url)
        self.addCleanup(self.connection.dispose)

    def test_upgrade_from_empty(self):
        self.assertIsNone(self.connection.schema_revision())
        self.assertEqual(migration.head_revision(),
                         self.connection.upgrade())
        inspector = sa.inspect(self.connection.engine)
        self.assertIn('ironic_partition_services',
                      inspector.get_table_names())
        uniques = inspector.get_unique_constraints(
            'ironic_partition_services')
        self.assertIn(['host', 'role'],
                      [u['column_names'] for u in uniques])

    def test_upgrade_is_idempotent(self):
        self.connection.upgrade()
        self.connection.services.heartbeat('h1', 'nova-compute')
        self.assertEqual(migration.head_revision(),
                         self.connection.upgrade())
        self.assertEqual(1, len(self.connection.services.services(
            'nova-compute', 60).services))

    def test_concurrent_upgrades(self):
        errors = []
        seen = []

        def run():
            conn = db_api.Connection(self.url)
            try:
                seen.append(conn.upgrade_from())
            except Exception as exc:
                errors.append(exc)
            finally:
                conn.dispose()

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        head = migration.head_revision()
        self.assertEqual(head, self.connection.schema_revision())
        # Read under the lock: exactly one upgraded from an empty database,
        # the others found it at head ("already at revision").
        self.assertEqual(sorted([(None, head), (head, head), (head, head)],
                                key=str), sorted(seen, key=str))

    def test_dbsync_prints_only_its_result_on_stdout(self):
        conf_file = self.useFixture(fixtures.TempDir()).join('ip.conf')
        with open(conf_file, 'w') as f:
            f.write('[ironic_partition_database]\nconnection = %s\n'
                    % self.url)
        proc = subprocess.run(
            [sys.executable, '-m', 'ironic_partition.cmd.dbsync',
             '--config-file', conf_file, 'upgrade'],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        [line] = proc.stdout.splitlines()
        self.assertTrue(line.startswith('Upgraded membership database '),
                        line)
        self.assertIn('Running upgrade', proc.stderr)

    def test_timestamps_keep_sub_second_precision(self):
        self.connection.upgrade()
        self.connection.services.heartbeat('h1', 'nova-compute')
        first = self.connection.services.services('nova-compute',
                                                  60).services[0]
        # NOTE(ironic-partition): MariaDB's DATETIME would drop fractions
        # without fsp=6; SQLite keeps milliseconds.
        values = set()
        for _ in range(5):
            self.connection.services.heartbeat('h1', 'nova-compute')
            values.add(self.connection.services.services(
                'nova-compute', 60).services[0].last_seen)
        self.assertGreater(len(values), 1)
        self.assertTrue(all(v >= first.last_seen for v in values))

    def _dbsync(self, *argv):
        conf_file = self.useFixture(fixtures.TempDir()).join('ip.conf')
        with open(conf_file, 'w') as f:
            f.write('[ironic_partition_database]\nconnection = %s\n'
                    % self.url)
        out = io.StringIO()
        status = dbsync.main(['--config-file', conf_file] + list(argv),
                             conf=cfg.ConfigOpts(), out=out)
        return status, out.getvalue()

    def test_dbsync_upgrade_and_version(self):
        head = migration.head_revision()
        self.assertEqual((0, 'current: (none)\nhead: %s\n' % head),
                         self._dbsync('version'))
        status, out = self._dbsync('upgrade')
        self.assertEqual(0, status)
        self.assertIn('to %s' % head, out)
        status, out = self._dbsync('upgrade')
        self.assertEqual(0, status)
        self.assertIn('already at revision %s' % head, out)
        self.assertEqual(
            (0, 'current: %s\nhead: %s\noldest code: 0004_database_node\n'
                'upgraded by: %s\n' % (head, head,
                                       ironic_partition.__version__)),
            self._dbsync('version'))

    def test_dbsync_while_services_heartbeat(self):
        self.connection.upgrade()
        stop = threading.Event()
        errors = []

        def beat():
            conn = db_api.Connection(self.url)
            try:
                while not stop.is_set():
                    conn.services.heartbeat('busy', 'nova-compute')
            except Exception as exc:
                errors.append(exc)
            finally:
                conn.dispose()

        thread = threading.Thread(target=beat)
        thread.start()
        try:
            for _ in range(3):
                self.assertEqual(0, self._dbsync('upgrade')[0])
        finally:
            stop.set()
            thread.join()
        self.assertEqual([], errors)


class TestModelsMigrationsSync(test_migrations.ModelsMigrationsSync,
                               base.DatabaseTestCase):
    """The models and the migrations describe the same schema."""

    def setUp(self):
        super().setUp()
        self.engine = engines.create_engine(self.url, max_retries=0)
        self.addCleanup(self.engine.dispose)

    def db_sync(self, engine):
        migration.upgrade(engine)

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def include_object(self, object_, name, type_, reflected, compare_to):
        if type_ == 'table' and name == migration.VERSION_TABLE:
            return False
        return super().include_object(object_, name, type_, reflected,
                                      compare_to)
