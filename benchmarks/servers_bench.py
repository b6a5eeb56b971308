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

"""Side by side: servers booted through nova, our driver against nova 34's.

For each driver, on the same real Ironic (same nodes, back to
``available`` between runs) and the same glance and neutron, one
deployment of placement, nova-api, nova-scheduler, nova-conductor and
three nova-compute services sharing conductor group ``rack1`` with
``[ironic] peer_list`` runs two bursts:

1. ``burst``: N servers asked for at once, then all deleted;
2. ``burst + kill``: N servers asked for at once, one compute SIGKILLed
   as soon as the requests are in, restarted once the others' builds are
   done; then all deleted.

Measured from outside (servers API, cell database, placement, Ironic,
the resource-tracker log lines): builds ACTIVE and failed (with nova's
fault message), nodes that ever carried two servers, node-seconds held
by two computes, allocations left after every server was deleted, and
the time from the request to ACTIVE (median and 95th percentile), and
where a build of the first burst spent it (:func:`build_phases`: medians
from nova's instance actions and its compute logs). ``--runs`` repeats
both drivers in the same invocation and prints each driver's median over
the runs, and ours against nova's.

Run it inside the functional environment (it needs the SQL servers and
RabbitMQ of tools/test-setup.sh)::

    .tox/functional/bin/python benchmarks/servers_bench.py --servers 30
"""

import argparse
import collections
import contextlib
import logging
import os
import re
import statistics
import sys
import threading
import time

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.lanes import servers as harness_servers
from ironic_partition.testing.services import glance as harness_glance
from ironic_partition.testing.services import neutron as harness_neutron
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.testing.services import nova_api as harness_api
import nova_lane_bench
import nova_logs

LOG = logging.getLogger('servers_bench')

HOSTS = ['cn1', 'cn2', 'cn3']
DRIVERS = [('ironic-partition', harness_nova.PARTITION_DRIVER),
           ('nova 34', harness_nova.NOVA_DRIVER)]


class Watcher(object):
    """Poll the servers and the cell database during a burst.

    Records when each server was first seen ACTIVE or ERROR, and every
    node seen carrying two live servers at once.
    """

    def __init__(self, api, records, ids, started):
        self.api = api
        self.records = records
        self.ids = list(ids)
        self.started = started
        self.final = {}
        self.doubled = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(30)

    def _loop(self):
        while not self._stop.wait(0.5):
            try:
                self.poll()
            except Exception:
                LOG.debug('poll failed', exc_info=True)

    def poll(self):
        now = time.time()
        for server_id, server in self.api.servers(self.ids).items():
            if (server.status in harness_servers.FINAL_STATES and
                    server_id not in self.final):
                self.final[server_id] = (server.status, now - self.started)
        per_node = collections.Counter(
            i.node for i in self.records.instances(self.ids).values()
            if not i.deleted and i.node)
        self.doubled |= {n for n, c in per_node.items() if c > 1}


_SPAWN_RE = re.compile(r'\[instance: ([0-9a-f-]{36})\] Took ([0-9.]+) '
                       r'seconds to spawn the instance on the hypervisor')
_BUILD_RE = re.compile(r'\[instance: ([0-9a-f-]{36})\] Took ([0-9.]+) '
                       r'seconds to build instance')

#: The phases of :func:`build_phases`, in the order a build meets them.
PHASES = [
    ('API to the compute\'s build (scheduling, queues)', 'to_compute'),
    ('build on the compute (event)', 'compute'),
    ('... of which claim, network, prepare_for_spawn', 'before_spawn'),
    ('... of which spawn on the hypervisor', 'spawn'),
    ('compute\'s build done to ACTIVE seen', 'seen'),
    ('reschedules', 'reschedules'),
]


