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
import functools
import socket
from unittest import mock
import urllib.error
import urllib.request

import fixtures
import prometheus_client as prom
from prometheus_client.parser import text_string_to_metric_families

from ironic_partition.claims import db_clock
from ironic_partition import exception
from ironic_partition.membership import outside
from ironic_partition import metrics
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base
from ironic_partition.tests.unit.partition import test_partitioner as fakes
from ironic_partition.tests.unit.virt import test_mixin

RACK1 = {'host': 'cn1', 'conductor_group': 'rack1', 'shard': '(none)'}


def samples(registry):
    """``{(name, frozenset(labels.items())): value}`` of a registry."""
    found = {}
    for family in text_string_to_metric_families(
            prom.generate_latest(registry).decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = (
                sample.value)
    return found


def value(registry, name, **labels):
    return samples(registry).get((name, frozenset(labels.items())))


class FakeClaims(object):

    def __init__(self):
        self.now = 100.0
        self.valid_until = 130.0
        self.clock_watch = db_clock.ClockWatch(fencing_margin=3,
                                               lease_time=33)

    def clock(self):
        return self.now

    def fenced(self):
        return self.valid_until is None or self.now >= self.valid_until


class TestLabels(base.TestCase):

    def test_groups_and_shards(self):
        settings = settings_mod.for_tests('CN1', partition_key='rack1')
        self.assertEqual(('cn1', 'rack1', '(none)'),
                         metrics.label_values(settings))
        self.assertEqual(('cn1', '(default)', 's1'), metrics.label_values(
            settings_mod.for_tests('cn1', partition_key='', shard='s1')))
        self.assertEqual(('cn1', '(unpartitioned)', '(none)'),
                         metrics.label_values(settings_mod.for_tests('cn1')))

    def test_reasons(self):
        def not_ready(kind):
            return exception.PartitionNotReady(reason='x', kind=kind)
        for kind in ('ironic', 'membership', 'claims', 'identity',
                     'stopped'):
            self.assertEqual(kind, metrics.reason_of(not_ready(kind)))
        self.assertEqual('other', metrics.reason_of(
            exception.PartitionNotReady(reason='x')))
        self.assertEqual('identity', metrics.reason_of(
            exception.DuplicateService(host='h', role='r', age=1.0,
                                       started_at='t', origin='o')))
        self.assertEqual('membership', metrics.reason_of(
            exception.DatabaseConnectionFailed(connection='c', reason='r')))
        self.assertEqual('other', metrics.reason_of(RuntimeError('x')))
        self.assertEqual(set(metrics.REASONS),
                         {'ironic', 'membership', 'claims', 'identity',
                          'stopped', 'other'})


class TestMetrics(base.TestCase):

    def setUp(self):
        super().setUp()
        self.metrics = metrics.Metrics()
        self.registry = self.metrics.registry
        self.claims = FakeClaims()
        self.settings = settings_mod.for_tests('cn1', partition_key='rack1')
        self.metrics.use(self.settings, self.claims)
        self.addCleanup(self.metrics.stop)

    def test_not_ready_until_a_refresh_proves_it(self):
        self.assertEqual(0, value(self.registry, 'ironic_partition_ready',
                                  **RACK1))

    def test_lease_and_fence_are_read_at_scrape_time(self):
        self.assertEqual(30.0, value(
            self.registry, 'ironic_partition_lease_seconds_left', **RACK1))
        self.assertEqual(0, value(self.registry, 'ironic_partition_fenced',
                                  **RACK1))
        self.claims.now = 131.0
        self.assertEqual(0, value(
            self.registry, 'ironic_partition_lease_seconds_left', **RACK1))
        self.assertEqual(1, value(self.registry, 'ironic_partition_fenced',
                                  **RACK1))
        self.metrics.fenced_now()
        self.assertEqual(1, value(
            self.registry, 'ironic_partition_fences_total', **RACK1))

    def test_counts_exist_at_zero_before_any_event(self):
        # A dashboard's sum and rate() need the series from the start.
        self.assertEqual(0, value(
            self.registry, 'ironic_partition_nodes_reported', **RACK1))
        self.assertEqual(0, value(
            self.registry, 'ironic_partition_nodes_claimed', **RACK1))
        for reason in metrics.REASONS:
            self.assertEqual(0, value(
                self.registry, 'ironic_partition_not_ready_refreshes_total',
                reason=reason, **RACK1), reason)

    def test_nothing_counted_as_reported_while_fenced_or_not_ready(self):
        result = mock.Mock(nodes=['n1', 'n2', 'n3'],
                           claims=mock.Mock(held=['n1', 'n2'], seconds=0.1),
                           metrics=mock.Mock(seconds=0.2, full=True,
                                             api_calls=1, date_ahead=0.0),
                           membership=mock.Mock(outside=()))
        result.ownership.stranded = ()
        reported = functools.partial(
            value, self.registry, 'ironic_partition_nodes_reported', **RACK1)
        claimed = functools.partial(
            value, self.registry, 'ironic_partition_nodes_claimed', **RACK1)
        self.metrics.refreshed(result)
        self.assertEqual((3, 2), (reported(), claimed()))
        self.metrics.fenced_now()
        self.assertEqual((0, 0), (reported(), claimed()))
        self.metrics.refreshed(result)
        self.metrics.not_ready(exception.PartitionNotReady(
            kind='claims', reason='x'))
        self.assertEqual((0, 0), (reported(), claimed()))

    def test_database_clock_step_and_the_margin_in_force(self):
        self.assertEqual(0, value(
            self.registry,
            'ironic_partition_database_clock_difference_seconds',
            **RACK1))
        self.assertEqual(3, value(
            self.registry, 'ironic_partition_fencing_margin_seconds',
            **RACK1))
        t0 = datetime.datetime(2026, 11, 27, tzinfo=datetime.timezone.utc)
        self.claims.clock_watch.sample(t0, 10.0, 10.0, 'db1:3306')
        self.claims.clock_watch.sample(
            t0 + datetime.timedelta(seconds=15), 20.0, 20.0, 'db2:3306')
        self.assertEqual(5, value(
            self.registry,
            'ironic_partition_database_clock_difference_seconds',
            **RACK1))
        self.assertEqual(5 + db_clock.BASE_ALLOWANCE, value(
            self.registry, 'ironic_partition_fencing_margin_seconds',
            **RACK1))

    def test_not_ready_says_why(self):
        self.metrics.not_ready(exception.PartitionNotReady(
            reason='db', kind='membership'))
        self.assertEqual(0, value(self.registry, 'ironic_partition_ready',
                                  **RACK1))
        self.assertEqual(1, value(
            self.registry, 'ironic_partition_not_ready_reason',
            reason='membership', **RACK1))
        self.metrics.not_ready(exception.PartitionNotReady(
            reason='ironic', kind='ironic'))
        # Only the last reason is current; the counts add up.
        self.assertIsNone(value(
            self.registry, 'ironic_partition_not_ready_reason',
            reason='membership', **RACK1))
        self.assertEqual(1, value(
            self.registry, 'ironic_partition_not_ready_refreshes_total',
            reason='membership', **RACK1))
        self.assertEqual(1, value(
            self.registry, 'ironic_partition_not_ready_refreshes_total',
            reason='ironic', **RACK1))

    def test_new_labels_drop_the_old_series(self):
        self.metrics.use(self.settings.replace(
            partition=self.settings.partition._replace(
                partition_key='rack2')), None)
        names = {(n, dict(labels)['conductor_group'])
                 for n, labels in samples(self.registry)}
        self.assertIn(('ironic_partition_ready', 'rack2'), names)
        self.assertNotIn(('ironic_partition_ready', 'rack1'), names)
        # Without claims there is no lease to show.
        self.assertNotIn('ironic_partition_lease_seconds_left',
                         {n for n, _g in names})

    def test_serve_on_a_port_and_wait_for_one_in_use(self):
        logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        port = self.metrics.serve('127.0.0.1', 0)
        self.assertEqual(port, self.metrics.serve('127.0.0.1', 0))
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                    timeout=10) as answer:
            text = answer.read().decode()
        self.assertIn('ironic_partition_ready{conductor_group="rack1",'
                      'host="cn1",shard="(none)"} 0.0', text)
        # A takeover's new process, while the old one holds the port: it
        # runs on without metrics, says so once, and binds once it can.
        other = metrics.Metrics()
        self.addCleanup(other.stop)
        self.assertIsNone(other.serve('127.0.0.1', port))
        self.assertIsNone(other.serve('127.0.0.1', port))
        self.assertEqual(1, logger.output.count('Cannot serve the metrics'))
        self.assertIn('([ironic_partition] metrics_host and metrics_port)',
                      logger.output)
        self.metrics.stop()
        self.assertEqual(port, other.serve('127.0.0.1', port))
        self.assertIn('Serving the metrics on 127.0.0.1:%d now' % port,
                      logger.output)


