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

"""The nova lane on Galera: real nova-compute through the cluster's faults.

The lane's deployment (:mod:`test_nova_compute`: a real Ironic, placement,
nova-conductor and three nova-compute services ``cn1``-``cn3`` sharing
``rack1``, nova's ``SHORT_CADENCE``), whose membership and claims
database is on a three-node MariaDB Galera cluster behind HAProxy, shaped
as kolla-ansible's: ``node0`` takes the connections, ``node1`` and
``node2`` are ``backup`` servers, ``option mysql-check`` (see
:class:`~ironic_partition.testing.services.galera.GaleraFixture` and
:mod:`test_galera`, the same faults under lightweight agents). The
computes reach the cluster through HAProxy directly (no proxy of ours).

The computes' claims are nova's automatic ones for that cadence
(``update_resources_interval`` 4 s, ``service_down_time`` 10 s): a lease
of 10 s (the largest of ``service_down_time``, two intervals and
``ceil((4 + 3) / 0.9)`` = 8), a fencing margin of 5 s (nova's hold of one
interval, 4 s, plus a tenth of the lease), renewals every 1.67 s. The
clock watch (:mod:`ironic_partition.claims.db_clock`) tolerates, unwidened, a
difference between the database nodes' clocks of the margin less the hold
less 0.05 s: 0.95 s. (It accepts up to 3.45 s once seen, widening the
margin to the hold plus the difference plus 0.05 s while at least half of
the 5 s reporting window is left, but only the first 0.95 s are covered
at the first failover.) ``node1``'s wall clock runs :data:`NODE1_AHEAD`
= 0.5 s ahead (libfaketime): inside that tolerance, and measured by the
computes' clock watch without widening their margin.

Each test starts from the whole cluster, ``node0`` taking the connections
and every compute ready with the split of ``rack1`` in nova's records, and
leaves the cluster so. Each asserts, from nova's records, placement and
the computes' logs (as the lane does): no node held by two computes, no
``compute_nodes`` row or resource provider deleted or recreated, no node
moved to another compute, the split back with every compute ready within
the lane's takeover bound (``max(service_down_time, lease_time) +
update_resources_interval`` + 15 s = 29 s) after the database is usable
again, and that every resource-tracker run begun during the fault
either ended "Virt driver is not ready." or reported exactly its
compute's share: never fewer nodes, nor another's.

* ``test_a_isolated_writer``: ``node0`` cut off from the other two (a
  non-primary component); mysql-check still sees it up, so the computes
  stay on it: every compute logs "Virt driver is not ready" (the claims
  database answers WSREP errors 1047 or 1180); after the rejoin they are
  ready again.
* ``test_b_writer_failover``: SIGKILL of ``node0`` during a
  resource-tracker run; HAProxy moves the computes to ``node1``: each
  logs the clock step of about +0.5 s, its metrics show the difference
  and an unwidened 5 s margin, and it is ready on ``node1``; then
  ``node0`` comes back (HAProxy fails back: new connections go to it,
  while the computes' pooled connections stay on ``node1``, measured).
* ``test_c_whole_cluster_restart``: all three nodes stopped, for longer
  than ``service_down_time`` and the lease: every compute logs "Virt
  driver is not ready"; the cluster is bootstrapped again from the most
  advanced node while ``cn3`` is stopped (SIGSTOP), so that ``cn1`` and
  ``cn2`` refresh before its heartbeat is retried: they say they count
  it alive; once resumed, every compute is ready with the same split,
  nothing moved.

The isolation and the failover last as long as it takes every compute to
log "Virt driver is not ready" (one resource-tracker run, at most 4 s plus
the run) and the cluster to recover (``rejoin`` 1-3 s): 6-9 s. The whole
cluster stays down longer than ``service_down_time`` and the lease (both
10 s): every heartbeat and every claim has run out when it is back. The
first compute to refresh then must not see the others, whose heartbeats
have not been retried yet, as dead: it would take their nodes until
their next heartbeat, a move and a move back, and, in the lane's terms,
nodes held twice (the previous holder's nova keeps its last view through
its not-ready runs). A service counts the peers that were alive before
the database failed it as alive until ``service_down_time`` after it
last saw the failure (``DatabaseMembership``).

The tests run in this order on one deployment: the first needs every
pooled connection of the computes on ``node0`` (HAProxy never moves an
established connection back from a backup server after a failback).
"""

import re
import time

from testtools import content

from ironic_partition.claims import db_clock
from ironic_partition.settings import claims as claim_settings
from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import galera as galera_mod
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.tests.functional import test_nova_compute

