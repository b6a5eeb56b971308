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

"""The conductor ring provider against Ironic's own HashRingManager.

Needs the real ``ironic`` package (installed in the functional env). Only
Ironic's database query for the alive conductors is replaced, with the
same data the provider is given.
"""

import collections
from unittest import mock

from ironic.common import hash_ring as ironic_hash_ring
from ironic import objects as ironic_objects
from oslotest import base

from ironic_partition.ring import conductor
from ironic_partition.tests.unit.ring.test_conductor import _nodes
from ironic_partition.tests.unit.ring.test_conductor import CONDUCTORS


class TestSameAsIronic(base.BaseTestCase):

    def test_same_as_ironic(self):
        ironic_objects.register_all()
        nodes = _nodes(400)
        for use_groups in (True, False):
            # NOTE: what Ironic's DB query returns for the same conductors.
            d2c = collections.defaultdict(set)
            for cond in CONDUCTORS:
                if not cond['alive']:
                    continue
                for driver in cond['drivers']:
                    key = ('%s:%s' % (cond['conductor_group'].lower(),
                                      driver) if use_groups else driver)
                    d2c[key].add(cond['hostname'])
            manager = ironic_hash_ring.HashRingManager(use_groups=use_groups,
                                                       cache=False)
            with mock.patch.object(
                    ironic_hash_ring.objects.Conductor,
                    'get_active_hardware_type_dict', autospec=True,
                    return_value=dict(d2c)), \
                    mock.patch.object(ironic_hash_ring.context,
                                      'get_admin_context', autospec=True):
                provider = conductor.ConductorRingProvider(
                    conductors=CONDUCTORS, use_groups=use_groups)
                mapped = provider.map_nodes(nodes)
                for node in nodes:
                    ring = manager.get_ring(node['driver'],
                                            node['conductor_group'])
                    expected = ring.get_nodes(
                        node['uuid'].encode('utf-8')).pop()
                    self.assertEqual(expected, mapped[node['uuid']])
                    self.assertEqual(expected, provider.conductor_for(node))
