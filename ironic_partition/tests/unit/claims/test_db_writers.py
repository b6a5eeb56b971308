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

"""The writer watch: one node, a failback that heals, a spreading proxy."""

from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from ironic_partition.claims import db_writers
from ironic_partition.db import models
from ironic_partition.db import services
from ironic_partition.tests import base


def row(host, node, alive=True, claims_node=None):
    return services.ServiceRecord(
        host=host, role='nova-compute', partition_key='rack1', version=None,
        created_at=None, last_seen=None, down=False, alive=alive,
        database_node=node, claims_database_node=claims_node)


class TestServerNode(base.TestCase):

    def test_compiled_per_dialect(self):
        expr = models.server_node()
        self.assertEqual("CONCAT(@@hostname, ':', @@port)",
                         str(expr.compile(dialect=mysql.dialect())))
        self.assertEqual('NULL',
                         str(expr.compile(dialect=postgresql.dialect())))
        self.assertEqual('NULL', str(expr.compile(dialect=sqlite.dialect())))


class TestWriters(base.TestCase):

    def test_grouped_live_and_known_only(self):
        rows = [row('cn2', 'db0:3306'), row('cn1', 'db0:3306'),
                row('cn3', 'db1:3306'), row('cn4', 'db2:3306', alive=False),
                row('cn5', None)]
        nodes = db_writers.writers(rows)
        self.assertEqual({'db0:3306': ['cn1', 'cn2'], 'db1:3306': ['cn3']},
                         nodes)
        self.assertEqual('db0:3306 (cn1, cn2); db1:3306 (cn3)',
                         db_writers.describe(nodes))

    def test_the_claim_rounds_node_counts_too(self):
        # Heartbeats through db0, the claim statements of cn2 through db1
        # (a front end spreading connections): two writers.
        nodes = db_writers.writers([
            row('cn1', 'db0:3306', claims_node='db0:3306'),
            row('cn2', 'db0:3306', claims_node='db1:3306'),
            row('cn3', 'db1:3306', alive=False, claims_node='db2:3306')])
        self.assertEqual({'db0:3306': ['cn1', 'cn2'], 'db1:3306': ['cn2']},
                         nodes)


class TestWriterWatch(base.TestCase):

    def setUp(self):
        super().setUp()
        self.watch = db_writers.WriterWatch(settle=20)

    def test_one_node_is_fine(self):
        for now in (0, 100, 1000):
            self.assertEqual((False, None), self.watch.observe(
                [row('cn1', 'db0:3306'), row('cn2', 'db0:3306')], now))
        self.assertIsNone(self.watch.since)

    def test_unknown_nodes_are_fine(self):
        # PostgreSQL, SQLite, and rows of services older than the column.
        self.assertEqual((False, None), self.watch.observe(
            [row('cn1', None), row('cn2', None)], 0))

    def test_claim_statements_through_another_node_are_a_problem(self):
        rows = [row('cn1', 'db0:3306', claims_node='db1:3306'),
                row('cn2', 'db0:3306', claims_node='db0:3306')]
        self.assertEqual((True, None), self.watch.observe(rows, 0))
        verdict = self.watch.observe(rows, 21)
        self.assertIn('db1:3306 (cn1)', verdict.problem)

    def test_an_outage_ends_the_episode(self):
        # A failback's episode had not ended when the whole cluster went
        # down; after the bootstrap, a transient split is a new episode
        # (reconnect), not the old one grown past settle (not ready).
        split = [row('cn1', 'db0:3306'), row('cn2', 'db1:3306')]
        joined = [row('cn1', 'db0:3306'), row('cn2', 'db0:3306')]
        self.assertEqual((True, None), self.watch.observe(split, 0))
        self.assertEqual((False, None), self.watch.observe(joined, 5))
        self.watch.reset()
        self.assertIsNone(self.watch.since)
        self.assertEqual((True, None), self.watch.observe(split, 38))
        self.assertEqual(38, self.watch.since)
        # A lasting spread after it is still a problem.
        self.assertIsNotNone(self.watch.observe(split, 58).problem)

    def test_failback_heals_after_one_reconnection(self):
        split = [row('cn1', 'db0:3306'), row('cn2', 'db1:3306')]
        joined = [row('cn1', 'db0:3306'), row('cn2', 'db0:3306')]
        self.assertEqual((True, None), self.watch.observe(split, 100))
        self.assertEqual(100, self.watch.since)
        # Not again while the others catch up.
        self.assertEqual((False, None), self.watch.observe(split, 105))
        self.assertEqual((False, None), self.watch.observe(joined, 110))
        # The episode ends after one node for the settle time in a row.
        self.assertEqual((False, None), self.watch.observe(joined, 129))
        self.assertEqual(100, self.watch.since)
        self.assertEqual((False, None), self.watch.observe(joined, 130))
        self.assertIsNone(self.watch.since)
        # A later split is a new episode: reconnect again at once.
        self.assertEqual((True, None), self.watch.observe(split, 500))

    def test_lasting_spread_is_a_problem_and_reconnects_again(self):
        split = [row('cn1', 'db0:3306'), row('cn2', 'db1:3306'),
                 row('cn3', 'db2:3306')]
        joined = [row(h, 'db0:3306') for h in ('cn1', 'cn2', 'cn3')]
        self.watch.observe(split, 0)
        # A round-robin proxy shows one node now and then.
        self.assertEqual((False, None), self.watch.observe(joined, 10))
        self.assertEqual((False, None), self.watch.observe(split, 19.9))
        reconnect, problem = self.watch.observe(split, 20)
        self.assertTrue(reconnect)
        self.assertIn('written through several database nodes at once '
                      'for 20 s (last seen: db0:3306 (cn1); db1:3306 '
                      '(cn2); db2:3306 (cn3))', problem)
        self.assertIn('one active server and the others "backup"', problem)
        # Still a problem, without reconnecting at every reading, and
        # without flapping on a reading that shows one node.
        reconnect, problem = self.watch.observe(split, 25)
        self.assertFalse(reconnect)
        self.assertIsNotNone(problem)
        self.assertIsNotNone(self.watch.observe(joined, 30).problem)
        self.assertIsNotNone(self.watch.observe(joined, 49).problem)
        # Corrected: fine after one node for the settle time in a row.
        self.assertEqual((False, None), self.watch.observe(joined, 50))
