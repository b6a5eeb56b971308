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

"""Process identities on a real SQLite database, and local liveness."""

import os
import subprocess
import sys
import time

import fixtures

from ironic_partition.db import api as db_api
from ironic_partition.db import identity
from ironic_partition.db import services
from ironic_partition import exception
from ironic_partition.tests import base


class TestLiveness(base.TestCase):

    def test_this_process_is_not_gone(self):
        self.assertFalse(identity.provably_gone(identity.liveness_token()))

    def test_an_exited_process_is_gone(self):
        child = subprocess.Popen([sys.executable, '-c', 'pass'])
        token = identity.liveness_token(child.pid)
        child.wait()
        self.assertTrue(identity.provably_gone(token))

    def test_a_reused_pid_is_gone(self):
        parts = identity.liveness_token().split(' ')
        parts[4] = '1'
        self.assertTrue(identity.provably_gone(' '.join(parts)))

    def test_another_machine_or_namespace_may_still_run(self):
        parts = identity.liveness_token().split(' ')
        for index, value in ((1, 'another-boot'), (2, 'pid:[1]')):
            other = list(parts)
            other[index] = value
            other[3] = '999999'
            self.assertFalse(identity.provably_gone(' '.join(other)))
        self.assertFalse(identity.provably_gone(None))
        self.assertFalse(identity.provably_gone('garbage'))

    def test_process_exiting_once_the_main_thread_ended(self):
        # A non-daemon thread keeps the interpreter alive after main ends.
        script = (
            'import threading\n'
            'from ironic_partition.db import identity\n'
            'def after_main():\n'
            '    threading.main_thread().join()\n'
            '    print(identity.process_exiting(), flush=True)\n'
            'threading.Thread(target=after_main).start()\n'
            'print(identity.process_exiting(), flush=True)\n')
        out = subprocess.run([sys.executable, '-c', script],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertEqual(['False', 'True'], out.stdout.split())

    def _unreadable(self, error, kill_error=None):
        # A live child this process cannot read, as under hidepid=2 or
        # a security module: only its /proc entry fails.
        child = subprocess.Popen([sys.executable, '-c',
                                  'import time; time.sleep(60)'])
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        token = identity.liveness_token(child.pid)
        self.assertNotIn('-', token.split(' ')[1:])
        real_open = open
        stat = '/proc/%d/stat' % child.pid

        def fake_open(path, *args, **kwargs):
            if path == stat:
                raise error
            return real_open(path, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch('builtins.open', fake_open))
        if kill_error is not None:
            def fake_kill(pid, sig):
                raise kill_error
            self.useFixture(fixtures.MonkeyPatch('os.kill', fake_kill))
        return token

    def test_a_hidden_live_process_is_not_gone(self):
        # hidepid=2: another user's /proc/PID does not exist for us.
        logger = self.useFixture(fixtures.FakeLogger())
        token = self._unreadable(FileNotFoundError(2, 'No such file'))
        self.assertFalse(identity.provably_gone(token))
        self.assertIn('Cannot tell whether process', logger.output)

    def test_an_unreadable_process_of_another_user_is_not_gone(self):
        token = self._unreadable(PermissionError(13, 'Permission denied'),
                                 kill_error=PermissionError(1, 'EPERM'))
        self.assertFalse(identity.provably_gone(token))

    def test_an_unexpected_stat_layout_is_not_gone(self):
        parts = identity.liveness_token().split(' ')
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.db.identity._parse_start',
            lambda stat: (_ for _ in ()).throw(ValueError('layout'))))
        self.assertFalse(identity.provably_gone(' '.join(parts)))

    def test_a_token_without_start_time_is_gone_only_if_absent(self):
        parts = identity.liveness_token().split(' ')
        parts[4] = '-'
        self.assertFalse(identity.provably_gone(' '.join(parts)))
        child = subprocess.Popen([sys.executable, '-c', 'pass'])
        child.wait()
        parts[3] = str(child.pid)
        self.assertTrue(identity.provably_gone(' '.join(parts)))


