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

"""Claim-round time per refresh, on MariaDB and PostgreSQL.

Several services (threads, each with its own engine and connection pool,
as separate processes would have) share N nodes through the tooz-exact
ring and run the claim round of every refresh
(:meth:`ironic_partition.claims.manager.ClaimManager.round`) at the same
moment. Phases, each timed per service and per round:

``cold``
    the first round on an empty table: every node is claimed;
``steady``
    nothing changes: every claim is renewed (the common case);
``failover``
    one service died and its leases ran out; the survivors' ring gives
    them its nodes, which they take by compare-and-swap;
``rejoin``
    it comes back: the survivors stop reporting the nodes the ring gives
    back, release them one round later, and it claims them;
``single``
    one service holding every node: cold, then steady.

At the end every node must be validly claimed by its ring owner, and no
two services may have reported the same node in the same round.

Examples::

    python benchmarks/claims_bench.py --backend mysql
    python benchmarks/claims_bench.py --backend postgresql --nodes 2000
    python benchmarks/claims_bench.py --url mysql+pymysql://u:p@h/db

A scratch database is created through the administrative URL (environment
``IRONIC_PARTITION_TEST_PG_URL`` / ``IRONIC_PARTITION_TEST_MYSQL_URL``,
defaulting to the local servers) and dropped afterwards, unless ``--url``
names an existing, migrated or empty one.
"""

import argparse
import sys
import threading
import uuid

import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

from ironic_partition.claims import manager as claims
from ironic_partition.db import api as db_api
from ironic_partition.db import models
from ironic_partition.db import store
from ironic_partition.partition import rules
from ironic_partition.ring import hash_ring
from ironic_partition.testing.services import db as harness_db

ROLE = 'nova-compute'


