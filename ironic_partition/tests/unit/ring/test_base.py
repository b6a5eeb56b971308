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

from oslotest import base
from stevedore import driver as stevedore_driver
from stevedore import extension

from ironic_partition import exception
from ironic_partition import hash_ring
from ironic_partition.ring import base as ring_base
from ironic_partition.ring import compute
from ironic_partition.ring import conductor


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
                               return_value=['compute', 'conductor'],
                               autospec=True):
            exc = self.assertRaises(exception.PluginLoadError,
                                    ring_base.get_provider, 'nope')
        self.assertIn('nope', str(exc))
        self.assertIn('compute, conductor', str(exc))
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
        self.assertIsInstance(ring, hash_ring.BalancedHashRing)
