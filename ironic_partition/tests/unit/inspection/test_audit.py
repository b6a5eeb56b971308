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

import os

import fixtures

from ironic_partition.cmd import check
from ironic_partition.cmd import checks
from ironic_partition import exception
from ironic_partition.inspection import audit
from ironic_partition.inspection import mapping
from ironic_partition.tests import base
from ironic_partition.tests.unit.cmd import test_commands

MAP = mapping.PartitionMap([
    'cidr=10.1.0.0/16,group=rack1,shard=shard-r1',
    'cidr=10.2.0.0/16,group=rack2',
    'switch=tor-r3,group=rack3',
])
HW = 'fake-hardware'
CONDUCTORS = [
    {'hostname': 'c1', 'conductor_group': 'rack1', 'alive': True,
     'drivers': [HW]},
    {'hostname': 'c2', 'conductor_group': 'rack2', 'alive': True,
     'drivers': [HW, 'ipmi']},
    {'hostname': 'c3', 'conductor_group': 'rack3', 'alive': False,
     'drivers': [HW]},
    {'hostname': 'c0', 'conductor_group': '', 'alive': True,
     'drivers': [HW]},
]


def _node(uuid, group='', **kw):
    node = {'uuid': uuid, 'name': None, 'driver': HW,
            'conductor_group': group, 'shard': None, 'driver_info': {},
            'driver_internal_info': {}, 'instance_uuid': None,
            'allocation_uuid': None}
    node.update(kw)
    return node


class TestAudit(base.TestCase):

    def _audit(self, nodes, default_group=''):
        return [(f.kind, f.node) for f in audit.audit(
            MAP, nodes, CONDUCTORS, default_group)]

    def test_in_place(self):
        nodes = [
            _node('a', 'rack1', shard='shard-r1',
                  driver_info={'ipmi_address': '10.1.0.1'}),
            _node('b', 'rack2', driver_info={'redfish_address':
                                             'https://10.2.0.1/redfish'}),
            _node('c', '', driver_info={'ipmi_address': '192.0.2.1'}),
            _node('d', ''),
        ]
        self.assertEqual([], self._audit(nodes))

    def test_differs_from_map(self):
        nodes = [
            _node('by-driver-info', '', driver_info={
                'ipmi_address': '10.2.0.9'}, name='n1'),
            _node('by-last-inspection', 'rack1', shard='shard-r1',
                  driver_internal_info={'ironic_partition': {
                      'matched_by': 'inventory.bmc_address',
                      'matched_value': '10.2.0.7'}}),
            _node('wrong-shard', 'rack1', shard='other',
                  driver_info={'ipmi_address': '10.1.0.9'}),
            _node('by-switch', '', driver_internal_info={
                'ironic_partition': {
                    'matched_by': 'eth0.switch_system_name',
                    'matched_value': 'TOR-R3'}}),
        ]
        findings = audit.audit(MAP, nodes, CONDUCTORS)
        self.assertEqual(
            [('map', 'by-driver-info'), ('map', 'by-last-inspection'),
             ('map', 'wrong-shard'), ('map', 'by-switch')],
            [(f.kind, f.node) for f in findings])
        first = findings[0].message
        self.assertIn('by-driver-info (n1)', first)
        self.assertIn("the map says 'rack2'", first)
        self.assertIn('driver_info.ipmi_address 10.2.0.9', first)
        self.assertIn('enrolled before the hook', first)
        self.assertIn('set by hand', findings[1].message)
        self.assertIn("shard 'other', the map says 'shard-r1'",
                      findings[2].message)
        self.assertNotIn('the map says \'rack1\'', findings[2].message)

    def test_instance_reason(self):
        [finding] = audit.audit(MAP, [
            _node('i', '', instance_uuid='x',
                  driver_info={'ipmi_address': '10.2.0.3'})], CONDUCTORS)
        self.assertIn('instance', finding.message)

    def test_not_served(self):
        nodes = [
            _node('dead-group', 'rack3'),
            _node('no-group', 'rack9'),
            _node('other-driver', 'rack1', driver='ipmi'),
            _node('fine', 'rack2', driver='ipmi'),
        ]
        findings = audit.audit(MAP, nodes, CONDUCTORS)
        self.assertEqual(
            [('served', 'dead-group'), ('served', 'no-group'),
             ('served', 'other-driver')],
            [(f.kind, f.node) for f in findings])
        self.assertIn("'rack9'", findings[1].message)
        self.assertIn("'ipmi'", findings[2].message)

    def test_not_served_past_a_handful_is_one_finding_per_group(self):
        # A rack of nodes in a group without an alive conductor: one
        # sentence with the count and the first few, not one per node.
        nodes = [_node('n%04d' % i, 'rack3') for i in range(10000)]
        nodes.append(_node('lone', 'rack9'))
        findings = audit.audit(MAP, nodes, CONDUCTORS)
        self.assertEqual([('served', 'n0000'), ('served', 'lone')],
                         [(f.kind, f.node) for f in findings])
        self.assertIn("10000 nodes are in conductor group 'rack3'",
                      findings[0].message)
        self.assertIn('(the first: n0000, n0001, n0002, n0003, n0004)',
                      findings[0].message)
        self.assertNotIn('n0005', findings[0].message)
        self.assertIn('Node lone is in conductor group', findings[1].message)

    def test_empty_map_still_checks_served(self):
        self.assertEqual(
            [('served', 'x')],
            [(f.kind, f.node) for f in audit.audit(
                mapping.PartitionMap([]), [_node('x', 'rack9')],
                CONDUCTORS)])


