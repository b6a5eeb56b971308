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

"""The partition agent's refresh bookkeeping and its report file."""

import json
import os
import threading
import time
from unittest import mock

import fixtures

from ironic_partition.cmd import agent_service as agent
from ironic_partition import exception
from ironic_partition.tests import base
from ironic_partition.tests.unit.cmd import fakes


class FakeThreadGroup(object):
    def __init__(self):
        self.timers = []
        self.threads = []
        self.stopped = None

    def add_timer_args(self, interval, callback, **kwargs):
        self.timers.append((interval, callback, kwargs))

    def add_thread(self, callback, *args):
        self.threads.append(callback)

    def stop(self, graceful=False):
        self.stopped = graceful

    def wait(self):
        pass


class TestWriteReport(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.tmp, 'report.json')

    def test_replaces_atomically_and_leaves_no_temp_file(self):
        agent.write_report(self.path, {'a': 1})
        agent.write_report(self.path, {'a': 2})
        with open(self.path) as stream:
            self.assertEqual({'a': 2}, json.load(stream))
        self.assertEqual(['report.json'], os.listdir(self.tmp))

    def test_failure_keeps_the_old_file(self):
        agent.write_report(self.path, {'a': 1})
        self.assertRaises(TypeError, agent.write_report, self.path,
                          {'a': object()})
        with open(self.path) as stream:
            self.assertEqual({'a': 1}, json.load(stream))
        self.assertEqual(['report.json'], os.listdir(self.tmp))


class TestAgent(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(group='ironic_partition', host='a1', claims='off',
                    refresh_interval=7)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['a1', 'a2'])
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.report_file = os.path.join(self.tmp, 'a1.json')
        self.tg = FakeThreadGroup()
        patcher = mock.patch.object(agent.service_backend, 'get_component',
                                    autospec=True,
                                    return_value=lambda: self.tg)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.nodes = fakes.nodes(30, instances={3: 'i1'})
        self.client = fakes.Client(self.nodes)
        self.membership = fakes.Membership(['a1', 'a2'])
        hosts = os.path.join(self.tmp, 'hosts.json')
        with open(hosts, 'w') as stream:
            json.dump({'i1': 'a1'}, stream)
        self.agent = agent.PartitionAgent(
            self.conf, report_file=self.report_file,
            instance_hosts_file=hosts)
        self.agent.partition_setup(self.conf, client=self.client,
                                   membership=self.membership)

    def report(self):
        with open(self.report_file) as stream:
            return json.load(stream)

    def test_start_adds_the_refresh_timer(self):
        self.agent.start()
        self.assertEqual([(7, self.agent.refresh_once,
                           {'stop_on_exception': False})], self.tg.timers)

    def test_refresh_writes_the_report(self):
        result = self.agent.refresh_once()
        doc = self.report()
        self.assertEqual(1, self.membership.started)
        self.assertEqual('running', doc['state'])
        self.assertTrue(doc['ready'])
        self.assertIsNone(doc['reason'])
        self.assertEqual(sorted(result.nodes), doc['managed'])
        self.assertIn(self.nodes[3].id, doc['managed'])
        self.assertEqual([self.nodes[3].id], doc['by_instance'])
        self.assertEqual(doc['managed'], doc['gained'])
        self.assertEqual((1, 1, 0), (doc['refresh_counter'],
                                     doc['refresh_ok_counter'],
                                     doc['settings_generation']))
        self.assertEqual(['a1', 'a2'], doc['ring_members'])
        self.assertEqual({'enabled': False}, doc['claims'])
        # The fake has no change feed.
        self.assertIn('no change feed', doc['change_feed_problem'])
        self.assertEqual(os.getpid(), doc['pid'])
        self.assertEqual(agent.REPORT_FORMAT, doc['format'])

    def test_hands_over_only_after_the_report_is_written(self):
        seen = []

        def release():
            # The consumer already sees the report of this refresh.
            seen.append(self.report()['refresh_counter'])
            return 0
        self.useFixture(fixtures.MockPatchObject(
            self.agent.partitioner, 'release_unreported',
            side_effect=release))
        self.agent.refresh_once()
        self.agent.refresh_once()
        self.assertEqual([1, 2], seen)

    def test_refresh_and_hand_over_run_one_at_a_time(self):
        held = []
        real_refresh = self.agent.partition_refresh

        def refresh(**kwargs):
            held.append(self.agent._refresh_lock.locked())
            return real_refresh(**kwargs)

        def release():
            held.append(self.agent._refresh_lock.locked())
            return 0
        self.useFixture(fixtures.MockPatchObject(
            self.agent, 'partition_refresh', side_effect=refresh))
        self.useFixture(fixtures.MockPatchObject(
            self.agent.partitioner, 'release_unreported',
            side_effect=release))
        self.agent.refresh_once()
        self.assertEqual([True, True], held)
        self.assertFalse(self.agent._refresh_lock.locked())

    def test_no_hand_over_when_the_report_cannot_be_written(self):
        release = self.useFixture(fixtures.MockPatchObject(
            self.agent.partitioner, 'release_unreported')).mock
        self.useFixture(fixtures.MockPatchObject(
            agent, 'write_report', side_effect=OSError('disk full')))
        self.assertIsNotNone(self.agent.refresh_once())
        release.assert_not_called()

    def test_no_hand_over_when_not_ready(self):
        release = self.useFixture(fixtures.MockPatchObject(
            self.agent.partitioner, 'release_unreported')).mock
        self.client.fault = exception.IronicUnavailable(endpoint='e',
                                                        reason='down')
        self.assertIsNone(self.agent.refresh_once())
        release.assert_not_called()

    def test_not_ready_keeps_the_last_partition(self):
        self.agent.refresh_once()
        good = self.report()
        self.client.fault = exception.IronicUnavailable(endpoint='e',
                                                        reason='down')
        self.assertIsNone(self.agent.refresh_once())
        doc = self.report()
        self.assertFalse(doc['ready'])
        self.assertIn('Ironic at e is unavailable: down', doc['reason'])
        self.assertEqual(good['managed'], doc['managed'])
        self.assertEqual((2, 1), (doc['refresh_counter'],
                                  doc['refresh_ok_counter']))
        self.assertGreater(doc['monotonic'], good['monotonic'])

    def test_unexpected_errors_are_not_ready_too(self):
        self.client.fault = KeyError('bug')
        self.assertIsNone(self.agent.refresh_once())
        doc = self.report()
        self.assertFalse(doc['ready'])
        self.assertIn('KeyError', doc['reason'])
        self.assertEqual([], doc['managed'])

    def test_settings_change_counts_a_generation(self):
        self.agent.refresh_once()
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['a1'])
        self.assertTrue(self.agent.partition_reload())
        self.agent.refresh_once()
        doc = self.report()
        self.assertEqual(1, doc['settings_generation'])
        self.assertEqual(['a1'], doc['peer_list'])

    def test_reset_refreshes_at_once(self):
        self.agent.reset()
        self.assertEqual([self.agent.refresh_once], self.tg.threads)

    def test_stop_leaves_and_reports_stopped(self):
        self.agent.refresh_once()
        self.agent.stop()
        self.agent.stop()
        doc = self.report()
        self.assertTrue(self.tg.stopped)
        self.assertEqual(1, self.membership.stopped)
        self.assertEqual('stopped', doc['state'])
        self.assertFalse(doc['ready'])
        # Nothing, not even the instance node: a successor reports it
        # once it holds its claim.
        self.assertEqual([], doc['managed'])
        self.assertEqual(0, doc['managed_count'])
        self.assertIsNone(self.agent.refresh_once())
        self.assertEqual(1, self.report()['refresh_counter'])

    def test_bad_instance_hosts_file_keeps_the_previous_owners(self):
        self.agent.refresh_once()
        with open(self.agent.instance_hosts_file, 'w') as stream:
            stream.write('garbage')
        self.agent.refresh_once()
        self.assertEqual({'i1': 'a1'}, self.agent.instance_hosts)
        self.assertIn(self.nodes[3].id, self.report()['managed'])


