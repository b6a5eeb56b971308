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

"""Claim rounds and self-fencing, with injected clocks and a fake database.

The fake database keeps claims the way the SQL in ``db/api.py`` does
(leases by the database's own clock, renewal of valid claims only, takes
only of free rows with the epoch incremented) and fails on demand. The same
scenarios run on real databases in ``tests/functional/db/test_claims.py``.
"""

import collections
import datetime
import threading
import time
import types
from unittest import mock
import uuid

import fixtures
from oslo_db import exception as db_exc

from ironic_partition.claims import db_clock
from ironic_partition.claims import lease_timer
from ironic_partition.claims import manager as claims
from ironic_partition.db import api as db_api
from ironic_partition.db import claims as claims_db
from ironic_partition.db import identity
from ironic_partition.db import migration
from ironic_partition.db import store
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.membership import database
from ironic_partition.partition import partitioner
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings
from ironic_partition.tests import base
from ironic_partition.tests.unit.partition import test_partitioner

LEASE = 120.0
MARGIN = 12.0


class Clock(object):
    """A settable monotonic clock."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class FakeClaimsDB(object):
    """A claims database in memory: the connection and its claims API.

    Claims live in memory, with a clock of their own and injectable
    faults.

    :param clock: the database server's clock (seconds).
    """

    dialect = 'postgresql'
    masked_connection = 'postgresql://fake:***@db/claims'

    def __init__(self, clock):
        self.clock = clock
        self.rows = {}
        self.stats = collections.Counter()
        self.fail = None
        self.fail_on = None
        self.revision = migration.head_revision()
        #: Called at every statement: lets a test move clocks mid-round.
        self.on_statement = None
        #: The database node that answers (a Galera node), or None.
        self.node = None

    def _statement(self, name):
        self.stats['claim_statements'] += 1
        if self.on_statement is not None:
            self.on_statement(name)
        if self.fail is not None and self.fail_on in (None, name):
            raise self.fail

    def _valid(self, row):
        return row['owner'] is not None and row['expires'] > self.clock()

    def schema_revision(self):
        return self.revision

    def upgrade(self):
        self.revision = migration.head_revision()
        return self.revision

    def ensure_schema(self, upgrade=True):
        return db_api.Connection.ensure_schema(self, upgrade=upgrade)

    @property
    def claims(self):
        return self

    def check_supported(self):
        pass

    def dispose(self):
        pass

    @staticmethod
    def _mine(row, host, incarnation):
        return row['owner'] == host and (
            incarnation is None or row.get('incarnation') == incarnation)

    def owned_claims(self, role, host, incarnation=None, clock=None):
        server = None
        if clock is not None:
            before = clock()
            self._statement('now')
            now = datetime.datetime.fromtimestamp(self.clock(),
                                                  datetime.timezone.utc)
            server = claims_db.ServerTime(now, self.node, before, clock())
        self._statement('owned')
        claims = {n: claims_db.OwnedClaim(r['epoch'], self._valid(r))
                  for (ro, n), r in self.rows.items()
                  if ro == role and self._mine(r, host, incarnation)}
        return claims if clock is None else (claims, server)

    def held_claims(self, role, host, incarnation=None):
        self._statement('held')
        return {n: r['epoch'] for (ro, n), r in self.rows.items()
                if ro == role and self._mine(r, host, incarnation)
                and self._valid(r)}

    def claim_left(self, role, host, node_id, incarnation):
        self._statement('left')
        row = self.rows.get((role, node_id))
        if row is None or not self._mine(row, host, incarnation) \
                or row['owner'] is None:
            return None
        return row['epoch'], row['expires'] - self.clock()

    def read_claims(self, role, node_ids=None, owner=None):
        self._statement('read')
        return types.SimpleNamespace(claims=tuple(
            types.SimpleNamespace(node_id=n, owner=r['owner'],
                                  valid=self._valid(r))
            for (ro, n), r in sorted(self.rows.items())
            if ro == role and (node_ids is None or n in node_ids)))

    def renew_claims(self, role, host, lease, incarnation=None,
                     node_ids=None):
        self._statement('renew')
        count = 0
        for (ro, n), r in self.rows.items():
            if (ro == role and self._mine(r, host, incarnation)
                    and (node_ids is None or n in node_ids)
                    and self._valid(r)):
                r['expires'] = self.clock() + lease
                count += 1
        return count

    def release_claims(self, role, host, node_ids=None, incarnation=None):
        self._statement('release')
        count = 0
        for (ro, n), r in self.rows.items():
            if (ro == role and self._mine(r, host, incarnation)
                    and (node_ids is None or n in node_ids)):
                r.update(owner=None, expires=self.clock(), incarnation=None)
                count += 1
        return count

    def acquire_claims(self, role, host, node_ids, lease,
                       partition_key=None, incarnation=None):
        self._statement('acquire')
        for node in node_ids:
            row = self.rows.get((role, node))
            if row is None:
                self.rows[(role, node)] = {'owner': host, 'epoch': 1,
                                           'expires': self.clock() + lease,
                                           'incarnation': incarnation}
            elif not self._valid(row):
                row.update(owner=host, epoch=row['epoch'] + 1,
                           expires=self.clock() + lease,
                           incarnation=incarnation)

    def adopt_claims(self, role, host, incarnation, previous=None):
        self._statement('adopt')
        count = 0
        for (ro, _n), r in self.rows.items():
            if (ro == role and r['owner'] == host
                    and r.get('incarnation') in (None, previous)):
                r['incarnation'] = incarnation
                count += 1
        return count

    def collect_garbage(self, role, older_than):
        self._statement('gc')
        old = [key for key, r in self.rows.items()
               if key[0] == role and r['expires'] <= self.clock() - older_than]
        for key in old:
            del self.rows[key]
        return len(old)

    def owner(self, node, role='nova-compute'):
        row = self.rows.get((role, node))
        return row['owner'] if row and self._valid(row) else None


#: The claims' loggers: the manager's and the clock watch's.
CLAIMS_LOGGER = 'ironic_partition.claims'

#: nova's cadence on its defaults: a 60 s resource tracker.
NOVA_CADENCE = claim_settings.nova_cadence(0)


def _settings(conf, cadence=None):
    return settings_mod.for_tests(conf=conf, cadence=cadence).claims()


def _ids(n, start=0):
    return [str(uuid.UUID(int=i + 1)) for i in range(start, start + n)]


class RecordingIdentity(object):
    """An identity that keeps what the claim rounds note."""

    def __init__(self, inherited=None):
        self.incarnation = None
        self.adoptable = None
        self.lost = None
        self.registered = True
        self.inherited_clocks = inherited
        self.node = self.clocks = None

    def note_claim_round(self, node, clocks):
        self.node = node
        self.clocks = clocks or self.clocks


class ClaimsTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        # NOTE(ironic-partition): the database clock is minutes off the
        # hosts' clocks on purpose: only durations may matter.
        self.db_clock = Clock(5_000_000.0)
        self.db = FakeClaimsDB(self.db_clock)
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))

    def advance(self, seconds):
        self.clock.now += seconds
        self.db_clock.now += seconds

    def manager(self, host, lease=LEASE, margin=MARGIN, clock=None):
        return claims.ClaimManager(store.Store(self.db), host, 'nova-compute',
                                   lease_time=lease, fencing_margin=margin,
                                   clock=clock or self.clock)


class TestSettings(base.TestCase):

    def test_automatic_values(self):
        # Defaults: refresh 30 s, service_down_time 60 s.
        settings = _settings(self.conf)
        self.assertEqual(('auto', 60.0, 6.0, 18.0), tuple(settings))
        self.config(group='ironic_partition', refresh_interval=10,
                    service_down_time=60)
        self.assertEqual(60.0, _settings(self.conf).lease_time)
        self.config(group='ironic_partition', lease_time=50,
                    fencing_margin=3.5)
        self.assertEqual((50.0, 3.5),
                         _settings(self.conf)[1:3])

    def test_lease_must_outlive_two_refreshes(self):
        self.config(group='ironic_partition', refresh_interval=60,
                    lease_time=100)
        e = self.assertRaises(exception.ConfigurationError,
                              _settings, self.conf)
        self.assertIn('[ironic_partition] lease_time', str(e))
        self.assertIn('refresh_interval (60)', str(e))
        self.assertIn('at least 120', str(e))

    def test_margin_must_leave_the_timer_time_to_renew(self):
        self.config(group='ironic_partition', refresh_interval=60,
                    lease_time=120, fencing_margin=119.5)
        e = self.assertRaises(exception.ConfigurationError,
                              _settings, self.conf)
        self.assertIn('[ironic_partition] fencing_margin', str(e))
        self.assertIn('lease_time (120)', str(e))

    def test_slow_refreshes_no_longer_bound_the_margin(self):
        # The lease timer renews the claims, not the refreshes.
        self.config(group='ironic_partition', refresh_interval=60,
                    lease_time=120, fencing_margin=60)
        self.assertEqual(20.0, _settings(self.conf).renew_interval)

    def test_nova_cadence_sets_the_automatic_values(self):
        # nova asks the driver before every action on a node; what follows
        # a check is one write of at most the write window (10 s). The
        # fence comes that long, plus a tenth of the lease, before the
        # lease runs out; the lease is service_down_time: a dead compute's
        # nodes move when nova's own driver would move them.
        cadence = NOVA_CADENCE
        self.assertEqual((60, 10.0, 0), (cadence.interval, cadence.hold,
                                         cadence.lease_floor))
        settings = _settings(self.conf, cadence)
        self.assertEqual(60.0, settings.lease_time)
        self.assertEqual(16.0, settings.fencing_margin)
        self.assertAlmostEqual(44.0 / 3, settings.renew_interval)

    def test_a_margin_set_alone_keeps_the_renewal_room(self):
        # A margin copied from the former defaults (72 s): the lease keeps
        # the 44 s the automatic values leave between the last renewal
        # and the fence, not 3 s.
        self.config(group='ironic_partition', fencing_margin=72)
        settings = _settings(self.conf, NOVA_CADENCE)
        self.assertEqual((116.0, 72.0), (settings.lease_time,
                                         settings.fencing_margin))
        # The agent's defaults: 54 s of room.
        self.config(group='ironic_partition', fencing_margin=10)
        self.assertEqual(64.0, _settings(self.conf).lease_time)

    def test_nova_hold_is_one_interval_when_shorter(self):
        # The test lanes' cadence: a run every 4 s asks again sooner than
        # the write window runs out.
        cadence = claim_settings.nova_cadence(4)
        self.assertEqual(4, cadence.hold)
        self.config(group='ironic_partition', service_down_time=10)
        settings = _settings(self.conf, cadence)
        self.assertEqual((10.0, 5.0), (settings.lease_time,
                                       settings.fencing_margin))

    def test_nova_cadence_of_a_disabled_task_keeps_the_default(self):
        self.assertEqual(60, claim_settings.nova_cadence(-1).interval)

    def test_no_warning_on_nova_defaults(self):
        # The guide's nova.conf sets no timing option.
        logger = self.useFixture(fixtures.FakeLogger())
        cadence = NOVA_CADENCE
        self.assertEqual(60.0,
                         _settings(self.conf, cadence).lease_time)
        self.assertNotIn('is not shorter than', logger.output)

    def test_warning_on_a_long_lease_the_operator_set(self):
        logger = self.useFixture(fixtures.FakeLogger())
        cadence = NOVA_CADENCE
        self.config(group='ironic_partition', lease_time=240)
        _settings(self.conf, cadence)
        self.assertIn('lease_time (240) is not shorter than '
                      'service_down_time (60) plus [DEFAULT] '
                      'update_resources_interval (60)', logger.output)

    def test_lease_may_be_shorter_than_two_nova_runs(self):
        # The lease timer renews the claims and nova asks before every
        # action: nothing ties the lease to nova's runs any more.
        cadence = NOVA_CADENCE
        self.config(group='ironic_partition', lease_time=40)
        settings = _settings(self.conf, cadence)
        self.assertEqual((40.0, 14.0), (settings.lease_time,
                                        settings.fencing_margin))

    def test_margin_must_cover_nova_hold(self):
        cadence = NOVA_CADENCE
        self.config(group='ironic_partition', lease_time=180,
                    fencing_margin=8)
        e = self.assertRaises(exception.ConfigurationError,
                              _settings, self.conf, cadence)
        self.assertIn('[ironic_partition] fencing_margin', str(e))
        self.assertIn('at least 10.0 s', str(e))
        self.assertIn('[DEFAULT] update_resources_interval (60)', str(e))

    def test_long_lease_warns_about_failover_bound(self):
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        self.config(group='ironic_partition', refresh_interval=10,
                    service_down_time=30, lease_time=100)
        _settings(self.conf)
        self.assertIn('up to 110 s', logger.output)

    def test_lease_equal_to_down_time_plus_refresh_warns(self):
        # The soak's settings: 10 s refreshes, 10 s service_down_time, so
        # an automatic 20 s lease, and a bound of 30 s plus one refresh.
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        self.config(group='ironic_partition', refresh_interval=10,
                    service_down_time=10)
        self.assertEqual(20.0, _settings(self.conf).lease_time)
        self.assertIn('up to 30 s plus one refresh', logger.output)

    def test_defaults_meet_the_i2_bound_silently(self):
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        _settings(self.conf)
        self.assertNotIn('lease_time', logger.output)

    def test_partitioner_validates_at_start(self):
        self.config(group='ironic_partition', claims='database',
                    refresh_interval=60, lease_time=61)
        self.config(group='ironic', partition_key=None)
        self.assertRaises(exception.ConfigurationError,
                          partitioner.Partitioner,
                          settings_mod.from_conf(self.conf),
                          test_partitioner.FakeClient([]),
                          test_partitioner.FakeMembership(['x']))


class FakeBackend(object):
    def __init__(self, name, db=None, role='agent'):
        self.name = name
        self.role = role
        self.store = (store.Store(db, identity.Identity(db, 'cn1', role, 60))
                      if db is not None else None)


class TestWanted(base.TestCase):

    def test_auto_follows_the_membership_backend(self):
        db = FakeClaimsDB(Clock())
        wanted = claim_settings.wanted
        mode = self.conf.ironic_partition.claims
        self.assertTrue(wanted(mode, FakeBackend('database', db).store))
        self.assertFalse(wanted(mode, FakeBackend('nova').store))
        self.assertFalse(wanted(mode, FakeBackend('static').store))

    def test_explicit_modes(self):
        self.config(group='ironic_partition', claims='database')
        self.assertTrue(claim_settings.wanted('database', None))
        db = FakeClaimsDB(Clock())
        self.assertFalse(claim_settings.wanted(
            'off', FakeBackend('database', db).store))

    def test_database_backend_shares_its_connection_and_role(self):
        db = FakeClaimsDB(Clock())
        backend = FakeBackend('database', db)
        manager = claims.from_settings(
            settings_mod.for_tests('CN1', conf=self.conf),
            store=backend.store, role=backend.role)
        self.assertIs(backend.store, manager.store)
        self.assertIs(backend.store.identity, manager.identity)
        self.assertEqual(('cn1', 'agent'), (manager.host, manager.role))

    def test_static_backend_with_claims_database_connects(self):
        self.config(group='ironic_partition', claims='database')
        self.config(group='ironic_partition_database',
                    connection='postgresql+psycopg2://u:pw@db/x')
        manager = claims.from_settings(
            settings_mod.for_tests('cn1', conf=self.conf))
        self.assertIsInstance(manager.store.db, db_api.Connection)
        self.assertEqual('cn1', manager.identity.host)
        self.assertEqual('nova-compute', manager.role)
        self.assertEqual('postgresql+psycopg2://u:***@db/x',
                         manager.status()['connection'])

    def test_off_returns_none(self):
        self.assertIsNone(claims.from_settings(
            settings_mod.for_tests('cn1', conf=self.conf)))


class TestRound(ClaimsTestCase):

    def test_claims_ring_and_instance_nodes(self):
        a = self.manager('a')
        ring, inst = _ids(5), _ids(2, start=10)
        out = a.round(ring, inst, partition_key='rack1')
        self.assertTrue(out.ok)
        self.assertEqual(frozenset(ring), out.ring_reported)
        self.assertEqual(frozenset(ring + inst), out.reported)
        self.assertEqual(frozenset(ring + inst), out.claimed)
        self.assertEqual({1}, set(out.epochs.values()))
        self.assertEqual(self.clock.now + LEASE - MARGIN, out.valid_until)
        # Steady state: three statements (the server's time, read our
        # claims, renew them), whatever the node count; what we hold is
        # then known.
        self.advance(60)
        out = a.round(ring, inst)
        self.assertEqual(frozenset(), out.claimed)
        self.assertEqual(3, out.statements)

    def test_second_service_waits_and_never_overlaps(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(10)
        self.assertEqual(frozenset(nodes), a.round(nodes).reported)
        out = b.round(nodes)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(nodes), out.waiting)
        self.assertEqual(frozenset(), out.fenced)

    def test_release_is_deferred_by_one_refresh(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(10)
        a.round(nodes)
        # The ring now gives the last four to b.
        first = a.round(nodes[:6])
        self.assertEqual(frozenset(nodes[:6]), first.reported)
        self.assertEqual(frozenset(), first.released)
        self.assertEqual(frozenset(nodes[6:]),
                         b.round(nodes[6:]).waiting)
        # Only once a's reported set left them out is the claim released.
        second = a.round(nodes[:6])
        self.assertEqual(frozenset(nodes[6:]), second.released)
        out = b.round(nodes[6:])
        self.assertEqual(frozenset(nodes[6:]), out.reported)
        self.assertEqual({2}, set(out.epochs.values()))

    def test_failed_round_keeps_what_the_last_good_one_reported(self):
        a = self.manager('a')
        nodes = _ids(10)
        a.round(nodes)
        # The ring shrinks while the database is away: that round fails,
        # the refresh is not ready and the consumer keeps the last good
        # result, which lists all ten.
        self.db.fail = db_exc.DBConnectionError('down')
        self.assertFalse(a.round(nodes[:6]).ok)
        self.db.fail = None
        # The next good round must not hand over nodes still reported.
        out = a.round(nodes[:6])
        self.assertEqual(frozenset(), out.released)
        self.assertEqual(frozenset(nodes[6:]), a.round(nodes[:6]).released)

    def test_release_unreported_hands_over_at_once(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(4)
        a.round(nodes)
        a.round(nodes[:2])
        self.assertEqual(2, a.release_unreported())
        self.assertEqual(frozenset(nodes[2:]), b.round(nodes[2:]).reported)

    def test_release_unreported_without_pending_costs_nothing(self):
        a = self.manager('a')
        a.round(_ids(4))
        before = a.store.stats['claim_statements']
        self.assertEqual(0, a.release_unreported())
        self.assertEqual(before, a.store.stats['claim_statements'])

    def test_instance_node_is_held_until_no_longer_reported(self):
        # A node whose instance a owns; the instance is deleted and the
        # ring gives the node to b: b must wait until a stopped reporting.
        a, b = self.manager('a'), self.manager('b')
        node = _ids(1)
        self.assertEqual(frozenset(node), a.round([], node).reported)
        self.assertEqual(frozenset(), a.round([], []).reported)
        self.assertEqual(frozenset(node), b.round(node).waiting)
        self.assertEqual(frozenset(node), a.round([], []).released)
        self.assertEqual(frozenset(node), b.round(node).reported)

    def test_expired_claim_is_taken_with_a_new_epoch(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(3)
        a.round(nodes)
        self.advance(LEASE - 0.001)
        self.assertEqual(frozenset(), b.round(nodes).reported)
        self.advance(0.001)
        out = b.round(nodes)
        self.assertEqual(frozenset(nodes), out.reported)
        self.assertEqual({2}, set(out.epochs.values()))
        # a comes back: the nodes are gone, it is told to wait.
        out = a.round(nodes)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(nodes), out.waiting)

    def test_own_expired_claim_is_taken_back_with_a_new_epoch(self):
        a = self.manager('a')
        nodes = _ids(2)
        a.round(nodes)
        self.advance(LEASE + 1)
        out = a.round(nodes)
        self.assertEqual(frozenset(nodes), out.reported)
        self.assertEqual(frozenset(nodes), out.claimed)
        self.assertEqual({2}, set(out.epochs.values()))

    def test_restart_releases_stale_claims_of_a_previous_run(self):
        nodes = _ids(4)
        self.manager('a').round(nodes)
        restarted = self.manager('a')
        out = restarted.round(nodes[:2])
        self.assertEqual(frozenset(nodes[:2]), out.reported)
        self.assertEqual(frozenset(nodes[2:]), out.released)
        self.assertEqual(frozenset(), out.claimed)

    def test_stop_releases_everything(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(3)
        a.round(nodes)
        self.assertEqual(3, a.stop())
        self.assertTrue(a.fenced())
        self.assertEqual(frozenset(), a.reportable(nodes))
        self.assertEqual(frozenset(nodes), b.round(nodes).reported)

    def test_stop_keeping_the_claims_for_a_restart(self):
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(3)
        epochs = dict(a.round(nodes).epochs)
        self.assertEqual(0, a.stop(release=False))
        self.assertTrue(a.fenced())
        self.assertEqual(frozenset(), a.reportable(nodes))
        # Nobody else may take them while the lease runs.
        self.assertEqual(frozenset(nodes), b.round(nodes).waiting)
        # The restarted service takes them back, same epochs: no move.
        again = self.manager('a').round(nodes)
        self.assertEqual(frozenset(nodes), again.reported)
        self.assertEqual(frozenset(), again.claimed)
        self.assertEqual(epochs, dict(again.epochs))


class TestFencing(ClaimsTestCase):

    def test_database_down_reports_until_lease_minus_margin(self):
        a = self.manager('a')
        ring, inst = _ids(5), _ids(1, start=10)
        a.round(ring, inst)
        deadline = self.clock.now + LEASE - MARGIN
        self.db.fail = db_exc.DBConnectionError('connection refused')
        self.advance(60)
        out = a.round(ring, inst)
        self.assertFalse(out.ok)
        self.assertIn('DBConnectionError', out.error)
        self.assertEqual(frozenset(ring), out.ring_reported)
        self.assertEqual(deadline, out.valid_until)
        self.assertIn('still reporting 6 claimed nodes for 48.0 s',
                      self.logger.output)
        self.advance(deadline - self.clock.now - 0.001)
        self.assertEqual(frozenset(ring + inst),
                         a.round(ring, inst).reported)
        self.advance(0.001)
        out = a.round(ring, inst)
        # Fenced: nothing, not even the instance node (its claim may be
        # another process's by now, after a takeover).
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(ring + inst), out.fenced)
        self.assertEqual(frozenset(), a.reportable(ring + inst))
        self.assertIsNone(out.valid_until)
        self.assertIn('Fenced: the claims of a were not renewed',
                      self.logger.output)
        # The database returns before the lease ran out by its clock:
        # nobody could take the claims, they are renewed as they were.
        self.db.fail = None
        out = a.round(ring, inst)
        self.assertEqual(frozenset(ring + inst), out.reported)
        self.assertEqual({1}, set(out.epochs.values()))
        self.assertEqual(frozenset(), out.claimed)
        self.assertIn('No longer fenced', self.logger.output)
        self.assertIn('succeeded again after 3 failures', self.logger.output)

    def test_round_ending_past_its_fence_is_a_failed_round(self):
        # Every statement succeeds, but the renewal waits on a row lock
        # for most of a lease: the round ends after the fence it set.
        a = self.manager('a')
        ring, inst = _ids(5), _ids(1, start=10)
        a.round(ring, inst)
        window = LEASE - MARGIN

        def slow(name):
            if name == 'renew':
                self.advance(window + 1)
        self.db.on_statement = slow
        out = a.round(ring, inst)
        self.assertFalse(out.ok)
        self.assertIn('the claim round ended 1.0 s after its own fence',
                      out.error)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(ring + inst), out.fenced)
        self.assertIn('Claim round of a in', self.logger.output)
        # The next round in time is a success again, with the same claims.
        self.db.on_statement = None
        out = a.round(ring, inst)
        self.assertTrue(out.ok)
        self.assertEqual(frozenset(ring + inst), out.reported)
        self.assertEqual(frozenset(), out.claimed)

    def test_fenced_before_anyone_else_may_claim(self):
        # a is cut off from the database right after a renewal; b tries
        # to claim every 100 ms. At no instant may both report a node.
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(4)
        a.round(nodes)
        self.db.fail_on = None

        cut = {'on': True}

        def a_round():
            saved, self.db.fail = self.db.fail, (
                db_exc.DBConnectionError('cut') if cut['on'] else None)
            try:
                return a.round(nodes)
            finally:
                self.db.fail = saved

        first_b = None
        for _step in range(int((LEASE + 5) * 10)):
            self.advance(0.1)
            a_reports = a_round().ring_reported
            b_reports = b.round(nodes).ring_reported
            self.assertEqual(frozenset(), a_reports & b_reports)
            self.assertEqual(frozenset(), a.reportable(nodes) & b_reports)
            if b_reports and first_b is None:
                first_b = self.clock.now
        self.assertIsNotNone(first_b)
        # b got the nodes no earlier than the margin after a's fence.
        self.assertGreaterEqual(first_b - a.valid_until, MARGIN - 1e-6)

    def test_database_clock_drift_is_covered_by_the_margin(self):
        # The database clock runs 1% fast: leases end early, but not
        # before the local fence, as long as the margin covers the drift.
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(2)
        a.round(nodes)
        self.db.fail_on = 'owned'
        self.db.fail = db_exc.DBConnectionError('cut')
        for _step in range(1300):
            self.clock.now += 0.1
            self.db_clock.now += 0.101
            a_reports = a.round(nodes).ring_reported
            self.db.fail = None
            b_reports = b.round(nodes).ring_reported
            self.db.fail = db_exc.DBConnectionError('cut')
            self.assertEqual(frozenset(), a_reports & b_reports)

    def test_database_clock_step_widens_the_margin(self):
        # A failover to a database node whose clock is 20 s ahead: every
        # claim looks 20 s closer to its expiry there. After seeing the
        # step, the holder fences 20 s (plus the sampling allowance)
        # before the lease, more than the 12 s margin configured, so the
        # next failover between the same nodes cannot hand a node over
        # before it stopped reporting it.
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(3)
        self.db.node = 'db1:3306'
        a.round(nodes)
        self.assertEqual(self.clock.now + LEASE - MARGIN,
                         a.round(nodes).valid_until)
        self.advance(10)
        self.db_clock.now += 20
        self.db.node = 'db2:3306'
        with self.assertLogs(CLAIMS_LOGGER, 'WARNING') as logs:
            out = a.round(nodes)
        self.assertTrue(out.ok)
        self.assertIn('clock stepped by +20.000 s', logs.output[0])
        self.assertAlmostEqual(20.0, a.clock_watch.difference, places=3)
        margin = 20.0 + db_clock.BASE_ALLOWANCE
        self.assertAlmostEqual(self.clock.now + LEASE - margin,
                               out.valid_until, places=6)
        self.assertAlmostEqual(margin, a.status()['effective_fencing_margin'])
        # Back to a node 20 s behind (the clock steps back): the margin
        # stays wide; and at no instant do a and b both report a node,
        # even when b reads the claims on the node that is ahead.
        self.advance(10)
        self.db_clock.now -= 20
        self.db.node = 'db1:3306'
        a.round(nodes)
        self.db_clock.now += 20
        self.db.node = 'db2:3306'
        for _step in range(40):
            self.advance(5)
            b_reports = b.round(nodes).reported
            self.assertEqual(frozenset(), a.reportable(nodes) & b_reports)

    def _failover_70_s_ahead(self, manager, nodes):
        """A round on db1, then one on db2, whose clock is 70 s ahead."""
        self.db.node = 'db1:3306'
        manager.round(nodes)
        self.advance(10)
        self.db_clock.now += 70
        self.db.node = 'db2:3306'
        return manager.round(nodes)

    def test_database_clock_step_beyond_half_the_lease_fails_closed(self):
        a = self.manager('a')
        nodes = _ids(3)
        out = self._failover_70_s_ahead(a, nodes)
        self.assertFalse(out.ok)
        self.assertEqual(frozenset(), out.reported)
        self.assertIn('more than [ironic_partition] lease_time (120.0 s) '
                      'and fencing_margin (12.0 s) can cover', out.error)
        self.assertIn('ClockStepTooLarge', out.error)
        # It stays refused: the clocks still differ.
        self.advance(10)
        self.assertFalse(a.round(nodes).ok)

    def test_local_stall_fences_at_once_without_blaming_the_database(self):
        # This VM stood still 60 s with its clocks frozen (the lease clock
        # did not count it): the next round reads the same database node
        # 60 s ahead. It fences at once, proves its claims again in that
        # round, keeps its margin, and blames no database.
        a = self.manager('a')
        nodes = _ids(3)
        self.db.node = 'db1:3306'
        a.round(nodes)
        self.db_clock.now += 60
        self.clock.now += 0.5
        with self.assertLogs(CLAIMS_LOGGER, 'WARNING') as logs:
            out = a.round(nodes)
        self.assertTrue(out.ok)
        self.assertEqual(frozenset(nodes), out.reported)
        self.assertIn("This host's lease clock fell 59.500 s behind the "
                      "database server's", logs.output[0])
        self.assertIn('Fenced at once; this round proves the claims again',
                      logs.output[0])
        self.assertNotIn('clock stepped', '\n'.join(logs.output))
        self.assertEqual(0.0, a.clock_watch.difference)
        self.assertEqual(MARGIN, a.status()['effective_fencing_margin'])
        self.assertEqual(self.clock.now + LEASE - MARGIN, out.valid_until)

    def test_a_stall_does_not_lift_a_refusal(self):
        # Refused for a clock difference the lease cannot cover; a stall
        # seen later changes nothing: still refused, nothing reported.
        a = self.manager('a')
        nodes = _ids(3)
        self.assertFalse(self._failover_70_s_ahead(a, nodes).ok)
        self.db_clock.now += 30
        out = a.round(nodes)
        self.assertFalse(out.ok)
        self.assertEqual(frozenset(), out.reported)
        self.assertIn('ClockStepTooLarge', out.error)
        self.assertEqual(1, a.clock_watch.stalls)

    def test_a_restart_inherits_the_refusal_until_measured(self):
        # The refused service's measurements go with its heartbeats; the
        # next process of the host name starts from them: refused on db1
        # as well, until a round on db2 finds its clock put right.
        a = self.manager('a')
        a.identity = me = RecordingIdentity()
        nodes = _ids(3)
        self.assertFalse(self._failover_70_s_ahead(a, nodes).ok)
        # A refused round records what it measured, not where it went.
        self.assertIsNone(me.node)
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 70.0}, me.clocks)
        b = self.manager('a')
        b.identity = RecordingIdentity(inherited=me.clocks)
        self.db_clock.now -= 70
        self.db.node = 'db1:3306'
        self.advance(10)
        with self.assertLogs(CLAIMS_LOGGER, 'INFO') as logs:
            out = b.round(nodes)
        self.assertFalse(out.ok)
        self.assertEqual(frozenset(), out.reported)
        self.assertIn('ClockStepTooLarge', out.error)
        self.assertIn('db2:3306 +70.000 s, db1:3306 +0.000 s', out.error)
        self.assertIn('Inherited the clock measurements of the database '
                      'nodes that the previous process of a made: db2:3306 '
                      '+70.000 s, db1:3306 +0.000 s', '\n'.join(logs.output))
        self.assertFalse(b.keepalive())
        # db2's clock put right, and a failover to it: measured, lifted.
        self.advance(10)
        self.db.node = 'db2:3306'
        out = b.round(nodes)
        self.assertTrue(out.ok, out.error)
        self.assertEqual(0.0, b.clock_watch.difference)
        self.assertEqual(frozenset(nodes), out.reported)

    def test_a_failed_round_records_no_claims_node(self):
        # The node of the last good round would be stale after an outage
        # or a failover: the heartbeats must not record it.
        a = self.manager('a')
        a.identity = me = RecordingIdentity()
        nodes = _ids(3)
        self.db.node = 'db1:3306'
        a.round(nodes)
        self.assertEqual('db1:3306', me.node)
        self.db.fail = db_exc.DBConnectionError('down')
        self.assertFalse(a.round(nodes).ok)
        self.assertIsNone(me.node)
        self.assertEqual({'db1:3306': 0.0}, me.clocks)

    def test_a_node_gone_for_good_can_be_forgotten(self):
        # db2 left the cluster for good with its clock 70 s off: nothing
        # can measure it again. Listed in forget_database_clocks, the
        # next process does not take its level over, and says so.
        nodes = _ids(3)
        b = claims.ClaimManager(
            store.Store(self.db), 'a', 'nova-compute', lease_time=LEASE,
            fencing_margin=MARGIN, clock=self.clock,
            forget_clocks=['DB2:3306'])
        b.identity = RecordingIdentity(
            inherited={'db1:3306': 0.0, 'db2:3306': 70.0})
        self.db.node = 'db1:3306'
        with self.assertLogs(CLAIMS_LOGGER, 'WARNING') as logs:
            out = b.round(nodes)
        self.assertTrue(out.ok, out.error)
        self.assertIn('Not taking over the clock of database node '
                      'db2:3306 (+70.000 s)', logs.output[0])
        self.assertIn('forget_database_clocks', logs.output[0])
        self.assertEqual(0.0, b.clock_watch.difference)
        self.assertEqual({'db1:3306': 0.0}, b.identity.clocks)

    def test_local_stall_fences_before_the_round_concludes(self):
        # Between the stall's discovery and the renewal, nothing proven
        # by the stopped clock is reportable.
        a = self.manager('a')
        nodes = _ids(3)
        a.round(nodes)
        self.db_clock.now += 60
        seen = []
        self.db.on_statement = lambda name: seen.append(
            (name, a.reportable(nodes)))
        a.round(nodes)
        self.assertEqual(frozenset(), dict(seen)['renew'])

    def test_pause_longer_than_the_lease(self):
        # SIGSTOP right after a successful round; on SIGCONT the process
        # must not act on its old result.
        a, b = self.manager('a'), self.manager('b')
        nodes = _ids(3)
        a.round(nodes)
        self.assertEqual(frozenset(nodes), a.reportable(nodes))
        self.advance(LEASE + 30)
        self.assertTrue(a.fenced())
        self.assertEqual(frozenset(), a.reportable(nodes))
        self.assertEqual(frozenset(nodes), b.round(nodes).reported)
        out = a.round(nodes)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(nodes), out.waiting)

    def test_the_lease_clock_counts_a_suspended_machine(self):
        # CLOCK_MONOTONIC stops while the machine is suspended (a VM saved
        # and restored); the lease clock must not.
        if not hasattr(time, 'CLOCK_BOOTTIME'):
            self.skipTest('no CLOCK_BOOTTIME on this platform')
        self.assertIs(claims.lease_clock, claims._boot_time)
        with mock.patch.object(time, 'clock_gettime', autospec=True,
                               return_value=42.5) as gettime:
            self.assertEqual(42.5, claims.lease_clock())
        gettime.assert_called_once_with(time.CLOCK_BOOTTIME)
        manager = claims.ClaimManager(
            store.Store(self.db), 'a', 'nova-compute', lease_time=LEASE,
            fencing_margin=MARGIN)
        self.assertIs(claims.lease_clock, manager.clock)

    def test_a_resumed_machine_is_fenced_and_blames_no_database(self):
        # Suspended for 5 minutes right after a round: by a clock that
        # counts the suspension, the lease ran out (fenced at once, while a
        # peer may already hold the nodes), the database's clock moved as
        # much as the local one (no step, no widened margin), and the next
        # round is proven again.
        a = self.manager('a')
        nodes = _ids(3)
        a.round(nodes)
        self.advance(300)
        self.assertTrue(a.fenced())
        self.assertEqual(frozenset(), a.reportable(nodes))
        out = a.round(nodes)
        self.assertTrue(out.ok, out.error)
        self.assertEqual(frozenset(nodes), out.reported)
        self.assertEqual(0, a.clock_watch.steps)
        self.assertEqual(MARGIN, a.clock_watch.margin())

    def test_pause_inside_a_round(self):
        # Paused at its last statement for longer than the lease: every
        # statement succeeds, but the round is a failed one, fenced.
        a = self.manager('a')
        nodes = _ids(3)
        a.round(nodes)

        def pause(name):
            if name == 'renew':
                self.clock.now += LEASE
        self.db.on_statement = pause
        out = a.round(nodes)
        self.assertFalse(out.ok)
        self.assertIn('after its own fence', out.error)
        self.assertEqual(frozenset(), out.ring_reported)
        self.assertEqual(frozenset(nodes), out.fenced)

    def test_release_failure_never_reports_a_released_node(self):
        a = self.manager('a')
        nodes = _ids(4)
        a.round(nodes)
        a.round(nodes[:2])
        # The release commits but the connection drops before the answer;
        # then the ring gives the nodes back while the database is down.
        real_release = self.db.release_claims

        def release(*args, **kwargs):
            real_release(*args, **kwargs)
            raise db_exc.DBConnectionError('lost')
        self.db.release_claims = release
        self.assertFalse(a.round(nodes[:2]).ok)
        self.db.fail = db_exc.DBConnectionError('down')
        out = a.round(nodes)
        self.assertEqual(frozenset(nodes[:2]), out.ring_reported)
        self.assertEqual(frozenset(nodes[2:]), out.fenced)

    def test_first_round_without_database_reports_nothing(self):
        a = self.manager('a')
        self.db.fail = db_exc.DBConnectionError('down')
        out = a.round(_ids(3), _ids(1, start=5))
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(_ids(4)[:3] + _ids(1, start=5)),
                         out.fenced)
        self.assertNotIn('Fenced:', self.logger.output)
        self.assertIn('reporting none of its 4 nodes, instance nodes '
                      'included (fenced)', self.logger.output)

    def test_instance_node_waits_for_its_claim(self):
        # a holds node n as a ring node; b's instance lands on it (an
        # operator's hand, or a takeover's predecessor holding it): b
        # reports it only once a released it, never both at once.
        a, b = self.manager('a'), self.manager('b')
        n = _ids(1)
        a.round(n)
        out = b.round([], n)
        self.assertTrue(out.ok)
        self.assertEqual(frozenset(), out.reported)
        self.assertEqual(frozenset(n), out.waiting)
        self.assertEqual(frozenset(), b.reportable(n))
        # a stops wanting it: it reports it no more, then releases it.
        self.assertEqual(frozenset(), a.round([]).reported)
        self.assertEqual(frozenset(n), a.round([]).released)
        out = b.round([], n)
        self.assertEqual(frozenset(n), out.reported)
        self.assertEqual(frozenset(n), out.claimed)
        self.assertEqual(frozenset(n), b.reportable(n))

    def test_unmigrated_database_fails_closed(self):
        self.db.revision = '0001_services'
        out = self.manager('a').round(_ids(2))
        self.assertFalse(out.ok)
        self.assertIn('ironic-partition-dbsync upgrade', out.error)
        self.assertEqual(frozenset(), out.reported)

    def test_keepalive_extends_the_lease(self):
        a = self.manager('a')
        nodes = _ids(2)
        a.round(nodes)
        self.advance(100)
        self.assertTrue(a.keepalive())
        self.advance(100)
        self.assertEqual(frozenset(nodes), a.reportable(nodes))
        self.db.fail = db_exc.DBConnectionError('down')
        self.assertFalse(a.keepalive())
        self.advance(LEASE)
        self.assertEqual(frozenset(), a.reportable(nodes))

    def test_status(self):
        a = self.manager('a')
        self.assertTrue(a.status()['fenced'])
        a.round(_ids(2))
        status = a.status()
        self.assertEqual(2, status['held'])
        self.assertFalse(status['fenced'])
        self.assertEqual(LEASE - MARGIN, status['valid_for'])
        # owned, renew, acquire (one call in the fake), held.
        self.assertEqual(5, status['last_round_statements'])


def _nodes(n, instances=None):
    instances = instances or {}
    return [baremetal.Node(id=str(uuid.UUID(int=i + 1)),
                           conductor_group='rack1',
                           instance_id=instances.get(i))
            for i in range(n)]


class TestPartitionerWithClaims(ClaimsTestCase):

    def _make(self, host, nodes, live):
        self.config(group='ironic_partition', host=host)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=sorted(live))
        client = test_partitioner.FakeClient(nodes)
        membership = test_partitioner.FakeMembership(live)
        return partitioner.Partitioner(self.read_settings(), client,
                                       membership, clock=self.clock,
                                       claims=self.manager(host))

    def test_no_node_reported_twice_while_membership_disagrees(self):
        nodes = _nodes(60)
        a = self._make('cn1', nodes, ['cn1'])
        self.assertEqual(60, len(a.refresh().nodes))
        # cn2 joins; it sees both members at once, cn1 not yet.
        b = self._make('cn2', nodes, ['cn1', 'cn2'])
        # Nothing reportable yet: not ready, never an empty list.
        e = self.assertRaises(exception.PartitionNotReady, b.refresh)
        self.assertEqual('claims', e.kind)
        self.assertIn('wait for claims held by other processes', str(e))
        self.assertIsNone(b.last_result)
        a.membership.live = frozenset(['cn1', 'cn2'])
        ra = a.refresh()
        moved = set(ra.lost)
        self.assertIn('%d wait for claims' % len(moved), str(e))
        self.assertEqual(set(), set(ra.nodes) & moved)
        self.assertEqual(moved, set(ra.lost))
        self.assertEqual(frozenset(), ra.released)
        self.assertRaises(exception.PartitionNotReady, b.refresh)
        ra = a.refresh()
        self.assertEqual(moved, set(ra.released))
        rb = b.refresh()
        self.assertEqual(moved, set(rb.nodes))
        self.assertEqual(moved, set(rb.claimed))
        self.assertEqual(60, len(ra.nodes) + len(rb.nodes))
        self.assertIn('claimed 0, released %d, waiting 0, fenced 0, '
                      'stranded 0' % len(moved), self.logger.output)

    def test_new_incarnation_waits_not_ready_never_empty(self):
        # A container restarted in a new PID namespace: the previous
        # process of cn1 still holds the claims, instance node included.
        nodes = _nodes(8, instances={0: 'mine'})

        def incarnation(name):
            me = types.SimpleNamespace(
                incarnation=name, adoptable=None, lost=None, host='cn1',
                registered=True, inherited_clocks=None,
                note_claim_round=lambda node, clocks: None)
            p = self._make('cn1', nodes, ['cn1'])
            p.claims = claims.ClaimManager(
                store.Store(self.db, identity=me), 'cn1', 'nova-compute',
                lease_time=LEASE, fencing_margin=MARGIN, clock=self.clock)
            return p

        old = incarnation('old')
        self.assertEqual(8, len(old.refresh(my_instances={'mine'}).nodes))
        new = incarnation('new')
        for _ in range(3):
            e = self.assertRaises(exception.PartitionNotReady, new.refresh,
                                  my_instances={'mine'})
            self.assertEqual('claims', e.kind)
            self.assertIn('8 nodes and it may report none of them yet: 8 '
                          'wait for claims held by other processes',
                          str(e))
            self.assertIsNone(new.last_result)
            self.assertEqual({}, new.reported_nodes())
            self.advance(LEASE / 3)
        self.advance(LEASE)
        result = new.refresh(my_instances={'mine'})
        self.assertEqual(8, len(result.nodes))

    def test_fenced_refresh_reports_nothing(self):
        nodes = _nodes(10, instances={0: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        first = p.refresh(my_instances={'mine'})
        self.assertEqual(10, len(first.nodes))
        self.assertEqual(self.clock.now + LEASE - MARGIN, first.valid_until)
        self.db.fail = db_exc.DBConnectionError('down')
        self.advance(LEASE)
        # Fail closed: not ready, never a shorter list...
        e = self.assertRaises(exception.PartitionNotReady, p.refresh,
                              my_instances={'mine'})
        self.assertIn('cannot prove which nodes', str(e))
        self.assertIs(first, p.last_result)
        # ...and nothing may still be reported, the instance node
        # included.
        self.assertEqual({}, p.reported_nodes())
        self.assertFalse(p.may_report(nodes[0].id))
        self.assertIn('reporting none of its 10 nodes', self.logger.output)

    def test_programming_error_is_not_an_outage(self):
        p = self._make('cn1', _nodes(3), ['cn1'])
        p.refresh()
        self.db.fail = TypeError('a bug')
        self.assertRaises(TypeError, p.refresh)

    def test_reported_nodes_applies_the_fence_at_use_time(self):
        nodes = _nodes(5, instances={4: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        p.refresh(my_instances={'mine'})
        self.assertEqual(5, len(p.reported_nodes()))
        self.advance(LEASE - MARGIN)
        self.assertEqual({}, p.reported_nodes())
        self.assertEqual(5, len(p.last_result.nodes))

    def test_spawn_refusal_says_why_and_who_holds_the_claim(self):
        nodes = _nodes(6, instances={5: 'mine'})
        a = self._make('cn1', nodes, ['cn1'])
        self.assertEqual('no refresh of this service has succeeded yet',
                         a.spawn_refusal(nodes[0].id))
        a.refresh(my_instances={'mine'})
        self.assertIsNone(a.spawn_refusal(nodes[0].id))
        self.assertIsNone(a.spawn_refusal(nodes[5].id))
        self.assertIn("not in this service's last node list",
                      a.spawn_refusal('not-listed'))
        self.assertEqual('cn1', a.claim_holder(nodes[0].id))
        self.assertEqual('nobody', a.claim_holder('not-listed'))
        # Paused past its fence: cn2 takes the node over meanwhile.
        self.advance(LEASE)
        b = self._make('cn2', nodes, ['cn2'])
        b.refresh()
        self.assertIn('ran out (fenced)', a.spawn_refusal(nodes[0].id))
        self.assertEqual('cn2', a.claim_holder(nodes[0].id))
        # Fenced, it deploys nowhere, not even to its own instance's
        # node: its claim may be another process's now.
        self.assertIn('ran out (fenced)', a.spawn_refusal(nodes[5].id))
        self.db.fail = db_exc.DBConnectionError('down')
        self.assertEqual('unknown', a.claim_holder(nodes[0].id))

    def test_claimed_by_others_reads_valid_claims_of_peers_only(self):
        nodes = _nodes(4)
        a = self._make('cn1', nodes, ['cn1'])
        a.refresh()
        self.assertEqual(frozenset(), a.claimed_by_others(
            [n.id for n in nodes]))
        self.config(group='ironic_partition', host='cn2')
        self.config(group='ironic', peer_list=['cn1', 'cn2'])
        b = partitioner.Partitioner(
            self.read_settings(), test_partitioner.FakeClient(nodes),
            test_partitioner.FakeMembership(['cn1', 'cn2']), claims=False)
        b.store = a.claims.store
        self.assertEqual(frozenset(n.id for n in nodes),
                         b.claimed_by_others([n.id for n in nodes]))
        self.advance(LEASE + 1)
        self.assertEqual(frozenset(), b.claimed_by_others(
            [n.id for n in nodes]))
        self.db.fail = db_exc.DBConnectionError('down')
        e = self.assertRaises(exception.MembershipError,
                              b.claimed_by_others, [nodes[0].id])
        self.assertIn('cannot read the ownership claims', str(e))

    def test_may_report_applies_the_fence_per_node(self):
        nodes = _nodes(5, instances={4: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        p.refresh(my_instances={'mine'})
        self.assertTrue(p.may_report(nodes[0].id))
        self.assertFalse(p.may_report('not-listed'))
        self.advance(LEASE - MARGIN)
        # The resource tracker, paused half-way, resumes past the fence.
        self.assertFalse(p.may_report(nodes[0].id))
        self.assertFalse(p.may_report(nodes[4].id))
        self.assertEqual(set(p.reported_nodes()),
                         {n.id for n in nodes if p.may_report(n.id)})

    def test_stranded_node_is_never_claimed(self):
        nodes = _nodes(6, instances={0: 'theirs'})
        p = self._make('cn1', nodes, ['cn1'])
        result = p.refresh(instance_hosts={'theirs': 'cn-dead'})
        self.assertEqual((nodes[0].id,), result.ownership.stranded)
        self.assertNotIn(nodes[0].id, result.nodes)
        self.assertIsNone(self.db.rows.get(('nova-compute', nodes[0].id)))
        self.assertIn('stranded 1', self.logger.output)

    def test_ironic_down_leaves_claims_to_the_lease_timer(self):
        p = self._make('cn1', _nodes(4), ['cn1'])
        p.refresh()
        p.client.fault = exception.IronicUnavailable(endpoint='x',
                                                     reason='down')
        for _ in range(4):
            self.advance(60)
            self.assertRaises(exception.PartitionNotReady, p.refresh)
            # What the lease timer runs, whatever the refreshes do.
            self.assertTrue(p.claims.keepalive())
        self.assertEqual(4, len(p.reported_nodes()))
        self.assertEqual(4, p.status()['claims']['held'])

    def test_stop_releases(self):
        nodes = _nodes(3)
        p = self._make('cn1', nodes, ['cn1'])
        p.refresh()
        self.assertEqual(3, p.stop())
        self.assertEqual({}, p.reported_nodes())
        q = self._make('cn2', nodes, ['cn2'])
        self.assertEqual(3, len(q.refresh().nodes))

    def test_claims_off_keeps_old_behaviour(self):
        self.config(group='ironic_partition', claims='off')
        p = partitioner.Partitioner(
            self.read_settings(), test_partitioner.FakeClient(_nodes(3)),
            FakeBackend('database', db=self.db))
        self.assertIsNone(p.claims)
        self.assertEqual({'claims': {'enabled': False}}, p.status())


class TestGarbageCollection(ClaimsTestCase):

    def test_age_is_a_day_and_at_least_ten_leases(self):
        self.assertEqual(lease_timer.GC_AGE, self.manager('a').timer.gc.age)
        self.assertEqual(100000.0, self.manager(
            'a', lease=10000, margin=100).timer.gc.age)

    def test_rate_limited_and_deletes_only_long_unheld_rows(self):
        a, b = self.manager('a'), self.manager('b')
        old, recent = _ids(3), _ids(2, start=10)
        a.round(old)
        a.stop()
        self.advance(lease_timer.GC_AGE + 1)
        b.round(recent)
        # The first collection waits part of the interval.
        self.assertIsNone(b.timer.gc.collect())
        self.clock.now += lease_timer.GC_INTERVAL
        self.assertEqual(3, b.timer.gc.collect())
        self.assertEqual({('nova-compute', n) for n in recent},
                         set(self.db.rows))
        # At most once per interval.
        self.assertIsNone(b.timer.gc.collect())
        self.clock.now += lease_timer.GC_INTERVAL
        self.assertEqual(0, b.timer.gc.collect())

    def test_a_database_fault_is_logged_and_retried_later(self):
        a = self.manager('a')
        a.timer.gc.collect()
        self.clock.now += lease_timer.GC_INTERVAL
        self.db.fail = db_exc.DBConnectionError('down')
        self.assertIsNone(a.timer.gc.collect())
        self.assertIn('Could not delete the old claim rows',
                      self.logger.output)
        self.db.fail = None
        self.assertIsNone(a.timer.gc.collect())
        self.clock.now += lease_timer.GC_INTERVAL
        self.assertEqual(0, a.timer.gc.collect())


class TestOneStore(base.TestCase):
    """A real SQLite store shared by the membership and the claims."""

    def _sqlite_partitioner(self, start=False, **options):
        """cn1 on a SQLite database of its own, one group, three nodes.

        :param start: start the membership (before anything is patched).
        :param options: ``[ironic_partition]`` options.
        :returns: ``(backend, partitioner)``, stopped at clean-up.
        """
        tmp = self.useFixture(fixtures.TempDir()).path
        self.config(group='ironic_partition', host='cn1', state_path=tmp,
                    **options)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1'])
        settings = settings_mod.from_conf(self.conf)
        backend = database.DatabaseMembership(settings, 'agent')
        self.addCleanup(backend.stop, timeout=5)
        p = partitioner.Partitioner(
            settings, test_partitioner.FakeClient(_nodes(3)), backend)
        return backend, p

    def _run(self, backend, p):
        backend.start()
        p.start()
        self.addCleanup(p.stop)
        return p.refresh()

    def test_membership_and_claims_share_one_store(self):
        backend, p = self._sqlite_partitioner()
        self.assertIs(backend.store, p.store)
        self.assertIs(backend.store, p.claims.store)
        self.assertIs(backend.identity, p.identity)
        self.assertIs(backend.identity, p.claims.identity)
        self.assertEqual(3, len(self._run(backend, p).nodes))
        (row,) = backend.store.services.services('agent', 60).services
        self.assertEqual(p.identity.incarnation, row.incarnation)
        self.assertEqual({p.identity.incarnation},
                         {c.incarnation for c in
                          backend.store.claims.read_claims('agent').claims})
        self.config(group='ironic', partition_key='rack2')
        self.assertTrue(p.reload_settings(self.read_settings))
        self.assertEqual('rack2', backend.partition_key)

    def test_slow_garbage_collection_never_delays_a_renewal(self):
        # Renewals every 0.3 s.
        backend, p = self._sqlite_partitioner(
            refresh_interval=1, lease_time=2, fencing_margin=1.1)
        release = threading.Event()
        self.addCleanup(release.set)
        collecting = threading.Event()

        def slow_delete(role, older_than):
            collecting.set()
            release.wait(30)
            return 0
        self.useFixture(fixtures.MockPatchObject(
            backend.store.claims, 'collect_garbage', slow_delete))
        p.claims.timer.gc.next_at = 0.0
        self._run(backend, p)
        self.assertTrue(collecting.wait(10))
        before = p.claims.valid_until
        deadline = time.monotonic() + 10
        poll = threading.Event()
        while (p.claims.valid_until == before and
               time.monotonic() < deadline):
            poll.wait(0.05)
        self.assertGreater(p.claims.valid_until, before)
        self.assertFalse(p.claims.fenced())

    def test_no_renewal_once_the_main_thread_ended(self):
        logger = self.useFixture(fixtures.FakeLogger())
        # Renewals every 0.3 s.
        backend, p = self._sqlite_partitioner(
            refresh_interval=1, lease_time=2, fencing_margin=1.1)
        self._run(backend, p)
        timer = p.claims.timer.thread
        self.assertTrue(timer.is_alive())
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.db.identity.process_exiting', lambda: True))
        timer.join(p.claims.renew_interval + 5)
        self.assertFalse(timer.is_alive())
        self.assertIn('no more claim renewals for cn1', logger.output)


class TestSharedDatabase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = types.SimpleNamespace(
            masked_connection='sqlite:////var/lib/x.sqlite')
        self.logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))

    def test_alone_in_peer_list_is_fine(self):
        self.config(group='ironic', peer_list=['CN1'])
        claim_settings.check_shared_database(self.conf.ironic.peer_list,
                                             self.conn, 'cn1',
                                             False)
        self.assertEqual('', self.logger.output)

    def test_other_peers_are_refused_naming_the_option(self):
        self.config(group='ironic', peer_list=['cn1', 'cn2', ' cn3 '])
        e = self.assertRaises(exception.ConfigurationError,
                              claim_settings.check_shared_database,
                              self.conf.ironic.peer_list, self.conn, 'cn1',
                              False)
        text = str(e)
        self.assertIn('[ironic_partition_database] connection', text)
        self.assertIn('sqlite:////var/lib/x.sqlite', text)
        self.assertIn('peer_list names other hosts (cn2, cn3)', text)
        self.assertIn('that every service in peer_list shares (and run '
                      '"ironic-partition-dbsync upgrade" once)', text)

    def test_other_peers_warn_when_allowed(self):
        self.config(group='ironic', peer_list=['cn1', 'cn2'])
        claim_settings.check_shared_database(self.conf.ironic.peer_list,
                                             self.conn, 'cn1', True)
        self.assertIn('peer_list names other hosts (cn2)', self.logger.output)

    def test_error_with_an_alternative(self):
        e = claim_settings.local_database_error(
            self.conn, 'why', 'every compute', 'do something else')
        self.assertIn('while why. Set [ironic_partition_database] '
                      'connection', str(e))
        self.assertIn('that every compute shares', str(e))
        self.assertTrue(str(e).endswith('once), or do something else'),
                        str(e))
