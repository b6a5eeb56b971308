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

"""``simulate``: planning, exact move counts, balance figures, speed."""


import tooz.hashring

from ironic_partition.cmd import _stats
from ironic_partition.cmd import simulate
from ironic_partition import exception
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import hash_ring
from ironic_partition.tests import base


class TestStats(base.TestCase):

    def test_count_by_member_includes_idle_members(self):
        self.assertEqual({'a': 2, 'b': 0, 'c': 1},
                         _stats.count_by_member(
                             {'k1': 'a', 'k2': 'a', 'k3': 'c', 'k4': None},
                             ['c', 'b', 'a']))

    def test_balance(self):
        stats = _stats.balance({'a': 10, 'b': 20, 'c': 30})
        self.assertEqual(3, stats['members'])
        self.assertEqual(60, stats['keys'])
        self.assertEqual(20.0, stats['fair'])
        self.assertEqual(10, stats['min'])
        self.assertEqual(30, stats['max'])
        self.assertEqual(1.5, stats['max_over_fair'])
        self.assertEqual(0.5, stats['min_over_fair'])
        self.assertEqual(100.0, stats['spread_percent'])
        self.assertEqual(8.16, stats['stddev'])

    def test_balance_of_nothing(self):
        self.assertIsNone(_stats.balance({})['fair'])
        self.assertIsNone(_stats.balance({'a': 0})['max_over_fair'])

    def test_deviation(self):
        self.assertEqual('+50.0%', _stats.deviation(30, 20))
        self.assertEqual('-50.0%', _stats.deviation(10, 20))
        self.assertEqual('-', _stats.deviation(1, None))


class TestPlan(base.TestCase):

    def setUp(self):
        super().setUp()
        self.nodes = simulate.node_uuids(10)

    def test_node_uuids_are_reproducible(self):
        self.assertEqual(self.nodes, simulate.node_uuids(10))
        self.assertNotEqual(self.nodes, simulate.node_uuids(10, seed=1))
        self.assertEqual(10, len(set(self.nodes)))

    def test_one_group(self):
        layout = simulate.plan(self.nodes, 1, 3, leave='1', join='2')
        self.assertEqual(1, len(layout))
        entry = layout[0]
        self.assertEqual(['compute-1', 'compute-2', 'compute-3'],
                         entry['before'])
        self.assertEqual(['compute-3'], entry['leaving'])
        self.assertEqual(['compute-4', 'compute-5'], entry['joining'])
        self.assertEqual(['compute-1', 'compute-2', 'compute-4',
                          'compute-5'], entry['after'])

    def test_groups_split_nodes_round_robin_and_names_find_groups(self):
        layout = simulate.plan(self.nodes, 2, 2,
                               leave='rack2-compute-1', join='new-1')
        self.assertEqual(self.nodes[0::2], layout[0]['nodes'])
        self.assertEqual(self.nodes[1::2], layout[1]['nodes'])
        self.assertEqual(['rack1-compute-1', 'rack1-compute-2', 'new-1'],
                         layout[0]['after'])
        self.assertEqual(['rack2-compute-2'], layout[1]['after'])

    def test_errors_name_the_option(self):
        cases = [
            (dict(groups=0, members=1), '--groups'),
            (dict(groups=1, members=0), '--members'),
            (dict(groups=1, members=2, leave='3'), '--leave'),
            (dict(groups=1, members=2, leave='-1'), '--leave'),
            (dict(groups=1, members=2, leave='compute-9'), '--leave'),
            (dict(groups=1, members=2, leave='a,,b'), '--leave'),
            (dict(groups=1, members=2, join='compute-1'), '--join'),
        ]
        for kwargs, option in cases:
            err = self.assertRaises(exception.InvalidCommandInput,
                                    simulate.plan, self.nodes, **kwargs)
            self.assertIn(option, str(err))


