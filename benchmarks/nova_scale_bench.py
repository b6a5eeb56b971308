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

"""nova-compute at scale: our driver against nova 34's, in real nova.

One real Ironic (fake hardware, noauth, one conductor group ``rack1``)
gets ``--nodes`` nodes bulk-enrolled as ``available``; a fraction of them
(``--in-use``, 5 % by default) get an ``instance_uuid`` through the API,
as nova's atomic reservation writes it (no instance in nova: neither
driver reports them). Then, for each driver in turn, on the same Ironic,
placement, nova-conductor and three nova-compute services
(:class:`ironic_partition.testing.NovaFixture`, ``partition_key`` rack1,
``peer_list`` the three hosts) run with nova's default cadence (60 s
periodic, ``--cadence short`` for the harness's 4 s one), and this
measures:

1. start-up: from the processes' start to a complete report (every
   instance-less node's compute node row on its ring owner, with its
   resource provider), and per compute to the end of its first
   resource-tracker pass that reports its whole share;
2. a steady pass of each compute (the first that begins after the
   complete report): its duration (from oslo.service's "Running periodic
   task ComputeManager.update_available_resource" to its last "Final
   resource view" or "Compute_service record updated" line), its
   placement calls (placement's request log lines in that window that
   name one of the pass's nodes: placement's global request id is not
   the one the compute logs) and the Ironic API calls logged during it
   (Ironic gets no request id from either driver: every compute's calls
   in that window count; overlapping passes of other computes are
   reported); and the calls a minute, with their paths, from the complete
   report to the SIGKILL;
3. failover: SIGKILL of cn3, time to a complete report over cn1 and cn2,
   rows and providers deleted or re-created, node-seconds held by two
   computes (:func:`ironic_partition.testing.lanes.novalane.double_held`);
4. restart of cn3: time to a complete report over the three, moves;
5. VmRSS of each nova-compute and of placement (process groups) at the
   end of start-up and after the steady passes, and the CPU seconds
   placement, nova-conductor and the three computes used in start-up.

``--workers N`` (repeatable) runs each driver once per value of nova 34's
``[compute] update_resources_max_workers`` (parallel resource tracking),
all on the same Ironic: ``--workers 1 --workers 4 --workers 8``.

Unless ``--no-profile``, py-spy (``pip install py-spy``; it needs
ptrace) samples cn1 during start-up and during its steady pass, twice:
every thread (wall time, ``--idle``) and threads on a CPU only. The
samples are grouped (placement, conductor RPC, Ironic API, AMQP threads,
claims database, logging, our driver, nova's Ironic driver, resource
tracker; threads waiting for the resource tracker's lock, and other
waiting threads, apart) and the top frames listed.
``--table-from`` prints the table of an earlier ``--json`` file.

Run it inside the functional environment (the SQL servers and RabbitMQ of
tools/test-setup.sh), holding the heavy lock::

    F=.tox/functional
    PYTHONPATH=. PATH=$F/bin:$PATH flock /tmp/ipart-heavy.lock \\
        $F/bin/python benchmarks/nova_scale_bench.py --nodes 1000 \\
        --json /tmp/scale-1000.json
"""

import argparse
import collections
from concurrent import futures
import json
import logging
import os
import sys
import time
import uuid

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.services import nova as harness_nova
import nova_lane_bench
import nova_logs
import nova_scale_report
import pyspy_profile

LOG = logging.getLogger('nova_scale_bench')
_top = pyspy_profile.top

HOSTS = ['cn1', 'cn2', 'cn3']
GROUP = 'rack1'
VICTIM = 'cn3'
PROFILED = 'cn1'
DRIVERS = [('ironic-partition', harness_nova.PARTITION_DRIVER),
           ('nova 34', harness_nova.NOVA_DRIVER)]
CADENCES = {'default': harness_nova.NOVA_DEFAULT_CADENCE,
            'short': harness_nova.SHORT_CADENCE}


def cpu_seconds(pids):
    """CPU time (user and system) of processes, from ``/proc``.

    :param pids: process ids; those gone are left out.
    :returns: seconds.
    """
    ticks = os.sysconf('SC_CLK_TCK')
    total = 0
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as stream:
                fields = stream.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        # NOTE(ironic-partition): utime and stime are fields 14 and 15 of
        # proc(5), the 12th and 13th after the command's closing ')'.
        total += int(fields[11]) + int(fields[12])
    return total / float(ticks)


