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

import datetime
from unittest import mock
import uuid

import fixtures
import tooz.hashring

from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.ironic import change_feed
from ironic_partition.membership import base as mbase
from ironic_partition.membership import outside
from ironic_partition.partition import partitioner
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings
from ironic_partition.tests import base
from ironic_partition.tests.unit import baremetal_fakes


class FakeClient(baremetal_fakes.FullListingMixin):
    """Serves a fixed node list, or fails as told (a fault injector)."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.fault = None
        self.groups = []
        self.resets = 0
        self.groups_served = {'rack1', 'rack2', ''}

    def list_nodes(self, conductor_group=None):
        self.groups.append(conductor_group)
        if self.fault is not None:
            raise self.fault
        return [n for n in self.nodes
                if conductor_group is None
                or n.conductor_group == conductor_group]

    def nodes_for_instances(self, instance_ids, meter=None):
        if self.fault is not None:
            raise self.fault
        return [n for n in self.nodes if n.instance_id in instance_ids]

    def list_conductors(self):
        return [{'hostname': 'c', 'conductor_group': g, 'alive': True,
                 'drivers': []} for g in sorted(self.groups_served)]

    def reset(self):
        self.resets += 1


class FakeMembership(object):

    store = None

    def __init__(self, live):
        self.live = frozenset(live)
        self.stale = False
        self.never_seen = frozenset()
        self.elsewhere = frozenset()
        self.partition_key = None
        #: What :meth:`note_outside` was told, in order.
        self.noted = []

    def set_partition_key(self, partition_key):
        self.partition_key = partition_key

    def note_outside(self, peers):
        self.noted.append(frozenset(peers))

    def members(self, partition_key=None, peer_list=None):
        return mbase.Membership(live=self.live, stale=self.stale,
                                never_seen=self.never_seen,
                                elsewhere=self.elsewhere)


class FakeNovaView(object):
    """nova's service group: the hosts it has up (a fault injector)."""

    def __init__(self, up, never_seen=(), services=(), compute_nodes=None):
        self.up = frozenset(up)
        self.never_seen = frozenset(never_seen)
        #: Every host nova has as a nova-compute service, any hypervisor.
        self.services = frozenset(services)
        #: host -> the hypervisor_hostname of its compute nodes.
        self.compute_nodes = dict(compute_nodes or {})
        self.fault = None
        self.asked = []
        self.looked_up = []

    def compute_services(self, hosts):
        self.looked_up.append(('services', frozenset(hosts)))
        return frozenset(hosts) & self.services

    def compute_node_names(self, host):
        self.looked_up.append(('nodes', host))
        if isinstance(self.compute_nodes.get(host), Exception):
            raise self.compute_nodes[host]
        return frozenset(self.compute_nodes.get(host, ()))

    def members(self, partition_key=None, peer_list=None):
        self.asked.append((partition_key, peer_list))
        if self.fault is not None:
            raise self.fault
        return mbase.Membership(live=self.up, never_seen=self.never_seen)


def _nodes(n, group='rack1', instances=None):
    instances = instances or {}
    return [baremetal.Node(id=str(uuid.UUID(int=i + 1)), conductor_group=group,
                           instance_id=instances.get(i))
            for i in range(n)]


