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

"""The database clock watch: steps, drift, the margin and the refusal."""

import datetime

import fixtures

from ironic_partition.claims import db_clock
from ironic_partition.db import claims as claims_db
from ironic_partition.tests import base

T0 = datetime.datetime(2026, 11, 27, tzinfo=datetime.timezone.utc)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


class TestClockWatch(base.TestCase):

    def setUp(self):
        super().setUp()
        self.watch = db_clock.ClockWatch(fencing_margin=6, lease_time=60)

    def test_one_server_shows_no_step(self):
        # The server clock and the local one advance together; the
        # statement's round trip varies.
        for i, rtt in enumerate((0.001, 0.04, 0.01, 0.048)):
            local = 100.0 + 60 * i
            self.assertIsNone(self.watch.sample(at(60 * i + rtt / 2),
                                                local, local + rtt))
        self.assertEqual(0.0, self.watch.difference)
        self.assertEqual(6.0, self.watch.margin())
        self.assertIsNone(self.watch.problem())

    def test_ntp_slew_is_not_a_step(self):
        # 500 ppm over 600 s is 0.3 s: drift, not a step.
        self.watch.sample(at(0), 100.0, 100.001)
        self.assertIsNone(self.watch.sample(at(600.3), 700.0, 700.001))

    def test_failover_to_a_node_ahead_and_back(self):
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        step = self.watch.sample(at(60 + 8), 160.0, 160.002, 'db2:3306')
        self.assertEqual(db_clock.STEP, step.kind)
        self.assertAlmostEqual(8.0, step.seconds, places=3)
        self.assertAlmostEqual(8.0 + db_clock.BASE_ALLOWANCE,
                               self.watch.margin(), places=3)
        step = self.watch.sample(at(120), 220.0, 220.002, 'db1:3306')
        self.assertAlmostEqual(-8.0, step.seconds, places=3)
        self.assertEqual(2, self.watch.steps)
        self.assertAlmostEqual(8.0, self.watch.difference, places=3)
        self.assertIsNone(self.watch.problem())

    def test_a_step_within_the_margin_keeps_the_margin(self):
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        self.assertIsNotNone(self.watch.sample(at(62), 160.0, 160.002,
                                               'db2:3306'))
        self.assertEqual(6.0, self.watch.margin())

    def test_a_difference_the_lease_cannot_cover_is_refused(self):
        # Three nodes, each 27 s (and then 28 s) ahead of the last.
        # Widened to 27 s, the margin leaves 33 s of the 54 s window: it
        # still works. The third node is 54.95 s ahead of the first:
        # a margin to cover that would leave less than half the window.
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        self.watch.sample(at(60 + 26.95), 160.0, 160.002, 'db2:3306')
        self.assertIsNone(self.watch.problem())
        self.watch.sample(at(120 + 26.95 + 28), 220.0, 220.002, 'db3:3306')
        problem = self.watch.problem()
        self.assertIn('differed by 55.0 s', problem)
        self.assertIn('[ironic_partition] lease_time (60.0 s) and '
                      'fencing_margin (6.0 s)', problem)
        self.assertIn('within 5.95 s of each other', problem)

    def test_the_consumer_hold_is_not_for_clock_steps(self):
        # Inside nova on its defaults: a 60 s lease, a 16 s margin of
        # which 10 s are nova's hold (the write window). 6 s of clock
        # difference fit; a 9 s step widens the margin to 19 s; a 40 s
        # one leaves the timer no room: refused.
        watch = db_clock.ClockWatch(fencing_margin=16, lease_time=60,
                                    hold=10)
        self.assertAlmostEqual(5.95, watch.tolerance())
        watch.sample(at(0), 100.0, 100.0, 'db1:3306')
        watch.sample(at(60 + 9), 160.0, 160.0, 'db2:3306')
        self.assertAlmostEqual(19.0 + db_clock.BASE_ALLOWANCE,
                               watch.margin())
        self.assertIsNone(watch.problem())
        watch.sample(at(200 + 40), 300.0, 300.0, 'db3:3306')
        self.assertIn('within 5.95 s of each other', watch.problem())

    def test_a_blurred_reading_measures_nothing(self):
        # A failover to db2, 2 s ahead: its first reading of the server's
        # time was answered at once and then waited 4 s (the round trip
        # the watch sees is 4 s). Taken as measured, db2 would sit at
        # db1's level and the next sharp reading of db2 would look like a
        # 2 s stall of this host, the difference never seen.
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        jump = self.watch.sample(at(60 + 2), 160.0, 164.0, 'db2:3306')
        self.assertEqual(db_clock.IMPRECISE, jump.kind)
        self.assertAlmostEqual(2.0, jump.seconds)
        self.assertEqual((0.0, 1), (self.watch.difference,
                                    self.watch.imprecise))
        self.assertEqual({'db1:3306': 0.0}, self.watch.levels())
        jump = self.watch.sample(at(66 + 2), 166.0, 166.002, 'db2:3306')
        self.assertEqual(db_clock.STEP, jump.kind)
        self.assertAlmostEqual(2.0, self.watch.difference, places=2)
        self.assertEqual(0, self.watch.imprecise)
        # Just within the bound, a reading still measures.
        watch = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
        watch.sample(at(0), 100.0, 100.0, 'db1:3306')
        rtt = 2 * db_clock.MAX_SAMPLE_ERROR - 1e-6
        self.assertEqual(db_clock.STEP, watch.sample(
            at(62 + rtt / 2), 160.0, 160.0 + rtt, 'db2:3306').kind)

    def test_a_blurred_reading_still_tells_a_stall(self):
        # Frozen 60 s, then a 1 s round trip: no blur explains 60 s.
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        jump = self.watch.sample(at(120), 160.0, 161.0, 'db1:3306')
        self.assertEqual(db_clock.STALL, jump.kind)
        self.assertEqual(1, self.watch.stalls)
        # A blurred reading is not the reference of the next one: a sharp
        # reading after it compares with the last sharp one.
        self.watch.sample(at(180 + 0.5), 180.0, 181.0, 'db1:3306')
        self.assertIsNone(self.watch.sample(at(200), 200.0, 200.0,
                                            'db1:3306'))

    def test_blurred_readings_in_a_row_are_a_warning(self):
        logger = self.useFixture(fixtures.FakeLogger(level='DEBUG'))
        clock = iter(range(100, 1000, 10))

        def server(rtt, node='db1:3306'):
            before = next(clock)
            return claims_db.ServerTime(at(before - 100), node, before,
                                        before + rtt)
        verdict = db_clock.observe(self.watch, 'h1', 6, server(0.001))
        self.assertEqual((False, 0.0, None), tuple(verdict))
        for _ in range(db_clock.IMPRECISE_WARNING - 1):
            db_clock.observe(self.watch, 'h1', 6, server(0.5))
        self.assertNotIn('(%d in a row)' % db_clock.IMPRECISE_WARNING,
                         logger.output)
        verdict = db_clock.observe(self.watch, 'h1', 6, server(0.5))
        self.assertEqual((False, 0.0, None), tuple(verdict))
        self.assertIn('The database server\'s time took 0.500 s to read '
                      'in a claim round of h1 (3 in a row): too blurred',
                      logger.output)

    def test_a_local_stall_is_not_a_database_step(self):
        # This VM stood still 60 s with its clocks frozen: the server's
        # clock is 60 s ahead of the lease clock at the next round, read
        # from the same database node. A stall: no widened margin, no
        # refusal, no database blamed.
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        jump = self.watch.sample(at(60 + 60), 160.0, 160.002, 'db1:3306')
        self.assertEqual(db_clock.STALL, jump.kind)
        self.assertAlmostEqual(60.0, jump.seconds, places=3)
        self.assertEqual((1, 0), (self.watch.stalls, self.watch.steps))
        self.assertEqual(0.0, self.watch.difference)
        self.assertEqual(6.0, self.watch.margin())
        self.assertIsNone(self.watch.problem())
        # Where the database cannot name its node (PostgreSQL: one
        # writer), the same.
        watch = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
        watch.sample(at(0), 100.0, 100.002)
        self.assertEqual(db_clock.STALL,
                         watch.sample(at(120), 160.0, 160.002).kind)
        self.assertIsNone(watch.problem())

    def test_a_backward_jump_on_one_node_is_a_step(self):
        # The server's clock stepped back: no local stall does that. The
        # other node met keeps its level: the two now differ by 10 s.
        self.watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        self.watch.sample(at(60), 160.0, 160.002, 'db2:3306')
        jump = self.watch.sample(at(110), 220.0, 220.002, 'db2:3306')
        self.assertEqual(db_clock.STEP, jump.kind)
        self.assertAlmostEqual(10.0, self.watch.difference, places=3)
        self.assertEqual({'db1:3306': 10.0, 'db2:3306': 0.0},
                         self.watch.levels())

    def test_a_clock_stepped_back_on_the_one_writer_widens_nothing(self):
        # Every service reads the same clock: every expiry moves alike.
        jump = None
        for node in ('db1:3306', None):
            watch = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
            watch.sample(at(0), 100.0, 100.002, node)
            jump = watch.sample(at(-40), 160.0, 160.002, node)
            self.assertEqual(db_clock.STEP, jump.kind)
            self.assertEqual(0.0, watch.difference)
            self.assertEqual(6.0, watch.margin())

    def _refused_on_db3(self, watch):
        """db2 27 s ahead of db1, db3 55 s: refused (see above)."""
        watch.sample(at(0), 100.0, 100.002, 'db1:3306')
        watch.sample(at(60 + 26.95), 160.0, 160.002, 'db2:3306')
        watch.sample(at(120 + 54.95), 220.0, 220.002, 'db3:3306')
        self.assertIsNotNone(watch.problem())

    def test_a_refusal_lifts_once_the_clocks_are_measured_right(self):
        self._refused_on_db3(self.watch)
        self.assertIn('db3:3306 +54.950 s, db2:3306 +26.950 s, '
                      'db1:3306 +0.000 s', self.watch.problem())
        # Still on db3, whose clock NTP then steps back 54.95 s: measured
        # on the next round. db2, not met again, keeps its 26.95 s: the
        # lease covers that, the refusal lifts, the margin stays wide.
        self.watch.sample(at(180), 280.0, 280.002, 'db3:3306')
        self.assertIsNone(self.watch.problem())
        self.assertAlmostEqual(26.95, self.watch.difference, places=3)
        # db2 put right and met again: the configured margin is back.
        self.watch.sample(at(240), 340.0, 340.002, 'db2:3306')
        self.assertAlmostEqual(0.0, self.watch.difference, places=3)
        self.assertEqual(6.0, self.watch.margin())

    def test_a_clock_slewed_right_is_followed_round_by_round(self):
        # db2 runs 8 s ahead; NTP slews it back 0.03 s a minute, below
        # what makes a step: its level follows.
        self.watch.sample(at(0), 100.0, 100.0, 'db1:3306')
        self.watch.sample(at(60 + 8), 160.0, 160.0, 'db2:3306')
        ahead = 8.0
        local = 160.0
        for _ in range(100):
            local += 60
            ahead -= 0.03
            self.assertIsNone(self.watch.sample(at(local - 100 + ahead),
                                                local, local, 'db2:3306'))
        self.assertAlmostEqual(5.0, self.watch.difference, places=3)

    def test_a_restart_keeps_the_measurements_and_the_refusal(self):
        self._refused_on_db3(self.watch)
        kept = self.watch.levels()
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 26.95,
                          'db3:3306': 54.95}, kept)
        again = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
        self.assertTrue(again.inherit(kept))
        self.assertIsNotNone(again.problem())
        # Back on db1 (the clocks not put right): still refused.
        again.sample(at(1000), 5.0, 5.002, 'db1:3306')
        self.assertAlmostEqual(54.95, again.difference, places=3)
        self.assertIn('a restart keeps what was measured', again.problem())
        # A failover to db3, its clock put right: measured, lifted.
        again.sample(at(1060), 65.0, 65.002, 'db3:3306')
        self.assertIsNone(again.problem())
        self.assertAlmostEqual(26.95, again.difference, places=3)
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 26.95,
                          'db3:3306': 0.0}, again.levels())

    def test_inherited_levels_wait_for_a_node_they_know(self):
        # The first node met after the restart is new to the record: the
        # recorded difference stands apart until a node of the record is
        # met, and then relates through it.
        watch = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
        watch.inherit({'db1:3306': 0.0, 'db2:3306': 8.0})
        watch.sample(at(0), 100.0, 100.002, 'db9:3306')
        self.assertAlmostEqual(8.0, watch.difference, places=3)
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 8.0,
                          'db9:3306': 0.0}, watch.levels())
        # db2 is 1 s ahead of db9: so db1 is 7 s behind db9.
        watch.sample(at(61), 160.0, 160.002, 'db2:3306')
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 8.0,
                          'db9:3306': 7.0}, watch.levels())
        self.assertAlmostEqual(8.0, watch.difference, places=3)
        # An inherited record met after a measurement relates at once.
        late = db_clock.ClockWatch(fencing_margin=6, lease_time=60)
        late.sample(at(0), 100.0, 100.002, 'db2:3306')
        late.inherit({'db1:3306': 0.0, 'db2:3306': 8.0})
        self.assertEqual({'db1:3306': 0.0, 'db2:3306': 8.0},
                         late.levels())
        self.assertFalse(late.inherit(None))

    def test_nothing_named_nothing_kept(self):
        self.watch.sample(at(0), 100.0, 100.002)
        self.assertIsNone(self.watch.levels())
        self.assertEqual('', self.watch.describe())
