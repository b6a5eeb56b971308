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

import types
from unittest import mock

from oslotest import base as test_base

from ironic_partition import exception
from ironic_partition.membership import nova
from ironic_partition import settings as settings_mod


class ComputeHostNotFound(Exception):
    """nova's exception, as the fake nova raises it."""


class TestNovaMembership(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.services = [types.SimpleNamespace(host=h)
                         for h in ('Me', 'Up', 'Down', 'Other')]
        self.up = {'Me', 'Up', 'Other'}
        self.fake = types.SimpleNamespace(
            context=mock.Mock(), objects=mock.Mock(),
            servicegroup=mock.Mock(), exception=types.SimpleNamespace(
                ComputeHostNotFound=ComputeHostNotFound))
        self.list_computes = (
            self.fake.objects.ServiceList.get_all_computes_by_hv_type)
        self.list_computes.return_value = self.services
        self.is_up = self.fake.servicegroup.API.return_value.service_is_up
        self.is_up.side_effect = lambda svc: svc.host in self.up
        patcher = mock.patch.object(nova, '_load_nova', autospec=True,
                                    return_value=self.fake)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.backend = nova.NovaMembership(settings_mod.for_tests('ME'),
                                           'nova-compute')
        self.backend.start()

    def test_all_up_like_nova(self):
        m = self.backend.members()
        self.assertEqual({'me', 'up', 'other'}, m.live)
        self.assertEqual({'down'}, m.dead)
        self.list_computes.assert_called_once_with(
            self.fake.context.get_admin_context.return_value, 'ironic')

    def test_peer_list_only_checks_peers(self):
        m = self.backend.members('g', ['UP', 'down', 'never'])
        self.assertEqual({'me', 'up'}, m.live)
        self.assertEqual({'down'}, m.dead)
        self.assertEqual({'never'}, m.never_seen)
        checked = {c.args[0].host for c in self.is_up.call_args_list}
        self.assertEqual({'Up', 'Down'}, checked)

    def test_stale_when_nova_fails(self):
        first = self.backend.members()
        self.list_computes.side_effect = Exception('conductor timeout')
        m = self.backend.members()
        self.assertTrue(m.stale)
        self.assertEqual(first.live, m.live)
        self.assertTrue(self.backend.status()['stale'])

    def test_unavailable_when_never_answered(self):
        self.list_computes.side_effect = Exception('boom')
        self.assertRaises(exception.MembershipUnavailable,
                          self.backend.members)

    def test_compute_services_of_any_hypervisor(self):
        by_binary = self.fake.objects.ServiceList.get_by_binary
        by_binary.return_value = [types.SimpleNamespace(host=h)
                                  for h in ('Me', 'KVM-1')]
        self.assertEqual({'kvm-1'}, self.backend.compute_services(
            frozenset({'kvm-1', 'typo'})))
        by_binary.assert_called_once_with(
            self.fake.context.get_admin_context.return_value,
            'nova-compute', include_disabled=True)
        self.assertEqual(frozenset(), self.backend.compute_services(
            frozenset()))
        self.assertEqual(1, by_binary.call_count)

    def test_compute_node_names_as_nova_spells_the_host(self):
        self.backend.members()
        get = self.fake.objects.ComputeNodeList.get_all_by_host
        get.return_value = [types.SimpleNamespace(hypervisor_hostname='ABC'),
                            types.SimpleNamespace(hypervisor_hostname='def')]
        self.assertEqual({'abc', 'def'},
                         self.backend.compute_node_names('up'))
        get.assert_called_once_with(
            self.fake.context.get_admin_context.return_value, 'Up')

    def test_compute_node_names_of_a_host_without_any(self):
        get = self.fake.objects.ComputeNodeList.get_all_by_host
        get.side_effect = ComputeHostNotFound('none')
        self.assertEqual(frozenset(),
                         self.backend.compute_node_names('gone'))
        get.side_effect = RuntimeError('conductor timeout')
        self.assertRaises(RuntimeError, self.backend.compute_node_names,
                          'gone')

    def test_only_nova_compute(self):
        self.assertRaises(exception.BackendNotSupported, nova.NovaMembership,
                          settings_mod.for_tests('h'), 'conductor')

    def test_no_heartbeat_of_its_own(self):
        self.assertTrue(self.backend.heartbeat())
        self.backend.stop()
