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

"""Ownership claims on SQLite, PostgreSQL and MariaDB.

Every service in these tests has a database connection (an engine and a
pool) of its own, as separate processes would. Concurrency is real
(threads racing on the same rows), leases run out by the real database
clock, and a network cut is a real TCP proxy closing the connections.
"""

import datetime
import random
import threading
import time
from unittest import mock
import uuid

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

from ironic_partition.claims import manager as claims
from ironic_partition.db import api as db_api
from ironic_partition.db import models
from ironic_partition.db import store
from ironic_partition import testing as harness
from ironic_partition.testing.services import proxy
from ironic_partition.tests.functional.db import base

ROLE = 'nova-compute'


def _ids(n, start=0):
    return [str(uuid.UUID(int=i + 1)) for i in range(start, start + n)]


class ClaimsTestBase(base.DatabaseTestCase):

    def setUp(self):
        super().setUp()
        self.admin = db_api.Connection(self.url)
        self.addCleanup(self.admin.dispose)
        self.admin.upgrade()

    def connection(self, url=None):
        conn = db_api.Connection(url or self.url, max_retries=0)
        self.addCleanup(conn.dispose)
        return conn

    def manager(self, host, lease=30.0, margin=3.0, url=None):
        return claims.ClaimManager(store.Store(self.connection(url)), host,
                                   ROLE, lease_time=lease,
                                   fencing_margin=margin)

    def age(self, owner, seconds):
        """Make the leases of ``owner`` end ``seconds`` ago (server clock)."""
        table = models.Claim.__table__
        with self.admin.engine.begin() as conn:
            conn.execute(sa.update(table).where(
                table.c.owner == owner).values(
                    expires_at=models.utc_ago(
                        sa.literal(seconds, sa.Integer))))

    def claims(self):
        return {c.node_id: c
                for c in self.admin.claims.read_claims(ROLE).claims}


