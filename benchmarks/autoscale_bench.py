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

"""Side by side: computes scaled, and switched, our driver against nova 34's.

For each driver, on the same real Ironic (same nodes, conductor group
``rack1``), one deployment of placement, nova-api, nova-scheduler,
nova-conductor, glance, neutron and nova-computes with ``[ironic]
peer_list`` (nova's deprecated HA) goes through the same scenario:

``autoscale``
    computes ``cn1,...,cn5``, replicas on a schedule, by default
    1 -> 4 -> 2 -> 5 -> 1, a change every two resource-tracker runs. At
    each change, as an autoscaler with a pre-stop hook would: the servers
    of the replicas removed are deleted, those replicas stopped (SIGTERM)
    and seen down by nova, the new ones started, and servers booted
    through nova-api at once, while the nodes move.
``rolling``
    computes ``cn1,cn2,cn3``, all started on nova's own driver; one at a
    time, each is restarted with the driver measured (ours: the rolling
    switch of ``compute_driver``; nova's: the same restarts with nothing
    changed, what nova's own driver costs for the same motions), at least
    two resource-tracker runs apart, servers booted at each step; then
    ``cn3`` is rolled back to nova's driver.

Measured from outside (servers API, cell database, placement, the
resource-tracker log lines), per driver: node-seconds held by two
computes, compute-node rows moved, resource providers lost (vanished or
re-created), builds failed and why, the node-seconds that no compute
reported after each scale event (until the next one), and the time from
the request to ACTIVE (median, 95th percentile).

Run it inside the functional environment (it needs the SQL servers and
RabbitMQ of tools/test-setup.sh)::

    .tox/functional/bin/python benchmarks/autoscale_bench.py
"""

import argparse
import functools
import logging
import os
import statistics
import sys
import time

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.services import nova as harness_nova
import nova_lane_bench
import servers_bench

LOG = logging.getLogger('autoscale_bench')

POOL = ['cn1', 'cn2', 'cn3', 'cn4', 'cn5']
DRIVERS = servers_bench.DRIVERS
ROLLING_POOL = POOL[:3]
#: nova's timing options: every 4 s, down after 30 s (longer than a
#: restart of nova-compute here); or nova's own defaults.
CADENCES = {'short': dict(harness_nova.SHORT_CADENCE, service_down_time=30),
            'nova-default': harness_nova.NOVA_DEFAULT_CADENCE}


