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

"""Refresh benchmark: our nova driver against nova 34's IronicDriver.

Both drivers run in this process against the same real Ironic (the
functional harness: API plus one conductor per group, on PostgreSQL or
MariaDB, fake hardware) and the same nova main database (SQLite, nova's own
migrations) with three compute services. For each scenario it times
``_refresh_cache()`` (what ``get_available_nodes()`` runs on every
resource-tracker pass) several times and reports the median, the Ironic API
calls and the time spent in them (counted at keystoneauth's session, for
both drivers alike), the time outside HTTP, the node-cache memory per node
(tracemalloc, in a separate pass) and the split among the three hosts.

Scenarios:

* ``all``: partitioning off, the whole fleet split among the 3 hosts;
* ``group``: ``[ironic] conductor_group`` set, one group of the fleet
  split among a ``peer_list`` of 3.

Example (needs functional-requirements.txt: nova 34 and ironic 39)::

    python benchmarks/driver_bench.py --nodes 10000 --groups 4 --runs 5

It needs the package installed (``pip install .``, not develop mode),
since nova only loads drivers from ``nova.virt``.
"""

import argparse
import gc
import statistics
import sys
import threading
import time
import tracemalloc

from keystoneauth1 import session as ks_session

from ironic_partition import testing as harness
from ironic_partition.testing import nova_env

DRIVERS = ('nova', 'ours')


class HttpMeter(object):
    """Counts keystoneauth session requests and the time spent in them."""

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self._local = threading.local()
        self._real = ks_session.Session.request

    def install(self):
        meter = self

        def request(session, *args, **kwargs):
            # Nested calls (discovery inside a request) count once.
            if getattr(meter._local, 'busy', False):
                return meter._real(session, *args, **kwargs)
            meter._local.busy = True
            start = time.perf_counter()
            try:
                return meter._real(session, *args, **kwargs)
            finally:
                meter.seconds += time.perf_counter() - start
                meter.calls += 1
                meter._local.busy = False

        ks_session.Session.request = request

    def reset(self):
        self.calls = 0
        self.seconds = 0.0


def build_driver(kind, novaconf, host):
    """Build one driver for ``host`` the way nova-compute would.

    :param kind: ``nova`` or ``ours``.
    :param novaconf: the :class:`nova_env.NovaConf` fixture.
    :param host: the compute host.
    :returns: the driver, after ``init_host``.
    """
    from nova.virt import driver as virt_driver
    from nova.virt.ironic import driver as ironic_driver
    novaconf.config(host=host)
    if kind == 'nova':
        driver = ironic_driver.IronicDriver(None)
    else:
        driver = virt_driver.load_compute_driver(
            None, 'ironic_partition.IronicPartitionDriver')
    driver.init_host(host)
    return driver


def beat(hosts):
    """Stand in for the compute services' own heartbeats.

    nova's service group calls a service down when its last heartbeat is
    older than service_down_time; nothing else heartbeats here.

    :param hosts: the compute hosts.
    :returns: None
    """
    for host in hosts:
        nova_env.set_up(host, True)


def time_refresh(drivers, meter, runs, hosts):
    """Time ``runs`` refreshes of each driver, interleaved.

    The drivers take turns (nova, ours, nova, ours...) so that a change of
    load on the machine or on Ironic weighs on both alike.

    :param drivers: ``{kind: driver}``.
    :returns: ``{kind: dict of medians and the last node set}``.
    """
    samples = {kind: ([], [], []) for kind in drivers}
    for _ in range(runs):
        for kind, driver in drivers.items():
            totals, https, calls = samples[kind]
            beat(hosts)
            meter.reset()
            gc.collect()
            start = time.perf_counter()
            driver._refresh_cache()
            totals.append(time.perf_counter() - start)
            https.append(meter.seconds)
            calls.append(meter.calls)
    results = {}
    for kind, (totals, https, calls) in samples.items():
        total = statistics.median(totals)
        http = statistics.median(https)
        results[kind] = {'refresh': total, 'http': http,
                         'outside': total - http,
                         'calls': statistics.median(calls),
                         'nodes': set(drivers[kind].node_cache)}
    return results


def cache_bytes(driver):
    """Bytes retained by a freshly built node cache, per node.

    :returns: bytes per node (tracemalloc), or 0.0 for an empty cache.
    """
    driver.node_cache = {}
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    driver._refresh_cache()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    count = len(driver.node_cache)
    return (after - before) / count if count else 0.0


