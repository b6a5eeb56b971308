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

"""Side by side: a lost compute's servers recovered, two ways, one run.

One real Ironic (conductor group ``rack1``), glance, neutron, placement,
nova-api and three nova-compute services running our driver (``cn1``,
``cn2``, ``cn3``, ``peer_list`` of the three). Twice, N servers are
forced onto ``cn1`` through the compute API, ``cn1`` is SIGKILLed and
never restarted during the recovery, and its servers are recovered:

1. ``ironic-partition recover cn1 --yes``, run again until it stops
   refusing (the operator's loop while cn1's claims run out), as the
   admin guide says;
2. nova's documented procedure: wait until nova's service group has cn1
   down, force the service down (``openstack compute service set
   --down``), then ``nova-manage db ironic_compute_node_move`` once per
   node, destinations chosen by hand (round robin over the live
   computes, as an operator would).

Then, each way: how long the operator's commands took, how many were
typed, how long until the destinations reported every node, how many
servers could be stopped and started through the compute API, and what
was left inconsistent (``ServerRecords.problems``: nova, placement and
Ironic disagreeing) or held by two computes. cn1 is restarted and set up
between the two.

Run it inside the functional environment::

    .tox/functional/bin/python benchmarks/recover_bench.py --servers 16
"""

import argparse
import logging
import os
import subprocess
import sys
import time

from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import nova as harness_nova
import nova_lane_bench
import servers_bench

LOG = logging.getLogger('recover_bench')

HOSTS = ['cn1', 'cn2', 'cn3']
LOST = 'cn1'
RESOURCE_CLASS = 'CUSTOM_BAREMETAL'
WAYS = ('ironic-partition recover', 'nova-manage, node by node')


def _run(argv):
    started = time.time()
    out = subprocess.run(argv, capture_output=True, text=True,
                         env=harness_cli.cli_env(), stdin=subprocess.DEVNULL)
    return out, time.time() - started


def _recover_ours(nova, timeout):
    argv = harness_cli.cli_argv() + [
        'recover', LOST, '--yes', '-f', 'value', '--config-file',
        nova.computes['cn2'].config_file, '--config-file', nova.nova_conf]
    commands = 0
    seconds = 0.0
    deadline = time.time() + timeout
    while True:
        out, took = _run(argv)
        commands += 1
        seconds += took
        if out.returncode == 0:
            return commands, seconds, out.stdout.count('\n')
        if out.returncode != 9 or time.time() > deadline:
            raise harness.HarnessError('recover failed: %s' % out.stderr)
        time.sleep(2)


def _recover_nova(nova, api, records, ids, timeout):
    conn = api.conn
    harness.wait_for(
        lambda: any(s.host == LOST and s.state == 'down'
                    for s in conn.compute.services()),
        timeout, '%s down in nova' % LOST, interval=1)
    commands = 1  # openstack compute service list
    started = time.time()
    service = [s for s in conn.compute.services()
               if s.host == LOST and s.binary == 'nova-compute'][0]
    conn.compute.update_service_forced_down(service, forced=True)
    commands += 1
    seconds = time.time() - started
    live = [h for h in HOSTS if h != LOST]
    nodes = sorted(i.node for i in records.instances(ids).values())
    manage = [harness_process.bin_path('nova-manage'), '--config-file',
              nova.nova_conf, 'db', 'ironic_compute_node_move']
    for n, node in enumerate(nodes):
        out, took = _run(manage + ['--ironic-node-uuid', node,
                                   '--destination-host',
                                   live[n % len(live)]])
        commands += 1
        seconds += took
        if out.returncode != 0:
            raise harness.HarnessError('nova-manage failed: %s%s' % (
                out.stdout, out.stderr))
    return commands, seconds, len(nodes)


def _set_up(conn):
    for service in conn.compute.services():
        if service.host == LOST and service.is_forced_down:
            conn.compute.update_service_forced_down(service, forced=False)


def _manageable(api, records, ids, timeout):
    """Stop then start each server; how many did both, by nova and Ironic."""
    ironic = records.ironic.baremetal
    nodes = {i: inst.node for i, inst in records.instances(ids).items()}

    def act(action, status, power):
        for server in ids:
            action(server)

        def count():
            servers = api.servers(ids)
            return sum(1 for i in ids if servers[i].status == status and
                       ironic.get_node(nodes[i]).power_state == power)
        try:
            harness.wait_for(lambda: count() == len(ids), timeout,
                             'the servers to be %s' % status, interval=1)
        except harness.HarnessError:
            pass
        return count()
    stopped = act(api.conn.compute.stop_server, 'SHUTOFF', 'power off')
    return min(stopped, act(api.conn.compute.start_server, 'ACTIVE',
                            'power on'))


