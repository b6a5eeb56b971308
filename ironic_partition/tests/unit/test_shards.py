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

"""Ironic shards: settings, validation, client, membership, SIGHUP."""

import collections
from unittest import mock
import uuid

import fixtures
from oslo_config import cfg

from ironic_partition.cmd import checks
from ironic_partition.cmd import ironic_checks
from ironic_partition.cmd import simulate
from ironic_partition import conf as ip_conf
from ironic_partition.conf import opts
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.membership import base as mbase
from ironic_partition.partition import partitioner
from ironic_partition.tests import base
from ironic_partition.tests.unit import baremetal_fakes
from ironic_partition.tests.unit.ironic import test_baremetal


class TestShardSettings(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(group='ironic_partition', host='cn1')

    def test_option_listed_and_immutable(self):
        ironic_opts = {o.name: o for o in dict(opts.list_opts())['ironic']}
        self.assertIn('shard', ironic_opts)
        self.assertFalse(ironic_opts['shard'].mutable)
        self.assertIsNone(self.conf.ironic.shard)

    def test_unset(self):
        s = ip_conf.get_settings(self.conf)
        self.assertIsNone(s.shard)
        self.assertFalse(ip_conf.is_partitioned(s))

    def test_shard_alone_needs_no_peer_list(self):
        # nova 34: a shard is managed by one compute, peer_list ignored.
        self.config(group='ironic', shard='Shard-1')
        s = ip_conf.get_settings(self.conf)
        self.assertEqual('shard-1', s.shard)
        self.assertEqual((), s.peer_list)
        self.assertIsNone(s.partition_key)
        self.assertTrue(ip_conf.is_partitioned(s))

    def test_shard_and_group_need_no_peer_list(self):
        self.config(group='ironic', shard='s1', partition_key='rack1')
        s = ip_conf.get_settings(self.conf)
        self.assertEqual(('rack1', 's1', ()),
                         (s.partition_key, s.shard, s.peer_list))

    def test_group_alone_still_needs_peer_list(self):
        self.config(group='ironic', partition_key='rack1')
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.get_settings, self.conf)
        self.assertIn('[ironic] peer_list', str(e))

    def test_shard_with_peer_list_must_list_this_host(self):
        self.config(group='ironic', shard='s1', peer_list=['cn2', 'cn3'])
        e = self.assertRaises(exception.InvalidShardPeerList,
                              ip_conf.get_settings, self.conf)
        self.assertIsInstance(e, exception.InvalidPeerList)
        self.assertIn("'cn1'", str(e))
        self.assertIn("'s1'", str(e))

    def test_shard_with_peer_list(self):
        self.config(group='ironic', shard='s1', peer_list=['CN1', 'cn2'])
        s = ip_conf.get_settings(self.conf)
        self.assertEqual(('cn1', 'cn2'), s.peer_list)

    def test_bad_values_rejected_naming_option(self):
        for bad in ('', 'a,b', 'a b', 'x' * 256, 's1\n'):
            self.assertRaises(ValueError, self.config, group='ironic',
                              shard=bad)
            e = self.assertRaises(exception.ConfigurationError,
                                  ip_conf.normalize_shard, bad)
            self.assertIn('[ironic] shard', str(e))
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.normalize_shard, 'a,b')
        self.assertIn("','", str(e))
        self.assertIn('may only contain', str(e))
        self.assertEqual('x' * 255, ip_conf.normalize_shard('x' * 255))

    def test_bad_value_in_config_file(self):
        path = self.create_tempfiles(
            [('ironic', '[ironic]\nshard = a/b\n')])[0]
        self.conf(['--config-file', path], project='ironic-partition')
        self.assertRaises(cfg.ConfigFileValueError, getattr,
                          self.conf.ironic, 'shard')

    def test_nova_shard_option_is_read(self):
        conf = cfg.ConfigOpts()
        conf.register_opts([cfg.StrOpt('conductor_group'),
                            cfg.StrOpt('shard'),
                            cfg.ListOpt('peer_list', default=[])],
                           group='ironic')
        ip_conf.register_opts(conf)
        conf([], project='nova')
        self.assertTrue(ip_conf.nova_owns_ironic_opts(conf))
        conf.set_override('host', 'cn1', group='ironic_partition')
        conf.set_override('shard', 'S9', group='ironic')
        self.assertEqual('s9', ip_conf.get_settings(conf).shard)


