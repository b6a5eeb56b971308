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

"""The worker process of :mod:`scale_bench`: one service, driven by stdin.

Each service is a process of its own, building its driver the way
nova-compute does (nova's loader, nova's configuration, nova's main
database), so that its resident memory is its own. :class:`Service` starts
one and sends it commands (``refresh``, ``refresh-full``, ``index``,
``managed``, ``rt``, ``stop``), one JSON line each way.
"""

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import threading
import time
import tracemalloc

from keystoneauth1 import session as ks_session

DRIVERS = ('nova', 'ours')
HOSTS = ('scale-cn0', 'scale-cn1', 'scale-cn2')
#: Set (to a number of lines) to trace the Python allocations of each
#: timed listing: the lines holding most, written to the worker's log.
TRACE_ENV = 'SCALE_BENCH_TRACEMALLOC'


def rss_mib():
    """This process's resident set size now, in MiB."""
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2.0 ** 20


class HttpMeter(object):
    """Counts keystoneauth session requests and the time spent in them."""

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0
        self._local = threading.local()
        real = ks_session.Session.request
        meter = self

        def request(session, *args, **kwargs):
            if getattr(meter._local, 'busy', False):
                return real(session, *args, **kwargs)
            meter._local.busy = True
            start = time.perf_counter()
            try:
                return real(session, *args, **kwargs)
            finally:
                meter.seconds += time.perf_counter() - start
                meter.calls += 1
                meter._local.busy = False

        ks_session.Session.request = request

    def reset(self):
        self.calls = 0
        self.seconds = 0.0


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        'arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks',
        'fsmblks', 'uordblks', 'fordblks', 'keepcost')]


def malloc_mib():
    """glibc's heap: ``(in use, free but held)`` in MiB, or None."""
    try:
        libc = ctypes.CDLL('libc.so.6')
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return None
    info = libc.mallinfo2()
    return (round((info.uordblks + info.hblkhd) / 2.0 ** 20, 1),
            round(info.fordblks / 2.0 ** 20, 1))


def trace_report(label, out, lines):
    """Write where the live Python allocations were made, by line."""
    current, peak = tracemalloc.get_traced_memory()
    print('== %s: traced %.1f MiB live, peak %.1f MiB; resident %.1f MiB;'
          ' malloc (in use, free) %s MiB'
          % (label, current / 2.0 ** 20, peak / 2.0 ** 20, rss_mib(),
             malloc_mib()), file=out)
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)])
    for stat in snapshot.statistics('lineno')[:lines]:
        frame = stat.traceback[0]
        print('%9.1f KiB %8d blocks  %s:%d' % (
            stat.size / 1024.0, stat.count, frame.filename, frame.lineno),
            file=out)
    out.flush()
    tracemalloc.reset_peak()