def build_phases(api, ids, final, started, log_paths):
    """Where the builds spent their time: the median of each phase.

    From each server's ``create`` action (compute API 2.84): the request
    (the action's start; nova 34 records no event for the scheduling, so
    the API, the scheduler and the queues are one phase) and the start
    and end of the compute's ``_do_build_and_run_instance`` events (one
    more per reschedule, the last one counted from the first one's
    start); and
    from the compute logs nova's own "Took N seconds to spawn the instance
    on the hypervisor" and "to build instance" lines (the build less the
    spawn is the claim, the network, and the driver's
    ``prepare_for_spawn``: our reservation under its proven claim).

    :param api: the NovaAPIFixture.
    :param ids: the servers of the burst.
    :param final: ``{id: (status, seconds after started)}`` as watched.
    :param started: when the burst was asked for.
    :param log_paths: the nova-compute logs.
    :returns: ``{phase key: median seconds}`` over the servers that went
        ACTIVE (see :data:`PHASES`).
    """
    spawn, build = {}, {}
    for path in log_paths:
        with open(path, errors='replace') as stream:
            for line in stream:
                for regex, into in ((_SPAWN_RE, spawn), (_BUILD_RE, build)):
                    match = regex.search(line)
                    if match:
                        into[match.group(1)] = float(match.group(2))
    per = collections.defaultdict(list)
    for server_id in ids:
        status, seen = final.get(server_id, (None, None))
        if status not in ('ACTIVE', 'SHUTOFF'):
            continue
        begun, events = api.action_events(server_id)
        computes = sorted((e for e in events
                           if e[0] == 'compute__do_build_and_run_instance'
                           and e[1] is not None),
                          key=lambda e: e[1])
        if begun is None or not computes or computes[-1][2] is None:
            continue
        first, last = computes[0], computes[-1]
        per['to_compute'].append(first[1] - begun)
        per['compute'].append(last[2] - first[1])
        per['reschedules'].append(len(computes) - 1)
        per['seen'].append(started + seen - last[2])
        if server_id in spawn:
            per['spawn'].append(spawn[server_id])
            if server_id in build:
                per['before_spawn'].append(build[server_id] -
                                           spawn[server_id])
    return {key: statistics.median(values)
            for key, values in per.items() if values}


def _percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(round(fraction *
                                                   (len(ordered) - 1))))]


def _burst(api, records, nova, count, prefix, timeout, kill=None):
    started = time.time()
    ids = api.boot_many(count, prefix)
    watcher = Watcher(api, records, ids, started)
    watcher.start()
    figures = {}
    try:
        if kill:
            killed_nodes = records.compute_nodes(kill)
            nova.kill_compute(kill)

            def settled():
                # NOTE(ironic-partition): a build cast to the killed
                # compute has no host yet (the compute sets it), but its
                # allocation is against one of that compute's nodes: it
                # waits in the dead compute's queue until the restart.
                instances = records.instances(ids)
                servers = api.servers(ids)
                return all(
                    servers[i].status in harness_servers.FINAL_STATES or
                    (i in instances and instances[i].host == kill) or
                    set(records.allocations(i)) & killed_nodes
                    for i in ids)
            try:
                harness.wait_for(settled, timeout,
                                 'the builds not on %s to end' % kill,
                                 interval=1)
            except harness.HarnessError as e:
                LOG.warning('%s', e)
            nova.start_compute(kill)
        try:
            servers = api.wait_final(ids, timeout)
        except harness.HarnessError as e:
            LOG.warning('%s', e)
            servers = api.servers(ids)
        watcher.poll()
    finally:
        watcher.stop()
    if not kill:
        figures['phases'] = build_phases(
            api, ids, watcher.final, started,
            [c.log_path for c in nova.computes.values()])
    times = [t for status, t in watcher.final.values() if status != 'ERROR']
    failures = collections.Counter(
        (s.fault or {}).get('message', 'no fault')[:80]
        for s in servers.values() if s.status == 'ERROR')
    figures.update({
        'active': sum(1 for s in servers.values()
                      if s.status in ('ACTIVE', 'SHUTOFF')),
        'failed': sum(failures.values()),
        'stuck_in_build': sum(1 for s in servers.values()
                              if s.status not in
                              harness_servers.FINAL_STATES),
        'failures': dict(failures),
        'nodes_with_two_servers': len(watcher.doubled),
        'to_active_median_s': statistics.median(times) if times else None,
        'to_active_p95_s': _percentile(times, 0.95),
    })
    api.delete_and_wait(ids, timeout)
    try:
        harness.wait_for(records.nodes_available, timeout,
                         'every node back to available', interval=1)
    except harness.HarnessError:
        # NOTE(ironic-partition): a finding, not a crash: name the nodes
        # and their states, and go on with the next burst.
        figures['nodes_not_available'] = {
            uuid: [n.provision_state, n.instance_id, n.last_error]
            for uuid, n in records.nodes().items()
            if n.provision_state != 'available' or n.instance_id}
        LOG.warning('Nodes not back to available after the burst: %s',
                    figures['nodes_not_available'])
    figures['leaked_allocations'] = sum(
        1 for i in ids if records.allocations(i))
    figures['nonzero_usages'] = len(records.usages())
    return figures


