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

"""Tests for ironic_partition.ring.base."""

from unittest import mock
import uuid

from oslotest import base
from stevedore import driver as stevedore_driver
from stevedore import extension

from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.partition import partitioner
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import base as ring_base
from ironic_partition.ring import compute
from ironic_partition.ring import conductor
from ironic_partition.ring import hash_ring
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base as test_base
from ironic_partition.tests.unit.partition import test_partitioner


class GetProviderTestCase(base.BaseTestCase):

    def test_namespace(self):
        self.assertEqual('ironic_partition.ring_providers',
                         ring_base.RING_PROVIDER_NAMESPACE)

    def test_load(self):
        ext = extension.Extension('compute', None,
                                  compute.ComputeRingProvider, None)
        manager = stevedore_driver.DriverManager.make_test_instance(
            ext, namespace=ring_base.RING_PROVIDER_NAMESPACE)

        def fake_manager(namespace, name, invoke_on_load, invoke_kwds,
                         on_load_failure_callback):
            self.assertEqual(ring_base.RING_PROVIDER_NAMESPACE, namespace)
            self.assertEqual('compute', name)
            manager.extensions[0].obj = compute.ComputeRingProvider(
                **invoke_kwds)
            return manager

        with mock.patch.object(stevedore_driver, 'DriverManager',
                               side_effect=fake_manager, autospec=True):
            provider = ring_base.get_provider('compute', members=['A'])
        self.assertIsInstance(provider, compute.ComputeRingProvider)
        self.assertEqual(frozenset(['a']), provider.members())

    def test_load_failure_wrapped(self):
        with mock.patch.object(ring_base, '_available',
                               return_value=['compute', 'other'],
                               autospec=True):
            exc = self.assertRaises(exception.PluginLoadError,
                                    ring_base.get_provider, 'nope')
        self.assertIn('nope', str(exc))
        self.assertIn('compute, other', str(exc))
        self.assertIn(ring_base.RING_PROVIDER_NAMESPACE, str(exc))

    def test_constructor_failure_wrapped(self):
        with mock.patch.object(stevedore_driver, 'DriverManager',
                               side_effect=TypeError('bad kwarg'),
                               autospec=True):
            exc = self.assertRaises(exception.PluginLoadError,
                                    ring_base.get_provider, 'compute',
                                    bogus=1)
        self.assertIn('bad kwarg', str(exc))

    def test_bad_mode_and_hash(self):
        self.assertRaises(ValueError, compute.ComputeRingProvider,
                          members=[], mode='other')
        self.assertRaises(ValueError, compute.ComputeRingProvider,
                          members=[], hash_function='nope')
        self.assertRaises(ValueError, conductor.ConductorRingProvider,
                          conductors=[], mode='balanced')

    def test_build_ring_balanced_needs_keys(self):
        provider = compute.ComputeRingProvider(members=['a'],
                                               mode='balanced')
        self.assertRaises(ValueError, provider.build_ring, ['a'])
        ring = provider.build_ring(['a', 'b'], keys=[b'1', b'2'])
        self.assertIsInstance(ring, balanced_ring.BalancedHashRing)


