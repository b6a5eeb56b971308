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

"""The claim statements of the database API, on SQLite."""

import os
import sqlite3.dbapi2
import uuid

import fixtures
from oslo_config import cfg
from oslotest import base as test_base
import sqlalchemy as sa

from ironic_partition.claims import manager as claims
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import _common
from ironic_partition.db import api as db_api
from ironic_partition.db import models
from ironic_partition.db import store
from ironic_partition import exception
from ironic_partition import settings as settings_mod

ROLE = 'agent'


def _ids(n, start=0):
    return [str(uuid.UUID(int=i + 1)) for i in range(start, start + n)]


class TestClaimsSQL(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'c.sqlite')
        self.url = 'sqlite:///%s' % path
        self.conn = db_api.Connection(self.url)
        self.addCleanup(self.conn.dispose)
        self.conn.upgrade()
        self.claims = self.conn.claims

    def expire(self, owner):
        table = models.Claim.__table__
        with self.conn.engine.begin() as c:
            c.execute(sa.update(table).where(table.c.owner == owner).values(
                expires_at=models.utc_ago(sa.literal(1, sa.Integer))))

    def test_acquire_insert_then_cas(self):
        nodes = _ids(6)
        self.claims.acquire_claims(ROLE, 'A', nodes[:4], 30, 'g')
        self.claims.acquire_claims(ROLE, 'b', nodes, 30, 'g')
        self.assertEqual(dict.fromkeys(nodes[:4], 1),
                         self.claims.held_claims(ROLE, 'a'))
        self.assertEqual(dict.fromkeys(nodes[4:], 1),
                         self.claims.held_claims(ROLE, 'B'))
        self.expire('a')
        self.assertEqual(0, self.claims.renew_claims(ROLE, 'a', 30))
        self.assertEqual({n: False for n in nodes[:4]},
                         {n: c.valid for n, c in
                          self.claims.owned_claims(ROLE, 'a').items()})
        self.claims.acquire_claims(ROLE, 'b', nodes, 30)
        self.assertEqual({**dict.fromkeys(nodes[:4], 2),
                          **dict.fromkeys(nodes[4:], 1)},
                         self.claims.held_claims(ROLE, 'b'))

    def test_roles_are_separate(self):
        node = _ids(1)
        self.claims.acquire_claims('agent', 'a', node, 30)
        self.claims.acquire_claims('nova-compute', 'b', node, 30)
        self.assertEqual(node, list(self.claims.held_claims('agent', 'a')))
        self.assertEqual(node, list(self.claims.held_claims('nova-compute',
                                                            'b')))

    def test_renew_extends_by_the_database_clock(self):
        node = _ids(1)
        self.claims.acquire_claims(ROLE, 'a', node, 5)
        before = self.claims.read_claims(ROLE).claims[0]
        self.assertEqual(1, self.claims.renew_claims(ROLE, 'a', 3600))
        snap = self.claims.read_claims(ROLE)
        after = snap.claims[0]
        self.assertEqual(before.epoch, after.epoch)
        self.assertGreater((after.expires_at - snap.as_of).total_seconds(),
                           3590)
        self.assertEqual(before.claimed_at, after.claimed_at)

    def test_release_keeps_the_row_and_its_epoch(self):
        nodes = _ids(3)
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.assertEqual(0, self.claims.release_claims(ROLE, 'b', nodes))
        self.assertEqual(2, self.claims.release_claims(ROLE, 'a', nodes[:2]))
        self.assertEqual(1, self.claims.release_claims(ROLE, 'a'))
        snap = self.claims.read_claims(ROLE)
        self.assertEqual([(None, 1, False, None)] * 3,
                         [(c.owner, c.epoch, c.valid, c.claimed_at)
                          for c in snap.claims])
        self.claims.acquire_claims(ROLE, 'b', nodes, 30)
        self.assertEqual({2}, set(self.claims.held_claims(ROLE, 'b').values()))

    def test_many_chunks(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 7))
        nodes = _ids(50)
        self.claims.acquire_claims(ROLE, 'a', nodes[:20], 30)
        self.claims.acquire_claims(ROLE, 'b', nodes, 30)
        self.assertEqual(30, len(self.claims.held_claims(ROLE, 'b')))
        self.assertEqual(20, self.claims.release_claims(ROLE, 'a', nodes))
        snap = self.claims.read_claims(ROLE, node_ids=nodes[:25])
        self.assertEqual(sorted(nodes[:25]),
                         [c.node_id for c in snap.claims])
        self.assertEqual(30, len(self.claims.read_claims(
            ROLE, owner='B').claims))

    def test_acquire_says_what_it_won_only_when_it_won_everything(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 3))
        nodes = _ids(8)
        self.assertEqual({n: 1 for n in nodes[:5]},
                         self.claims.acquire_claims(ROLE, 'a', nodes[:5],
                                                    30))
        self.claims.release_claims(ROLE, 'a', nodes[:2])
        # Two freed (epoch 1 -> 2), three new: all won, in three chunks.
        self.assertEqual(
            dict({n: 2 for n in nodes[:2]}, **{n: 1 for n in nodes[5:]}),
            self.claims.acquire_claims(ROLE, 'b', nodes[:2] + nodes[5:],
                                       30))
        # One node still held by 'a': what 'b' won must be read back.
        self.assertIsNone(self.claims.acquire_claims(ROLE, 'b', nodes, 30))
        self.assertEqual(set(nodes) - set(nodes[2:5]),
                         set(self.claims.held_claims(ROLE, 'b')))

    def test_acquire_says_nothing_of_a_lost_compare_and_swap(self):
        nodes = _ids(2)
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.claims.release_claims(ROLE, 'a')
        real = self.claims._insert_placeholders
        table = models.Claim.__table__

        def steal(conn, *args):
            # Between the SELECT and the UPDATE, another service takes
            # one of the free rows (committed before ours, as SQLite
            # serialises writers).
            conn.execute(table.update().where(
                table.c.node_id == nodes[0]).values(
                    owner='c', epoch=table.c.epoch + 1,
                    expires_at=models.utc_after(
                        sa.literal(60000000, sa.BigInteger))))
            return real(conn, *args)

        self.useFixture(fixtures.MockPatchObject(
            self.claims, '_insert_placeholders', steal))
        self.assertIsNone(self.claims.acquire_claims(
            ROLE, 'b', nodes + _ids(1, start=10), 30))
        self.assertEqual({nodes[1], _ids(1, start=10)[0]},
                         set(self.claims.held_claims(ROLE, 'b')))

    def test_manager_round_on_sqlite(self):
        manager = claims.ClaimManager(store.Store(self.conn), 'a', ROLE,
                                      lease_time=30,
                                      fencing_margin=3)
        nodes = _ids(10)
        out = manager.round(nodes[:8], nodes[8:], partition_key='g')
        self.assertTrue(out.ok)
        self.assertEqual(frozenset(nodes), out.reported)
        # SELECT the server's time and own claims (nothing held: no
        # renewal); SELECT, the server's time, INSERT placeholders and
        # compare-and-swap UPDATE to claim; every node won, so no SELECT
        # of what is held.
        self.assertEqual(6, out.statements)
        self.assertEqual({n: 1 for n in nodes},
                         self.claims.held_claims(ROLE, 'a'))
        # SELECT the server's time and own claims, one UPDATE per chunk
        # to renew; every claim renewed, so no SELECT of what is held.
        out = manager.round(nodes[:8], nodes[8:])
        self.assertEqual(3, out.statements)
        self.assertEqual({'g'}, {c.partition_key for c in
                                 self.claims.read_claims(ROLE).claims})

    def test_fresh_placeholders_are_not_garbage(self):
        # Between the INSERT of a placeholder and the claim that follows,
        # another service's garbage collection may run: a placeholder
        # stamped "long ago" would be deleted under the claimer.
        nodes = _ids(3)
        table = models.Claim.__table__
        with self.conn.writer() as conn:
            self.claims._insert_placeholders(conn, table, ROLE, nodes)
        self.assertEqual(0, self.claims.collect_garbage(ROLE, 60))
        snapshot = self.claims.read_claims(ROLE)
        self.assertEqual(sorted(nodes),
                         [c.node_id for c in snapshot.claims])
        # Still free to claim at once.
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.assertEqual({'a'}, {c.owner for c in
                                 self.claims.read_claims(ROLE).claims})

    def test_renewal_is_chunked(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 7))
        nodes = _ids(20)
        self.claims.acquire_claims(ROLE, 'a', nodes, 5)
        before = {c.node_id: c.expires_at
                  for c in self.claims.read_claims(ROLE).claims}
        statements = self.conn.stats['claim_statements']
        self.assertEqual(20, self.claims.renew_claims(ROLE, 'a', 3600,
                                                      node_ids=nodes))
        # One UPDATE per chunk of seven.
        self.assertEqual(3, self.conn.stats['claim_statements']
                         - statements)
        snap = self.claims.read_claims(ROLE)
        self.assertTrue(all(
            (c.expires_at - snap.as_of).total_seconds() > 3590
            and c.expires_at > before[c.node_id] for c in snap.claims))

    def test_renewal_of_some_nodes_only(self):
        nodes = _ids(4)
        self.claims.acquire_claims(ROLE, 'a', nodes, 5)
        self.assertEqual(2, self.claims.renew_claims(ROLE, 'a', 3600,
                                                     node_ids=nodes[:2]))
        snap = self.claims.read_claims(ROLE)
        long_lived = {c.node_id for c in snap.claims
                      if (c.expires_at - snap.as_of).total_seconds() > 60}
        self.assertEqual(set(nodes[:2]), long_lived)

    def test_renewal_without_nodes_reads_the_valid_claims_first(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 3))
        nodes = _ids(5)
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.claims.acquire_claims(ROLE, 'b', _ids(2, start=10), 30)
        self.expire('b')
        statements = self.conn.stats['claim_statements']
        self.assertEqual(5, self.claims.renew_claims(ROLE, 'a', 60))
        # SELECT held, then two chunks.
        self.assertEqual(3, self.conn.stats['claim_statements']
                         - statements)
        self.assertEqual(0, self.claims.renew_claims(ROLE, 'b', 60))
        self.assertEqual(0, self.claims.renew_claims(ROLE, 'b', 60,
                                                     node_ids=[]))

    def age(self, node_ids, seconds):
        table = models.Claim.__table__
        with self.conn.engine.begin() as c:
            c.execute(sa.update(table).where(
                table.c.node_id.in_(node_ids)).values(
                    expires_at=models.utc_ago(sa.literal(seconds,
                                                         sa.Integer))))

    def test_collect_garbage(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 3))
        nodes = _ids(8)
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.claims.acquire_claims('nova-compute', 'a', nodes[:2], 30)
        self.claims.release_claims(ROLE, 'a', nodes[:4])
        # Released long ago, expired long ago, expired recently, valid.
        self.age(nodes[:2], 7200)
        self.age(nodes[4:7], 7200)
        self.age(nodes[2:4], 60)
        statements = self.conn.stats['claim_statements']
        self.assertEqual(5, self.claims.collect_garbage(ROLE, 3600))
        # SELECT and DELETE a chunk of three, then one of two: the last.
        self.assertEqual(4, self.conn.stats['claim_statements']
                         - statements)
        self.assertEqual(nodes[2:4] + nodes[7:],
                         [c.node_id for c in
                          self.claims.read_claims(ROLE).claims])
        self.assertEqual(2, len(self.claims.read_claims(
            'nova-compute').claims))
        self.assertEqual(0, self.claims.collect_garbage(ROLE, 3600))
        # A deleted node is claimed again with a new row.
        self.claims.acquire_claims(ROLE, 'b', nodes[:1], 30)
        self.assertEqual({nodes[0]: 1}, self.claims.held_claims(ROLE, 'b'))

    def test_collect_garbage_is_bounded(self):
        self.useFixture(fixtures.MockPatchObject(_common, 'CHUNK_SIZE', 2))
        nodes = _ids(7)
        self.claims.acquire_claims(ROLE, 'a', nodes, 30)
        self.age(nodes, 7200)
        self.assertEqual(4, self.claims.collect_garbage(ROLE, 3600,
                                                        max_chunks=2))
        self.assertEqual(3, self.claims.collect_garbage(ROLE, 3600))


