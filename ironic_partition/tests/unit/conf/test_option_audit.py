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

"""Every option has a test that fails when the code ignores it.

:data:`AUDITED` names, for each option of :mod:`ironic_partition.conf.
partition` and :mod:`ironic_partition.conf.ironic`, tests that set it to
something else than its default and fail when it is read as its default
(checked by forcing the option to its default while running them). An
option added without a line here fails :meth:`TestAudit.
test_every_option_is_audited`. keystoneauth's ``[ironic]`` options are
keystoneauth's; ``tests.unit.test_baremetal`` covers the defaults we set
and ``endpoint_override``.
"""

from unittest import mock

import fixtures

from ironic_partition.claims import manager as claims_manager
from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import store as store_mod
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition.membership import database
from ironic_partition.membership import static
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base
from ironic_partition.tests.unit.partition import test_partitioner
from ironic_partition.tests.unit.virt import test_mixin

_U = 'ironic_partition.tests.unit.'
_HERE = _U + 'conf.test_option_audit.TestOptionsAreRead.'
_RING = _U + 'ring.test_base.FromConfTestCase.'

#: (group, option) -> tests that fail when the option is ignored.
AUDITED = {
    ('ironic_partition', 'host'): [
        _U + 'conf.test_conf.TestPeerList.test_trimmed_lowered_deduplicated'],
    ('ironic_partition', 'state_path'): [
        _U + 'db.test_api.TestConf.test_default_connection_under_state_path'],
    ('ironic_partition', 'membership_backend'): [
        _HERE + 'test_membership_backend_chooses_the_backend'],
    ('ironic_partition', 'ring_provider'): [
        _RING + 'test_ring_provider_option_is_the_name_loaded',
        _RING + 'test_conductor_is_refused_with_the_reason'],
    ('ironic_partition', 'partition_exponent'): [
        _RING + 'test_partition_exponent_sets_the_points'],
    ('ironic_partition', 'ring_mode'): [
        _RING + 'test_ring_mode_balanced_builds_a_balanced_ring',
        _RING + 'test_balanced_needs_claims'],
    ('ironic_partition', 'refresh_interval'): [
        _HERE + 'test_refresh_interval_bounds_a_refresh',
        _U + 'test_claims.TestSettings.test_lease_must_outlive_two_refreshes'],
    ('ironic_partition', 'heartbeat_interval'): [
        _HERE + 'test_heartbeat_interval_paces_the_heartbeats',
        _U + 'conf.test_conf.TestValidate.'
        'test_heartbeat_must_be_below_down_time'],
    ('ironic_partition', 'service_down_time'): [
        _HERE + 'test_service_down_time_decides_liveness'],
    ('ironic_partition', 'full_resync_interval'): [
        _U + 'test_node_index.TestPartitionerReadsTheOptions.'
        'test_full_resync_interval'],
    ('ironic_partition', 'change_feed_overlap'): [
        _U + 'test_node_index.TestPartitionerReadsTheOptions.'
        'test_change_feed_overlap'],
    ('ironic_partition', 'membership_stale_timeout'): [
        _U + 'test_partitioner.TestPartitioner.'
        'test_stale_membership_bounded'],
    ('ironic_partition', 'claims'): [
        _U + 'test_claims.TestWanted.test_explicit_modes'],
    ('ironic_partition', 'lease_time'): [
        _U + 'test_claims.TestSettings.test_automatic_values'],
    ('ironic_partition', 'fencing_margin'): [
        _U + 'test_claims.TestSettings.test_automatic_values'],
    ('ironic_partition', 'forget_database_clocks'): [
        _HERE + 'test_forget_database_clocks_reaches_the_claims'],
    ('ironic_partition', 'hand_over_on_stop'): [
        _U + 'virt.test_mixin.TestPartitionMixin.'
        'test_stop_keeps_claims_and_membership_when_told'],
    ('ironic_partition', 'allocation_timeout'): [
        _U + 'test_allocations.TestFailures.'
        'test_timeout_deletes_the_allocation'],
    ('ironic_partition', 'metrics_port'): [
        _U + 'test_metrics.TestDriverMetrics.'
        'test_metrics_port_and_host_serve_the_metrics',
        _U + 'test_metrics.TestDriverMetrics.test_stop_closes_the_port'],
    ('ironic_partition', 'metrics_host'): [
        _U + 'test_metrics.TestDriverMetrics.'
        'test_metrics_port_and_host_serve_the_metrics'],
    ('ironic', 'partition_key'): [
        _U + 'conf.test_conf.TestPartitionKey.test_mixed_case_is_lowered'],
    ('ironic', 'conductor_group'): [
        _U + 'conf.test_conf.TestPartitionKey.test_alias_conductor_group'],
    ('ironic', 'peer_list'): [
        _U + 'conf.test_conf.TestPeerList.test_trimmed_lowered_deduplicated'],
    ('ironic', 'shard'): [
        _U + 'test_shards.TestShardSettings.'
        'test_shard_alone_needs_no_peer_list'],
}


