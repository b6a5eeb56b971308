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

"""The database membership backend on SQLite, PostgreSQL and MariaDB."""

import datetime
import threading
import time
from unittest import mock

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

from ironic_partition.db import api as db_api
from ironic_partition.db import models
from ironic_partition import exception
from ironic_partition.membership import database
from ironic_partition import settings as settings_mod
from ironic_partition.testing.services import proxy
from ironic_partition.tests.functional.db import base

ROLE = 'nova-compute'


class MembershipTestBase(base.DatabaseTestCase):

    def setUp(self):
        super().setUp()
        self.conf = base.make_conf(self, heartbeat_interval=1,
                                   service_down_time=30)
        self.conf.set_override('connection', self.url,
                               group='ironic_partition_database')
        self.conf.set_override('max_retries', 1,
                               group='ironic_partition_database')
        self.conf.set_override('retry_interval', 0,
                               group='ironic_partition_database')
        self.admin = db_api.Connection(self.url)
        self.addCleanup(self.admin.dispose)
        self.admin.upgrade()

    def make_backend(self, host, partition_key=None, url=None, start=True):
        if url is not None:
            connection = db_api.Connection(url)
        else:
            connection = None
        b = database.DatabaseMembership(
            settings_mod.for_tests(host, partition_key=partition_key,
                                   conf=self.conf),
            ROLE, version='1.0', connection=connection)
        if start:
            b.start()
            self.addCleanup(b.stop, timeout=5)
        return b

    def age(self, host, seconds):
        """Make a row look ``seconds`` old by the server's clock."""
        table = models.Service.__table__
        with self.admin.engine.begin() as conn:
            conn.execute(sa.update(table).where(table.c.host == host).values(
                last_seen=models.utc_ago(sa.literal(seconds, sa.Integer))))

    def rows(self):
        return {s.host: s
                for s in self.admin.services.services(ROLE, 30).services}


