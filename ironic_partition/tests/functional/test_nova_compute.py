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

"""The nova lane: real nova-compute services running our driver.

One deployment per class (a real Ironic, placement, nova-conductor and
three nova-compute services on MariaDB, PostgreSQL and RabbitMQ; see
:class:`ironic_partition.testing.NovaFixture`). Everything is asserted
from outside: nova's cell database, placement's API and the computes'
resource-tracker log lines, never our own reports. See
``doc/source/contributor/nova-lane.rst``.
"""

import datetime
import json
import logging
import os
import re
import signal
import subprocess
import time
import urllib.request

import fixtures
from openstack import exceptions as sdk_exc
from oslotest import base
from testtools import content

from ironic_partition import metrics
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.install import upstream
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.lanes import servers as harness_servers
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import glance as harness_glance
from ironic_partition.testing.services import neutron as harness_neutron
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.testing.services import nova_api as harness_api
from ironic_partition.testing.services import \
    nova_compute as harness_nova_compute
from ironic_partition.testing.services import prometheus as harness_prometheus
from ironic_partition.tests.functional import _deployers
from ironic_partition.tests.functional import test_upstream_fixes

LOG = logging.getLogger(__name__)

HOSTS = ['cn1', 'cn2', 'cn3']
NODES = 36
GROUPS = ['rack1', 'rack1', 'rack2']

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
#: The example alert rules the docs ship.
ALERT_RULES = os.path.join(ROOT, 'etc', 'ironic-partition', 'prometheus',
                           'ironic-partition-alerts.yaml')

#: Extra seconds on every bound: a resource-tracker run over a dozen
#: nodes takes a few seconds on two loaded cores.
SLACK = 15