class TestSQLiteVersion(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        path = self.useFixture(fixtures.TempDir()).join('c.sqlite')
        self.conn = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(self.conn.dispose)

    def _version(self, version):
        self.useFixture(fixtures.MockPatchObject(
            sqlite3.dbapi2, 'sqlite_version_info', version))

    def test_old_sqlite_is_refused_naming_both_versions(self):
        self._version((3, 31, 1))
        e = self.assertRaises(exception.ConfigurationError,
                              self.conn.claims.check_supported)
        self.assertIn('[ironic_partition_database] connection', str(e))
        self.assertIn('SQLite 3.31.1', str(e))
        self.assertIn('SQLite 3.32.0 or newer', str(e))
        self.assertIn('SQLITE_MAX_VARIABLE_NUMBER 32766', str(e))

    def test_recent_sqlite_passes(self):
        self._version((3, 32, 0))
        self.assertIsNone(self.conn.claims.check_supported())

    def test_server_databases_are_not_checked(self):
        self._version((3, 7, 0))
        conn = db_api.Connection('postgresql+psycopg2://u:pw@db/ip')
        self.assertIsNone(conn.claims.check_supported())

    def test_claims_refuse_to_start(self):
        self._version((3, 22, 0))
        conf = cfg.ConfigOpts()
        conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
        conf([])
        conf.set_override('claims', 'database', partition_conf.GROUP)
        database_conf.register_opts(conf)
        conf.set_override('connection', self.conn.connection,
                          database_conf.GROUP)
        e = self.assertRaises(exception.ConfigurationError,
                              claims.from_settings,
                              settings_mod.for_tests('cn1', conf=conf))
        self.assertIn('SQLite 3.22.0', str(e))
