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

"""The Galera fixture itself: three real MariaDB nodes behind HAProxy.

One cluster serves the whole class (node 1's clock 5 s ahead); each test
leaves it as it found it, three nodes Synced, node 0 the writer. Rows are
read back with ``wsrep_sync_wait = 1``, so that a read on a node waits
for the writes the cluster committed before it.
"""

import os
import uuid

from oslotest import base
import pymysql

from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import galera

#: Node 1's clock offset, in seconds.
OFFSET = 5.0


class SharedGalera(object):
    """One Galera cluster per test class, torn down with the class."""

    galera = None

    @classmethod
    def tearDownClass(cls):
        if cls.galera is not None:
            cls.galera.cleanUp()
            cls.galera = None
        super().tearDownClass()


class GaleraFixtureTest(SharedGalera, base.BaseTestCase):

    database = 'ipart_galera_%d' % os.getpid()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cluster = galera.GaleraFixture(clock_offsets={1: OFFSET},
                                       workdir=harness_db.default_workdir())
        # NOTE(ironic-partition): a fixture whose set-up fails has already
        # stopped what it started; tearDownClass stops the rest.
        cluster.setUp()
        cls.galera = cluster
        try:
            cluster.create_database(cls.database)
            cluster.execute('CREATE TABLE notes (id INT AUTO_INCREMENT '
                            'PRIMARY KEY, note VARCHAR(64) NOT NULL)',
                            database=cls.database)
        except Exception:
            cls.tearDownClass()
            raise

    def setUp(self):
        super().setUp()
        self.addCleanup(self._heal)

    def _heal(self):
        """Bring the cluster back to three Synced nodes after a test."""
        cluster = self.galera
        for node in cluster.nodes:
            if node.paused:
                cluster.resume(node.index)
            if node.isolated:
                cluster.rejoin(node.index)
        stopped = [n.index for n in cluster.nodes if not n.running()]
        if len(stopped) == len(cluster.nodes):
            cluster.restart_all()
        for index in stopped:
            cluster.start(index)

    def _write(self, index=None):
        note = uuid.uuid4().hex
        self.galera.execute("INSERT INTO notes (note) VALUES ('%s')" % note,
                            index, self.database)
        return note

    def _notes(self, index):
        with pymysql.connect(host='127.0.0.1',
                             port=self.galera.nodes[index].port, user='root',
                             database=self.database, read_timeout=10) as conn:
            with conn.cursor() as cursor:
                cursor.execute('SET SESSION wsrep_sync_wait = 1')
                cursor.execute('SELECT note FROM notes')
                return {row[0] for row in cursor.fetchall()}

    def _assert_synced(self, index, size=3):
        status = self.galera.status(index)
        self.assertEqual(('ON', 'Primary', 'Synced', str(size)), (
            status['wsrep_ready'], status['wsrep_cluster_status'],
            status['wsrep_local_state_comment'],
            status['wsrep_cluster_size']), status)

    def test_a_row_written_through_haproxy_is_on_every_node(self):
        self.assertEqual(0, self.galera.writer())
        note = self._write()
        for index in range(3):
            self._assert_synced(index)
            self.assertIn(note, self._notes(index), 'node%d' % index)
        # The URLs name the same servers.
        self.assertEqual('mysql+pymysql://root@127.0.0.1:%d/%s' % (
            self.galera.haproxy_port, self.database),
            self.galera.url(self.database))
        self.assertEqual('mysql+pymysql://root@127.0.0.1:%d/' %
                         self.galera.nodes[2].port, self.galera.node_url(2))

    def test_haproxy_fails_over_to_a_backup_and_back(self):
        self.assertEqual(0, self.galera.writer())
        self.galera.kill(0)
        self.assertFalse(self.galera.nodes[0].running())
        writer = self.galera.writer()
        self.assertIn(writer, (1, 2))
        note = self._write()
        self.assertIn(note, self._notes(writer))
        self.assertIsNone(self.galera.status(0))

        self.galera.start(0)
        self._assert_synced(0)
        # Node 0 is the only non-backup server: new connections go back.
        self.assertEqual(0, self.galera.writer())
        self.assertIn(note, self._notes(0))

    def test_an_isolated_node_refuses_queries_then_catches_up(self):
        before = self._write()
        self.galera.isolate(2)
        status = self.galera.status(2)
        self.assertEqual(('non-Primary', 'OFF'), (
            status['wsrep_cluster_status'], status['wsrep_ready']))
        error = self.assertRaises(pymysql.MySQLError, self.galera.execute,
                                  'SELECT COUNT(*) FROM notes', 2,
                                  self.database)
        self.assertEqual(galera.WSREP_NOT_READY, error.args[0])
        self.assertEqual(1047, error.args[0])
        self.assertIn('WSREP has not yet prepared node for application use',
                      error.args[1])
        # The other two are still the primary component, both writable.
        through_haproxy = self._write()
        on_node1 = self._write(1)
        for index in (0, 1):
            self._assert_synced(index, size=2)
            self.assertLessEqual({through_haproxy, on_node1},
                                 self._notes(index))

        self.galera.rejoin(2)
        self._assert_synced(2)
        self.assertLessEqual({before, through_haproxy, on_node1},
                             self._notes(2))

    def test_restart_all_bootstraps_from_an_up_to_date_node(self):
        self.galera.kill(2)
        note = self._write()
        first = self.galera.restart_all()
        # Node 2 missed the last write: it must not be the one bootstrapped.
        self.assertIn(first, (0, 1))
        for index in range(3):
            self._assert_synced(index)
            self.assertIn(note, self._notes(index), 'node%d' % index)
        self.assertEqual(0, self.galera.writer())

    def test_a_node_with_a_clock_offset_is_ahead(self):
        self.assertAlmostEqual(OFFSET, self.galera.clock_offset(1), delta=1)
        self.assertAlmostEqual(0, self.galera.clock_offset(2), delta=1)
