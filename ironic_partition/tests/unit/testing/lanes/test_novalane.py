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

import fixtures

from ironic_partition.testing.lanes import novalane
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

    def test_logged_as_it_was_killed_holds_until_gone(self):
        # The 'kill' mark is written just before SIGKILL: a line the
        # process logs in between is held until it is gone ('killed'),
        # not until it is started again (seen in the servers lane: 37 s
        # counted twice against the peer that took the node over).
        events = [E(1, 'run', None), E(2, 'final', 'n1'),
                  E(3, 'kill', None), E(3.01, 'final', 'n1'),
                  E(3.2, 'killed', None), E(40, 'start', None)]
        self.assertEqual({'n1': [(2, 3), (3.01, 3.2)]},
                         novalane.holds(events, now=50))

    def test_pause_suspends_and_resume_holds_again(self):
        events = [E(1, 'run', None), E(2, 'final', 'n1'),
                  E(4, 'pause', None), E(9, 'resume', None)]
        self.assertEqual({'n1': [(2, 4), (9, 30)]},
                         novalane.holds(events, now=30))

    def test_a_run_listing_no_node_ends_the_holds(self):
        # Our driver's refresh gave the run at 5 an empty list: nova
        # updates none of the nodes. A not-ready run, or a refresh of
        # another request (off-cycle), changes nothing.
        events = [E(1, 'run', 'req-a'), E(2, 'final', 'n1'),
                  E(5, 'run', 'req-b'), E(5.1, 'listed', 'req-b'),
                  E(9, 'run', 'req-c')]
        self.assertEqual({'n1': [(2, 9)]}, novalane.holds(events, now=30))
        events[3] = E(5.1, 'listed_none', 'req-b')
        self.assertEqual({'n1': [(2, 5.1)]},
                         novalane.holds(events, now=30))
        events = [E(1, 'run', 'req-a'), E(2, 'final', 'n1'),
                  E(5, 'run', 'req-b'), E(5.1, 'listed', 'req-x'),
                  E(9, 'run', 'req-c'), E(9.1, 'listed', 'req-c'),
                  E(9.2, 'not_ready', None), E(12, 'run', 'req-d')]
        self.assertEqual({'n1': [(2, 30)]}, novalane.holds(events, now=30))

    def test_reported_as_the_process_was_stopped_held_from_resume(self):
        events = [E(1, 'run', 'req-a'), E(2, 'final', 'n1'),
                  E(4, 'pause', None), E(4.01, 'final', 'n2'),
                  E(9, 'resume', None), E(12, 'run', 'req-b'),
                  E(12.5, 'listed', 'req-b'), E(15, 'run', 'req-c')]
        self.assertEqual({'n1': [(2, 4), (9, 15)], 'n2': [(9, 15)]},
                         novalane.holds(events, now=30))

    def test_parse_reads_the_request_ids(self):
        path = self.useFixture(fixtures.TempDir()).join('cn1.log')
        with open(path, 'w') as stream:
            stream.write(
                '2026-11-27 11:22:54.001 7 DEBUG oslo_service.periodic_task '
                '[None req-5b - - - - - -] Running periodic task '
                'ComputeManager.update_available_resource run_periodic_tasks'
                '\n2026-11-27 11:22:56.295 7 INFO '
                'ironic_partition.partition.partitioner '
                '[None req-5b - - - - - -] Refresh: managing 0 of 1000 nodes '
                'of partition \'rack1\''
                '\n')
        events = novalane.parse_compute_log(path)
        self.assertEqual([('run', 'req-5b'), ('listed_none', 'req-5b')],
                         [(e.kind, e.node) for e in events])

    def test_double_held_counts_extra_holders(self):
        seconds, overlaps = novalane.double_held({
            'cn1': {'n1': [(0, 10)]}, 'cn2': {'n1': [(4, 6)]}})
        self.assertEqual(2.0, seconds)
        self.assertEqual({'n1': [(4, 6, ['cn1', 'cn2'])]}, overlaps)


class TestUnheld(base.TestCase):

    def test_gaps_between_holders_in_the_window(self):
        per = {'cn1': {'n1': [(0, 10)], 'n2': [(0, 30)]},
               'cn2': {'n1': [(14, 40)], 'n2': [(5, 20)]}}
        # n1: unheld 10..14 (4 s); n2: always held; n3: never (10 s).
        self.assertEqual(14.0, novalane.unheld(per, ['n1', 'n2', 'n3'],
                                               5, 15))
        self.assertEqual(0.0, novalane.unheld(per, ['n2'], 0, 30))


class TestLineTime(base.TestCase):

    def test_stamped_line(self):
        line = ('2026-11-25 02:29:01.116 9707 DEBUG nova.service [-] Join '
                'ServiceGroup membership for this service compute')
        self.assertAlmostEqual(
            novalane._log_time('2026-11-25 02:29:01.116'),
            novalane.line_time(line))

    def test_continuation_line(self):
        self.assertIsNone(novalane.line_time('    a5af-0a2c - - -] more'))
