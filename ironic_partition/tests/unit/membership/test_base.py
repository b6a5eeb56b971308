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

import collections
import dataclasses
from unittest import mock

from oslotest import base as test_base
from stevedore import exception as stevedore_exc

from ironic_partition import exception
from ironic_partition.membership import base
from ironic_partition.membership import static
from ironic_partition import settings as settings_mod

Rec = collections.namedtuple('Rec', ['host', 'alive'])


class TestComputeMembership(test_base.BaseTestCase):

    records = [Rec('A', True), Rec('b', True), Rec('C', False),
               Rec('me', False)]

    def test_unset_partition_key_all_live(self):
        m = base.compute_membership('ME', self.records, None, ['x'], None)
        self.assertEqual({'a', 'b', 'me'}, m.live)
        self.assertEqual({'c'}, m.dead)
        self.assertEqual(frozenset(), m.never_seen)

    def test_partition_key_uses_peer_list(self):
        m = base.compute_membership('me', self.records, '', ['a', 'C', 'Z'],
                                    'now')
        self.assertEqual({'a', 'me'}, m.live)
        self.assertEqual({'c'}, m.dead)
        self.assertEqual({'z'}, m.never_seen)
        self.assertEqual('now', m.as_of)

    def test_partition_key_without_peer_list_is_self_only(self):
        m = base.compute_membership('me', self.records, 'g', None, None)
        self.assertEqual({'me'}, m.live)

    def test_peer_serving_another_key_is_elsewhere(self):
        KRec = collections.namedtuple('KRec',
                                      ['host', 'alive', 'partition_key'])
        records = [KRec('a', True, 'RACK1'), KRec('b', True, 'rack2'),
                   KRec('c', True, None), KRec('d', False, 'rack2'),
                   KRec('e', True, 'rack2'), KRec('e', True, 'rack1')]
        m = base.compute_membership('me', records, 'rack1',
                                    ['a', 'b', 'c', 'd', 'e'], None)
        self.assertEqual({'a', 'e', 'me'}, m.live)
        self.assertEqual({'b', 'c'}, m.elsewhere)
        self.assertEqual({'d'}, m.dead)
        # Partitioning off: only services with partitioning off.
        m = base.compute_membership('me', records, None, None, None)
        self.assertEqual({'c', 'me'}, m.live)
        self.assertEqual({'a', 'b', 'e'}, m.elsewhere)
        self.assertEqual({'d'}, m.dead)

    def test_membership_is_immutable(self):
        m = base.Membership(live=frozenset({'a'}))
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, m,
                          'stale', True)
        self.assertTrue(m.replace(stale=True).stale)


class TestGetBackend(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.settings = settings_mod.for_tests('h', partition_key='g')

    @mock.patch('stevedore.ExtensionManager', autospec=True)
    @mock.patch('stevedore.driver.DriverManager', autospec=True)
    def test_unknown_name(self, mock_dm, mock_em):
        mock_dm.side_effect = stevedore_exc.NoMatches('nope')
        mock_em.return_value.names.return_value = ['static', 'database']
        exc = self.assertRaises(exception.MembershipBackendLoadError,
                                base.get_backend, self.settings, 'agent',
                                name='bogus')
        self.assertIn('[ironic_partition] membership_backend', str(exc))
        self.assertIn('database, static', str(exc))
        self.assertIn("'bogus'", str(exc))

    @mock.patch('stevedore.driver.DriverManager', autospec=True)
    def test_loads(self, mock_dm):
        mock_dm.return_value.driver = 'driver'
        settings = self.settings.replace(membership_backend='static')
        self.assertEqual('driver', base.get_backend(
            settings, 'agent', version='1'))
        mock_dm.assert_called_once_with(
            base.NAMESPACE, 'static', invoke_on_load=True,
            invoke_args=(settings, 'agent'),
            invoke_kwds={'version': '1'},
            on_load_failure_callback=mock.ANY)

    def test_namespace(self):
        self.assertEqual('ironic_partition.membership', base.NAMESPACE)

    def test_invalid_role(self):
        self.assertRaises(exception.InvalidRole, static.StaticMembership,
                          self.settings, 'bogus')


class TestStatic(test_base.BaseTestCase):

    def test_members(self):
        b = static.StaticMembership(settings_mod.for_tests('Me'), 'agent')
        b.start()
        self.assertTrue(b.heartbeat())
        m = b.members('g', ['A', 'b '])
        self.assertEqual({'a', 'b', 'me'}, m.live)
        self.assertFalse(m.stale)
        self.assertEqual({'me'}, b.members().live)
        b.stop()
        self.assertEqual('static', b.status()['backend'])


class TestSetPartitionKey(test_base.BaseTestCase):

    def test_lower_cased_and_unset(self):
        backend = static.StaticMembership(
            settings_mod.for_tests('h', partition_key='a'), 'agent')
        backend.set_partition_key('Rack2')
        self.assertEqual('rack2', backend.partition_key)
        backend.set_partition_key(None)
        self.assertIsNone(backend.partition_key)
        self.assertIsNone(backend.store)


class TestWithOutside(test_base.BaseTestCase):
    """Peers nova's service group has up and the membership misses."""

    def test_peer_only_nova_sees_is_a_member(self):
        ours = base.Membership(live=frozenset({'me'}),
                               never_seen=frozenset({'cn2', 'cn3'}),
                               alive_anywhere=frozenset({'me'}))
        nova = base.Membership(live=frozenset({'me', 'cn2'}),
                               never_seen=frozenset({'cn3'}))
        merged = base.with_outside(ours, nova)
        self.assertEqual({'me', 'cn2'}, merged.live)
        self.assertEqual({'cn2'}, merged.outside)
        self.assertEqual({'cn3'}, merged.never_seen)
        self.assertEqual({'me', 'cn2'}, merged.alive_anywhere)
        self.assertFalse(merged.stale)

    def test_peer_our_membership_saw_stop_counts_while_nova_has_it_up(self):
        # A compute switched back to nova's driver: its row here is old.
        ours = base.Membership(live=frozenset({'me'}),
                               dead=frozenset({'cn2'}))
        nova = base.Membership(live=frozenset({'me', 'cn2'}))
        merged = base.with_outside(ours, nova)
        self.assertEqual({'me', 'cn2'}, merged.live)
        self.assertEqual(frozenset(), merged.dead)
        self.assertEqual({'cn2'}, merged.outside)

    def test_peer_live_for_another_group_stays_out(self):
        ours = base.Membership(live=frozenset({'me'}),
                               elsewhere=frozenset({'cn2'}))
        nova = base.Membership(live=frozenset({'me', 'cn2'}))
        merged = base.with_outside(ours, nova)
        self.assertEqual({'me'}, merged.live)
        self.assertEqual(frozenset(), merged.outside)

    def test_same_views_add_nothing(self):
        ours = base.Membership(live=frozenset({'me', 'cn2'}),
                               alive_anywhere=frozenset({'me', 'cn2'}))
        merged = base.with_outside(ours, base.Membership(
            live=frozenset({'me', 'cn2'})))
        self.assertEqual(ours, merged)

    def test_peer_down_in_nova_but_live_here_stays(self):
        ours = base.Membership(live=frozenset({'me', 'cn2'}))
        merged = base.with_outside(ours, base.Membership(
            live=frozenset({'me'}), stale=True))
        self.assertEqual({'me', 'cn2'}, merged.live)
        self.assertTrue(merged.stale)