def rss_mib(service):
    """Resident memory of a service's process group.

    :param service: a harness Service.
    :returns: MiB, or None when nothing runs.
    """
    pids = service.group_pids()
    return novalane.rss_bytes(pids) / 2 ** 20 if pids else None


class Run(object):
    """One driver's deployment over the shared Ironic.

    :param label: the driver's name in the table.
    :param driver: nova's ``compute_driver``.
    :param ironic: the running IronicFixture.
    :param free: the instance-less node UUIDs.
    :param args: the parsed command line.
    """

    def __init__(self, label, driver, ironic, free, args, workers=1):
        self.workers = workers
        if len(args.workers or ()) > 1 or workers != 1:
            label = '%s, %d worker%s' % (label, workers,
                                         '' if workers == 1 else 's')
        self.label = label
        self.driver = driver
        self.ironic = ironic
        self.free = free
        self.args = args
        self.timeout = args.timeout
        self.cadence = CADENCES[args.cadence]
        self.figures = {'driver': label, 'compute_driver': driver,
                        'update_resources_max_workers': workers,
                        'steps': {}, 'marks': []}
        self.down = set()
        self.nova = None
        self.recorder = None

    def _check(self):
        self.nova.check_services()
        for host, compute in self.nova.computes.items():
            if host not in self.down and not compute.running():
                raise harness.HarnessError('nova-compute %s died: %s' % (
                    host, compute.process.returncode))

    def _wait(self, live, what):
        start = time.time()
        try:
            harness.wait_for(
                lambda: nova_lane_bench._complete(self.recorder, live,
                                                  self.free),
                self.timeout, 'a complete report over %s (%s)' % (
                    live, what), interval=1, check=self._check)
        except harness.HarnessError as exc:
            LOG.warning('%s: %s', self.label, exc)
            return None
        return time.time() - start

    def _mark(self, label):
        self.figures['marks'].append((time.time(), label))

    def run(self):
        """Run every step; tear down whatever happens.

        :returns: the figures.
        """
        figures = self.figures
        figures['load_start'] = os.getloadavg()
        started = time.time()
        self.nova = harness_nova.NovaFixture(
            self.ironic.endpoint, HOSTS, partition_key=GROUP,
            driver=self.driver, cadence=self.cadence,
            start_computes=False,
            placement_threads=self.args.placement_threads,
            extra_config={'compute': {
                'update_resources_max_workers': self.workers}})
        try:
            self.nova.setUp()
            figures['partition_options'] = self.nova.compute_config(
                HOSTS[0]).get('ironic_partition')
            figures['claims_backend'] = (
                self.nova.membership_url.split(':')[0]
                if self.driver == harness_nova.PARTITION_DRIVER else None)
            self.recorder = novalane.Recorder(
                self.nova.cell_url, self.nova.placement_endpoint,
                interval=self.args.poll_interval)
            self.recorder.start()
            self._steps()
        except Exception:
            LOG.exception('%s: the run failed', self.label)
            figures['error'] = str(sys.exc_info()[1])[:2000]
        finally:
            try:
                self._analyse()
            except Exception:
                LOG.exception('%s: analysis failed', self.label)
            if self.args.log_dir and self.nova is not None:
                self._keep_logs()
            if self.recorder is not None:
                self.recorder.stop()
            try:
                self.nova.cleanUp()
            except Exception:
                LOG.exception('%s: cleanup failed', self.label)
            figures['load_end'] = os.getloadavg()
            figures['wall_s'] = time.time() - started
        return figures

    def _profiler(self, phase):
        path = os.path.join(self.args.profile_dir, 'pyspy-%s-%s-%s' % (
            self.label.replace(' ', '_'), self.args.nodes, phase))
        return pyspy_profile.Profilers(
            self.nova.computes[PROFILED].process.pid, path)

    def _steps(self):
        figures = self.figures
        steps = figures['steps']
        nova = self.nova
        figures['computes_started'] = t0 = time.time()
        self._mark('start-up')
        cpu_before = self._cpu()
        for host in HOSTS:
            nova.computes[host].start()
        profile = self._profiler('startup') if self.args.profile else None
        if profile:
            profile.start()
        took = self._wait(HOSTS, 'start-up')
        steps['start-up'] = None if took is None else time.time() - t0
        self.complete_at = time.time()
        cpu_after = self._cpu()
        figures['startup_cpu_s'] = {
            name: cpu_after[name] - cpu_before.get(name, 0.0)
            for name in cpu_after}
        if profile:
            profile.stop()
            figures['profile_startup'] = profile.summary()
        figures['rss_after_startup'] = self._rss()
        if took is None:
            return
        self._steady()
        figures['rss_after_steady'] = self._rss()

        self._mark('SIGKILL')
        self.down.add(VICTIM)
        kill_at = time.time()
        nova.kill_compute(VICTIM)
        moves_before = len(self.recorder.moves)
        steps['SIGKILL'] = self._wait(['cn1', 'cn2'], 'failover')
        figures['failover_moves'] = len(self.recorder.moves) - moves_before
        figures['kill_at'] = kill_at

        self._mark('restart')
        self.down.discard(VICTIM)
        moves_before = len(self.recorder.moves)
        nova.start_compute(VICTIM)
        steps['restart'] = self._wait(HOSTS, 'restart')
        figures['restart_moves'] = len(self.recorder.moves) - moves_before

    def _cpu(self):
        nova = self.nova
        return {
            'placement': cpu_seconds(nova.placement.group_pids()),
            'conductor': cpu_seconds(nova.conductor.group_pids()),
            'computes': cpu_seconds([pid for c in nova.computes.values()
                                     for pid in c.group_pids()]),
        }

    def _rss(self):
        rss = {host: rss_mib(c) for host, c in self.nova.computes.items()}
        rss['placement'] = rss_mib(self.nova.placement)
        return rss

    def _steady(self):
        """Wait for each compute's first full pass after the report."""
        nova = self.nova
        after = self.complete_at
        shares = collections.defaultdict(set)
        for node, host in novalane.ring_owners(HOSTS, self.free).items():
            shares[host].add(node)
        found = {}
        profile = None

        def steady_pass(host):
            for one in nova_logs.read_passes(nova.computes[host].log_path):
                if one.kind == 'periodic' and one.begin > after:
                    return one
            return None

        def done():
            nonlocal profile
            for host in HOSTS:
                one = steady_pass(host)
                if one is None:
                    continue
                if (host == PROFILED and self.args.profile and
                        profile is None):
                    profile = self._profiler('steady')
                    profile.start()
                    self.figures['profile_steady_late_s'] = (
                        time.time() - one.begin)
                if one.complete(shares[host]) or one.not_ready:
                    found[host] = one
                    if host == PROFILED and profile is not None and (
                            profile.stopped is None):
                        profile.stop()
            return len(found) == len(HOSTS)

        try:
            harness.wait_for(done, self.timeout, 'steady passes',
                             interval=0.5, check=self._check)
        except harness.HarnessError as exc:
            LOG.warning('%s: %s', self.label, exc)
        finally:
            if profile is not None:
                profile.stop()
                self.figures['profile_steady'] = profile.summary()
        self.steady = found

    def _analyse(self):
        figures = self.figures
        nova = self.nova
        if nova is None or not getattr(nova, 'computes', None):
            return
        shares = collections.defaultdict(set)
        for node, host in novalane.ring_owners(HOSTS, self.free).items():
            shares[host].add(node)
        figures['shares'] = {h: len(shares[h]) for h in HOSTS}
        passes = {h: nova_logs.read_passes(c.log_path)
                  for h, c in nova.computes.items()}
        # NOTE(ironic-partition): start-up per compute: the end of its
        # first pass that reports its whole share.
        first = {}
        for host in HOSTS:
            start = [p for p in passes[host] if p.kind == 'startup']
            if not start:
                continue
            t0 = start[0].begin
            full = [p for p in passes[host]
                    if p.end is not None and p.complete(shares[host])]
            first[host] = {
                'startup_pass': start[0].as_dict(),
                'first_full_pass_end_s': (full[0].end - t0) if full
                else None,
                'passes_before_full': (passes[host].index(full[0])
                                       if full else None),
            }
        figures['startup_per_compute'] = first
        placement = ironic = []
        if os.path.exists(nova.placement.log_path):
            placement = nova_logs.placement_requests(nova.placement.log_path)
        if os.path.exists(self.ironic.api.log_path):
            ironic = nova_logs.ironic_requests(self.ironic.api.log_path)
        steady = {}
        for host, one in sorted(getattr(self, 'steady', {}).items()):
            entry = one.as_dict()
            if one.end is not None:
                # NOTE(ironic-partition): placement's global request id
                # is not the request id the compute logs; a request is
                # this pass's when it is in the window and names one of
                # the pass's nodes (compute node UUID = Ironic node
                # UUID = provider UUID).
                window = [r for r in placement
                          if one.begin <= r[0] <= one.end]
                mine = [r for r in window if r[4] & one.nodes]
                entry['placement_calls_in_window'] = len(window)
                in_window = [r for r in ironic
                             if one.begin <= r[0] <= one.end]
                entry['placement_calls'] = len(mine)
                entry['placement_by_path'] = _top(collections.Counter(
                    '%s %s' % (r[2], r[3]) for r in mine))
                entry['ironic_calls_in_window'] = len(in_window)
                entry['ironic_by_path'] = _top(collections.Counter(
                    '%s %s' % (r[1], r[2]) for r in in_window))
                entry['overlapping_passes'] = sorted(
                    other for other in HOSTS if other != host and any(
                        p.end is not None and p.begin < one.end and
                        p.end > one.begin for p in passes[other]))
            steady[host] = entry
        figures['steady'] = steady
        figures['takeover_passes'] = takeover_passes(
            passes, shares, figures.get('kill_at'))
        begin = getattr(self, 'complete_at', None)
        t0 = figures.get('computes_started')
        if begin and t0:
            figures['startup_placement_calls'] = len(
                [r for r in placement if t0 <= r[0] <= begin])
            figures['startup_ironic_calls'] = len(
                [r for r in ironic if t0 <= r[0] <= begin])
            figures['startup_ironic_by_path'] = _top(collections.Counter(
                '%s %s' % (r[1], r[2]) for r in ironic
                if t0 <= r[0] <= begin))
        # NOTE(ironic-partition): calls a minute in steady state, over
        # the three computes: from the complete report to the SIGKILL.
        end = figures.get('kill_at')
        if begin and end and end > begin:
            minutes = (end - begin) / 60.0
            figures['steady_window_s'] = end - begin
            figures['placement_calls_per_min'] = len(
                [r for r in placement if begin <= r[0] <= end]) / minutes
            figures['ironic_calls_per_min'] = len(
                [r for r in ironic if begin <= r[0] <= end]) / minutes
            figures['steady_ironic_by_path'] = _top(collections.Counter(
                '%s %s' % (r[1], r[2]) for r in ironic
                if begin <= r[0] <= end))
            figures['steady_placement_by_path'] = _top(collections.Counter(
                '%s %s' % (r[2], r[3]) for r in placement
                if begin <= r[0] <= end))
        if self.recorder is not None:
            nova_lane_bench._measure(figures, nova, self.recorder,
                                     figures.get('computes_started',
                                                 time.time()))

    def _keep_logs(self):
        nova_logs.keep_logs(os.path.join(self.args.log_dir, '%s-%d' % (
            self.label.replace(' ', '_'), self.args.nodes)), self.nova,
            self.ironic)