class TestPartitioner(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = [1000.0]
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))

    def _make(self, host, nodes, live, key='rack1', peers=None):
        self.config(group='ironic_partition', host=host)
        self.config(group='ironic', partition_key=key,
                    peer_list=peers or sorted(live))
        client = FakeClient(nodes)
        membership = FakeMembership(live)
        return partitioner.Partitioner(self.read_settings(), client,
                                       membership,
                                       clock=lambda: self.clock[0])

    def test_three_hosts_split_like_tooz(self):
        nodes = _nodes(200) + _nodes(10, group='rack2')
        hosts = ['cn1', 'cn2', 'cn3']
        tooz_ring = tooz.hashring.HashRing(hosts, partitions=2 ** 5)
        seen = set()
        for host in hosts:
            p = self._make(host, nodes, hosts)
            result = p.refresh()
            expected = {n.id for n in nodes if n.conductor_group == 'rack1'
                        and tooz_ring.get_nodes(n.id.encode()) == {host}}
            self.assertEqual(expected, set(result.nodes))
            self.assertFalse(seen & expected)
            seen |= expected
            self.assertEqual(200, result.metrics.listed)
            self.assertEqual(['rack1'], p.client.groups)
        self.assertEqual(200, len(seen))

    def test_ironic_down_is_not_ready_and_keeps_last_result(self):
        p = self._make('cn1', _nodes(20), ['cn1'])
        first = p.refresh()
        self.assertEqual(20, len(first.nodes))
        p.client.fault = exception.IronicUnavailable(endpoint='x',
                                                     reason='down')
        self.assertRaises(exception.PartitionNotReady, p.refresh)
        self.assertIs(first, p.last_result)

    def test_stale_membership_bounded(self):
        self.config(group='ironic_partition', membership_stale_timeout=60)
        p = self._make('cn1', _nodes(20), ['cn1', 'cn2'])
        full = p.refresh()
        p.membership.stale = True
        self.clock[0] += 10
        again = p.refresh()
        self.assertEqual(set(full.nodes), set(again.nodes))
        self.assertIn('Membership source unreachable', self.logger.output)
        self.clock[0] += 60
        e = self.assertRaises(exception.PartitionNotReady, p.refresh)
        self.assertIn('membership_stale_timeout', str(e))
        p.membership.stale = False
        self.assertEqual(set(full.nodes), set(p.refresh().nodes))

    def test_refresh_longer_than_the_interval_is_a_warning(self):
        self.config(group='ironic_partition', refresh_interval=30)
        p = self._make('cn1', _nodes(5), ['cn1'])
        p.refresh()
        self.assertNotIn('longer than [ironic_partition] refresh_interval',
                         self.logger.output)
        real = p.client.list_nodes

        def slow(conductor_group=None):
            self.clock[0] += 31
            return real(conductor_group)
        p.client.list_nodes = slow
        p.refresh()
        self.assertIn('Refresh took 31.0 s', self.logger.output)
        self.assertIn('longer than [ironic_partition] refresh_interval '
                      '(30 s)', self.logger.output)

    def test_refresh_longer_than_nova_interval_names_nova_option(self):
        # Inside nova-compute the interval is nova's, not refresh_interval.
        self.config(group='ironic_partition', host='cn1', claims='off')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1'])
        client = FakeClient(_nodes(5))
        cadence = claim_settings.nova_cadence(60)
        p = partitioner.Partitioner(self.read_settings(cadence),
                                    client, FakeMembership(['cn1']),
                                    clock=lambda: self.clock[0])
        real = client.list_nodes

        def slow(conductor_group=None):
            self.clock[0] += 45
            return real(conductor_group)
        client.list_nodes = slow
        p.refresh()
        self.assertNotIn('Refresh took', self.logger.output)
        self.clock[0] += 1

        def slower(conductor_group=None):
            self.clock[0] += 61
            return real(conductor_group)
        client.list_nodes = slower
        p.refresh()
        self.assertIn('longer than [DEFAULT] update_resources_interval '
                      '(60 s)', self.logger.output)
        self.assertNotIn('refresh_interval', self.logger.output)

    def test_gained_and_lost_on_membership_change(self):
        p = self._make('cn1', _nodes(100), ['cn1', 'cn2'])
        first = p.refresh()
        p.membership.live = frozenset(['cn1'])
        second = p.refresh()
        self.assertEqual(100, len(second.nodes))
        self.assertEqual(set(second.nodes) - set(first.nodes),
                         set(second.gained))
        self.assertEqual(frozenset(), second.lost)

    def test_reload_settings_switches_partition(self):
        nodes = _nodes(10) + _nodes(5, group='rack2')
        p = self._make('cn1', nodes, ['cn1'])
        self.assertEqual(10, len(p.refresh().nodes))
        self.config(group='ironic', partition_key='RACK2')
        self.assertTrue(p.reload_settings(self.read_settings))
        self.assertIn("partition_key 'rack1' -> 'rack2'", self.logger.output)
        self.assertEqual('rack2', p.membership.partition_key)
        self.assertEqual(1, p.client.resets)
        result = p.refresh()
        self.assertEqual(5, len(result.nodes))
        self.assertIn('Now managing 5 of 5 nodes', self.logger.output)

    def test_reload_rejects_invalid_and_keeps_old(self):
        p = self._make('cn1', _nodes(10), ['cn1'])
        self.config(group='ironic', peer_list=['cn2'])
        self.assertFalse(p.reload_settings(self.read_settings))
        self.assertIn('Rejected the new partition settings',
                      self.logger.output)
        self.assertIn("'cn1'", self.logger.output)
        self.assertEqual('rack1', p.settings.partition_key)
        self.assertEqual(10, len(p.refresh().nodes))

    def test_unchanged_settings_do_not_reset(self):
        p = self._make('cn1', _nodes(10), ['cn1'])
        self.assertFalse(p.reload_settings(self.read_settings))
        self.assertEqual(0, p.client.resets)

    def test_invalid_at_start_fails(self):
        self.config(group='ironic_partition', host='cn9')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1'])
        # Validated once, when the settings are read.
        self.assertRaises(exception.InvalidPeerList,
                          settings_mod.from_conf, self.conf)

    def test_foreign_instance_never_reported(self):
        nodes = _nodes(10, instances={0: 'theirs', 1: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        result = p.refresh(my_instances={'mine'},
                           instance_hosts={'theirs': 'cn7'})
        self.assertNotIn(nodes[0].id, result.nodes)
        self.assertIn(nodes[1].id, result.nodes)
        self.assertEqual((nodes[0].id,), result.ownership.stranded)

    def test_claims_off_without_database_membership(self):
        p = self._make('cn1', _nodes(10), ['cn1'])
        self.assertIsNone(p.claims)
        result = p.refresh()
        self.assertEqual(result.ownership, result.ring_ownership)
        self.assertEqual((frozenset(),) * 4,
                         (result.claimed, result.released, result.fenced,
                          result.waiting))
        self.assertIsNone(result.claims)
        self.assertIsNone(result.valid_until)
        self.assertEqual(set(result.nodes), set(p.reported_nodes()))
        self.assertIn('claimed 0, released 0, waiting 0, fenced 0, '
                      'stranded 0', self.logger.output)

    def test_claims_false_overrides_the_option(self):
        self.config(group='ironic_partition', claims='database')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1'])
        self.config(group='ironic_partition', host='cn1')
        p = partitioner.Partitioner(self.read_settings(),
                                    FakeClient(_nodes(3)),
                                    FakeMembership(['cn1']), claims=False)
        self.assertIsNone(p.claims)
        self.assertEqual(0, p.stop())
        self.assertEqual(3, len(p.refresh().nodes))


class TestSafetyCore(TestPartitioner):
    """Seed 000 across groups, unserved keys and membership faults."""

    def test_instance_node_moved_to_another_group_stays(self):
        nodes = _nodes(6, instances={0: 'mine', 1: 'theirs'})
        p = self._make('cn1', nodes, ['cn1'])
        self.assertIn(nodes[0].id, p.refresh(my_instances={'mine'}).nodes)
        # The operator moves both instance nodes to rack2.
        moved = [baremetal.Node(id=n.id, conductor_group='rack2',
                                instance_id=n.instance_id) for n in nodes[:2]]
        p.client.nodes = moved + nodes[2:]
        result = p.refresh(my_instances={'mine'})
        self.assertIn(nodes[0].id, result.nodes)
        self.assertEqual((nodes[0].id,), result.ownership.by_instance)
        # Another service's instance node is never fetched nor reported.
        self.assertNotIn(nodes[1].id, result.nodes)
        self.assertEqual(5, len(result.nodes))

    def test_only_missing_instances_are_looked_up(self):
        nodes = _nodes(4, instances={0: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        looked_up = []
        real = p.client.nodes_for_instances

        def spy(ids, meter=None):
            looked_up.append(frozenset(ids))
            return real(ids)

        p.client.nodes_for_instances = spy
        p.refresh(my_instances={'mine', 'spawning'})
        self.assertEqual([frozenset({'spawning'})], looked_up)
        p.refresh(my_instances={'mine'})
        self.assertEqual(1, len(looked_up))

    def test_nodeless_instances_are_asked_once_per_full_listing(self):
        # Thousands of servers in ERROR without a node must not cost one
        # Ironic call each at every refresh.
        self.config(group='ironic_partition', full_resync_interval=300)
        nodes = _nodes(4, instances={0: 'mine'})
        p = self._make('cn1', nodes, ['cn1'])
        looked_up = []
        real = p.client.nodes_for_instances

        def spy(ids, meter=None):
            looked_up.append(frozenset(ids))
            return real(ids)

        p.client.nodes_for_instances = spy
        # A change feed with nothing changed: refreshes in between full
        # listings read only the feed.
        mark = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        p.index.feed.newest_stamp = lambda microversion=None, overlap=None: (
            mark, baremetal.Meter())
        p.index.feed.node_changes = (
            lambda since, overlap, microversion=None, anchors=():
            change_feed.Changes([], since, baremetal.Meter()))
        errors = {'error-%d' % i for i in range(50)}
        result = p.refresh(my_instances={'mine'} | errors)
        self.assertEqual([frozenset(errors)], looked_up)
        self.assertEqual(50, result.metrics.instance_lookups)
        self.clock[0] += 10
        result = p.refresh(my_instances={'mine', 'new'} | errors)
        # Only the new one.
        self.assertEqual(frozenset({'new'}), looked_up[-1])
        self.assertEqual(1, result.metrics.instance_lookups)
        self.clock[0] += 10
        result = p.refresh(my_instances={'mine', 'new'} | errors)
        self.assertEqual(2, len(looked_up))
        self.assertEqual(0, result.metrics.instance_lookups)
        # After the next full listing, asked again.
        self.clock[0] += 300
        result = p.refresh(my_instances={'mine', 'new'} | errors)
        self.assertTrue(result.metrics.full)
        self.assertEqual(frozenset(errors | {'new'}), looked_up[-1])

    def test_owner_alive_elsewhere_is_not_stranded(self):
        nodes = _nodes(3, group='rack2', instances={0: 'theirs'})
        p = self._make('b1', nodes, ['b1'], key='rack2')
        p.membership.members = lambda key=None, peers=None: (
            mbase.Membership(live=frozenset({'b1'}),
                             alive_anywhere=frozenset({'b1', 'a1'})))
        result = p.refresh(instance_hosts={'theirs': 'a1'})
        self.assertEqual((), result.ownership.stranded)
        result = p.refresh(instance_hosts={'theirs': 'a-dead'})
        self.assertEqual((nodes[0].id,), result.ownership.stranded)

    def test_partition_key_nothing_serves_is_not_ready(self):
        p = self._make('cn1', _nodes(3), ['cn1'], key='rack9')
        e = self.assertRaises(exception.PartitionNotReady, p.refresh)
        self.assertIn("partition_key 'rack9' names a conductor group that "
                      "no Ironic conductor serves", str(e))
        self.assertIn("'rack1'", str(e))
        # Even when this service's instance nodes are found elsewhere.
        p.client.nodes = _nodes(3, instances={0: 'mine'})
        self.assertRaises(exception.PartitionNotReady, p.refresh,
                          my_instances={'mine'})
        # A served group with no node yet is an empty partition.
        p.client.groups_served.add('rack9')
        self.assertEqual({}, p.refresh().nodes)

    def test_membership_errors_are_not_ready(self):
        p = self._make('cn1', _nodes(3), ['cn1'])

        def fail(key=None, peers=None):
            raise exception.MembershipUnavailable(role='agent',
                                                  reason='db gone')

        p.membership.members = fail
        e = self.assertRaises(exception.PartitionNotReady, p.refresh)
        self.assertIn('db gone', str(e))

    def test_programming_errors_are_not_an_outage(self):
        p = self._make('cn1', _nodes(3), ['cn1'])

        def bug(key=None, peers=None):
            raise TypeError('a bug')

        p.membership.members = bug
        self.assertRaises(TypeError, p.refresh)

    def test_lost_identity_reports_nothing(self):
        p = self._make('cn1', _nodes(3, instances={0: 'mine'}), ['cn1'])
        p.identity = mock.Mock(lost=None, host='cn1')
        p.refresh(my_instances={'mine'})
        self.assertEqual(3, len(p.reported_nodes()))
        p.identity.lost = 'incarnation X holds the host name now'
        e = self.assertRaises(exception.PartitionNotReady, p.refresh,
                              my_instances={'mine'})
        self.assertIn('lost host cn1', str(e))
        self.assertEqual({}, p.reported_nodes())

    def test_own_key_change_keeps_instance_nodes(self):
        rack2 = [baremetal.Node(id=str(uuid.UUID(int=100 + i)),
                                conductor_group='rack2', instance_id=None)
                 for i in range(4)]
        nodes = _nodes(4, instances={0: 'mine'}) + rack2
        p = self._make('cn1', nodes, ['cn1'])
        p.client.groups_served.add('rack2')
        p.refresh(my_instances={'mine'})
        self.config(group='ironic', partition_key='rack2')
        self.assertTrue(p.reload_settings(self.read_settings))
        result = p.refresh(my_instances={'mine'})
        self.assertIn(nodes[0].id, result.nodes)
        self.assertEqual((nodes[0].id,), result.ownership.by_instance)
        self.assertEqual(5, len(result.nodes))


class TestOutsideView(TestPartitioner):
    """Peers up in nova that do not heartbeat the membership database."""

    def _mixed(self, host, nodes, ours, nova_up, hosts, **kw):
        p = self._make(host, nodes, ours, peers=hosts)
        p.outside = outside.OutsideView(FakeNovaView(nova_up, **kw))
        return p

    def test_rolling_switch_keeps_nova_mapping(self):
        # cn1 runs this driver; cn2 and cn3 still run nova's own: the ring
        # is nova's, and cn1 reports exactly its own share.
        nodes = _nodes(60)
        hosts = ['cn1', 'cn2', 'cn3']
        tooz_ring = tooz.hashring.HashRing(hosts, partitions=2 ** 5)
        p = self._mixed('cn1', nodes, ['cn1'], hosts, hosts)
        result = p.refresh()
        expected = {n.id for n in nodes
                    if tooz_ring.get_nodes(n.id.encode()) == {'cn1'}}
        self.assertEqual(expected, set(result.nodes))
        self.assertLess(len(expected), 60)
        self.assertEqual(('cn1', 'cn2', 'cn3'), result.members)
        self.assertEqual({'cn2', 'cn3'}, result.membership.outside)
        self.assertEqual([('rack1', tuple(hosts))], p.outside.view.asked)
        self.assertIn('Counting cn2, cn3 in the ring of partition '
                      "'rack1': up in nova's service group",
                      self.logger.output)
        # Recorded with the heartbeat, for status and check.
        self.assertEqual([frozenset({'cn2', 'cn3'})], p.membership.noted)

    def test_warning_once_per_change(self):
        hosts = ['cn1', 'cn2', 'cn3']
        p = self._mixed('cn1', _nodes(12), ['cn1'], hosts, hosts)
        p.refresh()
        p.refresh()
        self.assertEqual(1, self.logger.output.count('Counting cn2, cn3'))
        p.outside.view.up = frozenset({'cn1', 'cn3'})
        p.refresh()
        self.assertEqual(1, self.logger.output.count('Counting cn3 in'))
        p.outside.view.up = frozenset({'cn1'})
        p.refresh()
        self.assertIn("Every peer that nova's service group has up",
                      self.logger.output)

    def test_peer_nobody_knows_is_named(self):
        p = self._mixed('cn1', _nodes(6), ['cn1'], ['cn1'],
                        ['cn1', 'cn-typo'], never_seen=['cn-typo'])
        p.membership.never_seen = frozenset({'cn-typo'})
        p.refresh()
        p.refresh()
        self.assertEqual(1, self.logger.output.count(
            '[ironic] peer_list names cn-typo, which neither nova'))

    def test_peer_of_another_hypervisor_is_named(self):
        # nova has cn-kvm as a compute service, not an Ironic one: not a
        # misspelt name, another mistake, said once.
        p = self._mixed('cn1', _nodes(6), ['cn1'], ['cn1'],
                        ['cn1', 'cn-kvm', 'cn-typo'],
                        never_seen=['cn-kvm', 'cn-typo'],
                        services=['cn1', 'cn-kvm'])
        p.membership.never_seen = frozenset({'cn-kvm', 'cn-typo'})
        result = p.refresh()
        p.refresh()
        self.assertEqual(('cn1',), result.members)
        self.assertEqual(1, self.logger.output.count(
            '[ironic] peer_list names cn-kvm: nova has them as nova-compute '
            'services, but without any Ironic compute node'))
        self.assertIn('remove them from [ironic] peer_list',
                      self.logger.output)
        self.assertEqual(frozenset({'cn-kvm'}), p.outside.non_ironic)
        self.assertEqual(1, self.logger.output.count(
            '[ironic] peer_list names cn-kvm, cn-typo, which neither nova'))
        self.assertEqual(
            [('services', frozenset({'cn-kvm', 'cn-typo'}))],
            p.outside.view.looked_up)

    def test_peer_serving_another_group_is_named_and_still_counted(self):
        # cn3 is up in nova, in rack1's peer list, but its compute nodes
        # are rack2's: as nova's own ring does, it keeps its share (no
        # node reported twice), and the warning says so, once.
        nodes = _nodes(30)
        hosts = ['cn1', 'cn2', 'cn3']
        rack2 = [str(uuid.UUID(int=1000 + i)) for i in range(4)]
        mine = [n.id for n in nodes[:3]]
        p = self._mixed('cn1', nodes, ['cn1'], hosts, hosts,
                        compute_nodes={'cn2': mine, 'cn3': rack2})
        result = p.refresh()
        p.refresh()
        self.assertEqual(('cn1', 'cn2', 'cn3'), result.members)
        tooz_ring = tooz.hashring.HashRing(hosts, partitions=2 ** 5)
        self.assertEqual({n.id for n in nodes
                          if tooz_ring.get_nodes(n.id.encode()) == {'cn1'}},
                         set(result.nodes))
        self.assertEqual({'cn3': 4}, p.outside.misplaced)
        self.assertEqual(1, self.logger.output.count(
            "Counting cn3 in the ring of partition 'rack1', as nova's own "
            "driver does"))
        self.assertIn('none of its 4 Ironic compute nodes is in that '
                      'partition', self.logger.output)
        self.assertIn('[ironic] conductor_group is corrected',
                      self.logger.output)
        self.assertNotIn('Counting cn2 in the ring of partition',
                         self.logger.output)
        # One look-up per new peer, not per refresh.
        self.assertEqual([('nodes', 'cn2'), ('nodes', 'cn3')],
                         p.outside.view.looked_up)
        # Gone from nova's view: forgotten.
        p.outside.view.up = frozenset({'cn1', 'cn2'})
        p.refresh()
        self.assertEqual({}, p.outside.misplaced)

    def test_peer_live_for_another_partition_is_named_once(self):
        # cn3 heartbeats the membership database for rack2 while rack1's
        # peer list names it: no share here, and said once per change.
        hosts = ['cn1', 'cn2', 'cn3']
        p = self._make('cn1', _nodes(12), ['cn1', 'cn2'], peers=hosts)
        p.membership.elsewhere = frozenset({'cn3'})
        result = p.refresh()
        p.refresh()
        self.assertEqual(('cn1', 'cn2'), result.members)
        self.assertEqual(1, self.logger.output.count(
            "[ironic] peer_list names cn3, live in the membership database "
            "for another partition than 'rack1'"))
        self.assertIn('correct their [ironic] conductor_group',
                      self.logger.output)
        p.membership.elsewhere = frozenset()
        p.refresh()
        p.membership.elsewhere = frozenset({'cn3'})
        p.refresh()
        self.assertEqual(2, self.logger.output.count(
            '[ironic] peer_list names cn3, live'))

    def test_failed_look_up_loses_only_the_finer_message(self):
        hosts = ['cn1', 'cn2']
        p = self._mixed('cn1', _nodes(6), ['cn1'], hosts, hosts,
                        compute_nodes={'cn2': RuntimeError('conductor')})
        result = p.refresh()
        self.assertEqual(('cn1', 'cn2'), result.members)
        self.assertEqual({}, p.outside.misplaced)
        self.assertIn('Counting cn2 in the ring', self.logger.output)

    def test_nova_never_answered_is_not_ready(self):
        hosts = ['cn1', 'cn2']
        p = self._mixed('cn1', _nodes(6), ['cn1'], hosts, hosts)
        p.outside.view.fault = exception.MembershipUnavailable(
            role='nova-compute', reason='conductor gone')
        e = self.assertRaises(exception.PartitionNotReady, p.refresh)
        self.assertEqual('membership', e.kind)
        self.assertIn("nova's service group cannot be read", str(e))
        self.assertIn('conductor gone', str(e))
        self.assertIsNone(p.last_result)
