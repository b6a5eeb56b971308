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

import os
from unittest import mock

import fixtures
from oslo_config import cfg

from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.tests import base
from ironic_partition.tests.unit.partition import test_partitioner as fakes
from ironic_partition.virt import mixin


class NotReady(Exception):
    """A driver's own not-ready error."""


class FakeDriver(mixin.PartitionMixin):
    """A virt driver with its own not-ready error and cache."""

    def __init__(self, conf, client, membership):
        self.own_cache = {'x': 1}
        self.partition_setup(conf, client=client, membership=membership)

    def partition_not_ready(self, error):
        return NotReady(str(error))

    def partition_cache_cleared(self):
        self.own_cache = {}


class StartStopMembership(fakes.FakeMembership):
    def __init__(self, live):
        super().__init__(live)
        self.started = 0
        self.stopped = 0

    def start(self):
        self.started += 1

    def stop(self, leave=True):
        self.stopped += 1
        self.left = leave
        raise RuntimeError('stopping failed')


class TestPartitionMixin(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.config(group='ironic_partition', host='cn1')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1', 'cn2'])
        self.nodes = (fakes._nodes(60) +
                      fakes._nodes(40, group='rack2'))
        self.client = fakes.FakeClient(self.nodes)
        self.membership = StartStopMembership(['cn1', 'cn2'])
        self.driver = FakeDriver(self.conf, self.client, self.membership)

    def test_refresh_fills_the_cache_and_starts_once(self):
        result = self.driver.partition_refresh()
        self.driver.partition_refresh()
        self.assertEqual(1, self.membership.started)
        self.assertEqual(set(result.nodes), set(self.driver.partition_nodes))
        self.assertTrue(0 < len(result.nodes) < 60)
        self.assertEqual(['rack1', 'rack1'], self.client.groups)

    def test_not_ready_keeps_the_cache_and_uses_the_driver_error(self):
        first = set(self.driver.partition_refresh().nodes)
        self.client.fault = exception.IronicUnavailable(endpoint='x',
                                                        reason='down')
        e = self.assertRaises(NotReady, self.driver.partition_refresh)
        self.assertIn('down', str(e))
        self.assertIsInstance(e.__cause__, exception.PartitionNotReady)
        self.assertEqual(first, set(self.driver.partition_nodes))
        self.assertIn('Not reporting any node list', self.logger.output)

    def test_deferred_instances_read_after_listing(self):
        order = []

        def instances():
            order.append('instances')
            yield self.nodes[0].instance_id

        real = self.client.list_nodes

        def listing(conductor_group=None):
            order.append('list')
            return real(conductor_group)

        self.client.list_nodes = listing
        self.driver.partition_refresh(instances())
        self.assertEqual(['list', 'instances'], order)

    def test_reload_clears_ring_and_caches(self):
        self.driver.partition_refresh()
        self.config(group='ironic', partition_key='rack2')
        self.assertTrue(self.driver.partition_reload())
        self.assertEqual({}, self.driver.partition_nodes)
        self.assertEqual({}, self.driver.own_cache)
        result = self.driver.partition_refresh()
        self.assertEqual('rack2', result.settings.partition_key)
        self.assertTrue(all(n.conductor_group == 'rack2'
                            for n in result.nodes.values()))
        self.assertIn("partition_key 'rack1' -> 'rack2'", self.logger.output)

    def test_invalid_reload_keeps_old_partition(self):
        before = set(self.driver.partition_refresh().nodes)
        self.config(group='ironic', peer_list=['cn2', 'cn3'])
        self.assertFalse(self.driver.partition_reload())
        self.assertEqual(before, set(self.driver.partition_nodes))
        self.assertEqual({'x': 1}, self.driver.own_cache)
        self.assertIn('Rejected the new partition settings',
                      self.logger.output)
        self.assertEqual('rack1',
                         self.driver.partitioner.settings.partition_key)

    def test_stop_never_raises_and_is_idempotent(self):
        self.driver.partition_start()
        self.driver.partition_stop()
        self.driver.partition_stop()
        self.assertEqual(1, self.membership.stopped)
        self.assertTrue(self.membership.left)
        self.assertIn('Stopping the membership backend failed',
                      self.logger.output)

    def test_a_stop_before_any_start_closes_the_latch(self):
        # nova may stop a process whose partition never started (its claims
        # database was down): nothing may register or claim afterwards.
        self.driver.partition_stop()
        self.assertEqual(0, self.membership.stopped)
        e = self.assertRaises(exception.PartitionNotReady,
                              self.driver.partition_start)
        self.assertEqual('stopped', e.kind)
        self.assertEqual(0, self.membership.started)

    def test_a_stop_after_a_start_that_failed_half_way(self):
        # The membership joined (its heartbeat runs), then the claims did
        # not start: the stop still stops the heartbeat.
        failing = exception.PartitionNotReady(reason='claims down',
                                              kind='claims')
        with mock.patch.object(self.driver.partitioner, 'start', autospec=True,
                               side_effect=failing):
            self.assertRaises(exception.PartitionNotReady,
                              self.driver.partition_start)
        self.assertEqual(1, self.membership.started)
        self.driver.partition_stop()
        self.assertEqual(1, self.membership.stopped)
        self.assertRaises(exception.PartitionNotReady,
                          self.driver.partition_start)
        self.assertEqual(1, self.membership.started)

    def test_refresh_after_stop_does_not_start_again(self):
        # nova calls cleanup_host before its periodic tasks end: a refresh
        # after the stop must not register the dying process again.
        self.driver.partition_refresh()
        self.driver.partition_stop()
        started = self.membership.started
        e = self.assertRaises(NotReady, self.driver.partition_refresh)
        self.assertIn('stopped its partition', str(e))
        self.assertRaises(exception.PartitionNotReady,
                          self.driver.partition_start)
        self.assertEqual(started, self.membership.started)
        self.assertEqual({}, self.driver.partition_nodes)
        self.assertIn('Not reporting any node list', self.logger.output)

    def test_no_proven_list_is_never_an_empty_list(self):
        # Every path without a proven node list raises: another live
        # process holds the host name, the database does not answer at
        # start, other processes' claims not run out yet (test_claims),
        # a stop in progress (above). None hands the consumer {}.
        errors = (
            exception.DuplicateService(host='cn1', role='nova-compute',
                                       started_at='?', origin='?', age=1),
            exception.DatabaseConnectionFailed(connection='db',
                                               reason='down'))
        for error in errors:
            def start(error=error):
                raise error
            self.membership.start = start
            self.assertRaises(type(error), self.driver.partition_refresh)
            self.assertEqual({}, self.driver.partition_nodes)
            self.assertIsNone(self.driver.partitioner.last_result)
        del self.membership.start
        self.assertTrue(self.driver.partition_refresh().nodes)

    def test_stop_unset_option_follows_the_class_default(self):
        self.driver.partition_hand_over_default = False
        self.driver.partition_start()
        self.driver.partition_stop()
        self.assertFalse(self.membership.left)

    def test_stop_keeps_claims_and_membership_when_told(self):
        # A mutable option: applied by the next reload (SIGHUP).
        self.config(group='ironic_partition', hand_over_on_stop=False)
        self.assertFalse(self.driver.partition_reload())
        self.driver.partition_start()
        stop = self.useFixture(fixtures.MockPatchObject(
            self.driver.partitioner, 'stop', autospec=True)).mock
        self.driver.partition_stop()
        stop.assert_called_once_with(release=False)
        self.assertFalse(self.membership.left)


# nova 34's definitions of the options, as far as mutability goes.
NOVA_LIKE_OPTS = [
    cfg.StrOpt('conductor_group', deprecated_name='partition_key',
               mutable=True),
    cfg.ListOpt('peer_list'),
]


class TestImmutablePeerList(base.TestCase):
    """nova registers peer_list immutable; a SIGHUP must still apply it."""

    def setUp(self):
        self.useFixture(fixtures.FakeLogger(level='INFO'))
        # The base class registers our options on a fresh ConfigOpts; here
        # nova's come first, as inside nova-compute.
        super(base.TestCase, self).setUp()
        self.conf = cfg.ConfigOpts()
        self.conf.register_opts(NOVA_LIKE_OPTS, group='ironic')
        self.conf.register_opt(cfg.StrOpt('host'))
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.tmp, 'nova.conf')
        self._write('rack1', 'cn1,cn2')
        self.conf(['--config-file', self.path], project='nova')
        self.addCleanup(self.conf.reset)
        self.client = fakes.FakeClient(fakes._nodes(30))
        self.driver = FakeDriver(self.conf, self.client,
                                 StartStopMembership(['cn1', 'cn2', 'cn3']))

    def _write(self, key, peers):
        with open(self.path, 'w') as f:
            f.write('[DEFAULT]\nhost = CN1\n[ironic]\n'
                    'partition_key = %s\npeer_list = %s\n' % (key, peers))

    def test_immutable_peer_list_applies_on_mutate(self):
        self._write('rack1', 'cn1,cn2,cn3')
        fresh = cfg.ConfigOpts()
        fresh.register_opts(NOVA_LIKE_OPTS, group='ironic')
        fresh(['--config-file', self.path], project='nova')
        self.assertEqual(['cn1', 'cn2', 'cn3'], fresh.ironic.peer_list)
        # oslo.config alone would keep the old immutable value; the
        # mixin's mutate hook re-reads it from the file.
        self.conf.mutate_config_files()
        self.assertEqual(('cn1', 'cn2', 'cn3'),
                         self.driver.partitioner.settings.peer_list)

    def test_peer_list_and_key_follow_the_file(self):
        self.assertEqual(('cn1', 'cn2'),
                         self.driver.partitioner.settings.peer_list)
        self._write('Rack2', 'cn1,cn3')
        self.conf.mutate_config_files()
        settings = self.driver.partitioner.settings
        self.assertEqual(('cn1', 'cn3'), settings.peer_list)
        self.assertEqual('rack2', settings.partition_key)
        self.assertEqual(['cn1', 'cn3'], self.conf.ironic.peer_list)

    def test_unparsable_file_keeps_old_settings(self):
        with open(self.path, 'w') as f:
            f.write('[ironic\npeer_list = cn1\n')
        # oslo.config's own mutate raises here; our hook must not change
        # anything either.
        self.assertFalse(self.driver.partition_reload())
        self.assertEqual(('cn1', 'cn2'),
                         self.driver.partitioner.settings.peer_list)

    def test_our_own_options_need_no_reread(self):
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf([], project='ironic-partition')
        self.assertEqual({}, ip_conf.reread_immutable_options(conf))
