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

"""The nova lane's reading of a compute's log into hold intervals."""

from ironic_partition.testing import novalane
from ironic_partition.tests import base

E = novalane.Event


class TestHolds(base.TestCase):

    def test_reported_until_the_run_after_one_without_it(self):
        # The run that began at 5 did not report n2: known when the next
        # run begins, at 9.
        events = [E(1, 'run', None), E(2, 'final', 'n1'),
                  E(2, 'final', 'n2'), E(5, 'run', None),
                  E(6, 'final', 'n1'), E(9, 'run', None)]
        self.assertEqual({'n1': [(2, 10)], 'n2': [(2, 9)]},
                         novalane.holds(events, now=10))

    def test_run_finished_during_a_graceful_stop_holds_until_gone(self):
        # nova finishes its resource-tracker run after SIGTERM: what it
        # reported is held until the process is gone, not until it is
        # started again.
        events = [E(1, 'run', None), E(2, 'final', 'n1'),
                  E(3, 'stop', None), E(3.1, 'final', 'n1'),
                  E(8, 'stopped', None), E(20, 'start', None)]
        self.assertEqual({'n1': [(2, 3), (3.1, 8)]},
                         novalane.holds(events, now=30))

    def test_pause_suspends_and_resume_holds_again(self):
        events = [E(1, 'run', None), E(2, 'final', 'n1'),
                  E(4, 'pause', None), E(9, 'resume', None)]
        self.assertEqual({'n1': [(2, 4), (9, 30)]},
                         novalane.holds(events, now=30))

    def test_double_held_counts_extra_holders(self):
        seconds, overlaps = novalane.double_held({
            'cn1': {'n1': [(0, 10)]}, 'cn2': {'n1': [(4, 6)]}})
        self.assertEqual(2.0, seconds)
        self.assertEqual({'n1': [(4, 6, ['cn1', 'cn2'])]}, overlaps)


class TestLineTime(base.TestCase):

    def test_stamped_line(self):
        line = ('2026-11-25 02:29:01.116 9707 DEBUG nova.service [-] Join '
                'ServiceGroup membership for this service compute')
        self.assertAlmostEqual(
            novalane._log_time('2026-11-25 02:29:01.116'),
            novalane.line_time(line))

    def test_continuation_line(self):
        self.assertIsNone(novalane.line_time('    a5af-0a2c - - -] more'))
