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

"""The nova driver's start-up policy, with nova's own classes and fakes."""

import datetime
import threading
import types
from unittest import mock

import fixtures
from nova.compute import provider_tree
from nova.compute import resource_tracker
from nova import exception as nova_exception
from nova.virt.ironic import driver as ironic_driver
from openstack import exceptions as sdk_exc

from ironic_partition import exception
from ironic_partition.tests import base
from ironic_partition.virt import lifecycle
from ironic_partition.virt import nova_driver
from ironic_partition.virt import tracking

NODE = '7d3f0000-0000-4000-8000-000000000001'
OTHER = '7d3f0000-0000-4000-8000-000000000002'
INSTANCE = 'c0ffee00-0000-4000-8000-000000000001'


def _bare_driver(**attrs):
    """The driver's object, nova's IronicDriver not built.

    Building it would connect to Ironic; the policy under test reads a
    few attributes.
    """
    driver = object.__new__(nova_driver.IronicPartitionDriver)
    driver._nova_host = 'cn1'
    driver._stopping = False
    for name, value in attrs.items():
        setattr(driver, name, value)
    return driver


class FakePartitioner(object):

    def __init__(self, refusal=None, holder='cn2', lost=None):
        self.refusal = refusal
        self.holder = holder
        self.identity = types.SimpleNamespace(lost=lost)
        self.claims = None

    def spawn_refusal(self, node_id):
        return self.refusal

    def claim_holder(self, node_id):
        return self.holder


class FakeReportGate(object):
    """``may_report`` answered from a set the test changes."""

    def __init__(self, nodes=(NODE,)):
        self.nodes = set(nodes)
        self.asked = []

    def may_report(self, node_id):
        self.asked.append(node_id)
        return node_id in self.nodes

    def claim_holder(self, node_id):
        return 'cn2'


class TestPassGate(base.TestCase):
    """``tracking.PassGate``: one record per thread, taken once."""

    def setUp(self):
        super().setUp()
        self.now = 100.0
        self.gate = tracking.PassGate(clock=lambda: self.now)

    def test_the_checked_node_is_pending_once_with_its_wait(self):
        self.gate.checked(NODE)
        self.now += 2.5
        self.assertEqual(2.5, self.gate.pending(NODE))
        self.assertIsNone(self.gate.pending(NODE))
        self.assertEqual(2.5, self.gate.longest_wait)

    def test_another_node_is_not_pending_and_keeps_the_record(self):
        self.gate.checked(NODE)
        self.assertIsNone(self.gate.pending(OTHER))
        self.assertEqual(0.0, self.gate.pending(NODE))

    def test_a_later_check_replaces_a_record_left_behind(self):
        self.gate.checked(NODE)
        self.gate.checked(OTHER)
        self.assertIsNone(self.gate.pending(NODE))
        self.assertEqual(0.0, self.gate.pending(OTHER))

    def test_a_record_belongs_to_the_thread_that_checked(self):
        self.gate.checked(NODE)
        seen = []
        worker = threading.Thread(target=lambda: seen.append(
            self.gate.pending(NODE)))
        worker.start()
        worker.join()
        self.assertEqual([None], seen)
        self.assertEqual(0.0, self.gate.pending(NODE))


