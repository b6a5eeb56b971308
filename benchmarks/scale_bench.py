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

"""Scale benchmark: 10^5 nodes, three services, ours against nova 34.

One real Ironic (the harness: API plus one conductor per group, fake
hardware) with ``--nodes`` nodes bulk-enrolled into ``--groups`` conductor
groups and ``--shards`` shards. Each service is a process of its own,
building its driver the way nova-compute does (nova's loader, nova's
configuration, nova's main database), so that its resident memory is its
own:

* three services with our driver in its **default configuration**
  (``membership_backend = database``, ownership claims on, the nova
  cadence), partitioning off: the fleet is shared among the three, about a
  third each; the claims database is ``--claims-backend`` (run it once per
  backend);
* one service with nova 34's own driver, in the same run, with the same
  three compute services in its service group.

It reports, from the same run:

* Ironic's own time to serve the pages of a full listing (one client
  reading them back to back, without decoding them);
* each driver's full refresh (``_refresh_cache``), its time in HTTP and
  outside it, and its resident memory growth;
* our incremental refreshes after ``--change`` of the fleet changed
  (instances set and cleared, group and shard changes, maintenance,
  creations and deletions; most through SQL with Ironic's ``updated_at``
  stamped as Ironic stamps it, some through the API), checked against
  the truth in Ironic's database at every step;
* the claim rounds, and whether any lease lapsed (a fence) during the
  first full listing;
* the driver side of one resource-tracker pass: ``get_available_nodes``
  plus ``get_available_resource`` for every node of the share.

With ``--profile-dir``, one more full refresh of the first service runs
under py-spy after the timed ones, and its samples are printed, grouped.

Example (needs functional-requirements.txt)::

    python benchmarks/scale_bench.py --nodes 100000 --claims-backend mysql
"""

import argparse
import configparser
import datetime
import os
import random
import statistics
import sys
import tempfile
import time
import uuid

import requests
import sqlalchemy

from ironic_partition.db import api as db_api
from ironic_partition.ironic import baremetal
from ironic_partition import testing as harness
from ironic_partition.testing.services import db as harness_db
import pyspy_profile
import scale_worker

HOSTS = scale_worker.HOSTS


# -- The orchestrator ----------------------------------------------------

def ironic_serve_seconds(endpoint, page_size=1000):
    """Ironic's own time to serve a full listing's pages, back to back.

    :returns: ``(seconds, pages)``; the answers are read, not decoded.
    """
    session = requests.Session()
    params = {'fields': ','.join(baremetal.NODE_FIELDS),
              'limit': page_size}
    headers = {'X-OpenStack-Ironic-API-Version': baremetal.MIN_MICROVERSION}
    pages = 0
    start = time.perf_counter()
    while True:
        resp = session.get(endpoint + '/v1/nodes', params=params,
                           headers=headers)
        resp.raise_for_status()
        pages += 1
        body = resp.content
        # The marker is the last UUID of the page: found without decoding
        # the page (its "next" link carries it too).
        tail = body.rfind(b'"next"')
        if tail < 0:
            break
        marker_at = body.find(b'marker=', tail)
        params['marker'] = body[marker_at + 7:marker_at + 43].decode()
    return time.perf_counter() - start, pages


