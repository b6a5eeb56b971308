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

"""Tests for ironic_partition.ring.conductor."""

import random
from unittest import mock
import uuid

from oslotest import base

from ironic_partition import exception
from ironic_partition.ring import conductor

CONDUCTORS = [
    {'hostname': 'cond-1', 'conductor_group': '', 'alive': True,
     'drivers': ['ipmi', 'redfish']},
    {'hostname': 'cond-2:6385', 'conductor_group': '', 'alive': True,
     'drivers': ['ipmi']},
    {'hostname': 'Cond-3', 'conductor_group': 'rack1', 'alive': True,
     'drivers': ['ipmi', 'redfish']},
    {'hostname': 'cond-4', 'conductor_group': 'RACK1', 'alive': True,
     'drivers': ['redfish']},
    {'hostname': 'cond-5', 'conductor_group': 'rack1', 'alive': False,
     'drivers': ['ipmi', 'redfish']},
    {'hostname': 'cond-6', 'conductor_group': 'rack2', 'alive': True,
     'drivers': []},
]


def _nodes(count, seed=1):
    rnd = random.Random(seed)
    choices = [('ipmi', ''), ('redfish', ''), ('ipmi', 'rack1'),
               ('redfish', 'rack1')]
    nodes = []
    for _i in range(count):
        driver, group = rnd.choice(choices)
        nodes.append({'uuid': str(uuid.UUID(int=rnd.getrandbits(128))),
                      'driver': driver, 'conductor_group': group})
    return nodes


_FIXED = {
    '1be26c0b-03f2-4d2e-ae87-c02d7f33c123': 'cond-2:6385',
    '2be26c0b-03f2-4d2e-ae87-c02d7f33c123': 'cond-2:6385',
    '3be26c0b-03f2-4d2e-ae87-c02d7f33c123': 'Cond-3',
}


class FakeClock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class ConductorRingProviderTestCase(base.BaseTestCase):

    def test_needs_a_source(self):
        self.assertRaises(ValueError, conductor.ConductorRingProvider)

    def test_ring_keys(self):
        self.assertEqual('rack1:ipmi', conductor.ring_key('ipmi', 'Rack1'))
        self.assertEqual(':ipmi', conductor.ring_key('ipmi', None))
        self.assertEqual('ipmi', conductor.ring_key('ipmi', 'x', False))
        members = conductor.rings_members(CONDUCTORS)
        self.assertEqual({
            ':ipmi': {'cond-1', 'cond-2:6385'},
            ':redfish': {'cond-1'},
            'rack1:ipmi': {'Cond-3'},
            'rack1:redfish': {'Cond-3', 'cond-4'},
        }, members)
        members = conductor.rings_members(CONDUCTORS, use_groups=False)
        self.assertEqual({
            'ipmi': {'cond-1', 'cond-2:6385', 'Cond-3'},
            'redfish': {'cond-1', 'Cond-3', 'cond-4'},
        }, members)

    def test_fixed_mapping(self):
        # NOTE: expected values computed with tooz 9.1.0 rings.
        provider = conductor.ConductorRingProvider(conductors=CONDUCTORS)
        nodes = [
            {'uuid': '1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
             'driver': 'ipmi', 'conductor_group': ''},
            {'uuid': '2be26c0b-03f2-4d2e-ae87-c02d7f33c123',
             'driver': 'ipmi', 'conductor_group': ''},
            {'uuid': '3be26c0b-03f2-4d2e-ae87-c02d7f33c123',
             'driver': 'redfish', 'conductor_group': 'RACK1'},
        ]
        mapped = provider.map_nodes(nodes)
        for node in nodes:
            self.assertEqual(mapped[node['uuid']],
                             provider.conductor_for(node))
        self.assertEqual(_FIXED, mapped)

    def test_unknown_key(self):
        provider = conductor.ConductorRingProvider(conductors=CONDUCTORS)
        node = {'uuid': str(uuid.uuid4()), 'driver': 'idrac',
                'conductor_group': 'rack2'}
        exc = self.assertRaises(exception.UnknownRingKey,
                                provider.conductor_for, node)
        self.assertIsInstance(exc, LookupError)
        for text in ("'idrac'", "'rack2'", 'rack1:redfish', ':ipmi'):
            self.assertIn(text, str(exc))
        self.assertRaises(exception.UnknownRingKey, provider.map_nodes, [node])
        self.assertEqual({}, provider.map_nodes([node], ignore_unknown=True))
        # NOTE: every miss rebuilds once, like Ironic.
        self.assertEqual(4, provider.builds)

    def test_reset_interval(self):
        clock = FakeClock()
        conductors = [dict(c) for c in CONDUCTORS]
        provider = conductor.ConductorRingProvider(
            conductors=lambda: conductors, clock=clock, reset_interval=15)
        rings = provider.rings()
        self.assertIs(rings, provider.rings())
        conductors.append({'hostname': 'cond-7', 'conductor_group': '',
                           'alive': True, 'drivers': ['ipmi']})
        clock.now += 15
        self.assertIs(rings, provider.rings())
        self.assertEqual(1, provider.builds)
        clock.now += 0.5
        new = provider.rings()
        self.assertIsNot(rings, new)
        self.assertIn('cond-7', new[':ipmi'].nodes)
        self.assertEqual(2, provider.builds)
        provider.reset()
        self.assertIsNot(new, provider.rings())
        self.assertEqual(3, provider.builds)

    def test_miss_rebuilds_before_interval(self):
        clock = FakeClock()
        conductors = [dict(c) for c in CONDUCTORS]
        provider = conductor.ConductorRingProvider(
            conductors=lambda: conductors, clock=clock)
        provider.rings()
        conductors.append({'hostname': 'cond-7', 'conductor_group': 'rack2',
                           'alive': True, 'drivers': ['idrac']})
        ring = provider.ring_for('idrac', 'rack2')
        self.assertEqual({'cond-7': 1}, ring.nodes)

    def test_sdk_node_objects(self):
        # Nodes may be SDK resources rather than dicts. (Reading conductors
        # through a real connection is tested against a real Ironic in
        # tests/functional/test_real_ironic.py.)
        provider = conductor.ConductorRingProvider(conductors=CONDUCTORS)
        sdk_node = mock.Mock(spec=['uuid', 'driver', 'conductor_group'],
                             uuid='1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
                             driver='ipmi', conductor_group='')
        self.assertEqual(_FIXED[sdk_node.uuid],
                         provider.conductor_for(sdk_node))

    def test_without_groups(self):
        provider = conductor.ConductorRingProvider(conductors=CONDUCTORS,
                                                   use_groups=False)
        mapped = provider.map_nodes(_nodes(50))
        self.assertEqual(50, len(mapped))
        self.assertEqual({'cond-1', 'cond-2:6385', 'Cond-3'},
                         set(provider.get_ring('ipmi').nodes))