class TestParallelTracking(base.TestCase):
    """The claim checked again inside nova's resource lock."""

    def setUp(self):
        super().setUp()
        self.partitioner = FakeReportGate(nodes=(NODE, OTHER))
        self.now = 0.0
        self.driver = _bare_driver(
            partitioner=self.partitioner,
            _pass_gate=tracking.PassGate(clock=lambda: self.now))
        self.nova_resource = self._patch('get_available_resource',
                                         return_value={'uuid': NODE})
        self.nova_tree = self._patch('update_provider_tree')
        self.log = self.useFixture(fixtures.FakeLogger())

    def _patch(self, name, **kwargs):
        patcher = mock.patch.object(ironic_driver.IronicDriver, name,
                                    autospec=True, **kwargs)
        self.addCleanup(patcher.stop)
        return patcher.start()

    def test_a_claim_still_held_at_the_lock_goes_to_nova(self):
        self.assertEqual({'uuid': NODE},
                         self.driver.get_available_resource(NODE))
        self.now += 3.0
        self.driver.update_provider_tree('tree', NODE)
        self.nova_tree.assert_called_once_with(self.driver, 'tree', NODE,
                                               allocations=None)
        self.assertEqual([NODE, NODE], self.partitioner.asked)
        self.assertEqual(3.0, self.driver._pass_gate.longest_wait)

    def test_a_claim_run_out_while_waiting_writes_nothing(self):
        self.driver.get_available_resource(NODE)
        self.now += 12.0
        self.partitioner.nodes.discard(NODE)
        e = self.assertRaises(nova_exception.VirtDriverNotReady,
                              self.driver.update_provider_tree, 'tree',
                              NODE)
        self.assertIn('node %s may not be written any more by this service '
                      "(its claim ran out while it waited 12.0 s for nova's "
                      'resource lock)' % NODE, str(e))
        self.nova_tree.assert_not_called()
        self.assertEqual(1, self.driver._pass_gate.refused)
        self.assertIn('Not writing node %s: its claim ran out in the 12.0 s '
                      'since the resource tracker checked it (claim held by '
                      'cn2)' % NODE, self.log.output)

    def test_a_write_outside_a_pass_is_left_to_nova(self):
        # A build's claim checked the node inside the lock already
        # (node_is_available); a reshape's second call has no record.
        self.partitioner.nodes.clear()
        self.driver.update_provider_tree('tree', NODE, allocations={})
        self.nova_tree.assert_called_once_with(self.driver, 'tree', NODE,
                                               allocations={})
        self.assertEqual([], self.partitioner.asked)

    def test_a_refused_check_records_nothing(self):
        self.partitioner.nodes.clear()
        self.assertRaises(nova_exception.VirtDriverNotReady,
                          self.driver.get_available_resource, NODE)
        self.nova_resource.assert_not_called()
        self.assertIsNone(self.driver._pass_gate.pending(NODE))

    def test_workers_queued_for_the_lock_are_each_checked_again(self):
        # Eight workers check their node, then queue for nova's lock (a
        # fair one: in check order); the claims run out while the fifth
        # waits. The first four write, the last four write nothing.
        nodes = ['7d3f0000-0000-4000-8000-%012d' % i for i in range(8)]
        self.partitioner.nodes = set(nodes)
        lock = threading.Lock()
        checked = threading.Barrier(len(nodes))
        order = []

        def worker(node):
            self.driver.get_available_resource(node)
            checked.wait()
            with lock:
                if len(order) == 4:
                    self.partitioner.nodes.clear()
                try:
                    self.driver.update_provider_tree('tree', node)
                    order.append((node, 'written'))
                except nova_exception.VirtDriverNotReady:
                    order.append((node, 'refused'))

        threads = [threading.Thread(target=worker, args=(n,)) for n in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(['written'] * 4 + ['refused'] * 4,
                         [outcome for _node, outcome in order])
        self.assertEqual(sorted(node for node, outcome in order
                                if outcome == 'written'),
                         sorted(c.args[2] for c in
                                self.nova_tree.call_args_list))
        self.assertEqual(4, self.driver._pass_gate.refused)

    def test_novas_placement_write_follows_the_second_check(self):
        # nova's own _update_to_placement: the inventory write comes after
        # update_provider_tree, and is not made when it refuses.
        self.nova_tree.side_effect = None
        report = mock.Mock()

        def subtree(ctxt, uuid, name=None):
            tree = provider_tree.ProviderTree()
            tree.new_root(name, uuid)
            return tree

        report.get_provider_subtree_and_ensure_root.side_effect = subtree
        tracker = resource_tracker.ResourceTracker(
            'cn1', self.driver, reportclient=report)
        # NOTE(ironic-partition): nova reads its services row for a trait.
        self.useFixture(fixtures.MockPatchObject(tracker, '_get_traits',
                                                 return_value=[]))
        node = mock.Mock(hypervisor_hostname=NODE, uuid=NODE)
        self.driver.get_available_resource(NODE)
        self.partitioner.nodes.discard(NODE)
        self.assertRaises(nova_exception.VirtDriverNotReady,
                          tracker._update_to_placement, mock.Mock(), node,
                          False)
        report.update_from_provider_tree.assert_not_called()
        self.driver.get_available_resource(OTHER)
        self.nova_resource.return_value = {'uuid': OTHER}
        other = mock.Mock(hypervisor_hostname=OTHER, uuid=OTHER)
        tracker._update_to_placement(mock.Mock(), other, False)
        report.update_from_provider_tree.assert_called_once()


class TestSpawnPolicy(base.TestCase):
    """``prepare_for_spawn``: each way a build is refused or rescheduled."""

    def setUp(self):
        super().setUp()
        self.partitioner = FakePartitioner()
        self.node = types.SimpleNamespace(id=NODE, instance_id=None)
        self.driver = _bare_driver(partitioner=self.partitioner,
                                   _get_node=lambda node_id: self.node)
        self.instance = mock.MagicMock(uuid=INSTANCE)
        self.instance.get.return_value = NODE
        patcher = mock.patch.object(ironic_driver.IronicDriver,
                                    'prepare_for_spawn', autospec=True)
        self.nova_prepare = patcher.start()
        self.addCleanup(patcher.stop)

    def test_a_node_it_may_not_report_is_refused_before_any_write(self):
        self.partitioner.refusal = ('this service\'s claims ran out '
                                    '(fenced)')
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.driver.prepare_for_spawn, self.instance)
        self.assertIn('node %s may not be deployed by cn1: this service\'s '
                      'claims ran out (fenced) (claim held by cn2)' % NODE,
                      str(e))
        self.nova_prepare.assert_not_called()

    def test_a_node_it_may_report_goes_to_novas_reservation(self):
        self.driver.prepare_for_spawn(self.instance)
        self.nova_prepare.assert_called_once_with(self.driver,
                                                  self.instance)

    def _failed_write(self, cause):
        def nova_prepare(driver, instance):
            try:
                raise cause
            except Exception:
                raise nova_exception.InstanceDeployFailure(
                    reason='Failed to reserve node')
        self.nova_prepare.side_effect = nova_prepare

    def test_a_lost_race_is_rescheduled_naming_the_winner(self):
        self._failed_write(sdk_exc.ConflictException('409'))
        self.node.instance_id = 'the-winner'
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.driver.prepare_for_spawn, self.instance)
        self.assertIn('node %s was reserved for instance the-winner first'
                      % NODE, str(e))

    def test_a_locked_node_is_rescheduled(self):
        self._failed_write(sdk_exc.ConflictException('Node is locked by '
                                                     'host c2'))
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.driver.prepare_for_spawn, self.instance)
        self.assertIn('node %s could not be reserved: Node is locked by '
                      'host c2' % NODE, str(e))

    def test_another_failure_stays_novas(self):
        self._failed_write(sdk_exc.HttpException('500 boom'))
        self.assertRaises(nova_exception.InstanceDeployFailure,
                          self.driver.prepare_for_spawn, self.instance)


