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

"""Side by side: our driver against nova 34's IronicDriver, in real nova.

For each driver, on the same real Ironic (same nodes), one deployment of
placement, nova-conductor and three nova-compute services
(:class:`ironic_partition.testing.NovaFixture`) runs the same scenarios:
start-up, SIGKILL of one compute (and its restart), a rolling restart,
SIGSTOP longer than the lease then SIGCONT, and a SIGHUP that moves one
compute to another conductor group. Measured from outside (nova's cell
database, placement and the resource-tracker log lines):

* double-held node-seconds (two computes holding one node);
* moves (a compute node row changing host);
* deleted or recreated compute node rows, vanished or re-created
  resource providers;
* time to a complete report (every node on its ring owner, with its
  provider) after each step.

Run it inside the functional environment (it needs the SQL servers and
RabbitMQ of tools/test-setup.sh)::

    flock /tmp/ipart-heavy.lock .tox/functional/bin/python \\
        benchmarks/nova_lane_bench.py --nodes 36
"""

import argparse
import json
import logging
import os
import sys
import time

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.services import nova as harness_nova

LOG = logging.getLogger('nova_lane_bench')

HOSTS = ['cn1', 'cn2', 'cn3']
DRIVERS = [('ironic-partition', harness_nova.PARTITION_DRIVER),
           ('nova 34', harness_nova.NOVA_DRIVER)]


def _complete(recorder, live, group):
    owners = novalane.ring_owners(live, group)
    hosts_of = recorder.hosts_of()
    providers = getattr(recorder, 'current_providers', {})
    return all([h.lower() for h in hosts_of.get(n, [])] == [owners[n]] and
               n in providers for n in group)


def _wait(recorder, live, group, timeout, nova):
    start = time.time()
    try:
        harness.wait_for(lambda: _complete(recorder, live, group), timeout,
                         'a complete report over %s' % live, interval=0.5,
                         check=nova.check_services)
    except harness.HarnessError:
        return None
    return time.time() - start


def run_driver(label, driver, ironic, group, other, timeout, sighup=False):
    """Run every scenario with one driver.

    :param label: the driver's name in the table.
    :param driver: nova's ``compute_driver``.
    :param ironic: the running IronicFixture.
    :param group: the rack1 node UUIDs.
    :param other: the rack2 node UUIDs.
    :param timeout: seconds allowed for each complete report.
    :param sighup: also switch a compute's group by SIGHUP (nova 34's
        nova-compute hangs after SIGHUP in its threading mode, with
        either driver).
    :returns: a dict of figures.
    """
    started = time.time()
    nova = harness_nova.NovaFixture(ironic.endpoint, HOSTS,
                                    partition_key='rack1', driver=driver,
                                    partition_options={
                                        'membership_stale_timeout': 20})
    nova.setUp()
    figures = {'driver': label, 'steps': {}}
    # NOTE(ironic-partition): when each step began, to say in which step
    # double holds began.
    marks = figures['marks'] = [(started, 'start-up')]
    recorder = None
    try:
        recorder = novalane.Recorder(nova.cell_url, nova.placement_endpoint)
        recorder.start()
        steps = figures['steps']
        took = _wait(recorder, HOSTS, group, timeout, nova)
        steps['start-up'] = None if took is None else (
            time.time() - started)
        figures['rss_mib'] = novalane.rss_bytes(nova.all_pids()) / 2 ** 20

        marks.append((time.time(), 'SIGKILL'))
        nova.kill_compute('cn3')
        steps['SIGKILL'] = _wait(recorder, ['cn1', 'cn2'], group, timeout,
                                 nova)
        marks.append((time.time(), 'restart after kill'))
        nova.start_compute('cn3')
        steps['restart after kill'] = _wait(recorder, HOSTS, group,
                                            timeout, nova)

        rolling = time.time()
        marks.append((rolling, 'rolling restart'))
        for host in HOSTS:
            nova.restart_compute(host)
            _wait(recorder, HOSTS, group, timeout, nova)
        steps['rolling restart'] = time.time() - rolling

        marks.append((time.time(), 'SIGSTOP'))
        nova.pause_compute('cn1')
        steps['SIGSTOP'] = _wait(recorder, ['cn2', 'cn3'], group, timeout,
                                 nova)
        marks.append((time.time(), 'SIGCONT'))
        nova.resume_compute('cn1')
        steps['SIGCONT'] = _wait(recorder, HOSTS, group, timeout, nova)

        if not sighup:
            return figures
        nova.edit_compute_config('cn3', {'ironic': {
            'partition_key': 'rack2', 'peer_list': 'cn3'}})
        for host in ('cn1', 'cn2'):
            nova.edit_compute_config(host, {'ironic': {
                'peer_list': 'cn1,cn2'}})
        marks.append((time.time(), 'SIGHUP group switch'))
        for host in HOSTS:
            nova.sighup_compute(host)
        steps['SIGHUP group switch'] = _wait(
            recorder, ['cn1', 'cn2'], group, timeout, nova)
    finally:
        _measure(figures, nova, recorder, started)
        if recorder is not None:
            recorder.stop()
        nova.cleanUp()
    return figures