def worker(args):
    """Serve commands on stdin, one JSON answer per line on stdout."""
    from ironic_partition.testing.services import nova_env
    from nova import exception as nova_exception
    from nova.virt import driver as virt_driver
    from nova.virt.ironic import driver as ironic_driver

    meter = HttpMeter()
    overrides = {('ironic', 'peer_list'): []}
    if args.kind == 'ours':
        overrides[('ironic_partition_database', 'connection')] = args.db
    novaconf = nova_env.NovaConf(args.endpoint, overrides)
    novaconf.setUp()
    for host in HOSTS:
        nova_env.add_compute(host)
    novaconf.config(host=args.host)
    trace_lines = int(os.environ.get(TRACE_ENV) or 0)
    rss_start = rss_mib()
    if trace_lines:
        tracemalloc.start()
    if args.kind == 'nova':
        driver = ironic_driver.IronicDriver(None)
    else:
        driver = virt_driver.load_compute_driver(
            None, 'ironic_partition.IronicPartitionDriver')
    fences = [0]
    if args.kind == 'ours':
        def fenced():
            fences[0] += 1
        driver.partitioner.add_fence_listener(fenced)

    def timed(call):
        """Run one listing; its time, HTTP, memory, claims and fences."""
        meter.reset()
        fenced_before = fences[0]
        answer = {}
        start = time.perf_counter()
        try:
            call()
        except nova_exception.VirtDriverNotReady as e:
            answer['not_ready'] = str(e)
        answer['seconds'] = time.perf_counter() - start
        answer['http'] = meter.seconds
        answer['calls'] = meter.calls
        answer['rss_growth'] = rss_mib() - rss_start
        # What the C heap holds in use and free, and Python's arenas.
        answer['malloc'] = malloc_mib()
        print('memory after %.1f s: resident growth %.1f MiB, malloc (in use,'
              ' free) %s MiB' % (answer['seconds'], answer['rss_growth'],
                                 answer['malloc']), file=sys.stderr,
              flush=True)
        answer['managed'] = len(driver.node_cache)
        answer['fences'] = fences[0] - fenced_before
        result = getattr(getattr(driver, 'partitioner', None),
                         'last_result', None)
        if result is not None:
            answer['full'] = result.metrics.full
            answer['changed'] = result.metrics.changed
            answer['claim_seconds'] = result.metrics.claim_seconds
            answer['listed'] = result.metrics.listed
            answer['waiting'] = len(result.waiting)
        if trace_lines:
            trace_report('%s %s after %.1f s' % (args.kind, args.host,
                                                 answer['seconds']),
                         sys.stderr, trace_lines)
        return answer

    # NOTE: our driver's init_host lists the fleet and claims its share
    # (it holds nova's start until peers hand nodes back): for ours, the
    # first listing is init_host's, timed as such.
    ready = timed(lambda: driver.init_host(args.host))
    ready['ready'] = True
    out = sys.stdout
    sys.stdout = sys.stderr
    print(json.dumps(ready), file=out, flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        for host in HOSTS:
            nova_env.set_up(host, True)
        answer = {}
        if command['do'] in ('refresh', 'refresh-full'):
            if command['do'] == 'refresh-full':
                driver.partitioner.index.invalidate()
            answer = timed(driver._refresh_cache)
        elif command['do'] == 'index':
            # The index's view, for the correctness check.
            answer['nodes'] = {
                u: [n.instance_id, bool(n.is_maintenance),
                    n.conductor_group]
                for u, n in driver.partitioner.index.nodes.items()}
        elif command['do'] == 'managed':
            answer['nodes'] = sorted(driver.node_cache)
        elif command['do'] == 'rt':
            # The driver side of one resource-tracker pass, after the
            # refresh of get_available_nodes (timed above): every node of
            # the share through get_available_resource.
            names = list(driver.node_cache)
            start = time.perf_counter()
            for name in names:
                driver.get_available_resource(name)
            answer['per_node_us'] = ((time.perf_counter() - start)
                                     / max(1, len(names)) * 1e6)
            answer['nodes'] = len(names)
        elif command['do'] == 'stop':
            if hasattr(driver, 'partition_stop'):
                driver.partition_stop()
            print(json.dumps({}), file=out, flush=True)
            break
        print(json.dumps(answer), file=out, flush=True)
    return 0


class Service(object):
    """One worker process, driven line by line."""

    def __init__(self, kind, host, endpoint, db, log_dir, wait=True):
        self.kind = kind
        self.host = host
        self.log = open(os.path.join(log_dir, '%s-%s.log' % (kind, host)),
                        'w')
        argv = [sys.executable, os.path.abspath(__file__),
                '--kind', kind, '--host', host, '--endpoint', endpoint,
                '--db', db or '']
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        #: The answer to the start (``init_host``), or None until read.
        self.ready = None
        if wait:
            self.wait_ready()

    def wait_ready(self):
        """Read the start's answer (its first listing, for ours)."""
        self.ready = self._read()
        return self.ready

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('%s %s died; see %s' % (self.kind, self.host,
                                                       self.log.name))
        return json.loads(line)

    def send(self, do):
        self.proc.stdin.write(json.dumps({'do': do}) + '\n')
        self.proc.stdin.flush()

    def call(self, do):
        self.send(do)
        return self._read()

    def stop(self):
        try:
            if self.proc.poll() is None:
                self.call('stop')
                self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def start_all(kind, hosts, endpoint, db, log_dir):
    """Start one service per host at once; wait for every start.

    :returns: the services, each with its ``ready`` answer.
    """
    services = []
    try:
        for host in hosts:
            services.append(Service(kind, host, endpoint, db, log_dir,
                                    wait=False))
        for service in services:
            service.wait_ready()
    except Exception:
        for service in services:
            service.stop()
        raise
    return services


def gather(services, do):
    """Send a command to every service at once; collect the answers."""
    for service in services:
        service.send(do)
    return [service._read() for service in services]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--kind', choices=DRIVERS, required=True)
    parser.add_argument('--host', required=True)
    parser.add_argument('--endpoint', required=True)
    parser.add_argument('--db', default='')
    return worker(parser.parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
