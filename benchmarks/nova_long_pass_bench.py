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

"""Resource-tracker passes longer than the interval, and a long pause.

Our lease arithmetic assumes nova holds a reported node list for about one
``update_resources_interval``. When a pass itself takes several intervals
(hundreds of nodes per compute, a short interval), nova lists the nodes at
the start of a pass and works through them for the whole pass. This runs
the deployment of :mod:`nova_scale_bench` (a real Ironic with ``--nodes``
nodes, placement, nova-conductor, three nova-computes with our driver in
its default configuration) with ``update_resources_interval`` at
``--interval`` seconds, and:

1. measures the steady passes: their duration against the interval, and
   the gap between two pass starts;
2. SIGSTOPs ``cn3`` in the middle of a pass (once a third of its share
   has been reported in it) and keeps it stopped until ``cn1`` and ``cn2``
   have taken its share over (past its lease, which ran out during the
   pause);
3. SIGCONTs it: its pass goes on with the list it took before the pause;
   then waits for the three computes' complete report;
4. reports the node-seconds during which two computes held a node
   (:func:`ironic_partition.testing.lanes.novalane.double_held`), the moves and
   the damage (rows or providers deleted), and every node that
   ``get_available_resource`` refused, with or without a reason logged
   (nova's "Error updating resources for node" with the driver's reason in
   its traceback).

Run it like :mod:`nova_scale_bench`::

    F=.tox/functional
    PYTHONPATH=.:benchmarks PATH=$F/bin:$PATH flock /tmp/ipart-heavy.lock \\
        $F/bin/python benchmarks/nova_long_pass_bench.py --nodes 1000 \\
        --json /tmp/long-pass-1000.json
"""

import argparse
import collections
import json
import logging
import os
import re
import sys
import time

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.services import nova as harness_nova
import nova_lane_bench
import nova_logs
import nova_scale_bench

LOG = logging.getLogger('nova_long_pass_bench')

_ERROR_RE = re.compile(r'Error updating resources for node ([0-9a-f-]{36})')
#: The driver's reason for refusing a node it listed (nova_driver).
_REASON = 'may not be reported any more by this service'
_WRITTEN_RE = re.compile(r'(?:Final resource view: name=|Compute_service '
                         r'record updated for \S+?:)([0-9a-f-]{36})')


def refusals(path, since=0.0):
    """The nodes nova-compute failed to update, and whether it said why.

    :param path: the compute's log.
    :param since: only lines logged at or after this time.
    :returns: ``{'with_reason': [(time, node)], 'without_reason':
        [(time, node, the error)], 'elsewhere': [(time, node, the
        error)]}``: refused by ``get_available_resource`` with the
        driver's reason, refused by it without that reason, and failed
        elsewhere in nova's update (an RPC timeout to nova-conductor
        after a long pause, say), with nova's own error.
    """
    found = {'with_reason': [], 'without_reason': [], 'elsewhere': []}
    current = None

    def close():
        if current is None:
            return
        when, node, lines = current
        text = '\n'.join(lines)
        error = lines[0].split('.: ', 1)[-1][:300]
        if _REASON in text:
            found['with_reason'].append((when, node))
        elif 'in get_available_resource' in text:
            found['without_reason'].append((when, node, error))
        else:
            found['elsewhere'].append((when, node, error))

    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace').rstrip('\n')
            when = novalane.line_time(line)
            match = _ERROR_RE.search(line)
            if match and when is not None:
                close()
                current = (when, match.group(1), [line]) \
                    if when >= since else None
                continue
            if current is None:
                continue
            if when is not None and 'ERROR' not in line:
                # NOTE(ironic-partition): oslo.log stamps every line of a
                # traceback with ERROR; another line ends it.
                close()
                current = None
                continue
            current[2].append(line)
    close()
    return found