class TestReportFollowsRenewals(base.TestCase):
    """Claims on (SQLite), with the lease timer running for real."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # Renewals every 0.3 s; the report is valid for under a second.
        self.config(group='ironic_partition', host='a1', claims='database',
                    state_path=self.tmp, refresh_interval=1, lease_time=2,
                    fencing_margin=1.1)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['a1'])
        self.useFixture(fixtures.MockPatchObject(
            agent.service_backend, 'get_component',
            return_value=FakeThreadGroup))
        self.report_file = os.path.join(self.tmp, 'a1.json')
        self.agent = agent.PartitionAgent(self.conf,
                                          report_file=self.report_file)
        self.agent.partition_setup(
            self.conf, client=fakes.Client(fakes.nodes(6)),
            membership=fakes.Membership(['a1']))
        self.agent.partitioner.add_renew_listener(self.agent.on_renewed)
        self.addCleanup(self.agent.partition_stop)

    def report(self):
        with open(self.report_file) as stream:
            return json.load(stream)

    def test_renewal_rewrites_the_report_between_refreshes(self):
        # One refresh, then none (a listing slower than the lease): the
        # report must not run out of validity while the claims do not.
        self.agent.refresh_once()
        first = self.report()
        self.assertTrue(first['ready'])
        self.assertEqual(6, first['managed_count'])
        self.assertLess(first['claims']['valid_for'], 1.0)
        deadline = time.monotonic() + 10
        poll = threading.Event()
        doc = first
        while (doc['monotonic'] < first['monotonic'] + 1.5 and
               time.monotonic() < deadline):
            poll.wait(0.05)
            doc = self.report()
        # Later than the first report's validity, still valid and whole.
        self.assertGreater(doc['monotonic'],
                           first['monotonic'] + first['claims']['valid_for'])
        self.assertEqual(1, doc['refresh_counter'])
        self.assertTrue(doc['ready'])
        self.assertFalse(doc['claims']['fenced'])
        self.assertGreater(doc['claims']['valid_for'], 0)
        self.assertEqual(first['managed'], doc['managed'])