def hold_figures(figures, paths, now=None):
    """Add the double-held node-seconds, in all and by step, from logs.

    :param figures: the run's figures, with its ``marks`` (time, step).
    :param paths: ``{host: its nova-compute log}``.
    :param now: the end of observation (``time.time()`` by default).
    :returns: None
    """
    per = {host: novalane.holds(novalane.parse_compute_log(path), now=now)
           for host, path in paths.items()}
    seconds, overlaps = novalane.double_held(per)
    figures['double_held_node_seconds'] = seconds
    figures['double_held_nodes'] = len(overlaps)
    by_step = dict.fromkeys((label for _t, label in figures['marks']), 0.0)
    for spans in overlaps.values():
        for start, end, hosts in spans:
            step = [label for when, label in figures['marks']
                    if when <= start]
            step = step[-1] if step else 'start-up'
            by_step[step] += (end - start) * (len(hosts) - 1)
    figures['double_held_by_step'] = by_step


def _measure(figures, nova, recorder, started):
    if recorder is not None:
        hold_figures(figures, {host: c.log_path
                               for host, c in nova.computes.items()})
        figures['moves'] = len(recorder.moves)
        damage = recorder.damage()
        figures['deleted_rows'] = len(damage['deleted_rows'])
        figures['recreated_rows'] = len(damage['recreated_rows'])
        figures['providers_lost'] = (len(damage['vanished_providers']) +
                                     len(damage['changed_providers']))
    figures['wall_s'] = time.time() - started


def _fmt(value):
    if value is None:
        return 'never'
    if isinstance(value, float):
        return '%.1f' % value
    return str(value)


def print_table(results, out=sys.stdout):
    """Print the figures as an RST table.

    :param results: the dicts of :func:`run_driver`.
    :param out: the stream.
    :returns: None
    """
    rows = [('double-held node-seconds', 'double_held_node_seconds'),
            ('nodes ever double-held', 'double_held_nodes'),
            ('moves (row host changes)', 'moves'),
            ('deleted compute node rows', 'deleted_rows'),
            ('recreated compute node rows', 'recreated_rows'),
            ('providers lost or re-created', 'providers_lost')]
    steps = list(results[0]['steps'])
    header = ['measure'] + [r['driver'] for r in results]
    body = [[name] + [_fmt(r.get(key)) for r in results]
            for name, key in rows]
    body += [['complete report after %s (s)' % step] +
             [_fmt(r['steps'].get(step)) for r in results]
             for step in steps]
    body += [['double-held node-s. from %s' % step] +
             [_fmt(r.get('double_held_by_step', {}).get(step))
              for r in results] for step in steps]
    body += [['RSS of nova services (MiB)'] +
             [_fmt(r.get('rss_mib')) for r in results]]
    write_rst_table(header, body, out)


def report(results, print_table, json_path=None):
    """Print a benchmark's table, and write its figures as JSON.

    :param results: the figures.
    :param print_table: the benchmark's table printer.
    :param json_path: where to write them too, or None.
    :returns: None
    """
    print_table(results)
    if json_path:
        with open(json_path, 'w') as stream:
            json.dump(results, stream, indent=2)


def write_rst_table(header, body, out=sys.stdout):
    """Write a simple RST table.

    :param header: the column titles.
    :param body: the rows, lists of strings.
    :param out: the stream.
    :returns: None
    """
    widths = [max(len(row[i]) for row in [header] + body)
              for i in range(len(header))]
    line = ' '.join('=' * w for w in widths)
    out.write(line + '\n')
    out.write(' '.join(c.ljust(w) for c, w in zip(header, widths)) + '\n')
    out.write(line + '\n')
    for row in body:
        out.write(' '.join(c.ljust(w) for c, w in zip(row, widths)) + '\n')
    out.write(line + '\n')


def main(argv=None):
    """Run the benchmark and print the table.

    :param argv: command-line arguments.
    :returns: the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=36,
                        help='nodes, two thirds in rack1, one in rack2')
    parser.add_argument('--timeout', type=int, default=180,
                        help='seconds allowed for each complete report')
    parser.add_argument('--sighup', action='store_true',
                        help='also run the SIGHUP group switch')
    parser.add_argument('--json', help='also write the figures here')
    parser.add_argument('--driver', action='append',
                        choices=[d[0] for d in DRIVERS],
                        help='run only these drivers')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    load = os.getloadavg()
    ironic = harness.IronicFixture(db_backend='postgresql',
                                   conductor_groups=['rack1', 'rack2'])
    ironic.setUp()
    results = []
    try:
        nodes = harness.bulk_enroll(ironic.config_file, args.nodes,
                                    ['rack1', 'rack1', 'rack2'],
                                    provision_state='available')
        group = sorted(n['uuid'] for n in nodes
                       if n['conductor_group'] == 'rack1')
        other = sorted(n['uuid'] for n in nodes
                       if n['conductor_group'] == 'rack2')
        for label, driver in DRIVERS:
            if args.driver and label not in args.driver:
                continue
            results.append(run_driver(label, driver, ironic, group, other,
                                      args.timeout, args.sighup))
    finally:
        ironic.cleanUp()
    cadence = harness_nova.SHORT_CADENCE
    print('%d nodes (%d in rack1), computes %s, cadence %s; load average '
          'at start %.2f %.2f %.2f' % (
              args.nodes, len(group), ','.join(HOSTS),
              ', '.join('%s=%s' % kv for kv in sorted(cadence.items())),
              *load))
    report(results, print_table, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