class Run(object):
    """One driver's deployment going through the schedule."""

    def __init__(self, nova, api, records, recorder, group, timeout,
                 servers, pool=POOL):
        self.pool = pool
        self.nova = nova
        self.api = api
        self.records = records
        self.recorder = recorder
        self.group = group
        self.timeout = timeout
        self.servers = servers
        self.alive = []
        self.times = []
        self.failures = {}
        self.builds = 0

    def live(self):
        return [h for h in self.pool if h in self.nova.computes and
                self.nova.computes[h].running()]

    def _runs_since(self, host, since):
        return sum(1 for e in novalane.parse_compute_log(
            self.nova.computes[host].log_path)
            if e.kind == 'run' and e.time >= since)

    def _down_in_nova(self, hosts):
        states = {s.host: s.state for s in
                  self.api.conn.compute.services(binary='nova-compute')}
        return all(states.get(h) == 'down' for h in hosts)

    def _split_done(self, live):
        owners = novalane.ring_owners(live, self.group)
        # NOTE(ironic-partition): a node carrying a server may stay with
        # the server's compute (ours, seed 003) or follow the ring (nova's
        # driver): either is complete.
        kept = {i.node: i.host.lower()
                for i in self.records.instances().values()
                if not i.deleted and i.node and i.host}
        hosts_of = self.recorder.hosts_of()
        providers = getattr(self.recorder, 'current_providers', {})
        for node in self.group:
            held = [h.lower() for h in hosts_of.get(node, [])]
            if held not in ([owners[node]], [kept.get(node)]):
                return False
            if node not in providers:
                return False
        return True

    def wait_split(self, live):
        """Wait for every node on its owner; False when it never came."""
        try:
            harness.wait_for(lambda: self._split_done(live), self.timeout,
                             'the split over %s' % live, interval=0.5,
                             check=self.nova.check_services)
        except harness.HarnessError as e:
            LOG.warning('%s', e)
            return False
        return True

    def _boot(self, prefix):
        started = time.time()
        ids = self.api.boot_many(self.servers, prefix)
        watcher = servers_bench.Watcher(self.api, self.records, ids, started)
        watcher.start()
        return ids, watcher

    def _settle(self, ids, watcher):
        try:
            servers = self.api.wait_final(ids, self.timeout)
        except harness.HarnessError as e:
            LOG.warning('%s', e)
            servers = self.api.servers(ids)
        watcher.poll()
        watcher.stop()
        self.builds += len(ids)
        self.times += [t for status, t in watcher.final.values()
                       if status != 'ERROR']
        for server in servers.values():
            if server.status == 'ERROR':
                why = (server.fault or {}).get('message', 'no fault')[:80]
                self.failures[why] = self.failures.get(why, 0) + 1
        self.alive += [i for i, s in servers.items() if s.status != 'ERROR']
        failed = [i for i, s in servers.items() if s.status == 'ERROR']
        if failed:
            self.api.delete_and_wait(failed, self.timeout)

    def _after(self, event, hosts, ids, watcher):
        """Two runs of each of ``hosts``, the split, the builds' end."""
        for host in hosts:
            harness.wait_for(lambda: self._runs_since(host, event) >= 3,
                             self.timeout, 'two runs of %s' % host,
                             interval=1, check=self.nova.check_services)
        self.wait_split(self.live())
        self._settle(ids, watcher)

    def switch(self, host, driver):
        """One step of a rolling switch: ``host`` restarted on ``driver``.

        :returns: ``(event time, nodes that changed owner)``: none, the
            peers stay the same.
        """
        self.nova.edit_compute_config(host, {'DEFAULT': {
            'compute_driver': driver}})
        event = time.time()
        self.nova.restart_compute(host)
        ids, watcher = self._boot('switch-%s' % host)
        self._after(event, [host], ids, watcher)
        return event, 0

    def scale(self, count):
        """One change of the schedule.

        :returns: ``(event time, nodes that changed owner)``.
        """
        want = self.pool[:count]
        before = self.live()
        event = time.time()
        gone = [h for h in before if h not in want]
        if gone:
            instances = self.records.instances(self.alive)
            drained = [s for s in self.alive if instances[s].host in gone]
            if drained:
                self.api.delete_and_wait(drained, self.timeout)
                self.alive = [s for s in self.alive if s not in drained]
            for host in gone:
                self.nova.stop_compute(host)
            harness.wait_for(lambda: self._down_in_nova(gone),
                             self.timeout, 'nova to see %s down' % gone,
                             interval=1)
        for host in want:
            if host not in self.nova.computes:
                self.nova.add_compute(host)
            elif not self.nova.computes[host].running():
                self.nova.start_compute(host)
        ids, watcher = self._boot('scale-%d' % count)
        self._after(event, want, ids, watcher)
        old = novalane.ring_owners(before, self.group)
        new = novalane.ring_owners(want, self.group)
        return event, sum(1 for n in self.group if old[n] != new[n])


def run_driver(label, driver, ironic, glance, neutron, group, args):
    """One scenario with one driver.

    :returns: the figures, with the driver's name.
    """
    nova_driver = harness_nova.NOVA_DRIVER
    if args.scenario == 'rolling':
        pool, first, start = ROLLING_POOL, ROLLING_POOL, nova_driver
    else:
        pool, first, start = POOL, POOL[:args.schedule[0]], driver
    results = {'driver': label}
    with servers_bench.deployed(
            ironic, glance, neutron, first, start, peer_list=pool,
            cadence=CADENCES[args.cadence]) as (nova, api, records,
                                                recorder):
        run = Run(nova, api, records, recorder, group, args.timeout,
                  args.servers, pool=pool)
        if args.scenario == 'rolling':
            switches = [(h, driver) for h in pool] + [(pool[-1],
                                                       nova_driver)]
            steps = [functools.partial(run.switch, host, to)
                     for host, to in switches]
        else:
            steps = [functools.partial(run.scale, count)
                     for count in args.schedule[1:]]
        results.update(_schedule(run, steps))
    return results


def _schedule(run, steps):
    run.wait_split(run.live())
    # NOTE(ironic-partition): nova's own driver, started on several
    # computes at once, reports nodes twice until each has seen the
    # others up (its start-up race, before any scenario step): measure
    # from two complete runs of every compute after the split on.
    split = time.time()
    for host in run.live():
        harness.wait_for(lambda: run._runs_since(host, split) >= 3,
                         run.timeout, 'two runs of %s after the split'
                         % host, interval=1, check=run.nova.check_services)
    t0 = time.time()
    ids, watcher = run._boot('first')
    run._settle(ids, watcher)
    events = []
    for step in steps:
        event, moved = step()
        events.append((step, event, moved))
    end = time.time()
    per = {h: novalane.holds(novalane.parse_compute_log(c.log_path))
           for h, c in run.nova.computes.items()}
    unreported = []
    for index, (count, event, moved) in enumerate(events):
        until = events[index + 1][1] if index + 1 < len(events) else end
        unreported.append(round(novalane.unheld(per, run.group, event,
                                                until)))
    _seconds, overlaps = novalane.double_held(per)
    damage = run.recorder.damage()
    run.api.delete_and_wait(run.alive, run.timeout)
    return {
        'double_held_node_seconds': sum(
            (e - max(s, t0)) * (len(h) - 1) for spans in overlaps.values()
            for s, e, h in spans if e > t0),
        'moves': len([m for m in run.recorder.moves if m[0] >= t0]),
        'providers_lost': (len(damage['vanished_providers']) +
                           len(damage['changed_providers'])),
        'deleted_rows': len(damage['deleted_rows']),
        'builds': run.builds,
        'failed': sum(run.failures.values()),
        'failures': run.failures,
        'unreported_per_event': unreported,
        'moved_per_event': [moved for _c, _e, moved in events],
        'to_active_median_s': (statistics.median(run.times)
                               if run.times else None),
        'to_active_p95_s': servers_bench._percentile(run.times, 0.95),
    }