class TestLoadMap(base.TestCase):

    def _write(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'ironic.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        return path

    def test_load(self):
        path = self._write(
            '[DEFAULT]\ndefault_conductor_group = landing\n'
            'enabled_hardware_types = ipmi\n'
            '[conductor]\nconductor_group = rack1\n'
            '[ironic_partition_inspection]\n'
            'map = cidr=10.1.0.0/16,group=rack1\n'
            'map = cidr=10.2.0.0/16,group=rack2,shard=s2\n')
        pmap, default_group = audit.load_map(path)
        self.assertEqual(2, len(pmap))
        self.assertEqual('landing', default_group)

    def test_invalid(self):
        path = self._write('[ironic_partition_inspection]\n'
                           'map = cidr=10.1.0.0/16,group=Rack~1\n')
        exc = self.assertRaises(exception.InvalidPartitionMap,
                                audit.load_map, path)
        self.assertIn('Rack~1', str(exc))


class TestCheckCommand(test_commands.CommandTestCase):
    """``ironic-partition check --inspection-config``."""

    def setUp(self):
        super().setUp()
        self.membership.dead = frozenset()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'ironic.conf')
        with open(self.path, 'w') as stream:
            stream.write('[ironic_partition_inspection]\n'
                         'map = cidr=10.1.0.0/16,group=rack1\n'
                         'map = cidr=10.2.0.0/16,group=rack2\n')
        self.asked = []

        def list_node_dicts(fields, microversion, **filters):
            self.asked.append((tuple(fields), microversion))
            return [_node('moved-by-hand', 'rack1',
                          driver_info={'ipmi_address': '10.2.0.1'}),
                    _node('in-place', 'rack1',
                          driver_info={'ipmi_address': '10.1.0.1'}),
                    _node('nowhere', 'rack9')]
        self.client.list_node_dicts = list_node_dicts

    def test_without_the_option_nothing_changes(self):
        doc = checks.run_checks(self.conf, 'agent')
        self.assertEqual([], [c for c in doc['passed'] + doc['skipped']
                              if c in checks.INSPECTION_CHECKS])
        self.assertEqual([], self.asked)

    def test_audit(self):
        doc = checks.run_checks(self.conf, 'agent',
                                inspection_config=self.path)
        self.assertEqual([(audit.NODE_FIELDS, '1.82')], self.asked)
        self.assertEqual(['inspection-served'],
                         [p['check'] for p in doc['problems']])
        self.assertIn('nowhere', doc['problems'][0]['message'])
        self.assertEqual(['inspection-map'],
                         [w['check'] for w in doc['warnings']])
        self.assertIn('moved-by-hand', doc['warnings'][0]['message'])
        self.assertIn('inspection-map', doc['passed'])
        self.assertNotIn('inspection-served', doc['passed'])
        rows = [r for r in check.finding_rows(doc)
                if r['result'] in ('problem', 'warning')]
        self.assertEqual(2, len(rows))
        self.assertEqual('problem', rows[0]['result'])
        self.assertTrue(rows[0]['message'].startswith('Node nowhere'))
        self.assertEqual('warning', rows[1]['result'])
        self.assertTrue(rows[1]['message'].startswith('Node moved-by-hand'))

    def test_bad_map_is_one_problem(self):
        with open(self.path, 'w') as stream:
            stream.write('[ironic_partition_inspection]\n'
                         'map = cidr=10.1.0.1/16,group=rack1\n')
        doc = checks.run_checks(self.conf, 'agent',
                                inspection_config=self.path)
        [problem] = doc['problems']
        self.assertEqual('inspection-map', problem['check'])
        self.assertIn('[ironic_partition_inspection] map', problem['message'])
        self.assertIn('host bits set', problem['message'])
        self.assertEqual([], self.asked)