class LongPassRun(nova_scale_bench.Run):
    """Our driver with passes several intervals long, and a pause."""

    def __init__(self, ironic, free, args):
        super().__init__('ironic-partition', harness_nova.PARTITION_DRIVER,
                         ironic, free, args)
        self.cadence = {
            'update_resources_interval': args.interval,
            'periodic_fuzzy_delay': args.interval,
            'report_interval': None,
            'service_down_time': None,
        }
        self.figures['cadence'] = self.cadence

    def _shares(self):
        shares = collections.defaultdict(set)
        for node, host in novalane.ring_owners(
                nova_scale_bench.HOSTS, self.free).items():
            shares[host].add(node)
        return shares

    def _steps(self):
        figures = self.figures
        steps = figures['steps']
        nova = self.nova
        hosts = nova_scale_bench.HOSTS
        victim = nova_scale_bench.VICTIM
        figures['computes_started'] = t0 = time.time()
        self._mark('start-up')
        for host in hosts:
            nova.computes[host].start()
        took = self._wait(hosts, 'start-up')
        steps['start-up'] = None if took is None else time.time() - t0
        self.complete_at = time.time()
        if took is None:
            return
        self._steady()
        share = self._shares()[victim]
        log = nova.computes[victim].log_path
        after = time.time()
        paused = {}

        def mid_pass():
            runs = [p for p in nova_logs.read_passes(log)
                    if p.kind == 'periodic' and p.begin > after]
            if runs and len(runs[-1].nodes & share) >= len(share) // 3:
                paused['pass'] = runs[-1].as_dict()
                return True
            return False

        harness.wait_for(mid_pass, self.timeout, 'a third of a pass of %s'
                         % victim, interval=0.5, check=self._check)
        self._mark('SIGSTOP')
        figures['paused_at'] = time.time()
        nova.pause_compute(victim)
        figures['paused_pass'] = paused['pass']
        steps['SIGSTOP'] = self._wait(['cn1', 'cn2'],
                                      'takeover from the paused compute')
        figures['pause_s'] = time.time() - figures['paused_at']
        self._mark('SIGCONT')
        figures['resumed_at'] = time.time()
        nova.resume_compute(victim)
        steps['SIGCONT'] = self._wait(hosts, 'after SIGCONT')
        # NOTE(ironic-partition): one more pass of each compute after the
        # complete report, so that what the resumed pass did is in the
        # logs and the holds it left are closed.
        self.complete_at = time.time()
        self._steady()

    def _analyse(self):
        super()._analyse()
        figures = self.figures
        nova = self.nova
        if nova is None or not getattr(nova, 'computes', None):
            return
        passes = {h: nova_logs.read_passes(c.log_path)
                  for h, c in nova.computes.items()}
        interval = self.cadence['update_resources_interval']
        durations = {}
        gaps = {}
        for host, runs in passes.items():
            periodic = [p for p in runs if p.kind == 'periodic' and
                        p.end is not None and not p.not_ready]
            durations[host] = [round(p.end - p.begin, 1) for p in periodic]
            starts = [p.begin for p in runs if p.kind == 'periodic']
            gaps[host] = [round(b - a, 1) for a, b in zip(starts,
                                                          starts[1:])]
        figures['pass_durations_s'] = durations
        figures['pass_start_gaps_s'] = gaps
        every = [d for values in durations.values() for d in values]
        if every:
            figures['pass_s_median'] = sorted(every)[len(every) // 2]
            figures['pass_s_max'] = max(every)
            figures['pass_over_interval_median'] = (
                figures['pass_s_median'] / interval)
        paths = {h: c.log_path for h, c in nova.computes.items()}
        read_logs(figures, paths)
        split_at_resume(figures, paths)


def read_logs(figures, paths):
    """Add the refusals and the fence to the figures, from the logs.

    :param figures: one run's figures.
    :param paths: ``{host: its nova-compute log}``.
    :returns: None
    """
    since = figures.get('computes_started', 0.0)
    figures['refusals'] = {}
    for host, path in paths.items():
        found = refusals(path, since)
        figures['refusals'][host] = {
            'with_reason': len(found['with_reason']),
            'without_reason': len(found['without_reason']),
            'without_reason_examples': found['without_reason'][:5],
            'elsewhere': len(found['elsewhere']),
            'elsewhere_examples': found['elsewhere'][:5]}
    resumed = figures.get('resumed_at')
    if resumed:
        # NOTE(ironic-partition): what the paused pass did with the rest
        # of the list it took before the pause.
        after = [when for when, _node in refusals(
            paths[nova_scale_bench.VICTIM], resumed)['with_reason']]
        figures['refused_after_resume'] = len(after)
        figures['first_refusal_after_resume_s'] = (
            min(after) - resumed if after else None)
        figures['written_after_resume'] = sorted(written_after(
            paths[nova_scale_bench.VICTIM], resumed))


def split_at_resume(figures, paths, now=None):
    """Split the double-held node-seconds at the paused compute's SIGCONT.

    From SIGCONT to the first run it begins after it (until that run got
    its list), nova's view of the paused compute still holds what it
    reported before the stop while its pass refuses the rest of its
    list: the window no lease closes.
    Adds ``double_held_resume_window`` (inside it) and
    ``double_held_elsewhere`` (everything else: the failure).

    :param figures: one run's figures (``resumed_at``).
    :param paths: ``{host: its nova-compute log}``.
    :param now: the end of observation.
    :returns: None
    """
    events = {h: novalane.parse_compute_log(p) for h, p in paths.items()}
    _seconds, overlaps = novalane.double_held(
        {h: novalane.holds(found, now=now) for h, found in events.items()})
    resumed = figures.get('resumed_at') or float('inf')
    victim = events[nova_scale_bench.VICTIM]
    first_run = min([e.time for e in victim
                     if e.kind == 'run' and e.time > resumed] or
                    [float('inf')])
    # NOTE(ironic-partition): until that run got its list.
    listed = min([e.time for e in victim
                  if e.kind in ('listed', 'listed_none', 'not_ready') and
                  e.time >= first_run] or [first_run])
    inside = outside = 0.0
    for spans in overlaps.values():
        for start, end, hosts in spans:
            seconds = (end - start) * (len(hosts) - 1)
            if resumed <= start and end <= listed:
                inside += seconds
            else:
                outside += seconds
    figures['double_held_resume_window'] = inside
    figures['double_held_elsewhere'] = outside
    figures['first_run_after_resume_s'] = first_run - resumed


def _last_time(paths):
    """The time of the last stamped line of some logs."""
    last = 0.0
    for path in paths:
        with open(path, errors='replace') as stream:
            for line in stream:
                last = max(last, novalane.line_time(line) or 0.0)
    return last


def written_after(path, resumed):
    """The nodes the resumed pass still wrote after SIGCONT.

    nova checks a node with ``get_available_resource`` and then saves it
    and updates placement; a process stopped in between finishes those
    writes after SIGCONT, whatever its claim (the one race the check
    cannot close).

    :param path: the paused compute's log.
    :param resumed: the time of SIGCONT.
    :returns: the set of nodes with a "Final resource view" or
        "Compute_service record updated" line logged after ``resumed``
        and before the compute's next run began.
    """
    nodes = set()
    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace')
            when = novalane.line_time(line)
            if when is None or when < resumed:
                continue
            if nova_logs.RUN_RE.search(line):
                break
            match = _WRITTEN_RE.search(line)
            if match:
                nodes.add(match.group(1))
    return nodes


def table_rows(result):
    """The figures of one run, as (measure, value) rows."""
    fmt = nova_lane_bench._fmt
    steps = result.get('steps', {})
    refused = result.get('refusals', {})
    by_step = result.get('double_held_by_step', {})
    return [
        ('update_resources_interval (s)',
         result['cadence']['update_resources_interval']),
        ('start-up to a complete report (s)', steps.get('start-up')),
        ('steady pass, median / longest (s)', '%s / %s' % (
            fmt(result.get('pass_s_median')), fmt(result.get('pass_s_max')))),
        ('median pass / interval', result.get('pass_over_interval_median')),
        ('pass of cn3 when paused (nodes reported)', (
            result.get('paused_pass') or {}).get('nodes')),
        ('pause (SIGSTOP to SIGCONT, s)', result.get('pause_s')),
        ('takeover by cn1, cn2 during the pause (s)', steps.get('SIGSTOP')),
        ('nodes cn3 refused after SIGCONT (first after, s)', '%s (%s)' % (
            result.get('refused_after_resume'),
            fmt(result.get('first_refusal_after_resume_s')))),
        ('nodes cn3 still wrote after SIGCONT (check before the stop)',
         len(result.get('written_after_resume') or ())),
        ('complete report over 3 after SIGCONT (s)', steps.get('SIGCONT')),
        ('node-s double-held: start-up / pause / resume', '%s / %s / %s' % (
            fmt(by_step.get('start-up')), fmt(by_step.get('SIGSTOP')),
            fmt(by_step.get('SIGCONT')))),
        ('... of which from SIGCONT to cn3\'s next run (s after SIGCONT)',
         '%s (%s)' % (fmt(result.get('double_held_resume_window')),
                      fmt(result.get('first_run_after_resume_s')))),
        ('... anywhere else', result.get('double_held_elsewhere')),
        ('nodes refused by get_available_resource, with reason', '/'.join(
            str(refused.get(h, {}).get('with_reason'))
            for h in nova_scale_bench.HOSTS)),
        ('... without a reason', '/'.join(
            str(refused.get(h, {}).get('without_reason'))
            for h in nova_scale_bench.HOSTS)),
        ("nodes failed elsewhere in nova's update (nova's error)", '/'.join(
            str(refused.get(h, {}).get('elsewhere'))
            for h in nova_scale_bench.HOSTS)),
        ('moves', result.get('moves')),
        ('rows deleted / re-created, providers lost', '%s / %s / %s' % (
            result.get('deleted_rows'), result.get('recreated_rows'),
            result.get('providers_lost'))),
        ('wall time (s)', result.get('wall_s')),
    ]


def print_table(result, out=sys.stdout):
    """Print one run's figures as an RST table."""
    nova_lane_bench.write_rst_table(
        ['measure', 'value'],
        [[name, nova_lane_bench._fmt(value)]
         for name, value in table_rows(result)], out)


def main(argv=None):
    """Run the scenario and print the table.

    :param argv: command-line arguments.
    :returns: 0 when no node was double-held outside the window from
        SIGCONT to the paused compute's next run and every refusal had its
        reason logged, else 1.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=1000)
    parser.add_argument('--in-use', type=float, default=0.05)
    parser.add_argument('--interval', type=int, default=5,
                        help='update_resources_interval (s)')
    parser.add_argument('--timeout', type=int, default=900,
                        help='seconds allowed for each wait')
    parser.add_argument('--poll-interval', type=float, default=2.0)
    parser.add_argument('--placement-threads', type=int, default=None)
    parser.add_argument('--log-dir', help='keep the services\' logs here')
    parser.add_argument('--json', help='also write the figures here')
    parser.add_argument('--table-from', metavar='JSON',
                        help='print the table of an earlier --json file')
    args = parser.parse_args(argv)
    args.profile = False
    args.cadence = 'default'
    logging.basicConfig(level=logging.WARNING)
    if args.table_from:
        with open(args.table_from) as stream:
            result = json.load(stream)['result']
        if args.log_dir:
            # NOTE(ironic-partition): read the kept logs again, with this
            # version's reading of them.
            paths = {h: os.path.join(
                args.log_dir, 'ironic-partition-%d' % args.nodes,
                'nova-compute-%s.log' % h) for h in nova_scale_bench.HOSTS}
            end = _last_time(paths.values())
            read_logs(result, paths)
            nova_lane_bench.hold_figures(result, paths, now=end)
            split_at_resume(result, paths, now=end)
    else:
        result = run(args)
    print_table(result)
    refused = result.get('refusals') or {}
    clean = (result.get('double_held_elsewhere') == 0 and
             not result.get('error') and
             not any(r.get('without_reason') for r in refused.values()))
    return 0 if clean else 1


def run(args):
    """Deploy, run the scenario, tear down; return the figures."""
    config = {'nodes': args.nodes, 'interval': args.interval,
              'load_start': os.getloadavg(), 'cpus': os.cpu_count()}
    ironic = harness.IronicFixture(db_backend='postgresql',
                                   conductor_groups=[nova_scale_bench.GROUP])
    try:
        ironic.setUp()
        nodes = harness.bulk_enroll(ironic.config_file, args.nodes,
                                    [nova_scale_bench.GROUP],
                                    provision_state='available')
        uuids = sorted(n['uuid'] for n in nodes)
        in_use, _took = nova_scale_bench.mark_in_use(ironic, uuids,
                                                     args.in_use)
        config['in_use_nodes'] = len(in_use)
        used = set(in_use)
        free = [u for u in uuids if u not in used]
        result = LongPassRun(ironic, free, args).run()
    finally:
        ironic.cleanUp()
    config['load_end'] = os.getloadavg()
    result['config'] = config
    print('%(nodes)d nodes (%(in_use_nodes)d with an instance_uuid), '
          'computes cn1-cn3, update_resources_interval %(interval)d s, '
          'load %(load_start)s -> %(load_end)s' % config)
    if args.json:
        with open(args.json, 'w') as stream:
            json.dump({'result': result}, stream, indent=2, default=str)
    return result


if __name__ == '__main__':
    sys.exit(main())