class TestDriverMetrics(base.TestCase):
    """The mixin's metrics, on the mixin tests' fake driver."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.config(group='ironic_partition', host='cn1')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1', 'cn2'])
        self.client = fakes.FakeClient(fakes._nodes(60))
        self.membership = test_mixin.StartStopMembership(['cn1', 'cn2'])
        self.driver = test_mixin.FakeDriver(self.conf, self.client,
                                            self.membership)

    def _scrape(self):
        return self.driver.partition_metrics.registry

    def test_refresh_and_not_ready_are_recorded(self):
        result = self.driver.partition_refresh()
        labels = dict(RACK1, shard='(none)')
        registry = self._scrape()
        self.assertEqual(1, value(registry, 'ironic_partition_ready',
                                  **labels))
        self.assertEqual(len(result.nodes), value(
            registry, 'ironic_partition_nodes_reported', **labels))
        self.assertEqual(1, value(registry,
                                  'ironic_partition_refresh_full_listing',
                                  **labels))
        self.assertEqual(1, value(registry,
                                  'ironic_partition_refreshes_total',
                                  listing='full', **labels))
        self.client.fault = exception.IronicUnavailable(endpoint='x',
                                                        reason='down')
        self.assertRaises(test_mixin.NotReady, self.driver.partition_refresh)
        self.assertEqual(0, value(registry, 'ironic_partition_ready',
                                  **labels))
        self.assertEqual(1, value(registry,
                                  'ironic_partition_not_ready_reason',
                                  reason='ironic', **labels))

    def test_peers_outside_the_membership_are_listed(self):
        self.driver.partitioner.outside = outside.OutsideView(
            fakes.FakeNovaView(['cn1', 'cn2', 'cn3']))
        self.driver.partition_refresh()
        registry = self._scrape()
        name = 'ironic_partition_peer_outside_membership'
        self.assertEqual(1, value(registry, name, peer='cn3', **RACK1))
        self.assertIsNone(value(registry, name, peer='cn2', **RACK1))
        self.driver.partitioner.outside.view.up = frozenset(['cn1', 'cn2'])
        self.driver.partition_refresh()
        self.assertIsNone(value(registry, name, peer='cn3', **RACK1))

    def _probe(self, port, path):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d%s'
                                        % (port, path), timeout=10) as ans:
                return ans.status, ans.read().decode().strip()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode().strip()

    def test_readiness_paths_for_container_probes(self):
        self.config(group='ironic_partition', metrics_port=0)
        driver = test_mixin.FakeDriver(self.conf, self.client,
                                       self.membership)
        self.metrics = driver.partition_metrics
        self.addCleanup(self.metrics.stop)
        port = self.metrics.serve('127.0.0.1', 0)
        self.assertEqual((503, 'starting'), self._probe(port, '/ready'))
        self.assertEqual((503, 'starting'),
                         self._probe(port, '/ready/standby'))
        # Another live process holds the host name: standing by.
        self.metrics.not_ready(exception.DuplicateService(
            host='cn1', role='nova-compute', started_at='?', origin='?',
            age=1))
        self.assertEqual((503, 'standby'), self._probe(port, '/ready'))
        self.assertEqual((200, 'standby'),
                         self._probe(port, '/ready/standby'))
        driver.partition_refresh()
        self.assertEqual((200, 'serving'), self._probe(port, '/ready'))
        self.assertEqual((200, 'serving'),
                         self._probe(port, '/ready/standby'))
        self.metrics.not_ready(exception.PartitionNotReady(
            reason='down', kind='ironic'))
        self.assertEqual((503, 'not-ready'), self._probe(port, '/ready'))
        self.assertEqual((503, 'not-ready'),
                         self._probe(port, '/ready/standby'))
        # Anything else is the metrics, as before.
        self.assertEqual(200, self._probe(port, '/metrics')[0])
        driver.partition_stop()
        self.assertEqual('stopped', self.metrics.state)

    def test_metrics_port_and_host_serve_the_metrics(self):
        self.config(group='ironic_partition', metrics_port=0,
                    metrics_host='127.0.0.2')
        driver = test_mixin.FakeDriver(self.conf, self.client,
                                       self.membership)
        self.addCleanup(driver.partition_metrics.stop)
        driver.partition_refresh()
        server = driver.partition_metrics._server
        self.assertIsNotNone(server)
        self.assertEqual('127.0.0.2', server.server_address[0])
        url = 'http://127.0.0.2:%d/metrics' % server.server_port
        with urllib.request.urlopen(url, timeout=10) as answer:
            self.assertIn(b'ironic_partition_ready{', answer.read())

    def test_no_port_no_server(self):
        self.driver.partition_refresh()
        self.assertIsNone(self.driver.partition_metrics._server)

    def test_stop_closes_the_port(self):
        self.config(group='ironic_partition', metrics_port=0)
        driver = test_mixin.FakeDriver(self.conf, self.client,
                                       self.membership)
        driver.partition_refresh()
        port = driver.partition_metrics._server.server_port
        driver.partition_stop()
        with socket.socket() as sock:
            self.assertNotEqual(0, sock.connect_ex(('127.0.0.1', port)))