def _percentile(values, pct):
    ordered = sorted(values)
    index = min(len(ordered) - 1,
                max(0, int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


class Service(object):
    """One service: a connection of its own and a claim manager."""

    def __init__(self, url, host, lease, margin):
        self.host = host
        self.db = db_api.Connection(url, max_retries=0)
        self.manager = claims.ClaimManager(store.Store(self.db), host, ROLE,
                                           lease_time=lease,
                                           fencing_margin=margin)
        self.reported = frozenset()

    def close(self):
        self.db.dispose()


def shares(hosts, nodes):
    """Split nodes among hosts with the tooz-exact ring.

    :param hosts: the live hosts.
    :param nodes: node UUIDs.
    :returns: a dict of host to the list of its nodes.
    """
    owners = rules.ring_owners(hash_ring.HashRing(hosts), nodes)
    result = {h: [] for h in hosts}
    for node, host in owners.items():
        result[host].append(node)
    return result


def run_rounds(services, wanted, rounds):
    """Run rounds on several services at once, in lock step.

    :param services: the services taking part.
    :param wanted: host to the nodes its ring gives it.
    :param rounds: how many rounds.
    :returns: a list of ``(round, host, seconds, statements, ok)``, and
        the list of nodes reported by two services in the same round.
    """
    barrier = threading.Barrier(len(services))
    samples, errors, overlaps = [], [], []
    lock = threading.Lock()
    reported = {}

    def run(service):
        try:
            for r in range(rounds):
                barrier.wait(120)
                out = service.manager.round(wanted[service.host])
                with lock:
                    samples.append((r, service.host, out.seconds,
                                    out.statements, out.ok))
                    for other, nodes in reported.get(r, {}).items():
                        both = nodes & out.ring_reported
                        if both:
                            overlaps.append((r, other, service.host,
                                             len(both)))
                    reported.setdefault(r, {})[service.host] = (
                        out.ring_reported)
                service.reported = out.ring_reported
        except Exception as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(s,)) for s in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return samples, overlaps


def summarize(phase, samples, nodes, hosts):
    """One result line's values.

    :returns: a dict.
    """
    seconds = [s[2] for s in samples]
    return {'phase': phase, 'nodes': nodes, 'hosts': hosts,
            'rounds': len(samples),
            'failed': sum(1 for s in samples if not s[4]),
            'p50_ms': round(_percentile(seconds, 50) * 1000, 1),
            'max_ms': round(max(seconds) * 1000, 1),
            'statements_max': max(s[3] for s in samples)}


def expire(url, host):
    """End the leases of a host now, as if it had died a lease ago."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    table = models.Claim.__table__
    try:
        with engine.begin() as conn:
            conn.execute(sa.update(table).where(
                table.c.owner == host).values(
                    expires_at=models.utc_ago(sa.literal(1, sa.Integer))))
    finally:
        engine.dispose()


def bench(url, n_nodes, n_hosts, rounds, lease, margin):
    """Run every phase at one size.

    :returns: a list of result dicts, and a list of problems found.
    """
    db_api.Connection(url).upgrade()
    nodes = [str(uuid.UUID(int=(n_nodes << 32) + i)) for i in range(n_nodes)]
    hosts = ['bench-%d' % i for i in range(n_hosts)]
    services = {h: Service(url, h, lease, margin) for h in hosts}
    results, problems = [], []
    try:
        wanted = shares(hosts, nodes)
        for phase, count in (('cold', 1), ('steady', rounds)):
            samples, overlaps = run_rounds(list(services.values()),
                                           wanted, count)
            results.append(summarize(phase, samples, n_nodes, n_hosts))
            problems.extend(overlaps)
        dead = hosts[0]
        expire(url, dead)
        survivors = [services[h] for h in hosts[1:]]
        wanted = shares(hosts[1:], nodes)
        samples, overlaps = run_rounds(survivors, wanted, 1)
        results.append(summarize('failover', samples, n_nodes,
                                 n_hosts - 1))
        problems.extend(overlaps)
        # NOTE(bench): the returning service starts afresh; three rounds:
        # survivors stop reporting, then release, then it claims.
        services[dead].close()
        services[dead] = Service(url, dead, lease, margin)
        wanted = shares(hosts, nodes)
        samples, overlaps = run_rounds(list(services.values()), wanted, 3)
        results.append(summarize('rejoin', samples, n_nodes, n_hosts))
        problems.extend(overlaps)
        owners = {c.node_id: c.owner for c in db_api.Connection(
            url).claims.read_claims(ROLE).claims if c.valid}
        expected = {n: h for h, share in wanted.items() for n in share}
        if owners != expected:
            problems.append('%d nodes not held by their ring owner'
                            % sum(1 for n in nodes
                                  if owners.get(n) != expected[n]))
        union = frozenset().union(*(s.reported for s in services.values()))
        if len(union) != n_nodes or sum(
                len(s.reported) for s in services.values()) != n_nodes:
            problems.append('the reported sets do not partition the nodes')
    finally:
        for service in services.values():
            service.close()
    # One service holding everything (the largest single round).
    single = Service(url, 'bench-single', lease, margin)
    try:
        table = models.Claim.__table__
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            conn.execute(sa.delete(table))
        engine.dispose()
        all_nodes = {'bench-single': nodes}
        for phase, count in (('single-cold', 1), ('single-steady', rounds)):
            samples, _o = run_rounds([single], all_nodes, count)
            results.append(summarize(phase, samples, n_nodes, 1))
        if len(single.reported) != n_nodes:
            problems.append('single service holds %d of %d nodes'
                            % (len(single.reported), n_nodes))
    finally:
        single.close()
    return results, problems


def main(argv=None):
    """Parse the arguments and run the benchmark.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :returns: 0 when every check passed, else 1.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--backend', choices=('postgresql', 'mysql', 'all'),
                        default='all')
    parser.add_argument('--url', help='Use this existing database.')
    parser.add_argument('--nodes', type=int, action='append',
                        help='Node counts (repeatable); 2000 and 10000 by '
                             'default.')
    parser.add_argument('--hosts', type=int, default=5)
    parser.add_argument('--rounds', type=int, default=5,
                        help='Steady rounds per service.')
    parser.add_argument('--lease', type=float, default=120.0)
    parser.add_argument('--margin', type=float, default=12.0)
    args = parser.parse_args(argv)
    sizes = args.nodes or [2000, 10000]
    if args.url:
        backends = [None]
    else:
        backends = (['postgresql', 'mysql'] if args.backend == 'all'
                    else [args.backend])
    status = 0
    for backend in backends:
        for size in sizes:
            name = None
            if args.url:
                url = args.url
            else:
                name = 'ipart_bench_%s' % uuid.uuid4().hex[:10]
                harness_db.create_database(backend, name)
                url = sa_url.make_url(harness_db.admin_url(backend)).set(
                    database=name).render_as_string(hide_password=False)
            try:
                results, problems = bench(url, size, args.hosts,
                                          args.rounds, args.lease,
                                          args.margin)
            finally:
                if name:
                    harness_db.drop_database(backend, name)
            dialect = sa_url.make_url(url).get_backend_name()
            for result in results:
                print(' '.join(['dialect=%s' % dialect] + [
                    '%s=%s' % item for item in result.items()]))
            if problems:
                status = 1
                print('PROBLEMS: %s' % problems)
            sys.stdout.flush()
    return status


if __name__ == '__main__':
    sys.exit(main())