ROWS = [('node-seconds held by two computes', 'double_held_node_seconds'),
        ('compute-node rows moved', 'moves'),
        ('compute-node rows deleted', 'deleted_rows'),
        ('resource providers lost', 'providers_lost'),
        ('builds', 'builds'),
        ('builds failed', 'failed'),
        ('nodes that changed owner, per event', 'moved_per_event'),
        ('unreported node-seconds, per event', 'unreported_per_event'),
        ('time to ACTIVE, median (s)', 'to_active_median_s'),
        ('time to ACTIVE, 95th percentile (s)', 'to_active_p95_s')]


def _fmt(value):
    if isinstance(value, list):
        return ', '.join(str(v) for v in value)
    return servers_bench._fmt(value)


def print_table(results, out=sys.stdout):
    """Print the figures as an RST table.

    :param results: the dicts of :func:`run_driver`.
    :param out: the stream.
    :returns: None
    """
    header = ['measure'] + [r['driver'] for r in results]
    body = [[name] + [_fmt(r.get(key)) for r in results]
            for name, key in ROWS]
    nova_lane_bench.write_rst_table(header, body, out)
    for r in results:
        if r.get('failures'):
            out.write('%s: failures %r\n' % (r['driver'], r['failures']))


def main(argv=None):
    """Run the benchmark and print the table.

    :param argv: command-line arguments.
    :returns: the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--scenario', choices=('autoscale', 'rolling'),
                        default='autoscale',
                        help='computes scaled on a schedule, or switched '
                             'from nova\'s driver one at a time')
    parser.add_argument('--schedule', default='1,4,2,5,1',
                        help='autoscale: replicas at each step (at most '
                             '%d)' % len(POOL))
    parser.add_argument('--servers', type=int, default=3,
                        help='servers booted at each step')
    parser.add_argument('--nodes', type=int, default=30,
                        help='nodes, all in rack1')
    parser.add_argument('--cadence', choices=sorted(CADENCES),
                        default='short',
                        help="nova's timing options: every 4 s and down "
                             "after 30 s, or nova's own defaults")
    servers_bench.add_common_args(parser)
    args = parser.parse_args(argv)
    try:
        args.schedule = [int(n) for n in args.schedule.split(',')]
    except ValueError:
        args.schedule = []
    if not args.schedule or min(args.schedule) < 1 or \
            max(args.schedule) > len(POOL):
        parser.error('--schedule: between 1 and %d replicas per step, '
                     'comma-separated, not %r' % (len(POOL), args.schedule))
    logging.basicConfig(level=logging.WARNING)
    load = os.getloadavg()
    started = time.time()
    results = []
    with servers_bench.shared_services(args.nodes) as (
            ironic, glance, neutron, group):
        for label, driver in DRIVERS:
            if args.driver and label not in args.driver:
                continue
            results.append(run_driver(label, driver, ironic, glance,
                                      neutron, group, args))
    if args.scenario == 'rolling':
        what = ('rolling switch of %s from nova\'s driver (nova 34: the '
                'same restarts), then %s back' % (
                    ','.join(ROLLING_POOL), ROLLING_POOL[-1]))
        pool = ROLLING_POOL
    else:
        what = 'replicas %s' % ' -> '.join(str(n) for n in args.schedule)
        pool = POOL
    print('%s, %d servers booted at each step, %d nodes (conductor group '
          'rack1), peer_list %s, nova and placement on PostgreSQL, cadence '
          '%s (%s); load average at start %.2f %.2f %.2f, at end %.2f %.2f '
          '%.2f; %.0f s' % (
              what, args.servers, args.nodes, ','.join(pool), args.cadence,
              ', '.join('%s=%s' % kv for kv in sorted(
                  CADENCES[args.cadence].items())),
              *load, *os.getloadavg(), time.time() - started))
    nova_lane_bench.report(results, print_table, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