class TestSimulate(base.TestCase):

    def _check_exact(self, mode, leave=None, join=None):
        nodes = simulate.node_uuids(2000, seed=7)
        doc = simulate.simulate(nodes, 1, 5, leave=leave, join=join,
                                modes=(mode,), keep_moves=True)
        run = doc['runs'][0]
        layout = simulate.plan(nodes, 1, 5, leave, join)[0]
        if mode == 'balanced':
            # NOTE: the services' ring provider uses 2**partition_exponent
            # points per member in both modes.
            before = balanced_ring.BalancedHashRing(
                layout['before'], nodes, partitions=32)
            after = balanced_ring.BalancedHashRing(
                layout['after'], nodes, partitions=32)
        else:
            before = hash_ring.HashRing(layout['before'])
            after = hash_ring.HashRing(layout['after'])
        expected = hash_ring.diff(nodes, before, after)
        moves = {m['node']: (m['from'], m['to'])
                 for m in run['groups'][0]['moves']}
        self.assertEqual(expected, moves)
        self.assertEqual(len(expected), run['moved'])
        self.assertEqual(len(nodes), sum(
            run['groups'][0]['counts_after'].values()))
        return run

    def test_tooz_leave_moves_only_the_leavers_nodes(self):
        run = self._check_exact('tooz', leave='compute-2')
        group = run['groups'][0]
        self.assertEqual(group['counts_before']['compute-2'], run['moved'])
        self.assertEqual(0, run['moved_between_staying_members'])
        self.assertTrue(all(f['from'] == 'compute-2'
                            for f in group['flows']))

    def test_tooz_join_and_leave(self):
        run = self._check_exact('tooz', leave='1', join='2')
        self.assertEqual(0, run['moved_between_staying_members'])

    def test_tooz_matches_tooz(self):
        nodes = simulate.node_uuids(500)
        doc = simulate.simulate(nodes, 1, 4, leave='1')
        ring = tooz.hashring.HashRing(
            ['compute-1', 'compute-2', 'compute-3', 'compute-4'])
        counts = {}
        for node in nodes:
            owner = ring.get_nodes(node.encode('utf-8')).pop()
            counts[owner] = counts.get(owner, 0) + 1
        self.assertEqual(counts, doc['runs'][0]['groups'][0]['counts_before'])

    def test_balanced_is_exact_and_bounded(self):
        run = self._check_exact('balanced', leave='1')
        self.assertLessEqual(run['balance_after']['max_over_fair'], 1.06)

    def test_compare_runs_both_modes(self):
        doc = simulate.simulate(simulate.node_uuids(300), 2, 3, join='1',
                                modes=('tooz', 'balanced'))
        self.assertEqual(['tooz', 'balanced'],
                         [r['mode'] for r in doc['runs']])
        self.assertEqual({'leaving': [], 'joining': ['rack1-compute-4']},
                         doc['event'])
        rows = simulate.run_rows(doc)
        self.assertEqual(['tooz', 'balanced'], [r['mode'] for r in rows])
        self.assertEqual([(6, 7)] * 2, [(r['members_before'],
                                         r['members_after']) for r in rows])
        flows = simulate.flow_rows(doc)
        self.assertEqual({'rack1-compute-4'},
                         {f['to'] for f in flows if f['mode'] == 'tooz'})
        self.assertEqual([r['moved'] for r in rows],
                         [sum(f['nodes'] for f in flows if f['mode'] == m)
                          for m in ('tooz', 'balanced')])

    def test_views_limit_flows_and_list_members_and_moves(self):
        doc = simulate.simulate(simulate.node_uuids(3000), 1, 30, leave='1',
                                keep_moves=True)
        flows = simulate.flow_rows(doc, top=2)
        self.assertEqual(2, len(flows))
        self.assertGreater(len(simulate.flow_rows(doc)), 2)
        self.assertGreaterEqual(flows[0]['nodes'], flows[1]['nodes'])
        members = simulate.member_rows(doc)
        self.assertEqual(30, len(members))
        self.assertEqual([None], [m['after'] for m in members
                                  if m['member'] == 'compute-30'])
        moves = simulate.move_rows(doc)
        self.assertEqual(doc['runs'][0]['moved'], len(moves))
        self.assertEqual({'compute-30'}, {m['from'] for m in moves})

    def test_100k_nodes_100_members(self):
        # Correctness at the size of issue 17; its speed is a benchmark's
        # business (benchmarks/ring_bench.py), not a timed test's.
        nodes = simulate.node_uuids(100000)
        doc = simulate.simulate(nodes, 1, 100, leave='1')
        run = doc['runs'][0]
        members = ['compute-%d' % i for i in range(1, 101)]
        expected = hash_ring.diff(nodes, hash_ring.HashRing(members),
                                  hash_ring.HashRing(members[:-1]))
        self.assertEqual(len(expected), run['moved'])
        self.assertEqual(run['groups'][0]['counts_before']['compute-100'],
                         run['moved'])