def takeover_passes(passes, shares, kill_at):
    """Each survivor's first pass that reported the killed one's nodes.

    :param passes: ``{host: [Pass]}``.
    :param shares: ``{host: ring share}`` over the three computes.
    :param kill_at: the time of the SIGKILL, or None.
    :returns: ``{host: Pass.as_dict() plus taken (the victim's nodes in
        it) and began_after_kill_s}``, for the formula of the admin guide.
    """
    found = {}
    if not kill_at:
        return found
    victim = shares[VICTIM]
    for host, runs in passes.items():
        if host == VICTIM:
            continue
        for one in runs:
            if one.begin > kill_at and one.nodes & victim:
                found[host] = dict(one.as_dict(),
                                   taken=len(one.nodes & victim),
                                   began_after_kill_s=one.begin - kill_at)
                break
    return found


def mark_in_use(ironic, nodes, fraction, workers=4):
    """Give a fraction of the nodes an ``instance_uuid``, through the API.

    :param ironic: the IronicFixture.
    :param nodes: sorted node UUIDs.
    :param fraction: the share of nodes to mark.
    :param workers: concurrent requests.
    :returns: ``(marked UUIDs, seconds taken)``.
    """
    count = int(len(nodes) * fraction)
    if not count:
        return [], 0.0
    step = len(nodes) / float(count)
    chosen = [nodes[int(i * step)] for i in range(count)]
    conn = harness.connect(ironic.endpoint)
    start = time.time()
    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda n: harness.set_instance_uuid(
            conn, n, str(uuid.uuid4())), chosen))
    return chosen, time.time() - start