HOSTS = test_nova_compute.HOSTS
#: How far ahead of node0's clock node1's runs (seconds).
NODE1_AHEAD = 0.5
TIMEOUT = 90
#: Where the cluster's directories go: chosen at import, outside the
#: per-test temporary directory that oslotest removes after each test.
WORK_PARENT = harness_db.default_workdir()

_STEP_RE = (r"The database server's clock stepped by ([+-]\d+\.\d+) s "
            r"between two claim rounds of %s ")
_RUN = 'Running periodic task ComputeManager.update_available_resource'


def _claim_timings(cadence):
    """The computes' automatic claim timings, and the clock tolerance."""
    nova = claim_settings.nova_cadence(cadence['update_resources_interval'])
    timings = harness_nova.claim_timings(cadence)
    watch = db_clock.ClockWatch(timings.fencing_margin, timings.lease_time,
                                hold=nova.hold)
    return timings, watch.tolerance()


class GaleraLaneTest(test_nova_compute._Lane):
    """The nova lane with its membership database on Galera."""

    galera = None

    @classmethod
    def nova_kwargs(cls):
        cluster = galera_mod.GaleraFixture(
            clock_offsets={1: NODE1_AHEAD}, timeout=TIMEOUT,
            workdir=WORK_PARENT)
        started = time.time()
        # NOTE(ironic-partition): a fixture whose set-up fails has already
        # stopped what it started; _tear_down stops the rest.
        cluster.setUp()
        cls.galera = cluster
        cls.cluster_start = time.time() - started
        cls.measured_offset = cluster.clock_offset(1)
        name = cls.membership_database = harness_db.unique_name()
        cluster.create_database(name)
        # NOTE(ironic-partition): metrics only for reading the clock
        # watch (no Prometheus server: see METRICS).
        return {'membership_url': cluster.url(name) + '?charset=utf8mb4',
                'metrics': True}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.setup_seconds = time.time() - cls.started

    @classmethod
    def _tear_down(cls):
        super()._tear_down()
        if cls.galera is not None:
            try:
                cls.galera.cleanUp()
            finally:
                cls.galera = None

    def setUp(self):
        super().setUp()
        self.figures = {}
        self.addCleanup(lambda: self.addDetail(
            'figures', content.text_content(repr(self.figures))))
        self.addDetail('log-haproxy', harness_process.log_content(
            self.galera.haproxy.log_path))
        for node in self.galera.nodes:
            self.addDetail('log-galera-%s' % node.name,
                           harness_process.log_content(node.log_path))
        self.galera.restore()
        self.addCleanup(self.galera.restore)
        self.steady()
        # NOTE(ironic-partition): a precondition, not a measured bound:
        # restore() may have moved the writer back to node0 under the
        # computes, each then proving its claims again (as steady() does).
        self.wait_ready(HOSTS, time.time(), self.takeover_bound() * 2,
                        'every compute to report its nodes')
        self.share = {}
        for node, host in novalane.ring_owners(HOSTS, self.group).items():
            self.share.setdefault(host, set()).add(node)

    # Helpers.

    def mark(self, what):
        """Write a fault into every compute's log (for the reader)."""
        for compute in self.nova.computes.values():
            compute.mark('galera: %s' % what)

    def ready_at(self, host, since):
        """When a compute first reported nodes after ``since``, or None."""
        for event in novalane.parse_compute_log(
                self.nova.computes[host].log_path):
            if event.kind == 'final' and event.time >= since:
                return event.time
        return None

    def wait_ready(self, hosts, since, timeout, what):
        """Wait until every compute reported nodes after ``since``.

        :returns: the seconds from ``since`` to the last of them.
        """
        harness.wait_for(
            lambda: all(self.ready_at(h, since) for h in hosts), timeout,
            what, interval=0.5, check=self.nova.check_services)
        return max(self.ready_at(h, since) for h in hosts) - since

    def runs(self, host, start, end):
        """The resource-tracker runs a compute began between two instants.

        Waits until each of them ended (the next run began).

        :returns: a list of the node sets they reported, None for a run
            that ended "Virt driver is not ready.".
        """
        self.wait_log(host, _RUN, end, self.takeover_bound())
        found = []
        current = None
        for event in novalane.parse_compute_log(
                self.nova.computes[host].log_path):
            if event.kind == 'run':
                if current is not None:
                    found.append(current['nodes'])
                current = None
                if start <= event.time <= end:
                    current = {'nodes': set()}
            elif current is not None and event.kind == 'final':
                current['nodes'].add(event.node)
            elif current is not None and event.kind == 'not_ready':
                current['nodes'] = None
        return found

    def assert_fault_runs(self, start, end):
        """Every run begun during a fault: not ready, or the full share.

        Never fewer nodes (nor others').

        :returns: ``{host: (not ready, full share)}`` run counts.
        """
        counts = {}
        for host in HOSTS:
            runs = self.runs(host, start, end)
            for reported in runs:
                if reported is not None:
                    self.assertEqual(sorted(self.share[host]),
                                     sorted(reported), host)
            counts[host] = (runs.count(None), len(runs) - runs.count(None))
        return counts

    def assert_safe(self, since):
        """The lane's checks: no double hold, no damage, nothing moved."""
        seconds, _overlaps = self.double_holds(since)
        self.figures['double_held_node_seconds'] = round(seconds, 3)
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()
        self.assertEqual([], self.moves_since(since))

    def connections(self):
        """The connections to the membership database, per node."""
        return {'node%d' % i: self.galera.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE DB = '%s'" % self.membership_database, i)[0][0]
            for i in self.galera.running()}

    # Tests.

    def test_a_isolated_writer(self):
        self.figures.update(class_setup=round(self.setup_seconds, 1),
                            cluster_start=round(self.cluster_start, 1))
        self.assertEqual(0, self.galera.writer())
        since = time.time()
        self.mark('node0 isolated (non-primary), still up for HAProxy')
        self.galera.isolate(0)
        self.figures['isolate'] = round(time.time() - since, 1)
        bound = self.takeover_bound()
        # NOTE(ironic-partition): from the isolation's start, not from
        # isolate()'s return (node0 turns non-primary ~3 s later, and the
        # computes fail before): the cut is kept short (see the module).
        for host in HOSTS:
            line = self.wait_log(host, 'Virt driver is not ready', since,
                                 bound)
            self.figures.setdefault('not_ready_after', {})[host] = round(
                novalane.line_time(line) - since, 1)
            # Why: a statement on a node outside the primary component,
            # 1047 for a read, 1180 for a write.
            reason = self.wait_log(
                host, 'Not reporting any node list this time', since, bound)
            self.assertRegex(
                reason, r"\(1047, 'WSREP has not yet prepared node|"
                r"\(1180, .*Not connected to Primary Component", host)
        # mysql-check still sends every new connection to node0.
        self.assertEqual(0, self.galera.writer())
        rejoin = time.time()
        self.mark('node0 rejoins')
        self.galera.rejoin(0)
        self.figures['rejoin'] = round(time.time() - rejoin, 1)
        # Reported nodes after the rejoin began: a ready claim round.
        self.figures['ready_after_rejoin'] = round(self.wait_ready(
            HOSTS, rejoin, bound, 'every compute to report again'), 1)
        self.figures['first_report_after_fault'] = round(min(
            self.ready_at(h, rejoin) for h in HOSTS) - since, 1)
        self.wait_split(HOSTS, bound)
        self.figures['runs_during_fault'] = self.assert_fault_runs(
            since, rejoin)
        self.assert_safe(since)

    def test_b_writer_failover(self):
        timings, tolerance = _claim_timings(self.CADENCE)
        self.figures.update(lease=timings.lease_time,
                            margin=timings.fencing_margin,
                            tolerance=tolerance,
                            node1_ahead_measured=round(
                                self.measured_offset, 3))
        # The offset is inside what the computes' lease covers unwidened.
        self.assertLess(NODE1_AHEAD, tolerance)
        self.assertAlmostEqual(NODE1_AHEAD, self.measured_offset,
                               delta=0.1)
        self.assertEqual(0, self.galera.writer())
        since = time.time()
        # SIGKILL while the computes refresh: as cn1 begins a run.
        self.wait_log('cn1', _RUN, since, self.takeover_bound())
        killed = time.time()
        self.mark('SIGKILL of the writer, node0')
        self.galera.kill(0)
        harness.wait_for(lambda: self.galera.writer() == 1, TIMEOUT,
                         'HAProxy to send connections to node1')
        bound = self.takeover_bound()
        for host in HOSTS:
            # Its first claim round on node1 saw node1's clock.
            line = self.wait_log(host, _STEP_RE % host, killed, bound)
            step = float(re.search(_STEP_RE % host, line).group(1))
            self.figures.setdefault('steps', {})[host] = step
            self.assertAlmostEqual(NODE1_AHEAD, step, delta=0.25, msg=host)
            at = novalane.line_time(line)
            self.figures.setdefault('ready_on_node1_after', {})[host] = (
                round(self.wait_ready([host], at, bound, '%s to report on '
                                      'node1' % host) + at - killed, 1))
            # What the compute's clock watch shows: the difference, and
            # the configured margin, wide enough for it.
            self.assertAlmostEqual(NODE1_AHEAD, self.metric(
                host, 'ironic_partition_database_clock_difference_seconds'),
                delta=0.25, msg=host)
            self.assertEqual(timings.fencing_margin, self.metric(
                host, 'ironic_partition_fencing_margin_seconds'), host)
        self.wait_split(HOSTS, bound)
        self.figures['runs_during_failover'] = self.assert_fault_runs(
            killed, time.time())
        self.assert_safe(since)
        restarted = time.time()
        self.mark('node0 restarted: HAProxy fails back to it')
        self.galera.start(0)
        harness.wait_for(lambda: self.galera.writer() == 0, TIMEOUT,
                         'HAProxy to send connections to node0 again')
        back = time.time()
        self.figures['node0_rejoined_in'] = round(back - restarted, 1)
        self.figures['ready_after_failback'] = round(self.wait_ready(
            HOSTS, back, bound, 'every compute to report after the '
            'failback'), 1)
        self.wait_split(HOSTS, bound)
        self.assert_fault_runs(restarted, back)
        self.assert_safe(since)
        # NOTE(ironic-partition): measured, not asserted: HAProxy leaves
        # the connections made during the failover on node1.
        self.figures['connections_after_failback'] = self.connections()

    def test_c_whole_cluster_restart(self):
        since = time.time()
        self.mark('all three nodes stopped')
        self.galera.stop(2)
        self.galera.stop(1)
        # NOTE(ironic-partition): the database is unusable from the moment
        # the last node stops (node0, HAProxy's server): a failure since
        # then is the outage's, and the outage is kept short.
        stopping = time.time()
        self.galera.stop(0)
        down = time.time()
        bound = self.takeover_bound()
        for host in HOSTS:
            line = self.wait_log(host, 'Virt driver is not ready', stopping,
                                 bound)
            self.figures.setdefault('not_ready_after', {})[host] = round(
                novalane.line_time(line) - stopping, 1)
        # Longer than service_down_time and the lease: every heartbeat
        # and every claim has run out when the cluster is back. Each
        # compute is still not ready in a run that began after that.
        timings, _tolerance = _claim_timings(self.CADENCE)
        long_enough = stopping + 2 + max(self.CADENCE['service_down_time'],
                                         timings.lease_time)
        for host in HOSTS:
            self.wait_log(host, 'Virt driver is not ready', long_enough,
                          bound + long_enough - time.time())
        # cn3 stays stopped (SIGSTOP) through the bootstrap: its first
        # heartbeat comes after cn1's and cn2's first refreshes, which must
        # count it alive, not take its nodes (and the other one with it,
        # when its heartbeat is not back yet).
        self.nova.pause_compute('cn3')
        restart = time.time()

        def counted_alive(_first):
            # NOTE(ironic-partition): as soon as the cluster serves again,
            # not once the other two nodes have joined it: their state
            # transfer can outlast the grace on a busy machine, and cn3
            # stopped past its grace is rightly taken over.
            for host in ('cn1', 'cn2'):
                line = self.wait_log(
                    host, r'Counting (?:\S+, )*cn3(?:, \S+)* alive for '
                    r'\d+\.\d s more: the membership database failed this '
                    r'service', restart, bound)
                self.figures.setdefault('grace', {})[host] = line.split(
                    'INFO ')[-1][:120]
            self.nova.resume_compute('cn3')

        try:
            self.mark('the cluster bootstrapped again, cn3 stopped')
            first = self.galera.restart_all(on_bootstrap=counted_alive)
            back = time.time()
        finally:
            self.nova.resume_compute('cn3')
        self.figures.update(bootstrapped_from='node%d' % first,
                            stop0=round(down - stopping, 1),
                            restart_all=round(back - restart, 1))
        # Reported nodes after the restart began: a ready claim round.
        self.figures['ready_after_restart'] = round(self.wait_ready(
            HOSTS, restart, bound, 'every compute to report after the '
            'restart'), 1)
        self.figures['first_report_after_fault'] = round(min(
            self.ready_at(h, restart) for h in HOSTS) - stopping, 1)
        self.wait_split(HOSTS, bound)
        self.figures['runs_during_fault'] = self.assert_fault_runs(
            stopping, back)
        self.assert_safe(since)
