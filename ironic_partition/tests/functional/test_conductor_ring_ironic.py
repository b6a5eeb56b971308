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

Ironic's ring runs in a child process (see ``_ironic_ring_oracle``), with
the real ``ironic`` package of the functional env.
"""

import json
import subprocess
import sys

from oslotest import base

from ironic_partition.ring import conductor
from ironic_partition.tests.unit.ring.test_conductor import _nodes
from ironic_partition.tests.unit.ring.test_conductor import CONDUCTORS

ORACLE = 'ironic_partition.tests.functional._ironic_ring_oracle'


def ironic_mapping(conductors, nodes, use_groups=True):
    """Ask Ironic's own ring where each node belongs.

    :param conductors: conductor dicts (hostname, conductor_group, alive,
        drivers).
    :param nodes: node dicts (uuid, driver, conductor_group).
    :param use_groups: key the rings by group as well as hardware type.
    :returns: a dict of node UUID to conductor host name.
    """
    request = json.dumps({'conductors': conductors, 'nodes': nodes,
                          'use_groups': use_groups})
    out = subprocess.run([sys.executable, '-m', ORACLE], input=request,
                         capture_output=True, text=True, check=True,
                         timeout=120)
    return json.loads(out.stdout)


class TestSameAsIronic(base.BaseTestCase):

    def test_same_as_ironic(self):
        nodes = _nodes(400)
        for use_groups in (True, False):
            expected = ironic_mapping(CONDUCTORS, nodes, use_groups)
            self.assertEqual(400, len(expected))
            provider = conductor.ConductorRingProvider(
                conductors=CONDUCTORS, use_groups=use_groups)
            self.assertEqual(expected, provider.map_nodes(nodes))
            for node in nodes[:50]:
                self.assertEqual(expected[node['uuid']],
                                 provider.conductor_for(node))