class Changer(object):
    """Random changes to Ironic's nodes, with Ironic's own stamps."""

    def __init__(self, ironic, groups, shards, seed):
        self.conn = harness.connect(ironic.endpoint)
        self.groups = groups
        self.shards = shards
        self.rng = random.Random(seed)
        url = _ironic_db_url(ironic.config_file)
        self.engine = sqlalchemy.create_engine(url)
        self.created = 0
        self.deleted = set()

    def truth(self):
        """Every node as Ironic's database has it."""
        with self.engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(
                'SELECT uuid, instance_uuid, maintenance, conductor_group '
                'FROM nodes')).fetchall()
        return {r[0]: [r[1], bool(r[2]), r[3]] for r in rows}

    def apply(self, fraction, api):
        """Change ``fraction`` of the nodes; a few through the API.

        :returns: a dict of counts by kind.
        """
        truth = self.truth()
        free = [u for u, v in truth.items() if v[0] is None]
        count = max(1, int(len(truth) * fraction))
        counts = {}
        updates = []
        kinds = ('instance', 'clear', 'group', 'shard', 'maintenance')
        for u in self.rng.sample(sorted(truth), count):
            kind = self.rng.choice(kinds)
            if kind == 'instance' and u in free:
                updates.append((u, {'instance_uuid': str(uuid.uuid4())}))
            elif kind == 'clear' or kind == 'instance':
                updates.append((u, {'instance_uuid': None}))
            elif kind == 'group':
                updates.append((u, {'conductor_group':
                                    self.rng.choice(self.groups)}))
            elif kind == 'shard':
                updates.append((u, {'shard': self.rng.choice(self.shards)}))
            else:
                updates.append((u, {'maintenance':
                                    self.rng.random() < 0.5}))
            counts[kind] = counts.get(kind, 0) + 1
        with self.engine.begin() as conn:
            for u, values in updates:
                # NOTE: what Ironic's models do on every update.
                sets = ', '.join('%s = :%s' % (k, k) for k in values)
                conn.execute(sqlalchemy.text(
                    'UPDATE nodes SET %s, updated_at = :now WHERE uuid = '
                    ':uuid' % sets),
                    dict(values, uuid=u, now=_utcnow()))
        # Through Ironic's API: creations, deletions, maintenance.
        for _ in range(api):
            name = 'scale-new-%d' % self.created
            self.created += 1
            self.conn.baremetal.create_node(
                name=name, driver='fake-hardware',
                conductor_group=self.rng.choice(self.groups),
                resource_class='baremetal')
        deletable = [u for u in free if u not in self.deleted]
        for u in self.rng.sample(deletable, api):
            self.conn.baremetal.delete_node(u)
            self.deleted.add(u)
        counts['api_created'] = api
        counts['api_deleted'] = api
        return counts

    def close(self):
        self.engine.dispose()


def age_fleet(config_file, age):
    """Stamp the nodes as enrolled and last changed in the past.

    The bulk enrolment stamps every node with the same instant, now; a
    fleet in use has its changes spread over time and behind it. Node
    ``id`` is stamped ``id`` seconds after ``age`` ago.
    """
    engine = sqlalchemy.create_engine(_ironic_db_url(config_file))
    spread = ("(:t + id * interval '1 second')"
              if engine.dialect.name == 'postgresql'
              else 'DATE_ADD(:t, INTERVAL id SECOND)')
    try:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text(
                'UPDATE nodes SET created_at = %s, updated_at = %s'
                % (spread, spread)), {'t': _utcnow() - age})
    finally:
        engine.dispose()


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _ironic_db_url(config_file):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(config_file)
    return parser.get('database', 'connection')


def check(name, ok, detail):
    print('  [%s] %s: %s' % ('ok' if ok else 'MISSED', name, detail))
    return ok