class _Lane(base.BaseTestCase):
    """One deployment for the whole class, checked from outside."""

    CADENCE = harness_nova.SHORT_CADENCE
    PARTITION_OPTIONS = {'membership_stale_timeout': 20}
    #: Also run glance, neutron, nova-api and nova-scheduler (``api``,
    #: ``records``), to boot servers.
    SERVERS = False
    #: The computes' hosts, and ``[ironic] partition_key``.
    LANE_HOSTS = HOSTS
    PARTITION_KEY = 'rack1'
    #: ``{section: {option: value}}`` for every compute (None unsets).
    EXTRA_CONFIG = None
    #: Serve each compute's metrics to a real Prometheus server
    #: (``prometheus``), with the example alert rules loaded.
    METRICS = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.started = time.time()
        cls.ironic = harness.IronicFixture(db_backend='postgresql',
                                           conductor_groups=['rack1',
                                                             'rack2'])
        cls.ironic.setUp()
        try:
            nodes = harness.bulk_enroll(cls.ironic.config_file, NODES,
                                        GROUPS, provision_state='available')
            cls.group = sorted(n['uuid'] for n in nodes
                               if n['conductor_group'] == 'rack1')
            cls.other = sorted(n['uuid'] for n in nodes
                               if n['conductor_group'] == 'rack2')
            endpoints = {}
            if cls.SERVERS:
                cls.glance = harness_glance.GlanceFixture()
                cls.glance.setUp()
                cls.neutron = harness_neutron.NeutronFixture()
                cls.neutron.setUp()
                endpoints = {'glance_endpoint': cls.glance.endpoint,
                             'neutron_endpoint': cls.neutron.endpoint}
            # NOTE(ironic-partition): placement on PostgreSQL where
            # servers are booted (see test_nova_servers).
            kwargs = dict(
                partition_key=cls.PARTITION_KEY, cadence=cls.CADENCE,
                db_backend='postgresql' if cls.SERVERS else 'mysql',
                partition_options=cls.PARTITION_OPTIONS,
                extra_config=cls.EXTRA_CONFIG, metrics=cls.METRICS,
                **endpoints)
            kwargs.update(cls.nova_kwargs())
            cls.nova = harness_nova.NovaFixture(
                cls.ironic.endpoint, cls.LANE_HOSTS, **kwargs)
            cls.nova.setUp()
            if cls.METRICS:
                cls.prometheus = harness_prometheus.PrometheusFixture(
                    ['127.0.0.1:%d' % port for _host, port in
                     sorted(cls.nova.metrics_ports.items())],
                    rule_files=[ALERT_RULES])
                cls.prometheus.setUp()
            if cls.SERVERS:
                cls.api = harness_api.NovaAPIFixture(cls.nova, cls.glance)
                cls.api.setUp()
                cls.api.discover_hosts()
                cls.records = harness_servers.ServerRecords(
                    cls.nova.cell_url, cls.api.connection(),
                    harness.connect(cls.ironic.endpoint))
            cls.recorder = novalane.Recorder(cls.nova.cell_url,
                                             cls.nova.placement_endpoint)
            cls.recorder.start()
        except BaseException:
            cls._tear_down()
            raise
        cls.switched = False

    @classmethod
    def nova_kwargs(cls):
        """More (or other) NovaFixture arguments, for a subclass.

        Called in setUpClass just before the NovaFixture is built: what
        it starts (e.g. the membership database) comes up first; a
        subclass's ``_tear_down`` stops it after ``super()._tear_down()``.

        :returns: ``{argument: value}``.
        """
        return {}

    @classmethod
    def _tear_down(cls):
        for name in ('recorder',):
            if getattr(cls, name, None) is not None:
                getattr(cls, name).stop()
        # NOTE(ironic-partition): the class is over and its databases
        # are dropped next: its computes are killed, not stopped
        # gracefully (7 s or more each class); the tests that need
        # nova's graceful stop make it themselves.
        nova = getattr(cls, 'nova', None)
        for compute in (getattr(nova, 'computes', None) or {}).values():
            try:
                compute.kill()
            except Exception:
                LOG.exception('Killing %s failed', compute.name)
        if getattr(cls, 'records', None) is not None:
            cls.records.close()
        for name in ('prometheus', 'api', 'nova', 'neutron', 'glance',
                     'ironic'):
            fixture = getattr(cls, name, None)
            if fixture is not None:
                try:
                    fixture.cleanUp()
                except Exception:
                    LOG.exception('Cleaning up %s failed', name)

    @classmethod
    def tearDownClass(cls):
        cls._tear_down()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.t0 = time.time()
        # NOTE(ironic-partition): the class's logs go with a test that
        # fails, not with every test: each carries the class's history.
        self.addOnException(self._attach_logs)

    def _attach_logs(self, exc_info):
        for host, compute in sorted(self.nova.computes.items()):
            self.addDetail('log-nova-compute-%s' % host,
                           harness_process.log_content(compute.log_path))
        services = [self.nova.conductor, self.nova.placement]
        if self.SERVERS:
            services += [self.api.service, self.api.scheduler,
                         self.glance.service, self.neutron.service]
        for service in services:
            self.addDetail('log-%s' % service.name,
                           harness_process.log_content(service.log_path))

    def delete_leftovers(self):
        """Delete the servers in ``self.created`` still listed (cleanup).

        :returns: None
        """
        left = list(self.api.servers(self.created))
        if left:
            try:
                self.api.delete_and_wait(left, 300)
            except Exception:
                LOG.exception('Could not delete servers %s', left)

    def stop_then_delete(self, ids, provision):
        """Stop servers through nova, delete them; nothing may be left.

        nova's power sync may be stopping some already (fake hardware).

        :param ids: server IDs.
        :param provision: seconds a fake-hardware deploy takes at most.
        :returns: None
        """
        for server in self.api.servers(ids).values():
            if server.status == 'ACTIVE':
                try:
                    self.api.conn.compute.stop_server(server.id)
                except sdk_exc.ConflictException as e:
                    if 'powering-off' not in str(e):
                        raise
        harness.wait_for(
            lambda: all(s.status == 'SHUTOFF' for s in
                        self.api.servers(ids).values()), provision * 2,
            'every server SHUTOFF', interval=1)
        self.api.delete_and_wait(ids, provision * 4)
        harness.wait_for(self.records.nodes_available, provision * 4,
                         'every node back to available', interval=1)
        self.assertEqual({}, self.records.usages())

    # -- observations -------------------------------------------------------

    def interval(self):
        """nova's resource-tracker interval in force, in seconds."""
        return self.cadence('update_resources_interval', 0) or 60

    def runs_since(self, host, since):
        """The resource-tracker runs a compute began after ``since``."""
        events = novalane.parse_compute_log(
            self.nova.computes[host].log_path)
        return sum(1 for e in events if e.kind == 'run' and e.time >= since)

    def cadence(self, name, default):
        value = self.CADENCE.get(name)
        return default if value is None else value

    def takeover_bound(self):
        """The documented bound, in nova's terms, plus slack.

        ``max(service_down_time, lease_time)`` for the dead service's
        heartbeat and claims to run out, then one resource-tracker period
        (``update_resources_interval``, 60 s when unset) for a survivor's
        next run. ``periodic_fuzzy_delay`` delays only the first run.

        :returns: seconds.
        """
        down = self.cadence('service_down_time', 60)
        interval = self.cadence('update_resources_interval', 0) or 60
        lease = harness_nova.claim_timings(
            {'update_resources_interval': interval,
             'service_down_time': down}).lease_time
        return max(down, lease) + interval + SLACK

    def split_done(self, live):
        owners = dict(novalane.ring_owners(live, self.group),
                      **self.instance_owners())
        hosts_of = self.recorder.hosts_of()
        providers = getattr(self.recorder, 'current_providers', {})
        for node in self.group:
            if [h.lower() for h in hosts_of.get(node, [])] != [owners[node]]:
                return False
            if providers.get(node) != node:
                return False
        return True

    def instance_owners(self):
        """``{node: host}`` of the nodes whose server a compute keeps.

        A node carrying an instance stays with the compute that runs it
        (seed 003), wherever the ring puts it.
        """
        if not self.SERVERS:
            return {}
        return {i.node: i.host.lower() for i in self.records.instances(
            getattr(self, 'created', ())).values()
            if not i.deleted and i.node and i.host}

    def wait_split(self, live, timeout):
        """Wait until nova's database and placement show the split.

        :param live: the live computes.
        :param timeout: seconds.
        :returns: the seconds it took.
        """
        start = time.time()
        harness.wait_for(lambda: self.split_done(live), timeout,
                         'the split of rack1 over %s in nova' % live,
                         interval=0.5, check=self.nova.check_services)
        return time.time() - start

    def double_holds(self, since):
        per = {}
        for host, compute in self.nova.computes.items():
            events = novalane.parse_compute_log(compute.log_path)
            per[host] = novalane.holds(events)
        seconds, overlaps = novalane.double_held(per)
        recent = {node: [o for o in spans if o[1] > since]
                  for node, spans in overlaps.items()}
        recent = {n: s for n, s in recent.items() if s}
        return sum((e - s) * (len(h) - 1) for spans in recent.values()
                   for s, e, h in spans), recent

    def assert_no_double_hold(self, since=None):
        seconds, overlaps = self.double_holds(self.t0 if since is None
                                              else since)
        self.addDetail('double-holds', content.text_content(
            '%.1f node-seconds: %r' % (seconds, overlaps)))
        self.assertEqual({}, overlaps, 'nodes held by two computes '
                         '(%.1f node-seconds)' % seconds)

    def assert_no_damage(self):
        damage = self.recorder.damage()
        self.assertEqual(
            {'deleted_rows': [], 'recreated_rows': [],
             'vanished_providers': [], 'changed_providers': []}, damage)
        self.assertGreater(self.recorder.polls, 0)

    def moves_since(self, since):
        return [m for m in self.recorder.moves if m[0] >= since]

    def wait_log(self, host, pattern, since, timeout):
        """Wait for a line matching ``pattern`` logged after ``since``.

        :returns: the line.
        """
        regex = re.compile(pattern)
        path = self.nova.computes[host].log_path

        def find():
            with open(path, 'rb') as stream:
                for raw in stream:
                    line = raw.decode('utf-8', 'replace')
                    stamp = novalane._TS_RE.match(line)
                    if (stamp and regex.search(line) and
                            novalane._log_time(stamp.group(1)) >= since):
                        return line
            return None
        return harness.wait_for(find, timeout, '%r in %s' % (pattern, host),
                                interval=0.5)

    def _refused_start(self, host, changes):
        """Start one more nova-compute that must refuse to start.

        :returns: its output (stdout and stderr).
        """
        sections = self.nova.compute_config(host)
        for section, options in changes.items():
            sections.setdefault(section, {}).update(options)
        os.makedirs(os.path.join(self.nova.workdir, host, 'instances'),
                    exist_ok=True)
        path = os.path.join(self.nova.workdir, 'refused-%s.conf' % host)
        harness_process.write_config(path, sections, join_lists=True)
        log = sections['DEFAULT'].get('log_file')

        def logged():
            if log and os.path.exists(log):
                with open(log) as stream:
                    return stream.read()
            return ''
        proc = subprocess.Popen([harness_process.bin_path('nova-compute'),
                                 '--config-file', path],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            output, _err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            # NOTE(ironic-partition): say where it hangs: nova's Guru
            # Meditation report (SIGUSR2) lists every thread's stack.
            proc.send_signal(signal.SIGUSR2)
            try:
                output, _err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _err = proc.communicate()
            self.fail('nova-compute %s did not exit within 180 s of a '
                      'refused start:\n%s\n%s' % (host, output, logged()))
        self.assertNotEqual(0, proc.returncode, output)
        text = output + logged()
        self.addDetail('refused-' + host, content.text_content(text))
        # Nothing of it reached nova's records.
        self.assertNotIn(host, [svc['host'] for svc in
                                self.recorder.cell.services()])
        return text

    def steady(self):
        return self.wait_split(self.LANE_HOSTS, self.takeover_bound() * 2)

    def wait_tracked(self, host, nodes, timeout):
        """Wait until the running process of a compute tracks these nodes.

        nova's resource tracker adds a node when it reports it ("Final
        resource view"). nova's records can already show the split, written
        by a previous process of the host, while a process just started is
        still in its first pass: a build sent then for a node it has not
        reached fails ("Attempt to claim resources ... on unknown node"),
        as with any driver.

        :param host: the compute.
        :param nodes: node UUIDs.
        :param timeout: seconds.
        :returns: None
        """
        path = self.nova.computes[host].log_path
        wanted = set(nodes)

        def tracked():
            events = novalane.parse_compute_log(path)
            starts = [i for i, e in enumerate(events) if e.kind == 'start']
            current = events[starts[-1]:] if starts else events
            return wanted <= {e.node for e in current if e.kind == 'final'}
        harness.wait_for(tracked, timeout,
                         '%s to track its %d nodes' % (host, len(wanted)),
                         interval=0.5, check=self.nova.check_services)

    def metric(self, host, name):
        """One series of a compute's metrics (there is one per compute)."""
        url = 'http://127.0.0.1:%d/metrics' % self.nova.metrics_ports[host]
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode('utf-8')
        values = [float(line.rsplit(' ', 1)[1])
                  for line in text.splitlines() if line.startswith(name + '{')]
        self.assertEqual(1, len(values), '%s of %s: %s' % (name, host, text))
        return values[0]


class PartitionLaneTest(_Lane):
    """Our driver, a short cadence: nova's periodic every 4 s."""

    # NOTE(ironic-partition): down after 20 s. A restart keeps the
    # restarting compute's nodes only if it takes less than
    # service_down_time, and with another suite on the other core a
    # restart of nova-compute took more than 10 s here.
    CADENCE = dict(harness_nova.SHORT_CADENCE, service_down_time=20)
    METRICS = True
    # NOTE(ironic-partition): nova 34's parallel resource tracking, as a
    # large fleet's operator turns it on: every fault of this lane runs
    # with four workers, each node's claim checked again inside nova's
    # resource lock (virt/tracking.py).
    WORKERS = 4
    EXTRA_CONFIG = {'compute': {'update_resources_max_workers': WORKERS}}

    def test_a_steady_state(self):
        took = self.steady()
        for host in HOSTS:
            self.wait_log(host, "nova's resource tracker updates %d nodes "
                          "at once" % self.WORKERS, self.started, SLACK)
        LOG.info('Complete report %.1f s after the class started',
                 time.time() - self.started)
        rows = self.recorder.hosts_of()
        self.assertEqual(set(self.group),
                         set(rows) - (set(self.other)
                                      if self.switched else set()))
        providers = self.recorder.current_providers
        if not self.switched:
            for node in self.other:
                self.assertNotIn(node, rows)
                self.assertNotIn(node, providers)
        self.assertEqual(len(self.group), len(
            [n for n in providers if n in self.group]))
        rss = novalane.rss_bytes(self.nova.all_pids() +
                                 self.ironic.all_pids())
        self.addDetail('figures', content.text_content(
            'settled %.1f s after class start (waited %.1f s); '
            'RSS of all services %.0f MiB' % (
                time.time() - self.started, took, rss / 2 ** 20)))
        self.assert_no_double_hold(since=0)
        self.assert_no_damage()
        # Every series a dashboard rates exists from the start, at 0 where
        # nothing happened yet: one per host and not-ready reason.
        if self.METRICS and not self.switched:
            expected = {(host, reason) for host in HOSTS
                        for reason in metrics.REASONS}

            def seen():
                return {(dict(labels)['host'], dict(labels)['reason'])
                        for labels in self.prometheus.query(
                            'ironic_partition_not_ready_refreshes_total')}
            # NOTE(ironic-partition): from Prometheus's first scrape of
            # every compute on.
            harness.wait_for(lambda: seen() >= expected, SLACK,
                             'a not-ready counter per host and reason',
                             interval=0.5)
            self.assertEqual(expected, seen())

    def test_b_kill_takeover_within_bound(self):
        self.steady()
        killed = time.time()
        self.nova.kill_compute('cn3')
        took = self.wait_split(['cn1', 'cn2'], self.takeover_bound())
        self.addDetail('takeover', content.text_content(
            'takeover after SIGKILL in %.1f s (bound %d s)' % (
                took, self.takeover_bound())))
        self.nova.start_compute('cn3')
        self.steady()
        self.assert_no_double_hold(since=killed)
        self.assert_no_damage()

    def test_c_restart_moves_nothing(self):
        self.steady()
        since = time.time()
        self.nova.restart_compute('cn2')
        self.nova.wait_for_services(['cn2'])
        self.wait_log('cn2', 'Final resource view', since, 120)
        self.steady()
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()
        self.assertEqual([], self.moves_since(since))

    def test_d_rolling_restart(self):
        self.steady()
        since = time.time()
        for host in HOSTS:
            step = time.time()
            self.nova.restart_compute(host)
            self.wait_log(host, 'Final resource view', step, 120)
            self.steady()
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()

    def test_e_sigstop_longer_than_lease(self):
        self.steady()
        since = time.time()
        self.nova.pause_compute('cn1')
        try:
            # Taken over while stopped: the lease ran out.
            self.wait_split(['cn2', 'cn3'], self.takeover_bound())
        finally:
            self.nova.resume_compute('cn1')
        self.steady()
        self.wait_log('cn1', 'Final resource view', since, 120)
        self.assert_no_damage()
        seconds, overlaps = self.double_holds(since)
        self.addDetail('sigstop', content.text_content(
            '%.1f double-held node-seconds after SIGCONT: %r'
            % (seconds, overlaps)))
        # NOTE(ironic-partition): after SIGCONT nova acts on its old view
        # until its next resource-tracker run; only nova's run can end
        # that hold. Measured, and asserted to stay within one run.
        for spans in overlaps.values():
            for start, end, _hosts in spans:
                self.assertLess(end - start, SLACK)

    def _cut_and_back(self, cut, restore, what, during=None, after=None):
        self.steady()
        since = time.time()
        cut()
        try:
            bound = (self.PARTITION_OPTIONS['membership_stale_timeout'] +
                     self.takeover_bound())
            for host in HOSTS:
                self.wait_log(host, 'Virt driver is not ready', since,
                              bound)
            if during is not None:
                during()
        finally:
            restore()
        back = time.time()
        took = self.wait_split(HOSTS, self.takeover_bound() * 2)
        if after is not None:
            after()
        self.addDetail(what, content.text_content(
            'not ready on every compute, split back %.1f s after restore'
            % took))
        self.assertGreater(time.time(), back)
        self.assert_no_damage()
        self.assert_no_double_hold(since=since)

    def test_f_membership_database_cut(self):
        proxy = self.nova.membership_proxy
        self._cut_and_back(proxy.cut, proxy.restore, 'membership-cut',
                           during=self._prometheus_sees_not_ready,
                           after=self._prometheus_sees_ready)

    def _prometheus_sees_not_ready(self):
        # What the operator's Prometheus shows: every compute not ready,
        # why, and the example alert pending.
        def every(expr, want):
            found = self.prometheus.values(expr, 'host')
            return set(found) == set(HOSTS) and all(
                v == want for v in found.values())
        harness.wait_for(lambda: every('ironic_partition_ready', 0),
                         SLACK, 'Prometheus to see every compute not ready',
                         interval=0.5)
        reasons = {dict(labels)['reason'] for labels in self.prometheus.query(
            'ironic_partition_not_ready_reason == 1')}
        self.assertTrue(reasons)
        self.assertLessEqual(reasons, {'membership', 'claims'})
        # Nobody reports a node now: a dashboard summing the group's
        # reported and claimed nodes says 0, not the last values.
        for name in ('nodes_reported', 'nodes_claimed'):
            harness.wait_for(
                lambda: every('ironic_partition_%s{conductor_group='
                              '"rack1"}' % name, 0),
                SLACK, 'Prometheus to see %s at 0 on every compute' % name,
                interval=0.5)
        harness.wait_for(
            lambda: every('ALERTS{alertname="IronicPartitionNotReady",'
                          'alertstate="pending"}', 1),
            SLACK, 'the IronicPartitionNotReady alert to be pending',
            interval=0.5)
        self.addDetail('prometheus-not-ready', content.text_content(
            'not ready on %s, reasons %s, alert pending' % (
                ', '.join(HOSTS), ', '.join(sorted(reasons)))))

    def _prometheus_sees_ready(self):
        def ready():
            found = self.prometheus.values('ironic_partition_ready', 'host')
            return set(found) == set(HOSTS) and all(found.values())
        harness.wait_for(ready, SLACK, 'Prometheus to see every compute '
                         'ready again', interval=0.5)
        if not self.switched:
            reported = self.prometheus.query(
                'sum(ironic_partition_nodes_reported'
                '{conductor_group="rack1"})')
            self.assertEqual([float(len(self.group))],
                             list(reported.values()))
        harness.wait_for(
            lambda: not self.prometheus.query(
                'ALERTS{alertname="IronicPartitionNotReady"}'),
            SLACK, 'the IronicPartitionNotReady alert to clear',
            interval=0.5)

    def test_g_ironic_unreachable(self):
        self._cut_and_back(self.ironic.stop_api, self.ironic.start_api,
                           'ironic-down')

    # NOTE(ironic-partition): nova 34's nova-compute, in its threading
    # mode (oslo.service 4.8), stops working after SIGHUP: it runs its
    # service in the main process (no_fork), whose SIGHUP handler raises
    # SignalExit instead of reloading, so the main thread ends (a Guru
    # Meditation report shows it in futurist's _clean_up join at
    # interpreter exit); no resource-tracker run finishes again and RPC
    # publishes hang, while the process stays alive.
    # nova's own ironic.IronicDriver does the same, so a group switch by
    # SIGHUP never reaches nova (a platform limit, documented in
    # admin/nova-compute.rst). This test asserts that exact failure, and
    # that our driver then stops proving it is alive (no more claim
    # renewals: its nodes lapse instead of being held by a process that
    # no longer serves). The next test runs the computes with the fix we
    # propose to oslo.service (contributor/upstream/oslo-service-sighup)
    # and asserts the group switch.

    def test_h_sighup_switch_group(self):
        self.steady()
        since = time.time()
        type(self).switched = True
        # Whatever the outcome, the next tests get the original settings
        # and fresh computes, as an operator restarts after such a change.
        self.addCleanup(self._fresh_computes)
        self._edit_for_switch()
        for host in HOSTS:
            self.nova.sighup_compute(host)
        self._assert_sighup_ends_nova_compute(since)

    def test_h_sighup_switch_group_with_the_oslo_service_fix(self):
        # The proposed oslo.service fix, in a copy of the installed
        # release that only these computes import (PYTHONPATH).
        harness.skip_unless_long(self)
        fixed = upstream.patched_copy(
            'oslo_service', test_upstream_fixes.OSLO_SERVICE_SIGHUP,
            self.useFixture(fixtures.TempDir()).path)
        type(self).switched = True
        for host in HOSTS:
            compute = self.nova.computes[host]
            self.addCleanup(setattr, compute, 'env', compute.env)
            compute.env = upstream.pythonpath(fixed, compute.env)
        # Cleanups run last first: the release's computes come back after
        # the environment is restored.
        self.addCleanup(self._fresh_computes)
        self._fresh_computes()
        since = time.time()
        self._edit_for_switch()
        for host in HOSTS:
            self.nova.sighup_compute(host)
        for host in HOSTS:
            self.wait_log(host, 'Caught SIGHUP, reloading the configuration',
                          since, SLACK)

        def switched():
            rows = self.recorder.hosts_of()
            return (self.split_done(['cn1', 'cn2']) and
                    all(rows.get(n) == ['cn3'] for n in self.other))
        harness.wait_for(switched, self.takeover_bound() * 2,
                         'cn3 to move to rack2', interval=0.5,
                         check=self.nova.check_services)
        took = time.time() - since
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()
        for host in HOSTS:
            self.assertTrue(self.nova.computes[host].running(), host)
        # And back, by SIGHUP again.
        back = time.time()
        for host in HOSTS:
            self.nova.edit_compute_config(host, {'ironic': {
                'partition_key': 'rack1', 'peer_list': ','.join(HOSTS)}})
            self.nova.sighup_compute(host)
        self.steady()
        self.assert_no_double_hold(since=back)
        self.assert_no_damage()
        self.addDetail('sighup-fixed', content.text_content(
            'cn3 moved to rack2 %.1f s after SIGHUP' % took))

    def _edit_for_switch(self):
        self.nova.edit_compute_config('cn3', {'ironic': {
            'partition_key': 'rack2', 'peer_list': 'cn3'}})
        for host in ('cn1', 'cn2'):
            self.nova.edit_compute_config(host, {'ironic': {
                'peer_list': 'cn1,cn2'}})

    def _assert_sighup_ends_nova_compute(self, since):
        lines = []
        for host in HOSTS:
            # The main thread ended (SignalExit), the process lives on.
            lines.append(self.wait_log(
                host, 'The main thread of this process ended: no more '
                'claim renewals for %s' % host, since,
                self.takeover_bound()))
            self.assertTrue(self.nova.computes[host].running(), host)
            # NOTE(ironic-partition): what nova's periodic tasks do then
            # varies from run to run (they stop, or every run fails with
            # "cannot schedule new futures after interpreter shutdown"):
            # not asserted.
        self.addDetail('sighup', content.text_content('\n'.join(lines)))
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()

    def _fresh_computes(self):
        restarted = time.time()
        for host in HOSTS:
            self.nova.edit_compute_config(host, {'ironic': {
                'partition_key': 'rack1', 'peer_list': ','.join(HOSTS)}})
            self.nova.restart_compute(host)
        # NOTE(ironic-partition): nova's records can show the old split
        # before the new processes hold the host names (each waits for
        # its killed predecessor's heartbeat to go stale).
        for host in HOSTS:
            self.wait_log(host, 'Registered as host %s ' % host, restarted,
                          self.takeover_bound() * 2)
        self.steady()

    def test_i_conflicting_group_options_refuse_to_start(self):
        text = self._refused_start('cnx', {'ironic': {
            'partition_key': 'rack1', 'conductor_group': 'rack2',
            'peer_list': 'cnx'}})
        self.assertIn("Options [ironic] partition_key='rack1' and [ironic] "
                      "conductor_group='rack2' name the same setting", text)

    def test_j_per_host_sqlite_membership_refuses_to_start(self):
        text = self._refused_start('cny', {
            'ironic': {'peer_list': 'cny,cn1'},
            'ironic_partition_database': {
                'connection': 'sqlite:///%s' % os.path.join(
                    self.nova.workdir, 'cny.sqlite')}})
        self.assertIn('[ironic_partition_database] connection', text)
        self.assertIn('which only this host can reach', text)

    def test_k_crash_restart_in_a_new_pid_namespace(self):
        # A container restarted after a crash: the same host name, a new
        # PID namespace, so the previous process is never provably gone.
        # nova-compute must come back by itself, not exit into a loop.
        compute = self.nova.computes['cn2']
        self.addCleanup(setattr, compute, 'own_pid_namespace', False)
        compute.own_pid_namespace = True
        step = time.time()
        self.nova.restart_compute('cn2')
        # NOTE(ironic-partition): the split may look done before the
        # restarted process even registered; kill it only once it holds
        # the host name and reported.
        line = self.wait_log('cn2', 'Registered as host cn2 ', step,
                             self.takeover_bound() * 2)
        self.wait_log('cn2', 'Final resource view',
                      novalane.line_time(line), 120)
        self.steady()
        since = time.time()
        self.nova.kill_compute('cn2')
        self.nova.start_compute('cn2')
        line = self.wait_log('cn2', 'Registered as host cn2 ', since,
                             self.takeover_bound() * 2)
        joined = novalane._log_time(novalane._TS_RE.match(line).group(1))
        started = novalane.line_time(self.wait_log(
            'cn2', 'Starting compute node', since, 10))
        # NOTE(ironic-partition): while the killed process's last heartbeat
        # is younger than service_down_time the new one must wait, not
        # ready; a start slower than that (a loaded machine) finds it aged
        # and has nothing to wait for.
        fresh_until = since + self.cadence('service_down_time', 60) - 3
        if started < fresh_until:
            line = self.wait_log('cn2', 'Not ready: Another process already '
                                 "runs as host 'cn2'", since, 5)
            self.assertLess(novalane.line_time(line), joined)
            self.addDetail('waiting', content.text_content(line))
        else:
            self.addDetail('waiting', content.text_content(
                'started %.1f s after the kill: the old heartbeat had aged'
                % (started - since)))
        self.wait_log('cn2', 'Final resource view', joined, 120)
        self.steady()
        self.addDetail('rejoined', content.text_content(
            'cn2 registered %.1f s after its restart (bound %d s)'
            % (joined - since, self.takeover_bound() * 2)))
        self.assertTrue(compute.running())
        self.assertEqual(list(compute.UNSHARE), compute.argv[:4])
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()
        # Not one of its runs got an empty node list while it waited for
        # the old process's heartbeat, then for its claims: nova would
        # have taken every node of cn2 for an orphan.
        with open(compute.log_path, 'rb') as stream:
            orphans = [line for line in
                       stream.read().decode('utf-8', 'replace').splitlines()
                       if 'Found orphan compute node' in line and
                       (novalane.line_time(line) or 0) >= since]
        self.assertEqual([], orphans)
        events = [e for e in novalane.parse_compute_log(compute.log_path)
                  if e.time >= since]
        self.assertNotIn('listed_none', [e.kind for e in events])

    def test_l_takeover_stops_the_old_compute(self):
        # A hung nova-compute replaced: "ironic-partition takeover", then a
        # new nova-compute with the same host. When the old one wakes up,
        # it stops itself (nova's graceful stop); the new one serves.
        self.steady()
        old = self.nova.computes['cn3']
        self.nova.pause_compute('cn3')
        try:
            out = harness_cli.run_cli('--config-file', old.config_file,
                                      'takeover', 'cn3', '-f', 'json')
            self.assertEqual(0, out.returncode, out.stderr)
            fenced = json.loads(out.stdout)
            self.assertEqual(('cn3', 'nova-compute'),
                             (fenced['host'], fenced['role']))
            self.assertIsNotNone(fenced['fenced_incarnation'])
            started = time.time()
            new = self.nova._service(
                'nova-compute-cn3-new',
                ['nova-compute', '--config-file', old.config_file],
                cls=harness_nova_compute.Compute, host='cn3',
                config_file=old.config_file)
            new.start()
        finally:
            self.nova.resume_compute('cn3')
        # The old process stops by itself, gracefully.
        harness.wait_for(lambda: not old.running(), self.takeover_bound(),
                         'the old cn3 to stop itself', interval=0.5)
        # 0: oslo.service's graceful shutdown ran to its end.
        self.assertEqual(0, old.process.returncode)
        self.wait_log('cn3', 'Another process took host cn3 over', started,
                      5)
        # The new one registers once the old claims ran out, and reports.
        self.nova.computes['cn3'] = new
        self.addCleanup(self.nova.computes.__setitem__, 'cn3', old)
        self.wait_log('cn3', 'Registered as host cn3 ', started,
                      self.takeover_bound())
        self.wait_log('cn3', 'Final resource view', started,
                      self.takeover_bound() * 2)
        self.steady()
        self.assertTrue(new.running())
        self.assert_no_damage()


class NovaDefaultCadenceLaneTest(_Lane):
    """Our driver with nova's default cadence, from kolla-ansible's files.

    nova's default cadence (60 s periodic, 60 s down): booting and
    deleting takes several minutes, and runs in every functional run (CI
    included): a driver proven only with short test intervals is not
    proven with nova's defaults. The SIGKILL takeover at this cadence runs
    in ``tox -e functional-long``. ``IRONIC_PARTITION_TEST_NOVA_FAST=1``
    skips it for quick local iterations.

    The three computes are the install guide's kolla-ansible containers
    (``rack1-a-ironic`` to ``rack1-c-ironic``), each run from the page's
    files as kolla layers them (``_deployers.kolla_computes``): the
    driver, the group, the peer list and the metrics options are the
    page's; only this machine's addresses are written over them.
    """

    CADENCE = harness_nova.NOVA_DEFAULT_CADENCE
    PARTITION_OPTIONS = {'membership_stale_timeout': 300}
    SERVERS = True
    LANE_HOSTS = [host for host, _i in _deployers.kolla_instances()]

    @classmethod
    def nova_kwargs(cls):
        return {'deployed_config': _deployers.kolla_computes(
            cls.ironic.endpoint)}

    @classmethod
    def setUpClass(cls):
        if os.environ.get('IRONIC_PARTITION_TEST_NOVA_FAST') == '1':
            raise base.BaseTestCase.skipException(
                'IRONIC_PARTITION_TEST_NOVA_FAST=1: skipping the nova lane '
                'with nova\'s default cadence')
        super().setUpClass()

    def test_boot_and_delete_default_cadence(self):
        self.steady()
        # The kolla page's options are the ones in force: each container
        # serves its metrics (on a free port here: the page's 9181-9183
        # are this machine's to give) and is ready.
        self.assertEqual(
            dict.fromkeys(self.LANE_HOSTS, 1.0),
            {h: self.metric(h, 'ironic_partition_ready')
             for h in self.LANE_HOSTS})
        since = time.time()
        ids = self.api.boot_many(4, 'default')
        self.addCleanup(self.api.delete_and_wait, ids, 600)
        servers = self.api.wait_final(ids, 600)
        self.assertEqual({}, harness_api.faults(servers))
        self.assertEqual([], self.records.problems(ids, 'CUSTOM_BAREMETAL'))
        for server in servers.values():
            self.assertIn(server.compute_host, self.LANE_HOSTS)
            self.assertIn(server.hypervisor_hostname, self.group)
        self.api.delete_and_wait(ids, 600)
        harness.wait_for(self.records.nodes_available, 600,
                         'every node back to available', interval=2)
        self.assertEqual([], self.records.problems(ids, 'CUSTOM_BAREMETAL'))
        self.assertEqual({}, self.records.usages())
        self.steady()
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()

    def test_kill_takeover_default_cadence(self):
        # NOTE(ironic-partition): about three minutes of waiting for nova's
        # 60 s cadence: in tox -e functional-long, and measured at scale
        # by benchmarks/nova_scale_bench.py; the README's command keeps
        # the boot and delete at this cadence.
        harness.skip_unless_long(self)
        self.steady()
        self.assert_no_double_hold(since=0)
        killed = time.time()
        first, killed_host, last = self.LANE_HOSTS
        self.nova.kill_compute(killed_host)
        took = self.wait_split([first, last], self.takeover_bound())
        self.addDetail('takeover', content.text_content(
            'takeover after SIGKILL in %.1f s (bound %d s)' % (
                took, self.takeover_bound())))
        self.assert_no_double_hold(since=killed)
        self.assert_no_damage()


class UnpartitionedDefaultsLaneTest(_Lane):
    """nova's unpartitioned HA on our defaults: refused unless alone.

    No conductor group, no shard, no peer_list, and no
    ``[ironic_partition_database] connection`` nor membership or claims
    option: every compute would keep its claims in a SQLite file of its
    own. One compute alone manages the whole fleet, as nova's driver does;
    a second one on the same defaults refuses to start, naming the option.
    """

    LANE_HOSTS = ['solo']
    PARTITION_KEY = None
    PARTITION_OPTIONS = {'membership_backend': None, 'claims': None}
    EXTRA_CONFIG = {'ironic_partition_database': {'connection': None}}

    def fleet_held_by_solo(self):
        hosts_of = self.recorder.hosts_of()
        return all(hosts_of.get(node) == ['solo']
                   for node in self.group + self.other)

    def test_alone_then_a_second_compute_is_refused(self):
        harness.wait_for(self.fleet_held_by_solo, self.takeover_bound() * 2,
                         'every node of every group held by solo',
                         interval=0.5, check=self.nova.check_services)
        since = time.time()
        config = self.nova.compute_config('solo')
        self.assertNotIn('connection', {
            k: v for k, v in config['ironic_partition_database'].items()
            if v is not None})
        text = self._refused_start('second', {})
        self.assertIn('Invalid value', text)
        self.assertIn('for option [ironic_partition_database] connection: '
                      'it is a SQLite database', text)
        self.assertIn('other nova-compute services with Ironic nodes are '
                      'up (solo)', text)
        # solo goes on alone, nothing moved, nothing deleted.
        self.assertTrue(self.fleet_held_by_solo())
        self.assertEqual([], self.moves_since(since))
        self.assert_no_damage()

    def _down_in_nova(self, host):
        """Whether nova's service group has ``host`` down by now."""
        down = self.cadence('service_down_time', 60)
        for svc in self.recorder.cell.services():
            if svc['host'] == host:
                seen = svc['last_seen_up'] or svc['updated_at']
                return seen is None or (
                    time.time() - seen.replace(
                        tzinfo=datetime.timezone.utc).timestamp() > down + 1)
        return True

    def _one_serves(self, hosts, starts, since):
        """Start computes; exactly one serves, the others stop, refused.

        :param hosts: the computes.
        :param starts: seconds after the first start of each one's start.
        :returns: the one that serves.
        """
        for host, delay in sorted(zip(hosts, starts), key=lambda p: p[1]):
            harness.wait_for(lambda: time.time() >= since + delay,
                             delay + 1, 'the start of %s' % host,
                             interval=0.01)
            self.nova.computes[host].start()
        harness.wait_for(
            lambda: sum(self.nova.computes[h].running()
                        for h in hosts) == 1, 240,
            'all but one of %s to stop' % hosts, interval=0.5,
            check=self.nova.check_services)
        (winner,) = [h for h in hosts if self.nova.computes[h].running()]
        harness.wait_for(
            lambda: all(self.recorder.hosts_of().get(node) == [winner]
                        for node in self.group + self.other),
            self.takeover_bound() * 2, 'every node held by %s' % winner,
            interval=0.5)
        for host in hosts:
            if host == winner:
                continue
            # NOTE(ironic-partition): this round's lines only; the log
            # goes on across rounds.
            with open(self.nova.computes[host].log_path) as stream:
                text = ''.join(
                    line for line in stream
                    if (novalane.line_time(line) or 0) >= since)
            self.assertIn('for option [ironic_partition_database] '
                          'connection: it is a SQLite database', text)
            # NOTE(ironic-partition): refused by whichever computes it saw
            # up with a lower service id (the winner, or another loser
            # whose own refusal came later), never by itself alone.
            named = re.findall(r'other nova-compute services with Ironic '
                               r'nodes are up \(([^)]*)\)', text)
            self.assertTrue(named, text[-2000:])
            self.assertLessEqual(set(named[0].split(', ')),
                                 set(hosts) - {host}, named)
        self.assert_no_double_hold(since=since)
        self.assertEqual([], [m for m in self.moves_since(since)
                              if m[3] != winner])
        self.assert_no_damage()
        self.nova.stop_compute(winner)
        harness.wait_for(lambda: self._down_in_nova(winner), 120,
                         '%s down in nova' % winner, interval=1)
        return winner

    def test_started_together_exactly_one_serves(self):
        """Computes started within 0.2 s: one serves, the others stop.

        ``IRONIC_PARTITION_TEST_TOGETHER_ROUNDS`` times (2 in the README's
        command): first with new service records, then with the records
        of the rounds before (nova gives the ids in creation order, so the
        same compute wins). Then two computes 2 s apart, the younger
        first: it is in its first pass when the older one starts.
        """
        self.nova.stop_compute('solo')
        harness.wait_for(lambda: self._down_in_nova('solo'), 120,
                         'solo down in nova', interval=1)
        hosts = ['together-1', 'together-2', 'together-3']
        for host in hosts:
            compute = self.nova.add_compute(host, start=False)
            self.addDetail('log-nova-compute-%s' % host,
                           harness_process.log_content(compute.log_path))
        rounds = int(os.environ.get('IRONIC_PARTITION_TEST_TOGETHER_ROUNDS',
                                    2))
        winners = []
        for _round in range(rounds):
            since = time.time()
            winners.append(self._one_serves(hosts, [0, 0, 0], since))
            starts = [novalane.parse_compute_log(
                self.nova.computes[h].log_path) for h in hosts]
            first = [max(e.time for e in events if e.kind == 'start')
                     for events in starts]
            self.assertLess(max(first) - min(first), 0.2)
        self.assertEqual([winners[0]] * rounds, winners)
        since = time.time()
        self._one_serves(['together-3', 'together-1'], [0, 2], since)
