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

import ipaddress

from oslo_config import cfg

from ironic_partition.conf import inspection as inspection_conf
from ironic_partition import exception
from ironic_partition.inspection import mapping
from ironic_partition import names
from ironic_partition.tests import base

MAP = [
    'cidr=10.1.0.0/16,group=rack1,shard=shard-r1',
    ' cidr = 2001:db8:2::/64 , group = rack2 ',
    'cidr=10.2.0.0/24,group=rack2,shard=shard-r2',
    'switch=TOR-R3,group=rack3',
    'switch=aa:bb:cc:dd:ee:ff,group=',
]


class TestParse(base.TestCase):

    def test_entries(self):
        pmap = mapping.PartitionMap(MAP)
        self.assertEqual(5, len(pmap))
        first = pmap.entries[0]
        self.assertEqual(('cidr', ipaddress.ip_network('10.1.0.0/16'),
                          'rack1', 'shard-r1'), first[:4])
        self.assertEqual(MAP[0], first.text)
        six = pmap.entries[1]
        self.assertEqual(ipaddress.ip_network('2001:db8:2::/64'), six.key)
        self.assertEqual('rack2', six.group)
        self.assertIsNone(six.shard)
        self.assertEqual({'tor-r3', 'aa:bb:cc:dd:ee:ff'}, set(pmap.switches))
        self.assertEqual('', pmap.switches['aa:bb:cc:dd:ee:ff'].group)
        self.assertTrue(pmap.uses_lldp)
        self.assertFalse(mapping.PartitionMap(MAP[:3]).uses_lldp)

    def test_empty(self):
        pmap = mapping.PartitionMap(['', '  '])
        self.assertFalse(pmap)
        self.assertIsNone(pmap.lookup([('a', '10.1.0.1')])[0])

    def _assert_invalid(self, entries, *fragments):
        exc = self.assertRaises(exception.InvalidPartitionMap,
                                mapping.PartitionMap, entries)
        self.assertIsInstance(exc, exception.ConfigurationError)
        text = str(exc)
        self.assertIn('[ironic_partition_inspection] map', text)
        for fragment in fragments:
            self.assertIn(fragment, text)
        return exc

    def test_invalid_cidr(self):
        self._assert_invalid(['cidr=10.1.0.300/16,group=a'],
                             "'cidr=10.1.0.300/16,group=a'",
                             'invalid network')

    def test_host_bits_set(self):
        self._assert_invalid(['cidr=10.1.0.1/16,group=a'],
                             'host bits set')

    def test_overlap_v4(self):
        exc = self._assert_invalid(
            ['cidr=10.0.0.0/8,group=a', 'cidr=10.2.0.0/24,group=b'],
            "'cidr=10.2.0.0/24,group=b'", 'overlaps 10.0.0.0/8',
            "'cidr=10.0.0.0/8,group=a'")
        self.assertEqual('cidr=10.2.0.0/24,group=b', exc.kwargs['value'])

    def test_overlap_v6_same_network(self):
        self._assert_invalid(['cidr=2001:db8::/32,group=a',
                              'cidr=2001:db8::/32,group=a'], 'overlaps')

    def test_v4_and_v6_never_overlap(self):
        mapping.PartitionMap(['cidr=0.0.0.0/0,group=a',
                              'cidr=::/0,group=b'])

    def test_duplicate_switch_ignoring_case(self):
        self._assert_invalid(['switch=tor1,group=a', 'switch=TOR1,group=b'],
                             'already mapped')

    def test_invalid_groups(self):
        for group in ('rack:1', 'rack 1', 'r\u00e4ck', 'rack~1'):
            self._assert_invalid(['cidr=10.0.0.0/8,group=%s' % group],
                                 'conductor group may only contain')
        self._assert_invalid(['cidr=10.0.0.0/8,group=%s' % ('x' * 256)],
                             'conductor group has at most 255')

    def test_valid_groups_are_lower_cased(self):
        # nova's [ironic] partition_key rules; Ironic lower-cases a
        # node's group, so the map does too.
        for group, key in (('', ''), ('rack-1', 'rack-1'),
                           ('DC1.Rack_2', 'dc1.rack_2'),
                           ('x' * 255, 'x' * 255)):
            pmap = mapping.PartitionMap(['cidr=10.0.0.0/8,group=%s' % group])
            self.assertEqual(key, pmap.entries[0].group)

    def test_invalid_shards(self):
        for shard in ('', 'a b', 'a;b', 's' * 256, 's~1'):
            self._assert_invalid(
                ['cidr=10.0.0.0/8,group=a,shard=%s' % shard], 'shard')

    def test_shards_are_lower_cased(self):
        # The hook writes the shard in lower case: Ironic's shard filter
        # lower-cases the name asked for, and whether it then matches
        # "Rack-A" depends on its database's collation.
        pmap = mapping.PartitionMap(['cidr=10.0.0.0/8,group=a,shard=Rack-A'])
        self.assertEqual('rack-a', pmap.entries[0].shard)

    def test_same_rules_as_the_options(self):
        # One validator: whatever the option refuses, the map refuses.
        for name in ('ok', 'Ok.1_-', '', 'a~b', 'a b', 'a:b', 'a,b',
                     'x' * 256):
            for check, key in ((names.check_conductor_group, 'group'),
                               (names.check_shard, 'shard')):
                try:
                    check(name)
                    option_ok = True
                except ValueError:
                    option_ok = False
                entry = 'cidr=10.0.0.0/8,group=a,%s=%s' % (key, name)
                if key == 'group':
                    entry = 'cidr=10.0.0.0/8,group=%s' % name
                try:
                    mapping.PartitionMap([entry])
                    map_ok = True
                except exception.InvalidPartitionMap:
                    map_ok = False
                self.assertEqual(option_ok, map_ok, (key, name))

    def test_comma_in_shard_is_an_unknown_pair(self):
        self._assert_invalid(['cidr=10.0.0.0/8,group=a,shard=a,b'],
                             "'b' is not key=value")

    def test_structure(self):
        self._assert_invalid(['group=a'], 'exactly one of')
        self._assert_invalid(['cidr=10.0.0.0/8,switch=x,group=a'],
                             'exactly one of')
        self._assert_invalid(['cidr=10.0.0.0/8'], '"group" is missing')
        self._assert_invalid(['cidr=10.0.0.0/8,group=a,rack=b'],
                             "unknown key 'rack'")
        self._assert_invalid(['cidr=10.0.0.0/8,group=a,group=b'],
                             "key 'group' given twice")
        self._assert_invalid(['switch=,group=a'], 'a switch is')

    def test_from_configuration(self):
        conf = cfg.ConfigOpts()
        inspection_conf.register_opts(conf)
        conf([])
        conf.set_override('map', MAP, inspection_conf.GROUP)
        pmap = mapping.PartitionMap(conf[inspection_conf.GROUP].map)
        self.assertEqual(5, len(pmap))
        self.assertEqual('keep', conf[inspection_conf.GROUP].on_refusal)
        self.assertFalse(conf[inspection_conf.GROUP].overwrite_explicit_group)

    def test_list_opts(self):
        [(group, opts)] = inspection_conf.list_opts()
        self.assertEqual('ironic_partition_inspection', group)
        self.assertEqual({'map', 'overwrite_explicit_group', 'on_refusal'},
                         {o.name for o in opts})