class TestAudit(base.TestCase):

    def test_every_option_is_audited(self):
        defined = {(partition_conf.GROUP, o.name)
                   for o in partition_conf.opts}
        defined |= {(ironic_conf.GROUP, o.name) for o in ironic_conf.opts}
        self.assertEqual(defined, set(AUDITED))


class TestOptionsAreRead(base.TestCase):
    """Options whose effect no other test pinned to a non-default value."""

    def setUp(self):
        super().setUp()
        self.config(group='ironic_partition', host='cn1')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1', 'cn2'])

    def test_membership_backend_chooses_the_backend(self):
        self.config(group='ironic_partition', membership_backend='static')
        client = test_partitioner.FakeClient(test_partitioner._nodes(3))
        driver = test_mixin.FakeDriver(self.conf, client, None)
        self.assertIsInstance(driver.partition_membership,
                              static.StaticMembership)
        self.config(group='ironic_partition', membership_backend='nope')
        exc = self.assertRaises(exception.MembershipBackendLoadError,
                                test_mixin.FakeDriver, self.conf,
                                test_partitioner.FakeClient([]), None)
        self.assertIn('[ironic_partition] membership_backend', str(exc))

    def test_refresh_interval_bounds_a_refresh(self):
        logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.config(group='ironic_partition', refresh_interval=5)
        clock = [100.0]
        client = test_partitioner.FakeClient(test_partitioner._nodes(3))
        real = client.list_nodes

        def slow(conductor_group=None):
            clock[0] += 6
            return real(conductor_group)

        client.list_nodes = slow
        part = test_partitioner.partitioner.Partitioner(
            settings_mod.from_conf(self.conf), client,
            test_partitioner.FakeMembership(['cn1']),
            clock=lambda: clock[0])
        part.refresh()
        self.assertIn('longer than [ironic_partition] refresh_interval '
                      '(5 s)', logger.output)

    def _database_backend(self, db=None):
        return membership_base.get_backend(
            settings_mod.for_tests('cn1', conf=self.conf),
            membership_base.ROLE_NOVA_COMPUTE, name='database',
            connection=db or mock.Mock())

    def test_forget_database_clocks_reaches_the_claims(self):
        self.config(group='ironic_partition',
                    forget_database_clocks=['DB2:3306'])
        settings = settings_mod.for_tests('cn1', conf=self.conf)
        manager = claims_manager.from_settings(
            settings.replace(claims_mode='database'),
            store=store_mod.Store(mock.Mock()))
        self.assertEqual(frozenset(['db2:3306']), manager._forget_clocks)

    def test_heartbeat_interval_paces_the_heartbeats(self):
        self.config(group='ironic_partition', heartbeat_interval=3)
        backend = self._database_backend()
        self.assertIsInstance(backend, database.DatabaseMembership)
        self.assertEqual(3, backend._next_delay())

    def test_service_down_time_decides_liveness(self):
        self.config(group='ironic_partition', service_down_time=45)
        db = mock.Mock()
        db.services.services.side_effect = RuntimeError('stop here')
        backend = self._database_backend(db)
        self.assertRaises(exception.MembershipUnavailable, backend.members)
        db.services.services.assert_called_once_with(
            membership_base.ROLE_NOVA_COMPUTE, 45)
