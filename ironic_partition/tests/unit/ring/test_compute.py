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

"""Tests for ironic_partition.ring.compute."""

import uuid

from oslotest import base

from ironic_partition.ring import balanced_ring
from ironic_partition.ring import compute
from ironic_partition.ring import hash_ring

try:
    from tooz import hashring as tooz_hashring
except ImportError:  # pragma: no cover
    tooz_hashring = None


class FakeMembership(object):
    def __init__(self, live):
        self.live = live


class ComputeRingProviderTestCase(base.BaseTestCase):

    def test_needs_a_source(self):
        self.assertRaises(ValueError, compute.ComputeRingProvider)

    def test_static_members_normalized(self):
        provider = compute.ComputeRingProvider(
            members=[' Compute-1 ', 'COMPUTE-2', 'compute-1', '', '  '])
        self.assertEqual(frozenset(['compute-1', 'compute-2']),
                         provider.members())
        ring = provider.get_ring()
        self.assertEqual({'compute-1': 1, 'compute-2': 1}, ring.nodes)

    def test_same_as_nova_ring(self):
        hosts = ['compute-%d' % i for i in range(7)]
        provider = compute.ComputeRingProvider(
            members=[h.upper() for h in hosts])
        ring = provider.get_ring()
        for _i in range(200):
            node = str(uuid.uuid4())
            expected = hash_ring.HashRing(hosts).get_nodes(node.encode())
            if tooz_hashring is not None:
                self.assertEqual(
                    tooz_hashring.HashRing(hosts).get_nodes(node.encode()),
                    expected)
            self.assertEqual(expected, ring.get_nodes(node.encode()))
            self.assertEqual(expected, {ring.get_node(node)})

    def test_members_fn_and_cache(self):
        live = {'p1': ['a', 'b'], 'p2': ['c']}
        calls = []

        def members_fn(key):
            calls.append(key)
            return list(live[key])

        provider = compute.ComputeRingProvider(members_fn=members_fn)
        ring1 = provider.get_ring('p1')
        self.assertIs(ring1, provider.get_ring('p1'))
        self.assertEqual(1, provider.builds)
        ring2 = provider.get_ring('p2')
        self.assertEqual({'c': 1}, ring2.nodes)
        self.assertEqual(2, provider.builds)
        live['p1'] = ['A', 'b', 'd']
        ring3 = provider.get_ring('p1')
        self.assertIsNot(ring1, ring3)
        self.assertEqual({'a', 'b', 'd'}, set(ring3.nodes))
        self.assertIs(ring3, provider.get_ring('p1'))
        self.assertEqual(3, provider.builds)
        provider.reset()
        self.assertIsNot(ring3, provider.get_ring('p1'))
        self.assertEqual(['p1', 'p1', 'p2', 'p1', 'p1', 'p1'], calls)

    def test_membership_object(self):
        provider = compute.ComputeRingProvider(
            members_fn=lambda key: FakeMembership(frozenset(['X', 'y'])))
        self.assertEqual(frozenset(['x', 'y']), provider.members('k'))

    def test_static_by_key(self):
        source = compute.StaticMembers({'p1': ['a'], None: ['b']})
        self.assertEqual(['a'], source('p1'))
        self.assertEqual(['b'], source())
        self.assertEqual([], source('other'))

    def test_empty(self):
        provider = compute.ComputeRingProvider(members=[])
        self.assertIsNone(provider.get_ring().get_node('x'))

    def test_balanced_cache_by_keys(self):
        provider = compute.ComputeRingProvider(members=['a', 'b', 'c'],
                                               mode='balanced')
        keys = [str(uuid.uuid4()).encode() for _ in range(300)]
        ring = provider.get_ring(keys=keys)
        self.assertIsInstance(ring, balanced_ring.BalancedHashRing)
        self.assertIs(ring, provider.get_ring(keys=list(reversed(keys))))
        self.assertIsNot(ring, provider.get_ring(keys=keys[:200]))
