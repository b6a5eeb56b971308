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

"""The fault tests' observer: how I2 gaps are measured."""

from ironic_partition.testing.lanes import analysis
from ironic_partition.testing.lanes import observer
from ironic_partition.tests import base


class LongestFreeStretchTestCase(base.TestCase):

    def test_no_change_is_the_whole_gap(self):
        self.assertEqual(30.0, analysis.longest_free_stretch(
            10.0, 40.0, [], []))

    def test_a_change_restarts_the_clock(self):
        # A kill at 10, another agent paused at 25: I2 counts from 25.
        self.assertEqual(20.0, analysis.longest_free_stretch(
            10.0, 45.0, [5.0, 25.0, 50.0], []))

    def test_the_longest_part_wins(self):
        self.assertEqual(12.0, analysis.longest_free_stretch(
            0.0, 20.0, [12.0], []))

    def test_exempt_window_is_left_out(self):
        # No member could be live from 0 to 15 (database gone).
        self.assertEqual(5.0, analysis.longest_free_stretch(
            0.0, 20.0, [], [(0.0, 15.0, 'db down')]))

    def test_changes_at_the_edges_do_not_cut(self):
        self.assertEqual(10.0, analysis.longest_free_stretch(
            0.0, 10.0, [0.0, 10.0], []))


class ProblemsTestCase(base.TestCase):

    def _analysis(self, *gaps):
        result = analysis.Analysis()
        result.bound = 40
        result.gaps = [analysis.Gap('node-%d' % i, 0.0, raw, raw, settled)
                       for i, (raw, settled) in enumerate(gaps)]
        return result

    def test_i2_judges_the_settled_length(self):
        result = self._analysis((55.0, 30.0), (20.0, 20.0))
        self.assertEqual([], result.problems())
        self.assertEqual(55.0, result.longest_gap.effective)
        self.assertEqual(30.0, result.longest_settled.settled)

    def test_i2_broken_after_the_last_change(self):
        result = self._analysis((55.0, 41.0), (45.0, 12.0))
        problems = result.problems()
        self.assertEqual(1, len(problems))
        self.assertIn('I2: 1 gaps longer than 40.000 s', problems[0])
        self.assertIn('41.000 s', problems[0])

    def test_the_bound_allows_the_refreshes_measured_in_the_window(self):
        # Two refreshes end a handover: each took up to 0.6 s within the
        # window; the 5 s first listing before it does not count.
        result = self._analysis((41.0, 41.0))
        result.window = (10.0, 100.0)
        result.refresh_log = [(5.0, 'a1', 5.0), (20.0, 'a1', 0.25),
                              (30.0, 'a2', 0.6)]
        self.assertEqual(1.2, result.refresh_allowance)
        self.assertEqual(41.2, result.effective_bound)
        self.assertEqual([], result.problems())
        result.gaps = [analysis.Gap('n', 0.0, 41.3, 41.3, 41.3)]
        (problem,) = result.problems()
        self.assertIn('I2: 1 gaps longer than 41.200 s', problem)

    def test_without_refreshes_the_bound_is_the_protocols(self):
        result = self._analysis((40.5, 40.5))
        self.assertEqual(0.0, result.refresh_allowance)
        self.assertEqual(40, result.effective_bound)
        self.assertEqual(1, len(result.problems()))


class MarginTestCase(base.TestCase):

    def test_handover_of_a_never_reported_node_has_no_margin(self):
        result = analysis.Analysis()
        result.handovers = [
            analysis.Handover('n1', 'a', 'b', 1.0, 2.0, None, None, 'ok',
                              None, 'expiry'),
            analysis.Handover('n2', 'a', 'b', 1.0, 2.0, 0.5, 0.5, 'ok',
                              0.5, 'expiry'),
        ]
        self.assertEqual(0.5, result.min_margin('expiry'))
        self.assertIsNone(result.min_margin('release'))
        self.assertTrue(result.summary())


class InstanceNodesTestCase(base.TestCase):
    """I3 and the intervals of the nodes of an agent's own instances."""

    def setUp(self):
        super().setUp()
        self.obs = observer.Observer(['ring'], instance_owner={'inst': 'a1'})
        self.obs.add_agent('a1', '/nonexistent/a1.json')
        self.state = self.obs._hosts['a1']
        self.counter = 0

    def report(self, written, managed, ready=True, state='running',
               waiting=(), valid_for=10.0):
        self.counter += 1
        doc = {'pid': 7, 'monotonic': written, 'state': state,
               'ready': ready, 'managed': list(managed),
               'by_instance': [n for n in managed if n == 'inst'],
               'waiting': list(waiting), 'refresh_counter': self.counter,
               'claims': {'enabled': True, 'valid_for': valid_for}}
        self.obs._ingest(self.state,
                         observer.Report('a1', doc, written, written))

    def test_fenced_and_stopped_reports_may_list_nothing(self):
        self.report(1.0, ['ring', 'inst'])
        self.report(2.0, [], ready=False, valid_for=None)
        self.report(3.0, [], ready=False, state='stopped', valid_for=None)
        self.assertEqual([], self.obs.analyse().i3)

    def test_ready_report_without_its_instance_node_breaks_i3(self):
        self.report(1.0, ['ring', 'inst'])
        self.report(2.0, ['ring'])
        (problem,) = self.obs.analyse().i3
        self.assertIn('stopped reporting its instance nodes inst', problem)

    def test_waiting_for_the_instance_nodes_claim_is_said(self):
        self.report(1.0, ['ring', 'inst'])
        self.report(2.0, ['ring'], waiting=['inst'])
        self.assertEqual([], self.obs.analyse().i3)

    def test_instance_node_ends_at_the_fence(self):
        # Paused after its last report: the instance node counts until
        # the fence, like a ring node, not for ever.
        self.report(1.0, ['ring', 'inst'], valid_for=4.0)
        self.obs._stopped_at = 100.0
        runs = self.obs.analyse().runs
        (_host, start, end, _certain) = runs['inst'][0]
        self.assertEqual(1.0, start)
        self.assertAlmostEqual(5.0 + observer.EPSILON, end)
        self.assertEqual(runs['ring'][0][2], end)
