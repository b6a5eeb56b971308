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

"""The database membership backend on its embedded SQLite default."""

import os
import threading
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base as test_base

from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import store
from ironic_partition import exception
from ironic_partition.membership import database
from ironic_partition import settings as settings_mod


class TestDatabaseMembership(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.state = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                  'state')
        self.conf = cfg.ConfigOpts()
        fixture = self.useFixture(config_fixture.Config(self.conf))
        self.conf.register_opts(partition_conf.opts,
                                group=partition_conf.GROUP)
        self.conf([])
        fixture.config(group='ironic_partition', state_path=self.state,
                       heartbeat_interval=1, service_down_time=30)
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.membership.database.INITIAL_BACKOFF', 0.05))

    def _backend(self, host='me', partition_key=None, **kwargs):
        b = database.DatabaseMembership(
            settings_mod.for_tests(host, partition_key=partition_key,
                                   conf=self.conf), 'conductor', **kwargs)
        self.addCleanup(b.stop, timeout=5)
        return b

    def test_zero_configuration(self):
        b = self._backend()
        b.start()
        self.assertTrue(os.path.exists(
            os.path.join(self.state, 'ironic_partition.sqlite')))
        self.assertEqual({'me'}, b.members().live)
        status = b.status()
        self.assertTrue(status['running'])
        self.assertEqual('sqlite', status['dialect'])
        self.assertTrue(status['database_reachable'])

    def test_heartbeat_thread_survives_everything(self):
        b = self._backend()
        b.start()
        errors = [RuntimeError('boom'), ValueError('bad'),
                  KeyboardInterrupt()]
        real = b.store.services.beat
        beats = []
        # NOTE(ironic-partition): the second good beat begins after the
        # thread recorded the first: the state is read then, no polling.
        second = threading.Event()

        def flaky(*args, **kwargs):
            if errors:
                raise errors.pop(0)
            beats.append(real(*args, **kwargs))
            if len(beats) >= 2:
                second.set()
            return beats[-1]

        with mock.patch.object(b.store.services, 'beat', autospec=True,
                               side_effect=flaky):
            self.assertTrue(second.wait(15), errors)
            self.assertEqual([], errors)
            self.assertTrue(b.status()['running'])
        self.assertTrue(b.status()['database_reachable'])
        self.assertTrue(b.status()['running'])

    def test_no_heartbeat_once_the_main_thread_ended(self):
        # nova-compute after its SIGHUP restart failed: the main thread is
        # gone, a stuck non-daemon thread keeps the process; peers must
        # see it dead.
        logger = self.useFixture(fixtures.FakeLogger())
        b = self._backend()
        b.start()
        thread = b._heartbeats.thread
        self.assertTrue(thread.is_alive())
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.db.identity.process_exiting', lambda: True))
        thread.join(5)
        self.assertFalse(thread.is_alive())
        self.assertIn('The main thread of this process ended: no more '
                      'heartbeats as me (conductor)', logger.output)

    def test_heartbeat_failure_is_reported(self):
        b = self._backend()
        b.start()
        with mock.patch.object(b.store.services, 'beat', autospec=True,
                               side_effect=RuntimeError('db gone')):
            self.assertFalse(b.heartbeat())
        status = b.status()
        self.assertEqual(1, status['consecutive_failures'])
        self.assertIn('db gone', status['last_error'])
        self.assertTrue(b.heartbeat())
        self.assertEqual(0, b.status()['consecutive_failures'])

    def test_stale_membership_when_reads_fail(self):
        b = self._backend(partition_key='')
        b.start()
        other = self._backend('peer')
        other.start()
        fresh = b.members('', ['peer', 'ghost'])
        with mock.patch.object(b.store.services, 'services', autospec=True,
                               side_effect=RuntimeError('lost')):
            stale = b.members('', ['peer', 'ghost'])
        self.assertTrue(stale.stale)
        self.assertEqual(fresh.live, stale.live)
        self.assertEqual({'ghost'}, stale.never_seen)
        self.assertFalse(b.members().stale)

    def test_unavailable_without_any_membership(self):
        b = self._backend()
        b.start()
        with mock.patch.object(b.store.services, 'services', autospec=True,
                               side_effect=RuntimeError('lost')):
            self.assertRaises(exception.MembershipUnavailable, b.members)

    def test_unreachable_at_start(self):
        database_conf.register_opts(self.conf)
        self.conf.set_override('connection',
                               'sqlite:////proc/nowhere/x.sqlite',
                               group='ironic_partition_database')
        b = database.DatabaseMembership(
            settings_mod.for_tests('me', conf=self.conf), 'agent')
        exc = self.assertRaises(exception.DatabaseConnectionFailed, b.start)
        self.assertIn('sqlite:////proc/nowhere/x.sqlite', str(exc))

    def test_stop_marks_down_and_survives_errors(self):
        b = self._backend()
        b.start()
        watcher = self._backend('watcher')
        watcher.start()
        b.stop()
        self.assertFalse(b.status()['running'])
        self.assertEqual({'me'}, watcher.members().dead)
        # A database that fails the stop: it still stops, without raising.
        with mock.patch.object(watcher.store.services, 'release_service',
                               autospec=True,
                               side_effect=RuntimeError('x')) as release:
            watcher.stop()
        release.assert_called_once_with('watcher', 'conductor', mock.ANY,
                                        down=True)
        self.assertFalse(watcher.status()['running'])

    def test_one_store_for_the_backend_and_the_claims(self):
        b = self._backend(takeover=True)
        self.assertEqual('me', b.store.identity.host)
        self.assertEqual('conductor', b.store.identity.role)
        self.assertTrue(b.store.identity.takeover)
        self.assertIs(b.identity, b.store.identity)
        given = store.Store(b.store.db, b.store.identity)
        other = self._backend(store=given)
        self.assertIs(given, other.store)

    def test_set_partition_key_is_recorded_by_the_next_heartbeat(self):
        b = self._backend(partition_key='Rack1')
        b.start()
        b.set_partition_key('RACK2')
        self.assertEqual('rack2', b.partition_key)
        self.assertTrue(b.heartbeat())
        (svc,) = b.store.services.services('conductor', 30).services
        self.assertEqual('rack2', svc.partition_key)

    def test_peers_counted_outside_are_recorded_for_the_cli(self):
        # A compute counts peers from nova's service group; the CLI reads
        # them back from its heartbeat, with who counts them, within its
        # own peer list, and only while the compute that counts is live.
        me = self._backend(partition_key='Rack1')
        me.start()
        me.note_outside(['cn2', 'cn3'])
        self.assertTrue(me.heartbeat())
        cli = self._backend(host='cn4', partition_key='rack1')
        cli.count_recorded_outside = True
        seen = cli.members('rack1', ['me', 'cn2', 'cn4', 'cn5'])
        self.assertEqual({'me', 'cn2', 'cn4'}, seen.live)
        self.assertEqual({'cn2'}, seen.outside)
        self.assertEqual((('cn2', ('me',)),), seen.counted_by)
        self.assertEqual({'cn5'}, seen.never_seen)
        # Inside a compute the recorded view is not used: nova's is.
        self.assertEqual(frozenset(), me.members(
            'rack1', ['me', 'cn2', 'cn4']).outside)
        # Another partition's compute does not count here.
        self.assertEqual(frozenset(), cli.members(
            'rack2', ['me', 'cn2', 'cn4']).outside)
        # Once none is counted, the next heartbeat clears it.
        me.note_outside([])
        self.assertTrue(me.heartbeat())
        self.assertEqual((), cli.members('rack1', ['me', 'cn2',
                                                   'cn4']).counted_by)
        me.note_outside(['cn2'])
        self.assertTrue(me.heartbeat())
        me.stop()
        self.assertEqual(frozenset(), cli.members(
            'rack1', ['me', 'cn2', 'cn4']).outside)

    def test_several_database_nodes_reconnect_then_refuse(self):
        logger = self.useFixture(fixtures.FakeLogger())
        b = self._backend(partition_key='')
        b.start()
        self.assertEqual({}, b.status()['database_nodes'])
        # SQLite cannot tell its node; pretend the rows come from MariaDB
        # servers behind a proxy that spreads the services' connections.
        real = b.store.services.services

        def spread(role, down_time):
            snapshot = real(role, down_time)
            rows = [s._replace(database_node='db%d:3306' % i)
                    for i, s in enumerate(snapshot.services)]
            rows.append(rows[0]._replace(host='peer',
                                         database_node='db9:3306'))
            return snapshot._replace(services=tuple(rows))

        clock = [1000.0]
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.membership.database.time.monotonic',
            lambda: clock[0]))
        with mock.patch.object(b.store.services, 'services',
                               autospec=True, side_effect=spread), \
                mock.patch.object(b.store, 'dispose',
                                  autospec=True) as dispose:
            self.assertIn('me', b.members('').live)
            self.assertEqual(1, dispose.call_count)
            self.assertIn('write through several database nodes: '
                          'db0:3306 (me); db9:3306 (peer); closing the '
                          'database connections of me', logger.output)
            clock[0] += 59
            b.members('')
            self.assertEqual(1, dispose.call_count)
            clock[0] += 1
            exc = self.assertRaises(exception.SeveralDatabaseWriters,
                                    b.members, '')
            self.assertIn('written through several database nodes at '
                          'once for 60 s', str(exc))
            self.assertEqual(2, dispose.call_count)
        self.assertEqual({'db0:3306': ['me'], 'db9:3306': ['peer']},
                         b.status()['database_nodes'])
        # One node again (SQLite tells none): ready once that has lasted
        # twice service_down_time, and said so.
        self.assertRaises(exception.SeveralDatabaseWriters, b.members, '')
        clock[0] += 60
        self.assertEqual({'me'}, b.members('').live)
        self.assertIn('write through one database node again',
                      logger.output)

    def test_peers_silenced_by_an_outage_stay_alive_for_a_while(self):
        logger = self.useFixture(fixtures.FakeLogger())
        b = self._backend(partition_key='')
        b.start()
        peer = self._backend('peer', partition_key='')
        peer.start()
        self.assertEqual({'me', 'peer'}, b.members('', ['me', 'peer']).live)
        clock = [1000.0]
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.membership.database.time.monotonic',
            lambda: clock[0]))
        real = b.store.services.services
        # The database fails this service for a while...
        with mock.patch.object(b.store.services, 'services', autospec=True,
                               side_effect=RuntimeError('gone')):
            self.assertTrue(b.members('', ['me', 'peer']).stale)
        clock[0] += 20

        # ...and answers again before the peer's heartbeat was retried:
        # its last heartbeat is older than service_down_time (30 s). This
        # service's own is too; it counts itself anyway, and does not name
        # itself among the peers it keeps.
        def silenced(role, down_time):
            snapshot = real(role, down_time)
            return snapshot._replace(services=tuple(
                s._replace(alive=False) for s in snapshot.services))

        with mock.patch.object(b.store.services, 'services', autospec=True,
                               side_effect=silenced):
            self.assertEqual({'me', 'peer'},
                             b.members('', ['me', 'peer']).live)
            self.assertIn('Counting peer alive for 10.0 s more: the '
                          'membership database failed this service 20.0 s '
                          'ago', logger.output)
            # service_down_time after the failure: the peer is dead.
            clock[0] += 10
            membership = b.members('', ['me', 'peer'])
            self.assertEqual({'me'}, membership.live)
            self.assertEqual({'peer'}, membership.dead)

    def test_an_outage_ends_a_several_writers_episode(self):
        # An episode begun before the database failed this service is not
        # carried past the outage (every connection is new after it).
        b = self._backend(partition_key='')
        b.start()
        b.members('', ['me'])
        b._writers.since = b._writers._reconnected = 1.0
        with mock.patch.object(b.store.services, 'services', autospec=True,
                               side_effect=RuntimeError('gone')):
            self.assertTrue(b.members('', ['me']).stale)
        self.assertIsNone(b._writers.since)

    def test_a_peer_marked_down_during_an_outage_is_not_kept(self):
        b = self._backend(partition_key='')
        b.start()
        peer = self._backend('peer', partition_key='')
        peer.start()
        b.members('', ['me', 'peer'])
        with mock.patch.object(b.store.services, 'beat', autospec=True,
                               side_effect=RuntimeError('gone')):
            self.assertFalse(b.heartbeat())
        # A graceful stop is kept, outage or not.
        peer.stop()
        self.assertEqual({'me'}, b.members('', ['me', 'peer']).live)