class TestHeartbeat(MembershipTestBase):

    def test_heartbeat_upserts_one_row(self):
        b = self.make_backend('Host-A', partition_key='Group1')
        first = self.rows()['host-a']
        self.assertEqual('group1', first.partition_key)
        self.assertEqual('1.0', first.version)
        self.assertTrue(first.alive)
        time.sleep(0.01)
        self.assertTrue(b.heartbeat())
        rows = self.rows()
        self.assertEqual(['host-a'], list(rows))
        self.assertGreaterEqual(rows['host-a'].last_seen, first.last_seen)
        self.assertEqual(first.created_at, rows['host-a'].created_at)

    def test_null_and_empty_partition_keys_are_distinct(self):
        self.make_backend('a', partition_key=None)
        self.make_backend('b', partition_key='')
        rows = self.rows()
        self.assertIsNone(rows['a'].partition_key)
        self.assertEqual('', rows['b'].partition_key)

    def test_timestamps_are_the_servers(self):
        self.make_backend('a')
        row = self.rows()['a']
        now = self.admin.check()
        self.assertEqual(datetime.timezone.utc, row.last_seen.tzinfo)
        self.assertLess(abs((now - row.last_seen).total_seconds()), 5)

    def test_concurrent_first_heartbeats(self):
        errors = []
        barrier = threading.Barrier(8)

        def run(host):
            conn = db_api.Connection(self.url)
            try:
                barrier.wait()
                for _ in range(5):
                    conn.services.heartbeat(host, ROLE, '', '1')
            except Exception as exc:
                errors.append(exc)
            finally:
                conn.dispose()

        # Half of the threads race on the same row, half on their own.
        hosts = ['same'] * 4 + ['own-%d' % i for i in range(4)]
        threads = [threading.Thread(target=run, args=(h,)) for h in hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        self.assertEqual({'same', 'own-0', 'own-1', 'own-2', 'own-3'},
                         set(self.rows()))


class TestMembers(MembershipTestBase):

    def test_no_partition_key_means_all_live(self):
        a = self.make_backend('a')
        self.make_backend('B')
        self.make_backend('c')
        self.age('c', 3600)
        m = a.members()
        self.assertEqual({'a', 'b'}, m.live)
        self.assertEqual({'c'}, m.dead)
        self.assertEqual(frozenset(), m.never_seen)
        self.assertFalse(m.stale)
        self.assertIsNotNone(m.as_of)

    def test_peer_list_intersection(self):
        a = self.make_backend('a', partition_key='g')
        self.make_backend('b', partition_key='g')
        self.make_backend('c', partition_key='g')
        self.make_backend('outsider')
        self.age('c', 3600)
        m = a.members('g', ['A', 'B', 'C', 'Never'])
        self.assertEqual({'a', 'b'}, m.live)
        self.assertEqual({'c'}, m.dead)
        self.assertEqual({'never'}, m.never_seen)

    def test_self_always_live(self):
        a = self.make_backend('a', partition_key='')
        self.age('a', 3600)
        self.assertEqual({'a'}, a.members('', ['b']).live)
        self.assertEqual({'b'}, a.members('', ['b']).never_seen)

    def test_graceful_stop_marks_down_at_once(self):
        a = self.make_backend('a')
        b = self.make_backend('b')
        self.assertEqual({'a', 'b'}, a.members().live)
        b.stop()
        m = a.members()
        self.assertEqual({'a'}, m.live)
        self.assertEqual({'b'}, m.dead)
        self.assertTrue(self.rows()['b'].down)
        # A restart heartbeats again and clears the flag.
        self.make_backend('b')
        self.assertEqual({'a', 'b'}, a.members().live)

    def test_stop_without_leaving_stays_live_until_down_time(self):
        a = self.make_backend('a')
        b = self.make_backend('b')
        b.stop(leave=False)
        self.assertEqual({'a', 'b'}, a.members().live)
        self.assertFalse(self.rows()['b'].down)
        self.age('b', 40)
        self.assertEqual({'b'}, a.members().dead)

    def test_liveness_boundary_uses_service_down_time(self):
        a = self.make_backend('a')
        self.make_backend('b')
        self.age('b', 20)
        self.assertIn('b', a.members().live)
        self.age('b', 40)
        self.assertIn('b', a.members().dead)


class TestClockSkew(MembershipTestBase):
    """A service whose clock is off by minutes sees, and is seen, right."""

    def _skewed(self, seconds):
        real_time = time.time
        skewed_now = timeutils.utcnow() + datetime.timedelta(seconds=seconds)
        patches = [
            mock.patch('time.time', lambda: real_time() + seconds),
            mock.patch.object(timeutils, 'utcnow',
                              lambda *a, **k: skewed_now),
        ]
        return patches

    def _check(self, seconds):
        honest = self.make_backend('honest')
        # One heartbeat and no heartbeat thread: a running thread could
        # beat again after the row is aged, on a loaded machine.
        dead = self.make_backend('dead', start=False)
        self.assertTrue(dead.heartbeat())
        self.age('dead', 3600)
        patches = self._skewed(seconds)
        for p in patches:
            p.start()
        try:
            skewed = self.make_backend('skewed')
            self.assertTrue(skewed.heartbeat())
            seen_by_skewed = skewed.members()
        finally:
            for p in patches:
                p.stop()
        self.assertEqual({'honest', 'skewed'}, seen_by_skewed.live)
        self.assertEqual({'dead'}, seen_by_skewed.dead)
        seen_by_honest = honest.members()
        self.assertEqual({'honest', 'skewed'}, seen_by_honest.live)
        self.assertEqual({'dead'}, seen_by_honest.dead)
        row = self.rows()['skewed']
        self.assertLess(abs((self.admin.check() - row.last_seen)
                            .total_seconds()), 5)

    def test_clock_ahead_5_minutes(self):
        self._check(300)

    def test_clock_behind_5_minutes(self):
        self._check(-300)


class TestFaults(MembershipTestBase):

    def _server_address(self):
        url = sa_url.make_url(self.url)
        return url.host or '127.0.0.1', url.port or (
            5432 if self.backend == 'postgresql' else 3306)

    def _proxied_url(self, port):
        return sa_url.make_url(self.url).set(
            host='127.0.0.1', port=port).render_as_string(
                hide_password=False)

    def test_unreachable_at_start_names_connection_masked(self):
        if self.backend == 'sqlite':
            bad = 'sqlite:////proc/no/such/dir/x.sqlite'
        else:
            # A proxy that is cut refuses connections on a real port.
            p = self.useFixture(proxy.TCPProxy(*self._server_address()))
            p.cut()
            bad = sa_url.make_url(self._proxied_url(p.port)).set(
                username='someone', password='s3cret').render_as_string(
                    hide_password=False)
        self.conf.set_override('connection', bad,
                               group='ironic_partition_database')
        b = database.DatabaseMembership(
            settings_mod.for_tests('a', conf=self.conf), ROLE)
        exc = self.assertRaises(exception.DatabaseConnectionFailed, b.start)
        self.assertNotIn('s3cret', str(exc))
        self.assertIn('[ironic_partition_database] connection', str(exc))
        if self.backend != 'sqlite':
            self.assertIn('someone:***@', str(exc))

    def test_schema_missing(self):
        b = self.make_backend('a', url=self.other_database_url(),
                              start=False)
        if self.backend == 'sqlite':
            # The embedded database upgrades itself.
            b.start()
            self.addCleanup(b.stop, timeout=5)
            self.assertEqual({'a'}, b.members().live)
        else:
            exc = self.assertRaises(exception.DatabaseNotMigrated, b.start)
            self.assertIn('ironic-partition-dbsync upgrade', str(exc))

    def test_connection_cut_and_restored(self):
        if self.backend == 'sqlite':
            self.skipTest('SQLite has no connection to cut')
        p = self.useFixture(proxy.TCPProxy(*self._server_address()))
        url = self._proxied_url(p.port)
        services = [self.make_backend('svc-%d' % i, url=url) for i in range(3)]
        watcher = services[0]
        before = watcher.members()
        self.assertEqual({'svc-0', 'svc-1', 'svc-2'}, before.live)
        last_seen = {h: r.last_seen for h, r in self.rows().items()}

        p.cut()
        self.assertFalse(watcher.heartbeat())
        during = watcher.members()
        self.assertTrue(during.stale)
        self.assertEqual(before.live, during.live)
        self.assertEqual(before.as_of, during.as_of)
        status = watcher.status()
        self.assertFalse(status['database_reachable'])
        self.assertTrue(status['membership_stale'])
        self.assertIsNotNone(status['last_error'])
        self.assertTrue(all(s.status()['running'] for s in services))
        time.sleep(1.5)

        p.restore()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(s.status()['database_reachable'] and
                   s.status()['seconds_since_last_heartbeat'] < 1
                   for s in services):
                break
            time.sleep(0.2)
        after = watcher.members()
        self.assertFalse(after.stale)
        self.assertEqual({'svc-0', 'svc-1', 'svc-2'}, after.live)
        rows = self.rows()
        self.assertEqual(set(last_seen), set(rows))
        for host, row in rows.items():
            self.assertGreater(row.last_seen, last_seen[host])
        self.assertFalse(watcher.status()['membership_stale'])


class TestShard(MembershipTestBase):
    """Ironic shards (issue 15): rows and claims carry the shard."""

    def _backend(self, host, partition_key, shard):
        b = database.DatabaseMembership(
            settings_mod.for_tests(host, partition_key=partition_key,
                                   shard=shard, conf=self.conf),
            ROLE, version='1.0')
        b.start()
        self.addCleanup(b.stop, timeout=5)
        return b

    def test_heartbeat_records_the_shard(self):
        self._backend('a', 'g', 'Shard-1')
        self._backend('b', 'g', None)
        rows = self.rows()
        self.assertEqual('shard-1', rows['a'].shard)
        self.assertIsNone(rows['b'].shard)

    def test_other_shard_is_not_a_member(self):
        a = self._backend('a', 'g', 's1')
        self._backend('b', 'g', 's1')
        self._backend('c', 'g', 's2')
        self._backend('d', 'g', None)
        m = a.members('g', ['a', 'b', 'c', 'd'], shard='s1')
        self.assertEqual({'a', 'b'}, m.live)
        self.assertEqual({'c', 'd'}, m.elsewhere)
        # Without a peer list, a sharded service is alone, as in nova.
        self.assertEqual({'a'}, a.members('g', (), shard='s1').live)

    def test_claims_record_the_shard(self):
        self.admin.claims.acquire_claims(ROLE, 'a', ['n1', 'n2'], 30, 'g',
                                         shard='S1')
        self.admin.claims.acquire_claims(ROLE, 'b', ['n3'], 30, 'g')
        claims = {c.node_id: c
                  for c in self.admin.claims.read_claims(ROLE).claims}
        self.assertEqual({'n1': 's1', 'n2': 's1', 'n3': None},
                         {n: c.shard for n, c in claims.items()})
        self.assertTrue(all(c.valid for c in claims.values()))