def run_way(way, nova, api, records, recorder, count, timeout):
    """Boot, lose cn1, recover one way, measure, clean up."""
    conn = api.conn
    since = time.time()
    ids = api.boot_many(count, way.split()[0],
                        availability_zone='nova:%s' % LOST)
    servers = api.wait_final(ids, timeout)
    failed = {i: (s.fault or {}).get('message') for i, s in servers.items()
              if s.status != 'ACTIVE'}
    if failed:
        raise harness.HarnessError('builds failed: %s' % failed)
    nodes = sorted(i.node for i in records.instances(ids).values())
    nova.kill_compute(LOST)
    killed = time.time()
    if way == WAYS[0]:
        commands, seconds, moved = _recover_ours(nova, timeout)
    else:
        commands, seconds, moved = _recover_nova(nova, api, records, ids,
                                                 timeout)
    done = time.time()
    hosts = {i: inst.host for i, inst in records.instances(ids).items()}

    def served():
        held = recorder.hosts_of()
        return all(held.get(n) == [hosts[i]] for i, n in zip(
            sorted(ids), [records.instances([i])[i].node
                          for i in sorted(ids)]))
    harness.wait_for(served, timeout, 'the destinations to report',
                     interval=1)
    reported = time.time()
    manageable = _manageable(api, records, ids, timeout)
    problems = records.problems(ids, RESOURCE_CLASS)
    per = {h: novalane.holds(novalane.parse_compute_log(c.log_path))
           for h, c in nova.computes.items()}
    _seconds, overlaps = novalane.double_held(per)
    double = sum((e - s) * (len(h) - 1) for spans in overlaps.values()
                 for s, e, h in spans if e > since)
    api.delete_and_wait(ids, timeout)
    harness.wait_for(records.nodes_available, timeout,
                     'every node back to available', interval=1)
    nova.start_compute(LOST)
    _set_up(conn)
    harness.wait_for(
        lambda: any(s.host == LOST and s.state == 'up'
                    for s in conn.compute.services()),
        timeout, '%s up again' % LOST, interval=1)
    return {
        'way': way, 'servers': len(ids), 'moved': moved,
        'operator_commands': commands,
        'commands_wall_s': seconds,
        'kill_to_moved_s': done - killed,
        'moved_to_reported_s': reported - done,
        'nodes': len(nodes),
        'manageable': manageable,
        'inconsistent': len(problems),
        'double_held_node_seconds': double,
    }


ROWS = [('servers on the lost compute', 'servers'),
        ('operator commands typed', 'operator_commands'),
        ('time in those commands (s)', 'commands_wall_s'),
        ('SIGKILL to all moved (s)', 'kill_to_moved_s'),
        ('moved to reported by the destinations (s)',
         'moved_to_reported_s'),
        ('servers stopped and started through nova', 'manageable'),
        ('servers left inconsistent', 'inconsistent'),
        ('node-seconds held by two computes', 'double_held_node_seconds')]


def print_table(results, out=sys.stdout):
    header = ['measure'] + [r['way'] for r in results]
    body = [[name] + [nova_lane_bench._fmt(r.get(key)) for r in results]
            for name, key in ROWS]
    nova_lane_bench.write_rst_table(header, body, out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--servers', type=int, default=16,
                        help='servers on the lost compute')
    parser.add_argument('--nodes', type=int, default=60,
                        help='nodes, all in rack1')
    parser.add_argument('--timeout', type=int, default=600)
    parser.add_argument('--json', help='also write the figures here')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    load = os.getloadavg()
    started = time.time()
    results = []
    with servers_bench.shared_services(args.nodes) as (
            ironic, glance, neutron, group):
        with servers_bench.deployed(
                ironic, glance, neutron, HOSTS,
                harness_nova.PARTITION_DRIVER,
                cadence=harness_nova.SHORT_CADENCE) as (
                    nova, api, records, recorder):
            owners = novalane.ring_owners(HOSTS, group)
            share = sum(1 for n in group if owners[n] == LOST)
            count = min(args.servers, share)
            harness.wait_for(
                lambda: len(recorder.current_providers) >= args.nodes,
                args.timeout, 'the nodes in placement', interval=1)
            for way in WAYS:
                # NOTE(ironic-partition): a build forced onto cn1 has no
                # alternate host: it must find the split settled.
                harness.wait_for(
                    lambda: all(recorder.hosts_of().get(n) == [owners[n]]
                                for n in group),
                    args.timeout, 'every node with its ring owner',
                    interval=1)
                results.append(run_way(way, nova, api, records, recorder,
                                       count, args.timeout))
    cadence = harness_nova.SHORT_CADENCE
    print('%d servers on %s (its ring share: %d of %d nodes in rack1), '
          'computes %s with peer_list, our driver, nova and placement on '
          'PostgreSQL, cadence %s; load average at start %.2f %.2f %.2f, '
          'at end %.2f %.2f %.2f; %.0f s' % (
              count, LOST, share, args.nodes, ','.join(HOSTS),
              ', '.join('%s=%s' % kv for kv in sorted(cadence.items())),
              *load, *os.getloadavg(), time.time() - started))
    nova_lane_bench.report(results, print_table, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