class TestRereadShard(base.TestCase):

    def _write(self, text):
        return self.create_tempfiles([('ironic', text)])[0]

    def test_no_files_nothing_reread(self):
        self.config(group='ironic', shard='s1')
        self.assertEqual({}, ip_conf.reread_immutable_options(self.conf))
        self.assertEqual('s1', self.conf.ironic.shard)

    def test_changed_shard_is_reported_and_overridden(self):
        path = self._write('[ironic]\nshard = s1\n')
        self.conf(['--config-file', path], project='ironic-partition')
        self.assertEqual({}, ip_conf.reread_immutable_options(self.conf))
        with open(path, 'w') as f:
            f.write('[ironic]\nshard = s2\n')
        self.assertEqual({'shard': 's2'},
                         ip_conf.reread_immutable_options(self.conf))
        self.assertEqual('s2', self.conf.ironic.shard)

    def test_nova_options_reread_with_the_shard(self):
        conf = cfg.ConfigOpts()
        conf.register_opts([cfg.StrOpt('conductor_group'),
                            cfg.StrOpt('shard'),
                            cfg.ListOpt('peer_list', default=[])],
                           group='ironic')
        ip_conf.register_opts(conf)
        path = self._write('[ironic]\nshard = s1\n')
        conf(['--config-file', path], project='nova')
        self.assertEqual({}, ip_conf.reread_immutable_options(conf))
        with open(path, 'w') as f:
            f.write('[ironic]\nshard = S2\npeer_list = cn1\n')
        self.assertEqual({'shard': 'S2', 'peer_list': ['cn1']},
                         ip_conf.reread_immutable_options(conf))
        conf.set_override('host', 'cn1', group='ironic_partition')
        self.assertEqual('s2', ip_conf.get_settings(conf).shard)

    def test_invalid_shard_in_files(self):
        path = self._write('[ironic]\nshard = s1\n')
        self.conf(['--config-file', path], project='ironic-partition')
        with open(path, 'w') as f:
            f.write('[ironic]\nshard = bad shard\n')
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.reread_immutable_options, self.conf)
        self.assertIn('shard', str(e))
        self.assertEqual('s1', self.conf.ironic.shard)


class FakeClient(baremetal_fakes.FullListingMixin):

    def __init__(self, nodes):
        self.nodes = nodes
        self.calls = []

    def list_nodes(self, conductor_group=None, **filters):
        self.calls.append(dict(filters, conductor_group=conductor_group))
        return [n for n in self.nodes
                if filters.get('shard') is None
                or n.shard == filters['shard']]

    def reset(self):
        pass


class FakeMembership(object):

    store = None

    def __init__(self, live):
        self.live = frozenset(live)
        self.partition_key = None
        self.calls = []

    def set_partition_key(self, partition_key):
        self.partition_key = partition_key

    def members(self, partition_key=None, peer_list=None, **kwargs):
        self.calls.append((partition_key, peer_list, kwargs))
        return mbase.Membership(live=self.live)


def _nodes(n, shard):
    return [baremetal.Node(id=str(uuid.uuid4()), conductor_group='rack1',
                           shard=shard) for i in range(n)]