def main(argv=None):
    """Run the benchmark and print the table.

    :param argv: command-line arguments.
    :returns: the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=1000)
    parser.add_argument('--in-use', type=float, default=0.05,
                        help='share of nodes given an instance_uuid')
    parser.add_argument('--cadence', choices=sorted(CADENCES),
                        default='default',
                        help="nova's default (60 s) or the harness's "
                        "short one (4 s)")
    parser.add_argument('--timeout', type=int, default=600,
                        help='seconds allowed for each wait')
    parser.add_argument('--poll-interval', type=float, default=2.0,
                        help="seconds between reads of nova's cell "
                        "database and placement")
    parser.add_argument('--placement-threads', type=int, default=None)
    parser.add_argument('--no-profile', dest='profile',
                        action='store_false')
    parser.add_argument('--profile-dir', default=None,
                        help='where the py-spy files go (kept)')
    parser.add_argument('--log-dir', help='keep the services\' logs here')
    parser.add_argument('--json', help='also write the figures here')
    parser.add_argument('--workers', action='append', type=int,
                        help="[compute] update_resources_max_workers; "
                        "repeat to run each driver with each value "
                        "(default: 1)")
    parser.add_argument('--driver', action='append',
                        choices=[d[0] for d in DRIVERS],
                        help='run only these drivers')
    parser.add_argument('--table-from', metavar='JSON',
                        help='print the table of an earlier --json file '
                        'and exit')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.table_from:
        with open(args.table_from) as stream:
            earlier = json.load(stream)
        nova_scale_report.print_table(earlier['results'], HOSTS)
        nova_scale_report.print_profile(earlier['results'], PROFILED)
        return 0
    if args.profile_dir is None:
        args.profile_dir = args.log_dir or os.getcwd()
    os.makedirs(args.profile_dir, exist_ok=True)
    config = {'nodes': args.nodes, 'computes': HOSTS,
              'conductor_group': GROUP, 'cadence': args.cadence,
              'cadence_options': CADENCES[args.cadence],
              'claim_timings': harness_nova.claim_timings(
                  CADENCES[args.cadence])._asdict(),
              'load_start': os.getloadavg(), 'cpus': os.cpu_count()}
    ironic = harness.IronicFixture(db_backend='postgresql',
                                   conductor_groups=[GROUP])
    results = []
    try:
        ironic.setUp()
        nodes = harness.bulk_enroll(ironic.config_file, args.nodes, [GROUP],
                                    provision_state='available')
        uuids = sorted(n['uuid'] for n in nodes)
        in_use, took = mark_in_use(ironic, uuids, args.in_use)
        config['in_use_nodes'] = len(in_use)
        config['in_use_api_s'] = took
        used = set(in_use)
        free = [u for u in uuids if u not in used]
        for workers in args.workers or [1]:
            for label, driver in DRIVERS:
                if args.driver and label not in args.driver:
                    continue
                results.append(Run(label, driver, ironic, free, args,
                                   workers=workers).run())
                # NOTE(ironic-partition): each run's figures are kept as
                # soon as it ends: a long invocation stopped later still
                # leaves the runs it finished.
                _write_json(args.json, config, results)
    finally:
        ironic.cleanUp()
    config['load_end'] = os.getloadavg()
    print('%(nodes)d nodes (%(in_use_nodes)d with an instance_uuid, set '
          'through the API in %(in_use_api_s).1f s), computes cn1-cn3, '
          'cadence %(cadence)s' % config)
    print('our claims (automatic): lease_time %(lease_time).1f s, '
          'fencing_margin %(fencing_margin).1f s, renewed every '
          '%(renew_interval).1f s' % config['claim_timings'])
    for result in results:
        if result.get('claims_backend'):
            print('%s: claims database %s; [ironic_partition] %s' % (
                result['driver'], result.get('claims_backend'),
                result.get('partition_options')))
    if results:
        nova_scale_report.print_table(results, HOSTS)
        nova_scale_report.print_profile(results, PROFILED)
    _write_json(args.json, config, results)
    return 0


def _write_json(path, config, results):
    if path:
        with open(path, 'w') as stream:
            json.dump({'config': config, 'results': results}, stream,
                      indent=2, default=str)


if __name__ == '__main__':
    sys.exit(main())