class TestLookup(base.TestCase):

    def setUp(self):
        super().setUp()
        self.pmap = mapping.PartitionMap(MAP)

    def test_v4_and_v6(self):
        match, why = self.pmap.lookup([('inventory.bmc_address',
                                        '10.1.200.3')])
        self.assertIsNone(why)
        self.assertEqual(('rack1', 'inventory.bmc_address', '10.1.200.3'),
                         (match.entry.group, match.source, match.value))
        match, _why = self.pmap.lookup([('x', '[2001:db8:2::17]')])
        self.assertEqual('rack2', match.entry.group)
        match, _why = self.pmap.lookup([('x', 'fe80::1%eth0'),
                                        ('y', '2001:db8:2::1%eth0')])
        self.assertEqual(('y', 'rack2'), (match.source, match.entry.group))

    def test_first_matching_address_wins(self):
        match, _why = self.pmap.lookup([('a', '192.0.2.1'),
                                        ('b', '10.2.0.9'),
                                        ('c', '10.1.0.9')])
        self.assertEqual(('b', 'rack2', 'shard-r2'),
                         (match.source, match.entry.group,
                          match.entry.shard))

    def test_address_before_switch(self):
        match, _why = self.pmap.lookup(
            [('a', '10.1.0.9')], [('eth0.switch_system_name', 'tor-r3')])
        self.assertEqual('rack1', match.entry.group)

    def test_switch_when_no_address_matches(self):
        match, why = self.pmap.lookup(
            [('a', '192.0.2.1')], [('eth0.switch_system_name', 'Tor-R3')])
        self.assertIsNone(why)
        self.assertEqual(('rack3', 'eth0.switch_system_name', 'Tor-R3'),
                         (match.entry.group, match.source, match.value))

    def test_two_nics_same_entry(self):
        match, _why = self.pmap.lookup([], [
            ('eth0.switch_system_name', 'tor-r3'),
            ('eth1.switch_system_name', 'TOR-R3')])
        self.assertEqual('rack3', match.entry.group)

    def test_switches_of_different_entries(self):
        match, why = self.pmap.lookup([], [
            ('eth0.switch_system_name', 'tor-r3'),
            ('eth1.switch_chassis_id', 'AA:BB:CC:DD:EE:FF')])
        self.assertIsNone(match)
        self.assertIn('different entries', why)

    def test_nothing(self):
        match, why = self.pmap.lookup([('a', '192.0.2.1')],
                                      [('eth0.switch_system_name', 'z')])
        self.assertIsNone(match)
        self.assertIn('192.0.2.1', why)
        self.assertIn('z', why)


