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

import ast
import os

import ironic_partition
from ironic_partition.inspection import decision
from ironic_partition.inspection import mapping
from ironic_partition.tests import base

MAP = mapping.PartitionMap([
    'cidr=10.1.0.0/16,group=rack1,shard=shard-r1',
    'cidr=10.2.0.0/16,group=rack2,shard=shard-r2',
    'cidr=10.3.0.0/16,group=rack3',
])
HW = 'fake-hardware'


def _node(**kw):
    node = {'uuid': 'n1', 'driver': HW, 'conductor_group': '',
            'shard': None, 'instance_uuid': None, 'allocation_id': None,
            'recorded_group': None}
    node.update(kw)
    return node


class TestDecide(base.TestCase):

    def setUp(self):
        super().setUp()
        self.asked = []
        self.alive = {('rack1', HW), ('rack2', HW), ('rack3', HW)}

    def served(self, group, hardware_type):
        self.asked.append((group, hardware_type))
        return (group, hardware_type) in self.alive

    def _decide(self, node, address='10.2.0.5', **kw):
        match, why = MAP.lookup([('inventory.bmc_address', address)])
        return decision.decide(node, match, self.served, no_match_reason=why,
                               **kw)

    def test_moves_default_group_node_and_sets_shard(self):
        d = self._decide(_node())
        self.assertEqual((decision.MOVED, '', 'rack2'),
                         (d.action, d.group_from, d.group_to))
        self.assertEqual((decision.SHARD_SET, 'shard-r2'),
                         (d.shard_action, d.shard))
        self.assertEqual([('rack2', HW)], self.asked)
        rec = decision.record(d)
        self.assertEqual('moved', rec['action'])
        self.assertEqual('inventory.bmc_address', rec['matched_by'])
        self.assertEqual('10.2.0.5', rec['matched_value'])
        self.assertEqual('cidr=10.2.0.0/16,group=rack2,shard=shard-r2',
                         rec['entry'])

    def test_configured_default_group_is_not_explicit(self):
        d = self._decide(_node(conductor_group='landing'),
                         default_group='landing')
        self.assertEqual(decision.MOVED, d.action)

    def test_instance_or_allocation_never_touched(self):
        for kw in ({'instance_uuid': 'i1'}, {'allocation_id': 7}):
            d = self._decide(_node(**kw))
            self.assertEqual((decision.SKIPPED, '', decision.SHARD_NONE,
                              None),
                             (d.action, d.group_to, d.shard_action, d.shard))
            self.assertIn('never moved', d.reason)
        self.assertEqual([], self.asked)

    def test_no_match(self):
        d = self._decide(_node(), address='192.0.2.1')
        self.assertEqual(decision.SKIPPED, d.action)
        self.assertIn('192.0.2.1', d.reason)
        self.assertIsNone(decision.record(d)['entry'])

    def test_explicit_group_kept(self):
        d = self._decide(_node(conductor_group='rack1'))
        self.assertEqual((decision.KEPT, 'rack1'), (d.action, d.group_to))
        self.assertIn('explicitly', d.reason)
        self.assertEqual([], self.asked)
        # The shard follows the map all the same, when there is none yet.
        self.assertEqual((decision.SHARD_SET, 'shard-r2'),
                         (d.shard_action, d.shard))

    def test_explicit_group_overwritten_when_configured(self):
        d = self._decide(_node(conductor_group='rack1'),
                         overwrite_explicit=True)
        self.assertEqual((decision.MOVED, 'rack2'), (d.action, d.group_to))

    def test_group_set_by_the_hook_follows_the_map(self):
        d = self._decide(_node(conductor_group='rack1',
                               recorded_group='RACK1'))
        self.assertEqual((decision.MOVED, 'rack1', 'rack2'),
                         (d.action, d.group_from, d.group_to))

    def test_group_changed_by_hand_after_the_hook(self):
        d = self._decide(_node(conductor_group='rack3',
                               recorded_group='rack1'))
        self.assertEqual(decision.KEPT, d.action)

    def test_already_there(self):
        d = self._decide(_node(conductor_group='rack2', shard='shard-r2'))
        self.assertEqual((decision.UNCHANGED, decision.SHARD_UNCHANGED),
                         (d.action, d.shard_action))
        self.assertEqual([], self.asked)

    def test_refused_changes_nothing(self):
        self.alive.discard(('rack2', HW))
        d = self._decide(_node())
        self.assertEqual((decision.REFUSED, '', decision.SHARD_NONE, None),
                         (d.action, d.group_to, d.shard_action, d.shard))
        self.assertIn("'rack2'", d.reason)
        self.assertIn(HW, d.reason)

    def test_refused_for_another_hardware_type(self):
        d = self._decide(_node(driver='ipmi'))
        self.assertEqual(decision.REFUSED, d.action)
        self.assertEqual([('rack2', 'ipmi')], self.asked)

    def test_shard_never_changes(self):
        d = self._decide(_node(shard='by-hand'))
        self.assertEqual((decision.MOVED, decision.SHARD_KEPT, 'by-hand',
                          'by-hand'),
                         (d.action, d.shard_action, d.shard_from, d.shard))

    def test_entry_without_shard(self):
        d = self._decide(_node(), address='10.3.0.1')
        self.assertEqual((decision.MOVED, decision.SHARD_NONE, None),
                         (d.action, d.shard_action, d.shard))

    def test_is_explicit_group(self):
        self.assertFalse(decision.is_explicit_group('', 'x', None))
        self.assertFalse(decision.is_explicit_group('X', 'x', None))
        self.assertFalse(decision.is_explicit_group('r1', '', 'R1'))
        self.assertTrue(decision.is_explicit_group('r1', '', None))
        self.assertTrue(decision.is_explicit_group('r1', '', 'r2'))


class TestImportBoundary(base.TestCase):
    """Only the hook imports Ironic; nothing imports the hook.

    The test tooling is left out: ``testing/_bulk.py`` and the functional
    tests' ring oracle run in a subprocess of Ironic's interpreter.
    """

    EXEMPT = ('ironic_partition/testing/', 'ironic_partition/tests/')

    def _imports(self, path):
        with open(path) as stream:
            tree = ast.parse(stream.read(), path)
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update('%s.%s' % (node.module, a.name)
                             for a in node.names)
        return names

    def test_boundary(self):
        root = os.path.dirname(os.path.dirname(
            os.path.abspath(ironic_partition.__file__)))
        importers, hook_users = [], []
        for top in ('ironic_partition', 'nova'):
            for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
                for name in files:
                    if not name.endswith('.py'):
                        continue
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, root)
                    names = self._imports(path)
                    if rel.startswith(self.EXEMPT):
                        continue
                    if any(n == 'ironic' or n.startswith('ironic.')
                           for n in names):
                        importers.append(rel)
                    if any(n.startswith('ironic_partition.inspection.hook')
                           for n in names):
                        hook_users.append(rel)
        self.assertEqual(['ironic_partition/inspection/hook.py'],
                         importers)
        self.assertEqual([], hook_users)