class TestRebuildPolicy(base.TestCase):
    """``rebuild``: the spawn's gate, and nova keeps the server."""

    def setUp(self):
        super().setUp()
        self.partitioner = FakePartitioner()
        self.driver = _bare_driver(partitioner=self.partitioner)
        self.instance = mock.MagicMock(uuid=INSTANCE)
        self.instance.get.return_value = NODE
        patcher = mock.patch.object(ironic_driver.IronicDriver, 'rebuild',
                                    autospec=True)
        self.nova_rebuild = patcher.start()
        self.addCleanup(patcher.stop)

    def _rebuild(self):
        return self.driver.rebuild(
            'ctxt', self.instance, 'image', [], 'pw', {}, [], None, None,
            network_info='net', preserve_ephemeral=True,
            reimage_boot_volume=False)

    def test_a_node_it_may_not_write_is_refused_before_ironic(self):
        self.partitioner.refusal = 'no refresh of this service has ' \
            'succeeded yet'
        e = self.assertRaises(nova_exception.InstanceFaultRollback,
                              self._rebuild)
        self.assertIsInstance(e.inner_exception,
                              nova_exception.VirtDriverNotReady)
        self.assertEqual(
            'Rebuild refused before anything was written to node %s: '
            'compute cn1 may not act on it now (no refresh of this '
            'service has succeeded yet; claim held by cn2); the server is '
            'unchanged, retry once the compute is ready' % NODE,
            str(e.inner_exception))
        self.nova_rebuild.assert_not_called()

    def test_a_node_it_may_write_goes_to_novas_rebuild(self):
        self.nova_rebuild.return_value = 'done'
        self.assertEqual('done', self._rebuild())
        self.nova_rebuild.assert_called_once_with(
            self.driver, 'ctxt', self.instance, 'image', [], 'pw', {}, [],
            None, None, network_info='net', evacuate=False,
            block_device_info=None, preserve_ephemeral=True,
            accel_uuids=None, reimage_boot_volume=False)