def run(args):
    sys.stdout.reconfigure(line_buffering=True)

    groups = ['group%d' % i for i in range(args.groups)]
    shards = ['shard%d' % i for i in range(args.shards)]
    log_dir = tempfile.mkdtemp(prefix='ipart-scale-')
    print('load before the run: %s (2 cores); logs in %s'
          % (' '.join(open('/proc/loadavg').read().split()[:3]), log_dir))
    results = {'ok': True}
    # NOTE: the conductors would run on hosts of their own; here they share
    # two cores with the API and the services measured, so their periodic
    # power-state sync (25,000 fake nodes each, every minute) is spaced
    # out. It changes no node either way.
    quiet = {'conductor': {'sync_power_state_interval': 3600}}
    with harness.IronicFixture(db_backend=args.ironic_backend,
                               conductor_groups=groups,
                               extra_config=quiet) as ironic, \
            harness_db.DatabaseFixture(args.claims_backend) as claimsdb:
        start = time.perf_counter()
        harness.bulk_enroll(ironic.config_file, args.nodes, groups,
                            provision_state='available', shards=shards)
        print('Ironic %s on %s: %d nodes in groups %s and shards %s '
              'enrolled in %.0f s' % (ironic.endpoint, args.ironic_backend,
                                      args.nodes, ','.join(groups),
                                      ','.join(shards),
                                      time.perf_counter() - start),
              flush=True)
        age_fleet(ironic.config_file, datetime.timedelta(days=2))
        db_api.Connection(claimsdb.url).upgrade()
        serve, pages = ironic_serve_seconds(ironic.endpoint)
        print('Ironic serves a full listing (%d pages) in %.1f s'
              % (pages, serve), flush=True)
        ours = []
        nova = None
        try:
            # First full listings, all three at once, as at a fleet-wide
            # start: each service's start (init_host) lists the fleet and
            # claims its share before nova's start goes on.
            ours = scale_worker.start_all('ours', HOSTS, ironic.endpoint,
                                          claimsdb.url, log_dir)
            first = [service.ready for service in ours]
            nova = scale_worker.Service('nova', HOSTS[0], ironic.endpoint,
                                        None, log_dir)
            nova_full = [nova.call('refresh') for _ in range(args.runs)]
            serves, ours_full = [serve], []
            for _ in range(args.runs):
                # A full listing now (what the periodic resync costs),
                # next to Ironic's own time for the same pages.
                ours_full.append(_forced_full(ours[0]))
                serves.append(ironic_serve_seconds(ironic.endpoint)[0])
            report_full(results, serves, first, ours_full, nova_full,
                        args)
            if args.profile_dir:
                profile_full(ours[0], args.profile_dir)
            changer = Changer(ironic, groups, shards, args.seed)
            incr = []
            for step in range(args.steps):
                counts = changer.apply(args.change, args.api_changes)
                # Timed alone, as the full listings were; then the others.
                incr.append(ours[0].call('refresh'))
                scale_worker.gather(ours[1:], 'refresh')
                truth = changer.truth()
                index = ours[0].call('index')['nodes']
                same = index == truth
                results['ok'] &= check(
                    'step %d: incremental index == Ironic' % step,
                    same or _only_deleted(index, truth, changer.deleted),
                    '%s; %s' % (counts, _diff(index, truth,
                                              changer.deleted)))
            report_incremental(results, incr, ours_full, nova_full)
            # Deletions are found by the periodic resync.
            _forced_full(ours[0])
            index = ours[0].call('index')['nodes']
            results['ok'] &= check(
                'after a full resync: index == Ironic', index ==
                changer.truth(), _diff(index, changer.truth(), set()))
            managed = [set(s.call('managed')['nodes']) for s in ours]
            overlap = (managed[0] & managed[1]) | (managed[1] & managed[2])\
                | (managed[0] & managed[2])
            results['ok'] &= check('no node managed twice', not overlap,
                                   '%d shared, split %s'
                                   % (len(overlap),
                                      '/'.join(str(len(m))
                                               for m in managed)))
            rt = {'ours': ours[0].call('rt'), 'nova': nova.call('rt')}
            report_rt(rt)
            # A restart keeps the claims (nova's default): the new process
            # adopts them and renews them during its first full listing.
            ours[0].stop()
            ours[0] = scale_worker.Service('ours', HOSTS[0],
                                           ironic.endpoint, claimsdb.url,
                                           log_dir)
            again = ours[0].ready
            after = set(ours[0].call('managed')['nodes'])
            results['ok'] &= check(
                'restart: no lease lapse during the first listing',
                again['fences'] == 0 and after == managed[0],
                '%d fences in a %.1f s first listing; %d of %d nodes kept'
                % (again['fences'], again['seconds'],
                   len(after & managed[0]), len(managed[0])))
            changer.close()
        finally:
            for service in ours + ([nova] if nova else []):
                service.stop()
    print('RESULT: %s' % ('PASS' if results['ok'] else 'FAIL'))
    return 0 if results['ok'] else 1


