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

import uuid

import testscenarios
import tooz.hashring

from ironic_partition.partition import rules
from ironic_partition.ring import hash_ring
from ironic_partition.tests import base


class FakeNode(object):
    def __init__(self, id, instance_id=None):
        self.id = id
        self.instance_id = instance_id


def _nodes(n, instances=None):
    instances = instances or {}
    out = []
    for i in range(n):
        node_id = str(uuid.UUID(int=i + 1))
        out.append(FakeNode(node_id, instances.get(i)))
    return out


class TestPartition(testscenarios.WithScenarios, base.TestCase):

    scenarios = [('tooz', {'ring_class': tooz.hashring.HashRing}),
                 ('ours', {'ring_class': hash_ring.HashRing})]

    def test_three_hosts_split_disjoint_and_complete(self):
        hosts = ['cn1', 'cn2', 'cn3']
        ring = self.ring_class(hosts, partitions=2 ** 5)
        nodes = _nodes(300)
        parts = [rules.partition(nodes, ring, h, ()) for h in hosts]
        seen = [u for p in parts for u in p.managed]
        self.assertEqual(len(seen), len(set(seen)))
        self.assertEqual({n.id for n in nodes}, set(seen))
        for p in parts:
            self.assertGreater(len(p.managed), 50)

    def test_matches_nova_rule_on_ring(self):
        hosts = ['cn1', 'cn2']
        ring = self.ring_class(hosts, partitions=2 ** 5)
        nodes = _nodes(100)
        p = rules.partition(nodes, ring, 'CN1', ())
        expected = tuple(n.id for n in nodes
                         if 'cn1' in ring.get_nodes(n.id.encode('utf-8')))
        self.assertEqual(expected, p.by_ring)

    def test_own_instance_always_managed(self):
        ring = self.ring_class(['cn1', 'cn2'], partitions=2 ** 5)
        nodes = _nodes(50, instances={i: 'inst-%d' % i for i in range(50)})
        mine = {'inst-%d' % i for i in range(0, 50, 2)}
        p = rules.partition(nodes, ring, 'cn1', mine)
        self.assertEqual(25, len(p.by_instance))
        self.assertEqual((), p.by_ring)
        self.assertEqual(25, len(p.foreign))
        self.assertEqual(p.by_instance, p.managed)

    def test_other_services_instance_never_managed(self):
        # Even when the ring maps the node to this host.
        ring = self.ring_class(['cn1'], partitions=2 ** 5)
        nodes = _nodes(10, instances={3: 'theirs'})
        p = rules.partition(nodes, ring, 'cn1', {'mine'})
        self.assertNotIn(nodes[3].id, p.managed)
        self.assertEqual((nodes[3].id,), p.foreign)

    def test_stranded_when_owner_is_not_a_member(self):
        ring = self.ring_class(['cn1', 'cn2'], partitions=2 ** 5)
        nodes = _nodes(3, instances={0: 'a', 1: 'b', 2: 'c'})
        p = rules.partition(nodes, ring, 'cn1', (),
                            instance_hosts={'a': 'CN2', 'b': 'cn3'})
        self.assertEqual((nodes[1].id,), p.stranded)
        self.assertEqual(3, len(p.foreign))

    def test_api_attribute_names(self):
        class ApiNode(object):
            uuid = str(uuid.UUID(int=7))
            instance_uuid = 'i'
        p = rules.partition([ApiNode()], self.ring_class(['a']), 'a', {'i'})
        self.assertEqual((ApiNode.uuid,), p.managed)