class TestClaimGate(base.TestCase):
    """``node_is_available``: nova's claims asked of the reporting gate."""

    def setUp(self):
        super().setUp()
        self.partitioner = FakePartitioner()
        self.driver = _bare_driver(partitioner=self.partitioner)
        # NOTE(ironic-partition): nova's answer refreshes its node cache
        # (a partition refresh) when the cache lacks the node; ours never.
        patcher = mock.patch.object(
            ironic_driver.IronicDriver, '_refresh_cache', autospec=True,
            side_effect=AssertionError('refreshed in a claim'))
        patcher.start()
        self.addCleanup(patcher.stop)
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_a_node_it_may_report_is_available_without_a_call(self):
        self.assertTrue(self.driver.node_is_available(NODE))
        self.assertEqual('', self.log.output)

    def test_a_node_it_may_not_report_is_refused_with_one_line(self):
        self.partitioner.refusal = ('this service\'s claims ran out '
                                    '(fenced)')
        self.assertFalse(self.driver.node_is_available(NODE))
        self.assertIn('Node %s is not available to this service now (claim '
                      'held by cn2): this service\'s claims ran out '
                      '(fenced); nova neither claims it nor updates its '
                      'usage (a build is rescheduled)' % NODE,
                      self.log.output)

    def test_novas_claim_on_it_is_refused_before_the_driver_acts(self):
        self.partitioner.refusal = 'the node is not in this service\'s list'
        tracker = resource_tracker.ResourceTracker(
            'cn1', self.driver, reportclient=mock.Mock())
        tracker.compute_nodes[NODE] = mock.Mock()
        instance = mock.MagicMock(uuid=INSTANCE)
        e = self.assertRaises(
            nova_exception.ComputeResourcesUnavailable,
            tracker.instance_claim, mock.Mock(), instance, NODE, {})
        self.assertIn('on unknown node %s failed' % NODE, str(e))


class TestStopPolicy(base.TestCase):
    """Stopping itself: once, and only when replaced or refused."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())

    def _driver(self, lost=None):
        driver = _bare_driver(partitioner=FakePartitioner(lost=lost))
        driver._terminate_self = mock.Mock()
        return driver

    def test_replaced_stops_once(self):
        driver = self._driver(lost='incarnation x holds the host name now')
        driver._stop_if_replaced()
        driver._stop_if_replaced()
        driver._terminate_self.assert_called_once_with()
        self.assertIn('Another process took host cn1 over (incarnation x '
                      'holds the host name now)', self.logger.output)

    def test_not_replaced_goes_on(self):
        driver = self._driver()
        driver._stop_if_replaced()
        driver.partitioner.identity = None
        driver._stop_if_replaced()
        driver._terminate_self.assert_not_called()

    def test_refused_stops_once_even_if_replaced_later(self):
        driver = self._driver()
        driver._stop_refused(exception.ConfigurationError(
            group='ironic_partition_database', option='connection',
            value='sqlite://', reason='cn0 serves'))
        driver.partitioner.identity.lost = 'gone'
        driver._stop_if_replaced()
        driver._terminate_self.assert_called_once_with()


class TestJoinPolicy(base.TestCase):
    """``_partition_join``: which start errors wait, which stay fatal."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())

    def _driver(self, error):
        conf = types.SimpleNamespace(ironic_partition=types.SimpleNamespace(
            service_down_time=60))
        driver = _bare_driver(partition_conf=conf)
        driver.partition_start = mock.Mock(side_effect=error)
        return driver

    def test_joined(self):
        self.assertIsNone(self._driver(None)._partition_join())

    def test_waits_on_a_silent_database(self):
        error = exception.DatabaseConnectionFailed(
            connection='postgresql://***@db/claims', reason='refused')
        self.assertIs(error, self._driver(error)._partition_join())
        self.assertIn('Not ready: the membership and claims database does '
                      'not answer', self.logger.output)

    def test_waits_on_a_previous_holder(self):
        error = exception.DuplicateService(
            host='cn1', role='nova-compute', started_at='t', origin='o',
            age=3.0, incarnation='i')
        self.assertIs(error, self._driver(error)._partition_join())
        self.assertIn('joins once that process\'s last heartbeat is older '
                      'than [ironic_partition] service_down_time (60 s)',
                      self.logger.output)

    def test_a_stopped_partition_is_not_ready(self):
        error = exception.PartitionNotReady(reason='stopping',
                                            kind='stopped')
        self.assertIs(error, self._driver(error)._partition_join())

    def test_other_errors_stay_fatal(self):
        error = exception.DatabaseNotMigrated(
            connection='c', current='0004', expected='0005')
        self.assertRaises(exception.DatabaseNotMigrated,
                          self._driver(error)._partition_join)