class TestClaimStatements(ClaimsTestBase):

    def test_concurrent_claimers_never_both_hold_a_node(self):
        nodes = _ids(300)
        hosts = ['host-%d' % i for i in range(6)]
        conns = {h: self.connection() for h in hosts}
        rounds = 4
        barrier = threading.Barrier(len(hosts))
        held = {}
        errors = []

        def run(host):
            conn = conns[host]
            try:
                for r in range(rounds):
                    # NOTE(ironic-partition): every claimer wants every
                    # node, in a different order, at the same moment.
                    mine = list(nodes)
                    random.Random(host + str(r)).shuffle(mine)
                    barrier.wait(60)
                    conn.claims.acquire_claims(ROLE, host, mine, 3600)
                    barrier.wait(60)
                    held[(host, r)] = conn.claims.held_claims(ROLE, host)
                    barrier.wait(60)
                    if host == hosts[0]:
                        # Every lease runs out before the next round.
                        table = models.Claim.__table__
                        with self.admin.engine.begin() as c:
                            c.execute(sa.update(table).values(
                                expires_at=models.utc_ago(
                                    sa.literal(1, sa.Integer))))
                    barrier.wait(60)
            except Exception as exc:
                errors.append(exc)
                barrier.abort()

        threads = [threading.Thread(target=run, args=(h,)) for h in hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        for r in range(rounds):
            owners = {}
            for host in hosts:
                for node, epoch in held[(host, r)].items():
                    self.assertNotIn(node, owners,
                                     'round %d: %s held by %s and %s'
                                     % (r, node, owners.get(node), host))
                    owners[node] = host
                    # One successful compare-and-swap per round.
                    self.assertEqual(r + 1, epoch)
            self.assertEqual(set(nodes), set(owners))
        self.assertEqual({rounds}, {c.epoch for c in self.claims().values()})

    def test_lease_runs_out_by_the_database_clock(self):
        a, b = self.connection(), self.connection()
        nodes = _ids(5)
        a.claims.acquire_claims(ROLE, 'a', nodes, 2.5)
        taken_at = time.monotonic()
        b.claims.acquire_claims(ROLE, 'b', nodes, 30)
        self.assertEqual({}, b.claims.held_claims(ROLE, 'b'))

        def b_took_them():
            b.claims.acquire_claims(ROLE, 'b', nodes, 30)
            return b.claims.held_claims(ROLE, 'b')

        held = harness.wait_for(b_took_them, 20, 'b to take the nodes',
                                interval=0.1)
        elapsed = time.monotonic() - taken_at
        self.assertEqual(dict.fromkeys(nodes, 2), held)
        # Not before the lease ran out (SQLite keeps milliseconds).
        self.assertGreaterEqual(elapsed, 2.5 - 0.01)
        self.assertLess(elapsed, 10)
        self.assertEqual({}, a.claims.held_claims(ROLE, 'a'))
        self.assertEqual(0, a.claims.renew_claims(ROLE, 'a', 30))

    def test_a_holder_stopped_inside_a_transaction_blocks_no_takeover(self):
        # A process stopped (SIGSTOP, a frozen VM) between its renewal's
        # UPDATE and its COMMIT keeps the rows locked on the server; the
        # server ends that session after IDLE_IN_TRANSACTION_SECONDS, so a
        # peer takes the nodes when the lease ran out, not when the
        # stopped process resumes. (SQLite: one writer at a time, and a
        # stopped writer's lock ends with the busy timeout.)
        if self.backend == 'sqlite':
            self.skipTest('no server sessions on SQLite')
        a, b = self.connection(), self.connection()
        nodes = _ids(3)
        a.claims.acquire_claims(ROLE, 'a', nodes, 2)
        table = models.Claim.__table__
        stuck = a.engine.connect()
        self.addCleanup(stuck.close)
        stuck.begin()
        stuck.execute(sa.update(table).where(
            table.c.owner == 'a').values(updated_at=models.utcnow()))
        # ... and "a" stops here, its transaction open, its rows locked.
        started = time.monotonic()

        def take():
            b.claims.acquire_claims(ROLE, 'b', nodes, 30)
            return len(b.claims.held_claims(ROLE, 'b')) == len(nodes)

        harness.wait_for(take, 30, 'b to take the nodes of a stopped a',
                         interval=0.2)
        took = time.monotonic() - started
        self.assertLess(took, db_api.IDLE_IN_TRANSACTION_SECONDS + 5)
        # The server ended a's session: what it had not committed is gone.
        self.assertRaises(db_exc.DBConnectionError, stuck.commit)

    def test_claim_left_and_the_answering_node(self):
        # One statement proves a claim of an incarnation by the server's
        # clock; the claim round's first statement names the database
        # node on MariaDB (none elsewhere).
        a = self.connection()
        node = _ids(1)
        a.services.register_service('a', ROLE, 'inc-a', 'test', None)
        a.claims.acquire_claims(ROLE, 'a', node, 60, incarnation='inc-a')
        epoch, left = a.claims.claim_left(ROLE, 'a', node[0], 'inc-a')
        self.assertEqual(1, epoch)
        self.assertGreater(left, 55)
        self.assertLessEqual(left, 60)
        self.assertIsNone(a.claims.claim_left(ROLE, 'b', node[0], 'inc-a'))
        self.assertIsNone(a.claims.claim_left(ROLE, 'a', node[0], 'inc-x'))
        self.age('a', 5)
        self.assertLess(a.claims.claim_left(ROLE, 'a', node[0],
                                            'inc-a')[1], -4)
        # The host name given up: the incarnation proves nothing.
        a.claims.renew_claims(ROLE, 'a', 60)
        a.services.release_service('a', ROLE, 'inc-a', down=True)
        self.assertIsNone(a.claims.claim_left(ROLE, 'a', node[0], 'inc-a'))
        ticks = iter(range(10, 100))
        _claims, server = a.claims.owned_claims(
            ROLE, 'a', clock=lambda: next(ticks))
        self.assertIsNotNone(server.time.tzinfo)
        # The clock is read just around the one statement that read the
        # server's time.
        self.assertEqual((10, 11), (server.before, server.after))
        if self.backend == 'mysql':
            self.assertRegex(server.node, r'^.+:\d+$')
        else:
            self.assertIsNone(server.node)

    def test_renew_moves_the_expiry_and_keeps_the_epoch(self):
        a = self.connection()
        nodes = _ids(3)
        a.claims.acquire_claims(ROLE, 'a', nodes, 2)
        before = self.claims()
        self.assertEqual(3, a.claims.renew_claims(ROLE, 'a', 600))
        after = self.claims()
        snap_as_of = self.admin.claims.read_claims(ROLE).as_of
        for node in nodes:
            self.assertEqual(before[node].epoch, after[node].epoch)
            self.assertEqual(before[node].claimed_at, after[node].claimed_at)
            self.assertGreater(
                (after[node].expires_at - snap_as_of).total_seconds(), 590)
            self.assertGreaterEqual(after[node].updated_at,
                                    before[node].updated_at)
        self.age('a', 1)
        self.assertEqual(0, a.claims.renew_claims(ROLE, 'a', 600))

    def test_release_and_epochs_only_increase(self):
        a, b = self.connection(), self.connection()
        node = _ids(1)
        epochs = []
        for turn in range(3):
            for host, conn in (('a', a), ('b', b)):
                conn.claims.acquire_claims(ROLE, host, node, 60)
                held = conn.claims.held_claims(ROLE, host)
                self.assertEqual(node, list(held))
                epochs.append(held[node[0]])
                # A renewal and a refused claim change nothing.
                conn.claims.renew_claims(ROLE, host, 60)
                other = 'b' if host == 'a' else 'a'
                (b if host == 'a' else a).claims.acquire_claims(
                    ROLE, other, node, 60)
                self.assertEqual(epochs[-1], self.claims()[node[0]].epoch)
                self.assertEqual(1, conn.claims.release_claims(ROLE, host,
                                                               node))
                record = self.claims()[node[0]]
                self.assertEqual((None, False, epochs[-1]),
                                 (record.owner, record.valid, record.epoch))
        self.assertEqual(list(range(1, 7)), epochs)

    def test_host_clock_skew_plays_no_part(self):
        nodes = _ids(3)
        skew = datetime.timedelta(minutes=10)
        with mock.patch('time.time', lambda: 0.0), mock.patch.object(
                timeutils, 'utcnow',
                lambda *a, **k: datetime.datetime(2001, 1, 1) + skew):
            self.connection().claims.acquire_claims(ROLE, 'skewed', nodes, 30)
        snap = self.admin.claims.read_claims(ROLE)
        for record in snap.claims:
            self.assertTrue(record.valid)
            remaining = (record.expires_at - snap.as_of).total_seconds()
            self.assertTrue(25 < remaining <= 30, remaining)


class TestClaimRounds(ClaimsTestBase):

    def test_handover_between_concurrent_services(self):
        """Services whose views of the ring lag never report a node twice.

        A coordinator moves nodes between four services every few hundred
        milliseconds; each service reads the assignment at its own pace
        (as real services see a membership change at different times),
        runs a claim round and publishes what it may report. At every
        publication, no node may be in the published set of another
        service whose lease is still valid.
        """
        hosts = ['svc-%d' % i for i in range(4)]
        nodes = _ids(80)
        managers = {h: self.manager(h, lease=60, margin=6) for h in hosts}
        rng = random.Random(42)
        assignment = {n: rng.choice(hosts) for n in nodes}
        lock = threading.Lock()
        published = {h: frozenset() for h in hosts}
        stop = threading.Event()
        violations, errors, rounds = [], [], []

        def service(host):
            manager = managers[host]
            try:
                while not stop.is_set():
                    with lock:
                        wanted = [n for n, h in assignment.items()
                                  if h == host]
                    out = manager.round(wanted)
                    if not out.ok:
                        raise AssertionError(out.error)
                    now = time.monotonic()
                    with lock:
                        for other in hosts:
                            if other == host:
                                continue
                            theirs = managers[other].reportable(
                                published[other], now=now)
                            both = theirs & out.ring_reported
                            if both:
                                violations.append((host, other, both))
                        published[host] = out.ring_reported
                        rounds.append(host)
                    time.sleep(rng.uniform(0, 0.05))
            except Exception as exc:
                errors.append(exc)
                stop.set()

        threads = [threading.Thread(target=service, args=(h,))
                   for h in hosts]
        for t in threads:
            t.start()
        try:
            for _ in range(8):
                if stop.wait(0.4):
                    break
                with lock:
                    for n in rng.sample(nodes, 20):
                        assignment[n] = rng.choice(hosts)
            # Then let every service catch up with the last assignment.
            harness.wait_for(
                lambda: all(published[h] == frozenset(
                    n for n, o in assignment.items() if o == h)
                    for h in hosts),
                60, 'every service to report its share', interval=0.1,
                check=lambda: self.assertEqual([], errors))
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual([], errors)
        self.assertEqual([], violations)
        self.assertGreater(len(rounds), 40)
        owners = {n: c.owner for n, c in self.claims().items() if c.valid}
        self.assertEqual(assignment, {n: owners.get(n) for n in nodes})

    def test_dead_service_nodes_are_taken_after_its_lease(self):
        a = self.manager('a', lease=30, margin=3)
        b = self.manager('b', lease=30, margin=3)
        nodes = _ids(10)
        self.assertEqual(frozenset(nodes), a.round(nodes).reported)
        # a dies (no more rounds); b's ring now gives it everything.
        out = b.round(nodes)
        self.assertEqual(frozenset(nodes), out.waiting)
        self.age('a', 0)
        out = b.round(nodes)
        self.assertEqual(frozenset(nodes), out.reported)
        self.assertEqual({2}, set(out.epochs.values()))

    def test_round_statements_grow_only_by_chunk(self):
        counts = []
        for n in (10, 1000, 5000):
            a = self.manager('a-%d' % n)
            nodes = _ids(n, start=100000 * len(counts))
            a.round(nodes)
            counts.append(a.round(nodes).statements)
        # The server's time, read own, renew (one UPDATE per chunk of
        # 2,000 nodes); with every claim renewed, nothing is read back.
        self.assertEqual([3, 3, 5], counts)


class TestFencingOverProxy(ClaimsTestBase):
    """A service cut off from the database fences itself in time."""

    def setUp(self):
        super().setUp()
        if self.backend == 'sqlite':
            self.skipTest('SQLite has no connection to cut')
        url = sa_url.make_url(self.url)
        self.proxy = self.useFixture(proxy.TCPProxy(
            url.host or '127.0.0.1',
            url.port or (5432 if self.backend == 'postgresql' else 3306)))
        self.proxied = url.set(host='127.0.0.1',
                               port=self.proxy.port).render_as_string(
                                   hide_password=False)

    def test_cut_service_fences_before_another_may_claim(self):
        lease, margin = 4.0, 1.0
        a = self.manager('a', lease=lease, margin=margin, url=self.proxied)
        b = self.manager('b', lease=lease, margin=margin)
        nodes = _ids(20)
        first = a.round(nodes)
        self.assertEqual(frozenset(nodes), first.ring_reported)
        self.proxy.cut()
        history = []

        def step():
            a_out = a.round(nodes)
            b_start = time.monotonic()
            b_out = b.round(nodes)
            b_end = time.monotonic()
            # At the instant b may start reporting, a must report none.
            overlap = a.reportable(nodes, now=b_end) & b_out.ring_reported
            history.append((b_start, b_end, a_out, b_out, overlap))
            return b_out.ring_reported

        harness.wait_for(step, 30, 'b to take the nodes of a',
                         interval=0.05)
        self.assertEqual([], [h for h in history if h[4]])
        self.assertFalse(any(h[2].ok for h in history))
        # While a still reported its nodes, b was refused every one.
        still = [h for h in history if h[2].ring_reported]
        self.assertTrue(still)
        self.assertTrue(all(not h[3].ring_reported for h in still))
        b_start, b_end, a_out, b_out, _o = history[-1]
        self.assertEqual(frozenset(nodes), b_out.ring_reported)
        self.assertEqual(frozenset(nodes), a_out.fenced)
        self.assertEqual(frozenset(), a_out.ring_reported)
        # a's fence came at least (about) the margin before b's claim.
        fence_at = first.valid_until
        self.assertGreaterEqual(b_end - fence_at, margin * 0.9)
        self.assertTrue(a.fenced(b_start))
        # The link returns: a learns that b holds them and waits.
        self.proxy.restore()
        out = a.round(nodes)
        self.assertTrue(out.ok, out.error)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(nodes), out.waiting)

    def test_short_cut_keeps_the_claims(self):
        a = self.manager('a', lease=30, margin=3, url=self.proxied)
        b = self.manager('b', lease=30, margin=3)
        nodes = _ids(5)
        a.round(nodes)
        self.proxy.cut()
        out = a.round(nodes)
        self.assertFalse(out.ok)
        self.assertEqual(frozenset(nodes), out.ring_reported)
        self.assertEqual(frozenset(nodes), b.round(nodes).waiting)
        self.proxy.restore()
        harness.wait_for(lambda: a.round(nodes).ok, 20,
                         'a to reach the database again', interval=0.2)
        self.assertEqual(frozenset(nodes), a.round(nodes).ring_reported)
        self.assertEqual({1}, {c.epoch for c in self.claims().values()})