def profile_full(service, directory):
    """One more full listing of a service, under py-spy; not timed.

    :param service: a :class:`scale_worker.Service`.
    :param directory: where py-spy's raw files are kept.
    :returns: None (the grouped samples are printed).
    """
    os.makedirs(directory, exist_ok=True)
    profile = pyspy_profile.Profilers(
        service.proc.pid, os.path.join(directory, 'pyspy-full-refresh'))
    profile.start()
    try:
        answer = _forced_full(service)
    finally:
        profile.stop()
    print('\n== One more full refresh of the first service, under py-spy '
          '(%.1f s, %.1f s in HTTP; not in the figures above) =='
          % (answer['seconds'], answer['http']))
    for kind, prof in sorted(profile.summary().items()):
        pyspy_profile.print_summary('full refresh, %s' % kind, prof)


def _forced_full(service):
    """One full listing of a service: its resync, made due now."""
    service.send('refresh-full')
    return service._read()


def _only_deleted(index, truth, deleted):
    extra = set(index) - set(truth)
    rest = {u: v for u, v in index.items() if u not in extra}
    return extra <= deleted and rest == truth


def _diff(index, truth, deleted):
    extra = set(index) - set(truth)
    missing = set(truth) - set(index)
    changed = sum(1 for u in set(index) & set(truth) if index[u] != truth[u])
    return ('%d listed, %d in Ironic; %d deleted not yet resynced, %d '
            'missing, %d differing' % (len(index), len(truth),
                                       len(extra & deleted), len(missing),
                                       changed))


def _median(answers, key):
    return statistics.median(a[key] for a in answers)


def report_full(results, serves, first, ours_full, nova_full, args):
    print('\n== Full listing, %d nodes (partitioning off, 3 services) =='
          % args.nodes)
    ours = _median(ours_full, 'seconds')
    ours_http = _median(ours_full, 'http')
    nova = _median(nova_full, 'seconds')
    print('%-44s %10s %10s %8s' % ('', 'nova 34', 'ours', 'ratio'))
    print('%-44s %10.1f %10.1f %7.1fx' % ('full refresh, median (s)', nova,
                                          ours, nova / ours))
    print('%-44s %10.1f %10.1f' % ('  of which in HTTP (s)',
                                   _median(nova_full, 'http'), ours_http))
    print('%-44s %10.0f %10.0f' % (
        'resident memory growth (MiB)', max(a['rss_growth']
                                            for a in nova_full),
        max(a['rss_growth'] for a in first + ours_full)))
    print('%-44s %10d %10d' % ('nodes managed', nova_full[-1]['managed'],
                               first[0]['managed']))
    serve = statistics.median(serves)
    bound = serve * 1.10
    results['ok'] &= check('full refresh <= Ironic serving the pages + 10%',
                           ours <= bound, '%.1f s vs %.1f s (+10%%: %.1f s; '
                           'Ironic alone: %s s)'
                           % (ours, serve, bound,
                              ', '.join('%.1f' % x for x in serves)))
    outside = (ours - ours_http) / ours
    results['ok'] &= check('time outside HTTP <= 5%', outside <= 0.05,
                           '%.1f%% (%.2f s, of which the claim round %.2f s)'
                           % (100 * outside, ours - ours_http,
                              _median(ours_full, 'claim_seconds')))
    growth = max(a['rss_growth'] for a in first + ours_full)
    results['ok'] &= check('memory growth <= 100 MiB per service',
                           growth <= 100, '%.0f MiB (nova 34: %.0f MiB)'
                           % (growth, max(a['rss_growth']
                                          for a in nova_full)))
    claims = max(a['claim_seconds'] for a in first)
    results['ok'] &= check('claim round <= 5 s (%s), first listing'
                           % args.claims_backend, claims <= 5,
                           'max %.2f s over the 3 services' % claims)
    not_ready = [a['not_ready'] for a in first + ours_full
                 if 'not_ready' in a]
    results['ok'] &= check('every service ready after its first listing',
                           not not_ready, '; '.join(not_ready) or 'ready')
    fences = sum(a['fences'] for a in first)
    results['ok'] &= check('no lease lapse during the first listing',
                           fences == 0, '%d fences; first listing %.1f s'
                           % (fences, max(a['seconds'] for a in first)))