@contextlib.contextmanager
def deployed(ironic, glance, neutron, hosts, driver, **kwargs):
    """nova with nova-api, booting on ``ironic``; torn down after.

    :param hosts: the computes started.
    :param driver: nova's ``compute_driver``.
    :param kwargs: more :class:`~ironic_partition.testing.services.nova.
        NovaFixture` arguments.
    :returns: a context manager giving ``(nova, api, records,
        recorder)``.
    """
    nova = harness_nova.NovaFixture(
        ironic.endpoint, hosts, partition_key='rack1', driver=driver,
        db_backend='postgresql', glance_endpoint=glance.endpoint,
        neutron_endpoint=neutron.endpoint,
        partition_options={'membership_stale_timeout': 20}, **kwargs)
    nova.setUp()
    try:
        api = harness_api.NovaAPIFixture(nova, glance)
        api.setUp()
        try:
            api.discover_hosts()
            records = harness_servers.ServerRecords(
                nova.cell_url, api.connection(),
                harness.connect(ironic.endpoint))
            recorder = novalane.Recorder(nova.cell_url,
                                         nova.placement_endpoint)
            recorder.start()
            try:
                yield nova, api, records, recorder
            finally:
                recorder.stop()
                records.close()
        finally:
            api.cleanUp()
    finally:
        nova.cleanUp()


def add_common_args(parser):
    """The options every nova-api benchmark takes.

    :param parser: an ``argparse.ArgumentParser``.
    :returns: None
    """
    parser.add_argument('--timeout', type=int, default=600,
                        help='seconds allowed for each wait')
    parser.add_argument('--json', help='also write the figures here')
    parser.add_argument('--driver', action='append',
                        choices=[d[0] for d in DRIVERS],
                        help='run only these drivers')


@contextlib.contextmanager
def shared_services(nodes, **ironic_kwargs):
    """A real Ironic with ``nodes`` in ``rack1``, glance and neutron.

    :param nodes: how many nodes to enroll, ``available``.
    :param ironic_kwargs: more :class:`~ironic_partition.testing.
        IronicFixture` arguments.
    :returns: a context manager giving ``(ironic, glance, neutron, node
        UUIDs)``; every service is torn down after.
    """
    fixtures = []
    try:
        ironic = harness.IronicFixture(db_backend='postgresql',
                                       conductor_groups=['rack1'],
                                       **ironic_kwargs)
        ironic.setUp()
        fixtures.append(ironic)
        group = sorted(n['uuid'] for n in harness.bulk_enroll(
            ironic.config_file, nodes, ['rack1'],
            provision_state='available'))
        glance = harness_glance.GlanceFixture()
        glance.setUp()
        fixtures.append(glance)
        neutron = harness_neutron.NeutronFixture()
        neutron.setUp()
        fixtures.append(neutron)
        yield ironic, glance, neutron, group
    finally:
        for fixture in reversed(fixtures):
            fixture.cleanUp()


def run_driver(label, driver, ironic, glance, neutron, count, timeout,
               log_dir=None):
    """Both bursts with one driver.

    :param log_dir: a folder to copy the deployment's logs to before its
        teardown, or None.
    :returns: ``{phase: figures}`` plus the driver's name.
    """
    results = {'driver': label}
    with deployed(ironic, glance, neutron, HOSTS, driver) as (
            nova, api, records, recorder):
        if log_dir:
            # NOTE(ironic-partition): nova-api and nova-scheduler are torn
            # down first, then nova: the logs are copied before either.
            api.addCleanup(nova_logs.keep_logs, log_dir, nova, ironic,
                           extra=[api.scheduler.log_path])
        harness.wait_for(
            lambda: len(recorder.current_providers) >= count,
            timeout, 'the nodes in placement', interval=1)
        for phase, kill in (('burst', None),
                            ('burst + kill', 'cn2')):
            since = time.time()
            figures = _burst(api, records, nova, count,
                             phase.replace(' + ', '-'), timeout,
                             kill=kill)
            per = {h: novalane.holds(novalane.parse_compute_log(
                c.log_path)) for h, c in nova.computes.items()}
            _seconds, overlaps = novalane.double_held(per)
            figures['double_held_node_seconds'] = sum(
                (e - s) * (len(h) - 1) for spans in overlaps.values()
                for s, e, h in spans if e > since)
            results[phase] = figures
        damage = recorder.damage()
        results['deleted_rows'] = len(damage['deleted_rows'])
        results['providers_lost'] = (
            len(damage['vanished_providers']) +
            len(damage['changed_providers']))
    return results


def _fmt(value):
    return '-' if value is None else nova_lane_bench._fmt(value)


ROWS = [('builds ACTIVE', 'active'), ('builds failed', 'failed'),
        ('left in BUILD', 'stuck_in_build'),
        ('nodes that carried two servers', 'nodes_with_two_servers'),
        ('node-seconds held by two computes', 'double_held_node_seconds'),
        ('allocations left after delete', 'leaked_allocations'),
        ('time to ACTIVE, median (s)', 'to_active_median_s'),
        ('time to ACTIVE, 95th percentile (s)', 'to_active_p95_s')]


