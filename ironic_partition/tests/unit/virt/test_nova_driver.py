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

import types
from unittest import mock

import fixtures
from nova import exception as nova_exception
from nova.virt.ironic import driver as ironic_driver
from openstack import exceptions as sdk_exc
from oslo_config import cfg

from ironic_partition import exception
from ironic_partition.tests import base
from ironic_partition.virt import nova_driver

NODE = '7d3f0000-0000-4000-8000-000000000001'
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


class TestParallelTracking(base.TestCase):

    def _driver(self, workers, claims=True):
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.IntOpt('update_resources_max_workers',
                                     default=1), group='compute')
        conf([])
        conf.set_override('update_resources_max_workers', workers,
                          group='compute')
        # NOTE(ironic-partition): nova's IronicDriver is not built (it
        # connects to Ironic); the check reads two attributes.
        driver = object.__new__(nova_driver.IronicPartitionDriver)
        driver.partition_conf = conf
        driver.partitioner = types.SimpleNamespace(
            claims=object() if claims else None)
        return driver

    def test_more_than_one_worker_is_refused_with_claims(self):
        e = self._driver(4)._parallel_tracking_error()
        self.assertIsInstance(e, exception.ConfigurationError)
        self.assertIn('Invalid value 4 for option [compute] '
                      'update_resources_max_workers', str(e))
        self.assertIn("Set it to 1 (nova's default), or turn claims off",
                      str(e))

    def test_one_worker_or_claims_off_is_fine(self):
        self.assertIsNone(self._driver(1)._parallel_tracking_error())
        self.assertIsNone(
            self._driver(8, claims=False)._parallel_tracking_error())
        # A nova without the option (before 34): one worker.
        driver = self._driver(1)
        driver.partition_conf = cfg.ConfigOpts()
        self.assertIsNone(driver._parallel_tracking_error())


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
