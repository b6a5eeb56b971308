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

"""Heartbeat concurrency benchmark of the database membership backend.

N services (threads, each with its own engine and connection pool, as
separate processes would have) heartbeat every ``--interval`` seconds for
``--duration`` seconds into a fresh database, so the first beats race to
insert their rows. It reports heartbeat latency percentiles, errors, and
deadlocks seen by the server (even those retried transparently), and checks
at the end that every service has exactly one live row.

Examples::

    python benchmarks/heartbeat_bench.py --backend mysql
    python benchmarks/heartbeat_bench.py --backend postgresql --duration 10
    python benchmarks/heartbeat_bench.py --url mysql+pymysql://u:p@h/db

A scratch database is created through the administrative URL (environment
``IRONIC_PARTITION_TEST_PG_URL`` / ``IRONIC_PARTITION_TEST_MYSQL_URL``,
defaulting to the local servers) and dropped afterwards, unless ``--url``
names an existing one.
"""

import argparse
import collections
import os
import sys
import threading
import time
import uuid

from oslo_config import cfg
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import api as db_api
from ironic_partition.membership import database as membership_database
from ironic_partition import settings as settings_mod

ADMIN_URLS = {
    'postgresql': ('IRONIC_PARTITION_TEST_PG_URL',
                   'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
    'mysql': ('IRONIC_PARTITION_TEST_MYSQL_URL',
              'mysql+pymysql://root@127.0.0.1:3306/'),
}

# Server error codes of deadlocks and lock wait timeouts.
_MYSQL_DEADLOCK_CODES = (1205, 1213)
_PG_DEADLOCK_CODES = ('40P01', '55P03')


def _admin_engine(backend):
    env, default = ADMIN_URLS[backend]
    return sa.create_engine(os.environ.get(env, default),
                            isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def create_scratch(backend):
    """Create a scratch database.

    :param backend: ``postgresql`` or ``mysql``.
    :returns: the URL of the new database.
    """
    name = 'ipart_bench_%s' % uuid.uuid4().hex[:10]
    engine = _admin_engine(backend)
    with engine.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))
    url = engine.url.set(database=name)
    engine.dispose()
    return url.render_as_string(hide_password=False), name


def drop_scratch(backend, name):
    """Drop a scratch database.

    :param backend: ``postgresql`` or ``mysql``.
    :param name: its name.
    :returns: None
    """
    engine = _admin_engine(backend)
    with engine.connect() as conn:
        if backend == 'postgresql':
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name))
        else:
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
    engine.dispose()