def print_table(results, out=sys.stdout):
    """Print the figures as an RST table.

    :param results: the dicts of :func:`run_driver`.
    :param out: the stream.
    :returns: None
    """
    header = ['measure'] + ['%s, %s' % (r['driver'], phase)
                            for r in results
                            for phase in ('burst', 'burst + kill')]
    body = [[name] + [_fmt(r.get(phase, {}).get(key)) for r in results
                      for phase in ('burst', 'burst + kill')]
            for name, key in ROWS]
    nova_lane_bench.write_rst_table(header, body, out)
    out.write('\nWhere a build of the first burst spent its time (median '
              'seconds over its ACTIVE servers):\n\n')
    nova_lane_bench.write_rst_table(
        ['phase'] + [r['driver'] for r in results],
        [[name] + [_fmt(r.get('burst', {}).get('phases', {}).get(key))
                   for r in results] for name, key in PHASES], out)
    for r in results:
        for phase in ('burst', 'burst + kill'):
            failures = r.get(phase, {}).get('failures')
            if failures:
                out.write('%s, %s: failures %r\n' % (r['driver'], phase,
                                                     failures))
            stuck = r.get(phase, {}).get('nodes_not_available')
            if stuck:
                out.write('%s, %s: nodes not back to available %r\n' % (
                    r['driver'], phase, stuck))


def main(argv=None):
    """Run the benchmark and print the table.

    :param argv: command-line arguments.
    :returns: the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--servers', type=int, default=30,
                        help='servers per burst')
    parser.add_argument('--nodes', type=int, default=36,
                        help='nodes, all in rack1')
    parser.add_argument('--runs', type=int, default=1,
                        help='run both drivers this many times, in turn')
    parser.add_argument('--log-dir', help='keep each deployment\'s logs '
                        'here, a folder per driver and run')
    add_common_args(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    load = os.getloadavg()
    started = time.time()
    results = []
    with shared_services(args.nodes, extra_config={
            'conductor': {'automated_clean': True}}) as (
                ironic, glance, neutron, _group):
        for run in range(1, args.runs + 1):
            for label, driver in DRIVERS:
                if args.driver and label not in args.driver:
                    continue
                log_dir = args.log_dir and os.path.join(
                    args.log_dir, '%s-%d' % (re.sub(r'\W+', '_', label),
                                             run))
                result = run_driver(label, driver, ironic, glance,
                                    neutron, args.servers, args.timeout,
                                    log_dir=log_dir)
                result['label'] = label
                if args.runs > 1:
                    result['driver'] = '%s, run %d' % (label, run)
                results.append(result)
    cadence = harness_nova.SHORT_CADENCE
    print('%d servers per burst on %d nodes (conductor group rack1), '
          'computes %s with peer_list, nova and placement on PostgreSQL, '
          'cadence %s; load average at start %.2f %.2f %.2f, at end '
          '%.2f %.2f %.2f; %.0f s' % (
              args.servers, args.nodes, ','.join(HOSTS),
              ', '.join('%s=%s' % kv for kv in sorted(cadence.items())),
              *load, *os.getloadavg(), time.time() - started))
    nova_lane_bench.report(results, print_table, args.json)
    print_summary(results)
    return 0


def print_summary(results, out=sys.stdout):
    """Each driver's time to ACTIVE over the runs, and ours against nova's.

    :param results: the dicts of :func:`run_driver`, with their ``label``.
    :param out: the stream.
    :returns: None
    """
    by_label = collections.defaultdict(list)
    for result in results:
        by_label[result['label']].append(result.get('burst', {}))
    medians = {}
    for label, bursts in by_label.items():
        figures = {key: [b[key] for b in bursts if b.get(key) is not None]
                   for key in ('to_active_median_s', 'to_active_p95_s')}
        medians[label] = {key: statistics.median(values) if values else None
                          for key, values in figures.items()}
        out.write('%s, burst, over %d run(s): median of the medians %s s, '
                  'of the 95th percentiles %s s\n' % (
                      label, len(bursts),
                      _fmt(medians[label]['to_active_median_s']),
                      _fmt(medians[label]['to_active_p95_s'])))
    ours, theirs = (medians.get(DRIVERS[0][0]), medians.get(DRIVERS[1][0]))
    if ours and theirs:
        for key, name in (('to_active_median_s', 'median'),
                          ('to_active_p95_s', '95th percentile')):
            if ours[key] and theirs[key]:
                out.write('ours / nova\'s, %s: %.2f\n' % (
                    name, ours[key] / theirs[key]))


if __name__ == '__main__':
    sys.exit(main())