def _not_ready(cause):
    error = nova_exception.VirtDriverNotReady()
    error.__cause__ = cause
    return error


def _waiting(count):
    return _not_ready(exception.PartitionNotReady(
        reason='%d wait' % count, kind='claims', waiting=count))


class TestHandoverPolicy(base.TestCase):
    """``_await_handover``: when nova-compute's start waits for its nodes."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.now = 100.0
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.time, 'monotonic', lambda: self.now))
        self.polls = []
        self.outcomes = []

    def _driver(self, refreshes, claims=True):
        """A driver whose refreshes go as ``refreshes`` say.

        :param refreshes: for each refresh, an exception to raise or the
            nodes still waiting after a good one.
        """
        driver = _bare_driver(node_cache={NODE: None})
        driver.partitioner = types.SimpleNamespace(
            claims=(types.SimpleNamespace(lease_time=10) if claims
                    else None),
            cadence=types.SimpleNamespace(interval=5), last_result=None)
        steps = iter(refreshes)

        def refresh():
            step = next(steps)
            if isinstance(step, Exception):
                raise step
            driver.partitioner.last_result = types.SimpleNamespace(
                claims=types.SimpleNamespace(waiting=frozenset(step)))
        driver._refresh_cache = mock.Mock(side_effect=refresh)

        def wait(seconds):
            self.polls.append(seconds)
            self.now += seconds
            return False
        driver._handover_over = types.SimpleNamespace(wait=wait)
        return driver

    def test_waits_while_other_processes_hold_its_share(self):
        driver = self._driver([_waiting(5), _waiting(2), ()])
        driver._await_handover()
        self.assertEqual(3, driver._refresh_cache.call_count)
        self.assertEqual([lifecycle.HANDOVER_POLL] * 2, self.polls)
        self.assertIn('Holding the start of nova-compute until other '
                      'processes hand back 5 nodes (at most 15 s)',
                      self.logger.output)
        self.assertIn('Other processes handed the nodes back: starting '
                      'with 1 nodes', self.logger.output)

    def test_a_part_of_its_share_is_not_enough(self):
        # Its instance nodes adopted, its ring nodes still with a peer.
        driver = self._driver([{NODE}, ()])
        driver._await_handover()
        self.assertEqual(2, driver._refresh_cache.call_count)

    def test_ready_at_once_does_not_wait(self):
        driver = self._driver([()])
        driver._await_handover()
        self.assertEqual([], self.polls)
        self.assertNotIn('Holding', self.logger.output)

    def test_other_reasons_do_not_wait(self):
        causes = (
            exception.DatabaseConnectionFailed(connection='c',
                                               reason='refused'),
            exception.PartitionNotReady(reason='ironic down',
                                        kind='ironic'),
            None)
        for cause in causes:
            driver = self._driver([_not_ready(cause)])
            driver._await_handover()
            self.assertEqual(1, driver._refresh_cache.call_count)
        # Nor does a refresh that fails unexpectedly: nova starts as it
        # would have.
        driver = self._driver([RuntimeError('boom')])
        driver._await_handover()
        self.assertIn('Not waiting for a handover at start: the refresh '
                      'failed', self.logger.output)
        self.assertEqual([], self.polls)

    def test_gives_up_after_the_lease_and_one_interval(self):
        driver = self._driver([_waiting(3)] * 20)
        driver._await_handover()
        self.assertEqual(15, sum(self.polls))
        self.assertIn('Starting while other processes still hold 3 of the '
                      'nodes the ring gives this host, after 15 s: builds '
                      'queued for them are refused and rescheduled',
                      self.logger.output)

    def test_claims_off_or_a_stop_end_the_wait(self):
        driver = self._driver([], claims=False)
        driver._await_handover()
        driver._refresh_cache.assert_not_called()
        driver = self._driver([_waiting(3)] * 20)
        driver._handover_over = types.SimpleNamespace(
            wait=lambda seconds: True)
        driver._await_handover()
        self.assertEqual(1, driver._refresh_cache.call_count)


class TestForcedDownPolicy(base.TestCase):
    """``_forced_down_error``: a recovered host waits until set up."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())

    def _driver(self, service, started=False):
        driver = _bare_driver(_partition_started=started)
        driver._own_service = mock.Mock(return_value=service)
        return driver

    def test_forced_down_before_joining_waits(self):
        driver = self._driver(types.SimpleNamespace(forced_down=True))
        error = driver._forced_down_error(None)
        self.assertIsInstance(error, exception.PartitionNotReady)
        self.assertIn('nova has compute service cn1 forced down', str(error))
        self.assertIn('"openstack compute service set --up cn1 '
                      'nova-compute"', self.logger.output)

    def test_up_or_unknown_joins(self):
        for service in (types.SimpleNamespace(forced_down=False), None):
            self.assertIsNone(self._driver(service)._forced_down_error(None))

    def test_a_joined_process_is_not_stopped(self):
        driver = self._driver(types.SimpleNamespace(forced_down=True),
                              started=True)
        self.assertIsNone(driver._forced_down_error(None))
        driver._own_service.assert_not_called()