def scenario(name, novaconf, hosts, meter, runs, options):
    """Run one scenario for both drivers.

    :returns: {driver: {host: result}}.
    """
    for (group, opt), value in options.items():
        novaconf.config(group=group, **{opt: value})
    results = {kind: {} for kind in DRIVERS}
    for index, host in enumerate(hosts):
        drivers = {}
        for kind in DRIVERS:
            drivers[kind] = build_driver(kind, novaconf, host)
            # The first refresh connects and discovers versions.
            beat(hosts)
            drivers[kind]._refresh_cache()
        if index == 0:
            timed = time_refresh(drivers, meter, runs, hosts)
        for kind, driver in drivers.items():
            if index == 0:
                result = timed[kind]
                beat(hosts)
                result['bytes'] = cache_bytes(driver)
            else:
                result = {'nodes': set(driver.node_cache)}
            results[kind][host] = result
            if hasattr(driver, 'partition_stop'):
                driver.partition_stop()
    return results


def report(name, listed, results, hosts):
    nova, ours = results['nova'][hosts[0]], results['ours'][hosts[0]]
    print('\n== %s: %d nodes listed, split among %d hosts ==' %
          (name, listed, len(hosts)))
    print('%-34s %12s %12s %8s' % ('', 'nova 34', 'ours', 'ratio'))
    rows = [('refresh, median (s)', 'refresh', '%.3f'),
            ('Ironic API calls', 'calls', '%d'),
            ('time in HTTP (s)', 'http', '%.3f'),
            ('time outside HTTP (s)', 'outside', '%.3f'),
            ('node cache per node (bytes)', 'bytes', '%.0f')]
    for label, key, fmt in rows:
        ratio = nova[key] / ours[key] if ours[key] else float('inf')
        print('%-34s %12s %12s %7.1fx'
              % (label, fmt % nova[key], fmt % ours[key], ratio))
    print('%-34s %12s %11.0f%%' % ('our time outside HTTP / refresh', '',
                                   100.0 * ours['outside'] /
                                   ours['refresh']))
    for kind in DRIVERS:
        split = [len(results[kind][h]['nodes']) for h in hosts]
        print('split (%s): %s' % (kind, ' / '.join(map(str, split))))
    same = all(results['nova'][h]['nodes'] == results['ours'][h]['nodes']
               for h in hosts)
    print('same node-to-host mapping as nova: %s' % ('yes' if same else
                                                     'NO'))
    return same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=10000)
    parser.add_argument('--groups', type=int, default=4)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--backend', default='postgresql',
                        choices=('postgresql', 'mysql'))
    args = parser.parse_args(argv)

    groups = ['group%d' % i for i in range(args.groups)]
    hosts = ['bench-cn%d' % i for i in range(3)]
    meter = HttpMeter()
    meter.install()
    ok = True
    with _quiet():
        ironic = harness.IronicFixture(db_backend=args.backend,
                                       conductor_groups=groups)
        with ironic:
            print('Ironic at %s with conductor groups %s; enrolling %d '
                  'nodes...' % (ironic.endpoint, ', '.join(groups),
                                args.nodes), flush=True)
            nodes = harness.bulk_enroll(ironic.config_file, args.nodes,
                                        groups)
            per_group = sum(1 for n in nodes
                            if n['conductor_group'] == groups[0])
            for host in hosts:
                nova_env.add_compute(host)
            novaconf = nova_env.NovaConf(ironic.endpoint, {
                ('ironic_partition', 'membership_backend'): 'nova'})
            with novaconf:
                results = scenario('all', novaconf, hosts, meter, args.runs,
                                   {('ironic', 'conductor_group'): None,
                                    ('ironic', 'peer_list'): []})
                ok &= report('all nodes, partitioning off', args.nodes,
                             results, hosts)
                results = scenario('group', novaconf, hosts, meter,
                                   args.runs,
                                   {('ironic', 'conductor_group'):
                                    groups[0],
                                    ('ironic', 'peer_list'): hosts})
                ok &= report('one group (%s), peer_list of 3' % groups[0],
                             per_group, results, hosts)
    return 0 if ok else 1


class _quiet(object):
    """Keep the drivers' INFO logs (one line per refresh) off the table."""

    def __enter__(self):
        import logging  # noqa: H306
        self._level = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)
        return self

    def __exit__(self, *exc):
        import logging  # noqa: H306
        logging.getLogger().setLevel(self._level)


if __name__ == '__main__':
    sys.exit(main())