class Counters:
    """Thread-safe counters shared by the services."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.latencies = []
        self.first = []
        self.errors = []

    def deadlock_listener(self, context):
        """SQLAlchemy ``handle_error`` hook counting server deadlocks.

        :param context: the ``ExceptionContext``.
        :returns: None
        """
        orig = context.original_exception
        code = getattr(orig, 'pgcode', None)
        if code is None and getattr(orig, 'args', None):
            code = orig.args[0]
        if code in _MYSQL_DEADLOCK_CODES or code in _PG_DEADLOCK_CODES:
            with self.lock:
                self.counts['deadlocks'] += 1


def _conf(args):
    conf = cfg.ConfigOpts()
    conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
    database_conf.register_opts(conf)
    conf([])
    conf.set_override('heartbeat_interval', max(1, int(args.interval)),
                      group='ironic_partition')
    conf.set_override('service_down_time', args.down_time,
                      group='ironic_partition')
    return conf


def _service(index, args, url, conf, counters, start_at, stop_at):
    connection = db_api.Connection(url, max_pool_size=1, max_overflow=0)
    sa.event.listen(connection.engine, 'handle_error',
                    counters.deadlock_listener)
    backend = membership_database.DatabaseMembership(
        settings_mod.for_tests('bench-host-%03d' % index, partition_key='',
                               conf=conf),
        'nova-compute', version='bench', connection=connection)
    # NOTE(bench): spread the services over the first interval, as real
    # services started at different times would be.
    next_at = start_at + args.interval * index / args.services
    latencies = []
    first = None
    try:
        while True:
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if time.monotonic() >= stop_at:
                break
            t0 = time.monotonic()
            try:
                connection.services.heartbeat(
                    backend.host, backend.role, backend.partition_key,
                    backend.version)
            except Exception as exc:
                with counters.lock:
                    counters.counts['errors'] += 1
                    counters.errors.append(repr(exc))
            else:
                # NOTE(bench): the first beat opens the connection and
                # inserts the row; it is reported on its own.
                if first is None:
                    first = time.monotonic() - t0
                else:
                    latencies.append(time.monotonic() - t0)
            if args.members:
                t1 = time.monotonic()
                try:
                    backend.members()
                except Exception as exc:
                    with counters.lock:
                        counters.counts['member_errors'] += 1
                        counters.errors.append(repr(exc))
                with counters.lock:
                    counters.counts['member_queries'] += 1
                    counters.counts['member_time_ms'] += int(
                        (time.monotonic() - t1) * 1000)
            next_at += args.interval
    finally:
        with counters.lock:
            counters.latencies.extend(latencies)
            if first is not None:
                counters.first.append(first)
            counters.counts['duplicate_retries'] += connection.stats[
                'duplicate_retries']
        connection.dispose()


def _percentile(values, pct):
    if not values:
        return float('nan')
    ordered = sorted(values)
    index = min(len(ordered) - 1,
                max(0, int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def run(args, url):
    """Run the benchmark against one database.

    :param args: the parsed arguments.
    :param url: the database URL.
    :returns: a dict of results.
    """
    setup = db_api.Connection(url)
    setup.upgrade()
    conf = _conf(args)
    counters = Counters()
    start_at = time.monotonic() + 1.0
    stop_at = start_at + args.duration
    threads = [threading.Thread(target=_service,
                                args=(i, args, url, conf, counters,
                                      start_at, stop_at))
               for i in range(args.services)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snapshot = setup.services.services('nova-compute', args.down_time)
    setup.dispose()
    lat = counters.latencies
    result = {
        'dialect': sa_url.make_url(url).get_backend_name(),
        'services': args.services,
        'interval_s': args.interval,
        'duration_s': args.duration,
        'heartbeats': len(lat) + len(counters.first),
        'expected_heartbeats': int(args.services * args.duration
                                   / args.interval),
        'errors': counters.counts['errors'],
        'deadlocks': counters.counts['deadlocks'],
        'insert_races': counters.counts['duplicate_retries'],
        'p50_ms': round(_percentile(lat, 50) * 1000, 2),
        'p90_ms': round(_percentile(lat, 90) * 1000, 2),
        'p99_ms': round(_percentile(lat, 99) * 1000, 2),
        'max_ms': round(max(lat) * 1000, 2) if lat else None,
        'first_beat_p50_ms': round(_percentile(counters.first, 50) * 1000,
                                   2),
        'first_beat_max_ms': round(max(counters.first) * 1000, 2)
        if counters.first else None,
        'rows': len(snapshot.services),
        'live_rows': sum(1 for s in snapshot.services if s.alive),
    }
    if args.members and counters.counts['member_queries']:
        result['members_avg_ms'] = round(
            counters.counts['member_time_ms']
            / counters.counts['member_queries'], 2)
        result['member_errors'] = counters.counts['member_errors']
    if counters.errors:
        result['first_errors'] = counters.errors[:5]
    return result


def main(argv=None):
    """Parse the arguments and run the benchmark.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :returns: 0 when there were no errors or deadlocks and every service
        has its live row, else 1.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--backend', choices=('postgresql', 'mysql', 'all'),
                        default='all')
    parser.add_argument('--url', help='Use this existing database.')
    parser.add_argument('--services', type=int, default=50)
    parser.add_argument('--interval', type=float, default=1.0)
    parser.add_argument('--duration', type=float, default=60.0)
    parser.add_argument('--down-time', type=int, default=10)
    parser.add_argument('--members', action='store_true',
                        help='Also read the membership after each beat.')
    args = parser.parse_args(argv)
    status = 0
    if args.url:
        targets = [(None, args.url, None)]
    else:
        backends = (('postgresql', 'mysql') if args.backend == 'all'
                    else (args.backend,))
        targets = []
        for backend in backends:
            url, name = create_scratch(backend)
            targets.append((backend, url, name))
    for backend, url, name in targets:
        try:
            result = run(args, url)
        finally:
            if name:
                drop_scratch(backend, name)
        print(' '.join('%s=%s' % item for item in result.items()))
        sys.stdout.flush()
        if (result['errors'] or result['deadlocks']
                or result['live_rows'] != args.services):
            status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