class FromConfTestCase(test_base.TestCase):
    """[ironic_partition] ring_provider, ring_mode and partition_exponent."""

    def _partitioner(self, host='cn1', live=('cn1', 'cn2', 'cn3'),
                     nodes=None):
        self.config(group='ironic_partition', host=host)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=sorted(live))
        client = test_partitioner.FakeClient(nodes or test_partitioner._nodes(
            300))
        membership = test_partitioner.FakeMembership(live)
        return partitioner.Partitioner(self.read_settings(),
                                       client, membership, claims=False)

    def test_default_is_compute_from_the_installed_namespace(self):
        provider = ring_base.from_settings(
            settings_mod.from_conf(self.conf), lambda key: ['A'])
        self.assertIsInstance(provider, compute.ComputeRingProvider)
        self.assertEqual(frozenset(['a']), provider.members())
        self.assertEqual(['compute'], ring_base._available())

    def test_ring_provider_option_is_the_name_loaded(self):
        self.config(group='ironic_partition', ring_provider='mine')
        fake = mock.Mock(spec=ring_base.RingProvider)
        with mock.patch.object(ring_base, 'get_provider', autospec=True,
                               return_value=fake) as get:
            p = self._partitioner()
        self.assertIs(fake, p.rings)
        get.assert_called_once_with('mine', members_fn=mock.ANY,
                                    partitions=32, mode='tooz')

    def test_unknown_provider_names_option_and_choices(self):
        self.config(group='ironic_partition', ring_provider='nope')
        exc = self.assertRaises(exception.PluginLoadError, self._partitioner)
        self.assertIn('[ironic_partition] ring_provider', str(exc))
        self.assertIn("'nope'", str(exc))
        self.assertIn('Available: compute.', str(exc))

    def test_conductor_is_refused_with_the_reason(self):
        self.config(group='ironic_partition', ring_provider='conductor')
        exc = self.assertRaises(exception.PluginLoadError, self._partitioner)
        self.assertIn('[ironic_partition] ring_provider', str(exc))
        self.assertIn('not to the compute services', str(exc))
        self.assertIn('ring --conductors', str(exc))
        self.assertIn('Available: compute.', str(exc))

    def test_partition_exponent_sets_the_points(self):
        self.config(group='ironic_partition', partition_exponent=3)
        p = self._partitioner()
        p.refresh()
        ring = p.rings.get_ring('rack1')
        self.assertEqual(8, p.rings.partitions)
        self.assertEqual(8 * 3, len(ring))
        expected = hash_ring.HashRing(['cn1', 'cn2', 'cn3'], partitions=8)
        self.assertEqual(
            {n.id for n in p.client.nodes
             if expected.get_node(n.id) == 'cn1'},
            set(p.last_result.nodes))

    def test_ring_mode_balanced_builds_a_balanced_ring(self):
        self.config(group='ironic_partition', ring_mode='balanced',
                    claims='database')
        p = self._partitioner()
        p.refresh()
        self.assertEqual('balanced', p.rings.mode)
        ring = p.rings.get_ring('rack1', keys=[n.id for n in p.client.nodes])
        self.assertIsInstance(ring, balanced_ring.BalancedHashRing)
        self.assertLessEqual(len(p.last_result.nodes), 1.05 * 300 / 3)

    def test_ring_mode_default_tooz(self):
        p = self._partitioner()
        self.assertEqual('tooz', p.rings.mode)
        self.assertIsNone(p.rings.ring_keys(p.client.nodes, 'rack1'))

    def test_balanced_needs_claims(self):
        self.config(group='ironic_partition', ring_mode='balanced',
                    claims='off')
        exc = self.assertRaises(exception.ConfigurationError,
                                self._partitioner)
        self.assertIn('[ironic_partition] ring_mode', str(exc))
        self.assertIn('claims', str(exc))
        # NOTE: 'auto' with a membership backend without a database.
        self.config(group='ironic_partition', claims='auto')
        self.assertRaises(exception.ConfigurationError, self._partitioner)

    def test_balanced_refused_with_a_shard(self):
        self.config(group='ironic_partition', ring_mode='balanced',
                    claims='database')
        self.config(group='ironic', shard='s1')
        exc = self.assertRaises(exception.ConfigurationError,
                                ring_base.from_settings,
                                settings_mod.from_conf(self.conf),
                                lambda key: ['a'])
        self.assertIn('[ironic] shard', str(exc))


class BalancedKeySetTestCase(test_base.TestCase):
    """Services agree on a balanced ring whatever instances come and go."""

    HOSTS = tuple('cn%d' % i for i in range(1, 9))

    def _refresh(self, host, nodes, mine=()):
        self.config(group='ironic_partition', host=host,
                    ring_mode='balanced', claims='database')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=list(self.HOSTS))
        p = partitioner.Partitioner(
            settings_mod.from_conf(self.conf),
            test_partitioner.FakeClient(nodes),
            test_partitioner.FakeMembership(self.HOSTS), claims=False)
        return p.refresh(my_instances=mine)

    def test_ring_keys_are_every_node_of_the_group(self):
        nodes = (test_partitioner._nodes(4, instances={1: 'i1'})
                 + test_partitioner._nodes(2, group='rack2'))
        provider = compute.ComputeRingProvider(members=['a'],
                                               mode='balanced')
        self.assertEqual([n.id for n in nodes[:4]],
                         provider.ring_keys(nodes, 'rack1'))
        self.assertEqual([n.id for n in nodes],
                         provider.ring_keys(nodes, None))

    def test_services_listing_at_different_moments_agree(self):
        count = 900
        before = test_partitioner._nodes(count)
        # NOTE: between the two listings, instances land on some nodes of
        # the group; cn1 also owns an instance on a node of another group.
        landed = {i: 'inst-%d' % i for i in range(0, count, 7)}
        after = test_partitioner._nodes(count, instances=landed)
        away = [baremetal.Node(id=str(uuid.uuid4()), conductor_group='rack2',
                               instance_id='away-%d' % i) for i in range(40)]
        results = {'cn1': self._refresh(
            'cn1', before + away, mine={n.instance_id for n in away})}
        for index, host in enumerate(self.HOSTS[1:]):
            results[host] = self._refresh(host, (before, after)[index % 2])
        self.assertIn(away[0].id, results['cn1'].nodes)
        free = [n.id for n in after if n.instance_id is None]
        for uuid_ in free:
            owners = [h for h, r in results.items()
                      if uuid_ in r.ownership.by_ring]
            self.assertEqual(1, len(owners), uuid_)