def report_incremental(results, incr, ours_full, nova_full):
    # NOTE(ironic-partition): a step's refresh may be the periodic full
    # resync (full_resync_interval, 300 s by default) when the steps ran
    # long: it is shown, and left out of the incremental figures.
    feed = [a for a in incr if not a['full']] or incr
    seconds = statistics.median(a['seconds'] for a in feed)
    ours = _median(ours_full, 'seconds')
    nova = _median(nova_full, 'seconds')
    print('\n== Incremental refresh ==')
    for step, a in enumerate(incr):
        print('step %d: %s %.2f s (%.2f s in HTTP, %d changes read, '
              'claims %.2f s), resident growth %.0f MiB'
              % (step, 'FULL' if a['full'] else 'incremental', a['seconds'],
                 a['http'], a['changed'], a['claim_seconds'],
                 a['rss_growth']))
    print('median %.2f s over %d incremental refreshes (%d changes read, '
          'median); claims %.2f s'
          % (seconds, len(feed),
             statistics.median(a['changed'] for a in feed),
             max(a['claim_seconds'] for a in feed)))
    results['ok'] &= check('incremental >= 10x faster than our full',
                           ours / seconds >= 10, '%.1fx' % (ours / seconds))
    results['ok'] &= check('incremental >= 30x faster than nova\'s full',
                           nova / seconds >= 30, '%.1fx' % (nova / seconds))
    results['ok'] &= check('every step refresh incremental (one full is '
                           'the periodic resync when the steps ran long)',
                           not any(a['full'] for a in incr),
                           '%d full' % sum(a['full'] for a in incr))


def report_rt(rt):
    print('\n== Driver side of one resource-tracker pass ==')
    print('%-44s %10s %10s' % ('', 'nova 34', 'ours'))
    print('%-44s %10.1f %10.1f' % ('get_available_resource per node (us)',
                                   rt['nova']['per_node_us'],
                                   rt['ours']['per_node_us']))
    print('%-44s %10d %10d' % ('nodes', rt['nova']['nodes'],
                               rt['ours']['nodes']))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=100000)
    parser.add_argument('--groups', type=int, default=4)
    parser.add_argument('--shards', type=int, default=4)
    parser.add_argument('--runs', type=int, default=2)
    parser.add_argument('--steps', type=int, default=3)
    parser.add_argument('--change', type=float, default=0.01)
    parser.add_argument('--api-changes', type=int, default=5)
    parser.add_argument('--seed', type=int, default=17)
    parser.add_argument('--ironic-backend', default='postgresql',
                        choices=('postgresql', 'mysql'))
    parser.add_argument('--claims-backend', default='mysql',
                        choices=('postgresql', 'mysql'))
    parser.add_argument('--trace-memory', type=int, default=0,
                        metavar='LINES',
                        help='trace each service\'s Python allocations '
                        '(tracemalloc, which slows the listings): the '
                        'LINES lines holding most after each timed '
                        'listing, in the services\' logs')
    parser.add_argument('--profile-dir', metavar='DIR',
                        help='after the timed full refreshes, one more of '
                        'the first service under py-spy (pip install '
                        'py-spy; it needs ptrace), wall and CPU time: its '
                        'samples grouped and printed, the raw files kept '
                        'in DIR')
    args = parser.parse_args(argv)
    if args.trace_memory:
        os.environ[scale_worker.TRACE_ENV] = str(args.trace_memory)
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