class TestSources(base.TestCase):

    def test_inventory(self):
        self.assertEqual(
            [('inventory.bmc_address', '10.1.0.5'),
             ('inventory.bmc_v6address', '2001:db8::5')],
            mapping.inventory_addresses({'bmc_address': '10.1.0.5',
                                         'bmc_v6address': '2001:db8::5'}))
        # What IPA reports without a BMC.
        self.assertEqual([], mapping.inventory_addresses(
            {'bmc_address': '0.0.0.0', 'bmc_v6address': '::/0'}))
        self.assertEqual([], mapping.inventory_addresses(None))

    def test_driver_info(self):
        info = {'redfish_address': 'https://[2001:db8::7]:8000/redfish',
                'ipmi_address': '10.1.0.7',
                'idrac_address': '10.2.0.7:443',
                'ilo_address': 'bmc7.example.org',
                'deploy_kernel': 'http://10.9.9.9/k',
                'snmp_address': None}
        self.assertEqual(
            [('driver_info.idrac_address', '10.2.0.7'),
             ('driver_info.ipmi_address', '10.1.0.7'),
             ('driver_info.redfish_address', '2001:db8::7')],
            mapping.driver_info_addresses(info))
        self.assertEqual([], mapping.driver_info_addresses(None))

    def test_address_host(self):
        self.assertEqual('10.0.0.1',
                         mapping.address_host('https://10.0.0.1/redfish'))
        self.assertEqual('2001:db8::1', mapping.address_host('2001:db8::1'))
        self.assertEqual('bmc', mapping.address_host('bmc:623'))
        self.assertIsNone(mapping.address_host(''))
        self.assertIsNone(mapping.address_host(None))

    def test_lldp(self):
        plugin_data = {'parsed_lldp': {
            'eth1': {'switch_chassis_id': 'aa:bb:cc:dd:ee:ff',
                     'switch_port_id': 'Eth1/2'},
            'eth0': {'switch_system_name': 'tor-r3',
                     'switch_chassis_id': ''},
        }}
        self.assertEqual(
            [('eth0.switch_system_name', 'tor-r3'),
             ('eth1.switch_chassis_id', 'aa:bb:cc:dd:ee:ff')],
            mapping.lldp_switches(plugin_data))
        self.assertEqual([], mapping.lldp_switches({}))
        self.assertEqual([], mapping.lldp_switches({'parsed_lldp': []}))