class TestPartitionerShard(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.config(group='ironic_partition', host='cn1')

    def _make(self, nodes, live=('cn1',)):
        self.client = FakeClient(nodes)
        self.membership = FakeMembership(live)
        return partitioner.Partitioner(self.read_settings(), self.client,
                                       self.membership, claims=False)

    def test_shard_alone_ring_of_self(self):
        self.config(group='ironic', shard='S1')
        nodes = _nodes(10, 's1') + _nodes(5, 's2')
        part = self._make(nodes)
        result = part.refresh()
        self.assertEqual({n.id for n in nodes[:10]}, set(result.nodes))
        self.assertEqual([{'conductor_group': None, 'shard': 's1'}],
                         self.client.calls)
        # Partitioned with an empty peer list: this host alone.
        self.assertEqual([(None, (), {'shard': 's1'})],
                         self.membership.calls)
        self.assertIn("partition None shard 's1'", self.logger.output)

    def test_no_shard_passes_no_shard_argument(self):
        part = self._make(_nodes(3, None))
        part.refresh()
        self.assertEqual([{'conductor_group': None}], self.client.calls)
        self.assertEqual([(None, None, {})], self.membership.calls)

    def test_sighup_changing_the_shard_is_refused(self):
        self.config(group='ironic', shard='s1', partition_key='rack1')
        part = self._make(_nodes(3, 's1'))
        self.config(group='ironic', shard='s2', partition_key='rack2')
        self.assertFalse(part.reload_settings(self.read_settings))
        self.assertEqual(('rack1', 's1'),
                         (part.settings.partition_key, part.settings.shard))
        errors = [line for line in self.logger.output.splitlines()
                  if 'Rejected the new partition settings' in line]
        self.assertEqual(1, len(errors))
        self.assertIn("shard cannot change on SIGHUP ('s1' -> 's2')",
                      errors[0])

    def test_sighup_keeping_the_shard_applies_the_rest(self):
        self.config(group='ironic', shard='s1', peer_list=['cn1'])
        part = self._make(_nodes(3, 's1'))
        self.config(group='ironic', shard='S1', peer_list=['cn1', 'cn2'])
        self.assertTrue(part.reload_settings(self.read_settings))
        self.assertEqual(('cn1', 'cn2'), part.settings.peer_list)


class TestComputeMembershipShard(base.TestCase):

    Rec = collections.namedtuple('Rec', 'host alive partition_key shard')

    def test_other_shard_is_elsewhere(self):
        records = [self.Rec('a', True, 'rack1', 's1'),
                   self.Rec('b', True, 'rack1', 's1'),
                   self.Rec('c', True, 'rack1', 'S2'),
                   self.Rec('d', True, 'rack1', None),
                   self.Rec('e', False, 'rack1', 's1')]
        m = mbase.compute_membership('a', records, 'rack1',
                                     ['a', 'b', 'c', 'd', 'e'], None,
                                     shard='S1')
        self.assertEqual({'a', 'b'}, m.live)
        self.assertEqual({'c', 'd'}, m.elsewhere)
        self.assertEqual({'e'}, m.dead)

    def test_shard_without_peer_list_is_this_host_alone(self):
        records = [self.Rec('a', True, None, 's1'),
                   self.Rec('b', True, None, 's1')]
        m = mbase.compute_membership('a', records, None, (), None,
                                     shard='s1')
        self.assertEqual({'a'}, m.live)

    def test_no_shard_ignores_shards_of_unpartitioned_peers(self):
        records = [self.Rec('a', True, None, None),
                   self.Rec('b', True, None, 's1')]
        m = mbase.compute_membership('a', records, None, None, None)
        self.assertEqual({'a'}, m.live)
        self.assertEqual({'b'}, m.elsewhere)


class TestClientShard(base.TestCase):

    def _client(self, nodes):
        self.proxy = test_baremetal.FakeProxy(nodes)
        conn = mock.Mock(baremetal=self.proxy)
        return baremetal.IronicClient(connection=conn, page_size=10)

    def test_shard_filter_lower_cased_with_microversion(self):
        client = self._client(test_baremetal._api_nodes(3))
        client.list_nodes(conductor_group='RACK1', shard='Shard-A')
        path, params, version = self.proxy.calls[0]
        self.assertEqual('shard-a', params['shard'])
        self.assertEqual('rack1', params['conductor_group'])
        self.assertEqual(baremetal.SHARD_MICROVERSION, version)

    def test_no_shard_keeps_the_old_microversion(self):
        client = self._client(test_baremetal._api_nodes(3))
        client.list_nodes()
        path, params, version = self.proxy.calls[0]
        self.assertNotIn('shard', params)
        self.assertEqual(baremetal.MIN_MICROVERSION, version)

    def test_shard_field_needs_the_microversion(self):
        nodes = test_baremetal._api_nodes(2)
        nodes[0]['shard'] = 'S1'
        client = self._client(nodes)
        listed = client.list_nodes(fields=('uuid', 'shard'))
        self.assertEqual(baremetal.SHARD_MICROVERSION, self.proxy.calls[0][2])
        self.assertEqual(['S1', None], [n.shard for n in listed])


class TestCommandsShard(base.TestCase):

    def test_simulate_shards_are_partitions(self):
        nodes = simulate.node_uuids(60)
        doc = simulate.simulate(nodes, 2, 2, shards=3)
        groups = [g['group'] for g in doc['runs'][0]['groups']]
        self.assertEqual(['rack1.shard1', 'rack1.shard2', 'rack1.shard3',
                          'rack2.shard1', 'rack2.shard2', 'rack2.shard3'],
                         groups)
        self.assertEqual(3, doc['shards_per_group'])
        e = self.assertRaises(exception.InvalidCommandInput,
                              simulate.plan, nodes, 1, 1, shards=-1)
        self.assertIn('--shards', str(e))

    def _check(self, nodes, shard=None):
        client = mock.Mock()

        def list_nodes(conductor_group=None, fields=None, shard=None):
            # Ironic's filter, as on PostgreSQL: exact.
            return [n for n in nodes if shard is None or n.shard == shard]
        client.list_nodes.side_effect = list_nodes
        report = checks._Report()
        settings = ip_conf.PartitionSettings('rack1', (), 'cn1', shard)
        ironic_checks.check_shards(client, settings, report)
        return report

    def test_check_no_shards_in_use(self):
        report = self._check([baremetal.Node(id='a'), baremetal.Node(id='b')])
        self.assertEqual([], report.findings)
        self.assertEqual(['shards'], report.passed)

    def test_check_warns_about_nodes_without_shard(self):
        report = self._check([baremetal.Node(id='a', shard='s1'),
                              baremetal.Node(id='b'), baremetal.Node(id='c')])
        self.assertEqual(['warning'], [f.severity for f in report.findings])
        self.assertIn('2 of the 3 nodes of conductor group rack1 have no '
                      'shard', report.findings[0].message)

    def test_check_warns_about_empty_and_upper_case_shards(self):
        report = self._check([baremetal.Node(id='a', shard='S2')], shard='s1')
        found = [(f.severity, f.message) for f in report.findings]
        self.assertEqual(2, len(found))
        # A shard under which the service would manage nothing: a problem.
        self.assertEqual('problem', found[0][0])
        self.assertIn("Ironic lists no node of conductor group rack1 in "
                      "[ironic] shard 's1' (the query this service makes): "
                      "it would manage nothing. Shards there: 'S2'.",
                      found[0][1])
        self.assertEqual('warning', found[1][0])
        self.assertIn("'S2'", found[1][1])

    def test_check_fails_a_shard_ironic_does_not_match_by_case(self):
        # Nodes in 'ShardA', [ironic] shard = ShardA (read as 'sharda'):
        # Ironic's filter on PostgreSQL lists nothing.
        report = self._check([baremetal.Node(id='a', shard='ShardA')],
                             shard='sharda')
        [problem] = report.problems
        self.assertIn("Nodes are in 'ShardA', which Ironic's filter does not "
                      "match on this database", problem.message)

    def test_check_passes_a_shard_ironic_lists(self):
        report = self._check([baremetal.Node(id='a', shard='s1')],
                             shard='s1')
        self.assertEqual([], report.findings)
        self.assertEqual(['shards'], report.passed)