class TestOrphansPolicy(base.TestCase):
    """``_orphans_of_mine``: deleted servers of this host still on a node."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.nodes = {}
        self.driver = _bare_driver(
            partitioner=types.SimpleNamespace(
                index=types.SimpleNamespace(nodes=self.nodes)),
            _orphans=set(), _not_orphans=set())
        self.deleted = set()
        self.queries = []

        def get_by_filters(ctxt, filters, **kwargs):
            self.queries.append(sorted(filters['uuid']))
            self.assertEqual('cn1', filters['host'])
            return [types.SimpleNamespace(uuid=u) for u in filters['uuid']
                    if u in self.deleted]
        patcher = mock.patch.object(nova_driver.objects.InstanceList,
                                    'get_by_filters', autospec=True,
                                    side_effect=get_by_filters)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.ctxt = mock.Mock()

    def on_node(self, node, instance):
        self.nodes[node] = types.SimpleNamespace(instance_id=instance)

    def test_a_deleted_server_of_this_host_is_reported_once_warned(self):
        self.on_node('n1', 'live')
        self.on_node('n2', 'gone')
        self.on_node('n3', 'elsewhere')
        self.on_node('n4', None)
        self.deleted.add('gone')
        self.assertEqual({'gone'},
                         self.driver._orphans_of_mine(self.ctxt, {'live'}))
        self.assertEqual([['elsewhere', 'gone']], self.queries)
        self.assertEqual(1, self.logger.output.count(
            'Instance gone of this host was deleted'))
        # The next refresh asks nova again about the orphan only (not
        # about what it found not to be one): still reported, not warned
        # about again.
        self.assertEqual({'gone'},
                         self.driver._orphans_of_mine(self.ctxt, {'live'}))
        self.assertEqual([['elsewhere', 'gone'], ['gone']], self.queries)
        self.assertEqual(1, self.logger.output.count(
            'Instance gone of this host was deleted'))

    def test_a_torn_down_node_is_forgotten(self):
        self.on_node('n2', 'gone')
        self.deleted.add('gone')
        self.driver._orphans_of_mine(self.ctxt, set())
        # nova tore the node down: nothing reported, nothing remembered.
        self.nodes['n2'].instance_id = None
        self.assertEqual(set(), self.driver._orphans_of_mine(self.ctxt,
                                                             set()))
        self.assertEqual(set(), self.driver._not_orphans)

    def test_a_node_seen_again_is_asked_about_again(self):
        # Not an orphan of this host, then off its node, then back on a
        # node (another build): nova is asked again.
        self.on_node('n3', 'elsewhere')
        self.driver._orphans_of_mine(self.ctxt, set())
        del self.nodes['n3']
        self.driver._orphans_of_mine(self.ctxt, set())
        self.on_node('n5', 'elsewhere')
        self.driver._orphans_of_mine(self.ctxt, set())
        self.assertEqual([['elsewhere'], ['elsewhere']], self.queries)

    def test_live_servers_are_never_asked_about(self):
        self.on_node('n1', 'live')
        self.assertEqual(set(),
                         self.driver._orphans_of_mine(self.ctxt, {'live'}))
        self.assertEqual([], self.queries)


class TestLivenessPolicy(base.TestCase):
    """``_liveness`` and ``_heartbeat_since_start``: fail closed."""

    def setUp(self):
        super().setUp()
        self.now = datetime.datetime(2026, 11, 28, 12, 0, 0,
                                     tzinfo=datetime.timezone.utc)
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.timeutils, 'utcnow',
            lambda with_timezone=False: self.now))
        self.up = False
        self.driver = _bare_driver(servicegroup_api=types.SimpleNamespace(
            service_is_up=lambda service: self.up))
        self.nodes = []
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.objects.ComputeNodeList, 'get_all_by_host',
            lambda ctxt, host: self.nodes))
        self.flags = types.SimpleNamespace(service_down_time=60,
                                           servicegroup_driver='db')
        self.useFixture(fixtures.MockPatchObject(lifecycle, 'CONF',
                                                 self.flags))

    def node(self, seconds_ago, created_only=False):
        at = self.now - datetime.timedelta(seconds=seconds_ago)
        return types.SimpleNamespace(
            updated_at=None if created_only else at, created_at=at)

    def test_a_node_written_within_service_down_time_reports(self):
        service = types.SimpleNamespace(host='cn2')
        self.nodes = [self.node(300), self.node(30)]
        self.assertEqual((False, True),
                         self.driver._liveness(None, service))

    def test_nodes_older_than_service_down_time_do_not_report(self):
        service = types.SimpleNamespace(host='cn2')
        self.nodes = [self.node(61), self.node(90, created_only=True)]
        self.up = True
        self.assertEqual((True, False),
                         self.driver._liveness(None, service))
        self.nodes = []
        self.assertEqual((True, False),
                         self.driver._liveness(None, service))

    def test_heartbeat_since_start_by_nova_database(self):
        self.driver._started_at = self.now
        seen = types.SimpleNamespace(last_seen_up=None)
        self.assertFalse(self.driver._heartbeat_since_start(seen))
        # Before this process started (the previous process's): no.
        seen.last_seen_up = (self.now - datetime.timedelta(seconds=1)
                             ).replace(tzinfo=None)
        self.assertFalse(self.driver._heartbeat_since_start(seen))
        # nova stores naive UTC: read as UTC.
        seen.last_seen_up = (self.now + datetime.timedelta(seconds=1)
                             ).replace(tzinfo=None)
        self.assertTrue(self.driver._heartbeat_since_start(seen))

    def test_heartbeat_since_start_by_another_driver(self):
        self.flags.servicegroup_driver = 'mc'
        service = types.SimpleNamespace(last_seen_up=None)
        self.up = True
        self.assertTrue(self.driver._heartbeat_since_start(service))
        self.up = False
        self.assertFalse(self.driver._heartbeat_since_start(service))


class TestLocalDatabasePolicy(base.TestCase):
    """``_local_database_error``: one compute on a SQLite claims file.

    nova's services and compute nodes are fakes: ``self.ironic`` the
    Ironic computes (host, id, up, reporting), ``self.computes`` every
    nova-compute with its compute nodes' hypervisor types.
    """

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.time, 'monotonic', lambda: self.now))
        self.useFixture(fixtures.MockPatchObject(
            lifecycle, 'CONF', types.SimpleNamespace(report_interval=10)))
        self.ironic = {}
        self.computes = {}
        store = types.SimpleNamespace(dialect='sqlite',
                                      masked_connection='sqlite:///x')
        settings = types.SimpleNamespace(partition_key=None, shard=None,
                                         host='cn1')
        self.own = types.SimpleNamespace(id=5, host='cn1')
        self.heartbeat = False
        self.driver = _bare_driver(
            partitioner=types.SimpleNamespace(store=store, settings=settings),
            _reported=False, _first_check=None, _heartbeat_seen=None,
            servicegroup_api=types.SimpleNamespace(
                service_is_up=lambda svc: self.computes[svc.host][1]))
        self.driver._own_service = lambda ctxt: self.own
        self.driver._heartbeat_since_start = lambda svc: self.heartbeat
        self.driver._liveness = lambda ctxt, svc: self.ironic[svc.host][1:]
        self.driver._compute_nodes = (
            lambda ctxt, host: [types.SimpleNamespace(hypervisor_type=t)
                                for t in self.computes[host][2]])
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.objects.ServiceList, 'get_all_computes_by_hv_type',
            lambda ctxt, hv_type: [
                types.SimpleNamespace(host=h, id=v[0])
                for h, v in sorted(self.ironic.items())]))
        self.useFixture(fixtures.MockPatchObject(
            lifecycle.objects.ServiceList, 'get_by_binary',
            lambda ctxt, binary, include_disabled=False: [
                types.SimpleNamespace(host=h, id=v[0])
                for h, v in sorted(self.computes.items())]))

    def error(self, starting=False):
        return self.driver._local_database_error(None, starting=starting)

    def assert_refused(self, error, *hosts):
        self.assertIsInstance(error, exception.ConfigurationError)
        self.assertIn('[ironic_partition_database] connection', str(error))
        self.assertIn('are up (%s)' % ', '.join(hosts), str(error))

    def assert_waits(self, error, text):
        self.assertIsInstance(error, lifecycle.WaitForRival)
        self.assertIn(text, str(error))

    def test_shared_database_or_a_partition_is_never_refused(self):
        self.ironic['cn2'] = (1, True, True)
        self.driver.partitioner.store.dialect = 'postgresql'
        self.assertIsNone(self.error(starting=True))
        self.driver.partitioner.store.dialect = 'sqlite'
        self.driver.partitioner.settings.partition_key = 'rack1'
        self.assertIsNone(self.error(starting=True))

    def test_at_start_any_live_ironic_compute_refuses(self):
        self.ironic['cn1'] = (5, True, True)    # itself
        self.ironic['cn3'] = (9, False, False)  # down, silent
        self.assertIsNone(self.error(starting=True))
        self.ironic['cn2'] = (7, False, True)   # down in nova, reporting
        self.assert_refused(self.error(starting=True), 'cn2')

    def test_without_a_record_it_waits(self):
        self.own = None
        self.assert_waits(self.error(), 'no service record in nova yet')

    def test_it_waits_for_its_first_heartbeat_then_a_report_interval(self):
        self.assert_waits(self.error(), 'waits for its first heartbeat')
        self.heartbeat = True
        self.assert_waits(self.error(), 'waits one [DEFAULT] report_interval')
        self.now += 10
        self.assertIsNone(self.error())

    def _past_the_waits(self):
        self.heartbeat = True
        self.error()
        self.now += 10

    def test_a_lower_id_in_its_first_pass_is_waited_for(self):
        self._past_the_waits()
        self.computes['cn0'] = (2, True, [])           # up, no node yet
        self.computes['cn9'] = (9, True, [])           # higher id
        self.computes['lv1'] = (3, True, ['qemu'])     # another driver
        self.computes['dn1'] = (1, False, [])          # down
        self.assert_waits(self.error(), 'lower service id than this one '
                          '(cn0) have no compute node yet')
        self.computes['cn0'] = (2, True, ['ironic'])
        self.assert_refused(self.error(), 'cn0')

    def test_before_its_first_report_ids_decide(self):
        self._past_the_waits()
        # A live Ironic compute with a lower id refuses it; one with a
        # higher id only if it reports.
        self.ironic['cn9'] = (9, True, False)
        self.assertIsNone(self.error())
        self.ironic['cn9'] = (9, True, True)
        self.assert_refused(self.error(), 'cn9')
        del self.ironic['cn9']
        self.ironic['cn2'] = (2, True, False)
        self.assert_refused(self.error(), 'cn2')

    def test_once_reporting_only_a_reporting_lower_id_refuses(self):
        self.driver._reported = True
        self.ironic['cn9'] = (9, True, True)
        self.ironic['cn2'] = (2, True, False)
        self.assertIsNone(self.error())
        self.ironic['cn2'] = (2, False, True)
        self.assert_refused(self.error(), 'cn2')
