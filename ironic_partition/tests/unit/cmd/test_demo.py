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

"""The demo's checks of the agents' reports."""

import uuid

from ironic_partition.ring import hash_ring
from ironic_partition.testing.lanes import split as harness_split
from ironic_partition.tests import base


class TestSplit(base.TestCase):

    def setUp(self):
        super().setUp()
        self.nodes = [{'uuid': str(uuid.UUID(int=i + 1)),
                       'conductor_group': 'rack1' if i < 20 else 'rack2',
                       'instance': None} for i in range(30)]
        self.nodes[0]['instance'] = 'i-a1'
        self.nodes[1]['instance'] = 'i-a2'
        self.owner = {'i-a1': 'a1', 'i-a2': 'a2'}
        self.members = {'rack1': ['a1', 'a2'], 'rack2': ['b1']}

    def reports(self, expected):
        reports = {a: {'ready': True, 'managed': []}
                   for members in self.members.values() for a in members}
        for node, agent in expected.items():
            if agent is not None:
                reports[agent]['managed'].append(node)
        return reports

    def test_expected_split_follows_the_ring_and_instances(self):
        expected = harness_split.expected_split(self.nodes, self.members,
                                                self.owner)
        ring = hash_ring.HashRing(['a1', 'a2'])
        for node in self.nodes[2:20]:
            self.assertEqual(ring.get_node(node['uuid']),
                             expected[node['uuid']])
        self.assertEqual('a1', expected[self.nodes[0]['uuid']])
        self.assertEqual('a2', expected[self.nodes[1]['uuid']])
        self.assertEqual({'b1'}, {expected[n['uuid']]
                                  for n in self.nodes[20:]})

    def test_exact_split_passes(self):
        expected = harness_split.expected_split(self.nodes, self.members,
                                                self.owner)
        self.assertEqual([], harness_split.check_split(
            self.reports(expected), self.nodes, self.members, self.owner))

    def test_dead_owner_strands_its_instance_node(self):
        members = {'rack1': ['a1'], 'rack2': ['b1']}
        expected = harness_split.expected_split(self.nodes, members,
                                                self.owner)
        self.assertIsNone(expected[self.nodes[1]['uuid']])
        reports = {'a1': {'ready': True, 'managed': [
            u for u, a in expected.items() if a == 'a1']
            + [self.nodes[1]['uuid']]},
            'b1': {'ready': True, 'managed': [
                u for u, a in expected.items() if a == 'b1']}}
        problems = harness_split.check_split(reports, self.nodes, members,
                                             self.owner)
        self.assertEqual(1, len(problems))
        self.assertIn('instance owner is not live', problems[0])

    def test_double_missing_and_not_ready(self):
        expected = harness_split.expected_split(self.nodes, self.members,
                                                self.owner)
        reports = self.reports(expected)
        moved = reports['a1']['managed'].pop()
        reports['b1']['managed'].append(self.nodes[25]['uuid'])
        reports['a2']['managed'].append(self.nodes[25]['uuid'])
        reports['b1']['ready'] = False
        reports['b1']['reason'] = 'Ironic down'
        problems = harness_split.check_split(reports, self.nodes,
                                             self.members, self.owner)
        self.assertIn('b1 is not ready: Ironic down', problems)
        self.assertIn('node %s should be managed by a1, not by nobody'
                      % moved, problems)
        self.assertIn('node %s is managed by a2, b1 at once'
                      % self.nodes[25]['uuid'], problems)

    def test_missing_report(self):
        problems = harness_split.check_split({}, self.nodes, self.members,
                                             self.owner)
        self.assertIn('a1 has written no report', problems)