class TestIdentity(base.TestCase):

    def setUp(self):
        super().setUp()
        path = self.useFixture(fixtures.TempDir()).path
        self.db = db_api.Connection(
            'sqlite:///' + os.path.join(path, 'm.sqlite'))
        self.addCleanup(self.db.dispose)
        self.db.upgrade()
        self.claims = self.db.claims

    def _identity(self, takeover=False):
        return identity.Identity(self.db, 'CN1', 'agent', 60,
                                 takeover=takeover)

    def _row(self):
        with self.db.engine.connect() as conn:
            return tuple(conn.execute(db_api.sa.text(
                'SELECT incarnation, origin, liveness_token, down, '
                'last_seen FROM ironic_partition_services')).first())

    def test_second_live_process_is_refused_and_nothing_written(self):
        first = self._identity()
        first.register('rack1')
        row = self._row()
        second = self._identity()
        e = self.assertRaises(exception.DuplicateService, second.register)
        self.assertIn("host 'cn1'", str(e))
        self.assertIn('pid %d' % os.getpid(), str(e))
        self.assertIn('--takeover', str(e))
        self.assertEqual(row, self._row())

    def test_takeover_fences_the_old_incarnation(self):
        first = self._identity()
        first.register()
        self.claims.acquire_claims('agent', 'cn1', ['n1'], 60,
                                   incarnation=first.incarnation)
        second = self._identity(takeover=True)
        second.register()
        self.assertIsNone(second.adoptable)
        self.assertRaises(exception.IdentityLost, first.beat)
        self.assertIn('incarnation %s' % second.incarnation, first.lost)
        self.assertRaises(exception.IdentityLost, self.claims.renew_claims,
                          'agent', 'cn1', 60, first.incarnation)
        self.assertRaises(exception.IdentityLost, self.claims.acquire_claims,
                          'agent', 'cn1', ['n2'], 60,
                          incarnation=first.incarnation)
        # The old claims are not adopted: they expire, then are taken.
        self.assertEqual(0, self.claims.adopt_claims(
            'agent', 'cn1', second.incarnation))
        second.beat()

    def test_takeover_of_nobody_is_refused(self):
        e = self.assertRaises(exception.NothingToTakeOver,
                              self._identity(takeover=True).register)
        self.assertIn("host 'cn1'", str(e))
        first = self._identity()
        first.register()
        first.release(leave=True)
        self.assertRaises(exception.NothingToTakeOver,
                          self._identity(takeover=True).register)

    def test_graceful_restart_adopts_the_detached_claims(self):
        first = self._identity()
        first.register()
        self.claims.acquire_claims('agent', 'cn1', ['n1', 'n2'], 60,
                                   incarnation=first.incarnation)
        epochs = self.claims.held_claims('agent', 'cn1')
        first.release(leave=False)
        second = self._identity()
        second.register()
        self.assertEqual(2, self.claims.adopt_claims('agent', 'cn1',
                                                     second.incarnation))
        self.assertEqual(epochs, self.claims.held_claims(
            'agent', 'cn1', incarnation=second.incarnation))

    def test_clock_measurements_outlive_the_process(self):
        # What a process measured of the database nodes' clocks is kept
        # in its row with each heartbeat; the next process of the host
        # name reads it back when it registers. No measurement yet keeps
        # what the row holds.
        first = self._identity()
        first.register()
        self.assertIsNone(first.inherited_clocks)
        first.note_claim_round('db1:3306', {'db1:3306': 0.0,
                                            'db2:3306': 6.002})
        first.beat()
        (row,) = self.db.services.services('agent', 60).services
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 6.002},
                         row.database_clocks)
        self.assertEqual('db1:3306', row.claims_database_node)
        first.release(leave=False)
        second = self._identity()
        second.register()
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 6.002},
                         second.inherited_clocks)
        second.beat()
        (row,) = self.db.services.services('agent', 60).services
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 6.002},
                         row.database_clocks)
        self.assertIsNone(row.claims_database_node)

    def test_an_old_claim_round_names_no_node(self):
        # Only renewals lately (Ironic down): where the last round went
        # says nothing about where the claim statements go now.
        me = self._identity()
        me.note_claim_round('db1:3306', None)
        now = time.monotonic()
        self.assertEqual('db1:3306', me.claims_node(now))
        self.assertIsNone(me.claims_node(now + 121))

    def test_unreadable_clock_record_is_nothing(self):
        self.assertIsNone(services.split_clocks('not json'))
        self.assertIsNone(services.split_clocks('[1, 2]'))
        self.assertIsNone(services.split_clocks('{}'))
        self.assertIsNone(services.join_clocks({}))

    def test_crash_on_this_machine_is_provably_gone(self):
        first = self._identity()
        first.register()
        child = subprocess.Popen([sys.executable, '-c', 'pass'])
        child.wait()
        # The first process "was" the child, which exited.
        with self.db.engine.begin() as conn:
            conn.execute(db_api.sa.text(
                'UPDATE ironic_partition_services SET liveness_token = :t'),
                {'t': identity.liveness_token(child.pid)})
        self.claims.acquire_claims('agent', 'cn1', ['n1'], 60,
                                   incarnation=first.incarnation)
        second = self._identity()
        second.register()
        self.assertEqual(first.incarnation, second.adoptable)
        self.assertEqual(1, self.claims.adopt_claims(
            'agent', 'cn1', second.incarnation, second.adoptable))
