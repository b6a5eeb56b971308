#!/usr/bin/env python3
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

"""Benchmark ironic_partition.ring.hash_ring against tooz and uhashring.

Runs every ring in one process on the same keys and prints, per member count
and partition count: build time, lookup time, our ratios to tooz and to the
bare md5 cost, balance, keys moved when a member leaves or joins against the
ideal, and the memory of the ring structures. Balanced-mode rows follow.

Usage::

    PYTHONPATH=. python benchmarks/ring_bench.py [--keys N] [--quick]
"""

import argparse
import collections
import gc
import hashlib
import random
import sys
import time
import tracemalloc
import uuid

from oslo_log import log as logging

from ironic_partition.ring import balanced_ring
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)

try:
    from tooz import hashring as tooz_hashring
except ImportError:  # pragma: no cover
    tooz_hashring = None
try:
    import uhashring
except ImportError:  # pragma: no cover
    uhashring = None


def make_keys(count, seed=42):
    """Make reproducible node-UUID keys.

    :param count: number of keys.
    :param seed: random seed.
    :returns: a list of bytes.
    """
    rnd = random.Random(seed)
    return [str(uuid.UUID(int=rnd.getrandbits(128), version=4)).encode()
            for _ in range(count)]


def timed(func, repeat=1):
    """Time a call, best of ``repeat``.

    :param func: a callable without arguments.
    :param repeat: number of runs.
    :returns: a tuple (seconds, result of the last run).
    """
    best = None
    result = None
    for _run in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = func()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def measured(build):
    """Build a structure and measure the memory it holds.

    :param build: a callable returning the structure.
    :returns: a tuple (bytes held, structure).
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        obj = build()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, obj


def balance(mapping, members):
    """Compute the load spread of a mapping.

    :param mapping: dict key -> member.
    :param members: the members.
    :returns: a tuple (max/mean, min/mean).
    """
    counts = collections.Counter(mapping.values())
    mean = len(mapping) / len(members)
    loads = [counts.get(member, 0) for member in members]
    return max(loads) / mean, min(loads) / mean


def bare_md5(keys):
    """Hash every key with md5, the floor of any md5 ring lookup.

    :param keys: list of bytes.
    :returns: list of digests.
    """
    md5 = hashlib.md5
    return [md5(key, usedforsecurity=False).digest() for key in keys]


def fmt_ms(seconds):
    return '%8.1f' % (seconds * 1000.0)


def run_plain(keys, members_count, partitions, repeat, md5_cost, rows):
    """Benchmark the tooz-identical mode and the other libraries.

    :param keys: list of bytes.
    :param members_count: number of members.
    :param partitions: points per member.
    :param repeat: timing runs.
    :param md5_cost: seconds of the bare md5 pass.
    :param rows: list receiving result rows.
    """
    members = ['compute-%04d.example.com' % i for i in range(members_count)]
    ours_mem, ours = measured(
        lambda: hash_ring.HashRing(members, partitions=partitions))
    ours_build, _ring = timed(
        lambda: hash_ring.HashRing(members, partitions=partitions), repeat)
    # NOTE: the machine may be shared: measure md5 next to our lookups.
    md5_cost = min(md5_cost, timed(lambda: bare_md5(keys), repeat)[0])
    get_nodes = ours.get_nodes
    ours_lookup, ours_res = timed(lambda: [get_nodes(k) for k in keys],
                                  repeat)
    ours_bulk, mapping = timed(lambda: ours.map_keys(keys), repeat)
    row = {
        'members': members_count, 'partitions': partitions,
        'ours_build': ours_build, 'ours_lookup': ours_lookup,
        'ours_bulk': ours_bulk, 'ours_mem': ours_mem,
    }
    if tooz_hashring is not None:
        tooz_mem, tooz = measured(
            lambda: tooz_hashring.HashRing(members, partitions=partitions))
        tooz_build, _ring = timed(
            lambda: tooz_hashring.HashRing(members, partitions=partitions),
            repeat)
        tget = tooz.get_nodes
        tooz_lookup, tooz_res = timed(lambda: [tget(k) for k in keys],
                                      repeat)
        if tooz_res != ours_res:
            row['mismatch'] = sum(1 for a, b in zip(tooz_res, ours_res)
                                  if a != b)
        row.update(tooz_build=tooz_build, tooz_lookup=tooz_lookup,
                   tooz_mem=tooz_mem)
    if uhashring is not None:
        uring = uhashring.HashRing(members, vnodes=partitions)
        ubuild, uring = timed(
            lambda: uhashring.HashRing(members, vnodes=partitions), repeat)
        uget = uring.get_node
        ulookup, _res = timed(lambda: [uget(k) for k in keys], repeat)
        row.update(u_build=ubuild, u_lookup=ulookup)
    row['max'], row['min'] = balance(mapping, members)
    # NOTE: a member leaves: only its keys should move (ideal = its keys);
    # a member joins: ideal = len(keys) / (members + 1).
    victim = members[members_count // 2]
    smaller = hash_ring.HashRing([m for m in members if m != victim],
                                 partitions=partitions)
    moved = hash_ring.diff(keys, ours, smaller)
    owned = sum(1 for m in mapping.values() if m == victim)
    row['leave'] = len(moved) / max(owned, 1)
    bigger = hash_ring.HashRing(members + ['compute-new.example.com'],
                                partitions=partitions)
    moved = hash_ring.diff(keys, ours, bigger)
    row['join'] = len(moved) / (len(keys) / (members_count + 1))
    row['md5'] = md5_cost
    rows.append(row)


def run_balanced(keys, members_count, partitions, rows):
    """Benchmark the balanced mode.

    :param keys: list of bytes.
    :param members_count: number of members.
    :param partitions: points per member.
    :param rows: list receiving result rows.
    """
    members = ['compute-%04d.example.com' % i for i in range(members_count)]
    build, ring = timed(lambda: balanced_ring.BalancedHashRing(
        members, keys, partitions=partitions))
    assign, mapping = timed(ring.assignment)
    high, low = balance(mapping, members)
    victim = members[members_count // 2]
    owned = sum(1 for m in mapping.values() if m == victim)
    smaller = balanced_ring.BalancedHashRing(
        [m for m in members if m != victim], keys, partitions=partitions)
    leave = len(hash_ring.diff(keys, ring, smaller)) / max(owned, 1)
    bigger = balanced_ring.BalancedHashRing(
        members + ['compute-new.example.com'], keys, partitions=partitions)
    join = (len(hash_ring.diff(keys, ring, bigger))
            / (len(keys) / (members_count + 1)))
    plain = hash_ring.HashRing(members, partitions=partitions)
    switch = len(hash_ring.diff(keys, plain, ring)) / len(keys)
    tooz_default = hash_ring.HashRing(members)
    switch32 = len(hash_ring.diff(keys, tooz_default, ring)) / len(keys)
    rows.append({'members': members_count, 'partitions': partitions,
                 'build': build, 'assign': assign, 'max': high, 'min': low,
                 'leave': leave, 'join': join, 'switch': switch,
                 'switch32': switch32})


def ratio(a, b):
    if a is None or b is None or not b:
        return '     -'
    return '%6.2f' % (a / b)


def print_plain(rows, nkeys):
    print('\n== tooz-identical mode: %d keys, times in ms ==' % nkeys)
    print('members parts | build: tooz   ours  uhash  t/o | lookup: tooz'
          '     ours  t/o   bulk  t/b   uhash | ours/md5 bulk/md5 |'
          ' max/mean min/mean | leave join (x ideal) | mem KiB: tooz ours'
          ' o/t')
    for r in rows:
        print('%7d %5d | %11s %6s %6s %5s | %11s %8s %4s %6s %5s %7s |'
              ' %8s %8s | %8.3f %8.3f | %5.3f %5.3f          | %13.0f %5.0f'
              ' %4s%s' % (
                  r['members'], r['partitions'],
                  fmt_ms(r.get('tooz_build', 0)).strip(),
                  fmt_ms(r['ours_build']).strip(),
                  fmt_ms(r.get('u_build', 0)).strip(),
                  ratio(r.get('tooz_build'), r['ours_build']).strip(),
                  fmt_ms(r.get('tooz_lookup', 0)).strip(),
                  fmt_ms(r['ours_lookup']).strip(),
                  ratio(r.get('tooz_lookup'), r['ours_lookup']).strip(),
                  fmt_ms(r['ours_bulk']).strip(),
                  ratio(r.get('tooz_lookup'), r['ours_bulk']).strip(),
                  fmt_ms(r.get('u_lookup', 0)).strip(),
                  ratio(r['ours_lookup'], r['md5']).strip(),
                  ratio(r['ours_bulk'], r['md5']).strip(),
                  r['max'], r['min'], r['leave'], r['join'],
                  r.get('tooz_mem', 0) / 1024.0, r['ours_mem'] / 1024.0,
                  ratio(r['ours_mem'], r.get('tooz_mem')).strip(),
                  '  MISMATCH %d' % r['mismatch'] if 'mismatch' in r
                  else ''))
    print('t/o = tooz/ours (speed-up); t/b = tooz/bulk (map_keys); '
          'ours/md5 = get_nodes cost over bare md5.')


def print_balanced(rows, nkeys):
    print('\n== balanced mode (load factor %.2f): %d keys ==' % (
        balanced_ring.DEFAULT_LOAD_FACTOR, nkeys))
    print('members parts | build ms assign ms | max/mean min/mean |'
          ' leave join (x ideal) | moved from tooz same parts / from '
          'tooz 2**5')
    for r in rows:
        print('%7d %5d | %8.1f %9.1f | %8.3f %8.3f | %5.3f %5.3f          |'
              ' %6.2f%% / %6.2f%%' % (
                  r['members'], r['partitions'], r['build'] * 1000,
                  r['assign'] * 1000, r['max'], r['min'], r['leave'],
                  r['join'], r['switch'] * 100, r['switch32'] * 100))


def main(argv=None):
    """Run the benchmark.

    :param argv: command line arguments.
    :returns: exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--keys', type=int, default=100000,
                        help='number of keys (default 100000)')
    parser.add_argument('--quick', action='store_true',
                        help='only 2**5 partitions, fewer balanced rows, '
                             'one timing run')
    parser.add_argument('--members', type=int, nargs='+',
                        default=[10, 100, 1000])
    parser.add_argument('--partitions', type=int, nargs='+', default=None,
                        help='partition counts (default 32 1024)')
    parser.add_argument('--repeat', type=int, default=None,
                        help='timing runs, best kept (default 3, 1 quick)')
    parser.add_argument('--no-balanced', action='store_true')
    args = parser.parse_args(argv)
    partitions = args.partitions or ([2 ** 5] if args.quick
                                     else [2 ** 5, 2 ** 10])
    repeat = args.repeat or (1 if args.quick else 3)
    keys = make_keys(args.keys)
    md5_cost, _res = timed(lambda: bare_md5(keys), repeat)
    print('python %s; %d keys; bare md5 (digest) pass: %s ms' % (
        sys.version.split()[0], len(keys), fmt_ms(md5_cost).strip()))
    rows = []
    for parts in partitions:
        for count in args.members:
            if count * parts > 200000 and args.quick:
                continue
            run_plain(keys, count, parts, repeat, md5_cost, rows)
            sys.stdout.flush()
    print_plain(rows, len(keys))
    if not args.no_balanced:
        brows = []
        bparts = [balanced_ring.BALANCED_PARTITION_NUMBER]
        if not args.quick:
            bparts.insert(0, hash_ring.DEFAULT_PARTITION_NUMBER)
        for parts in bparts:
            for count in args.members:
                if count * parts > 200000 and args.quick:
                    continue
                run_balanced(keys, count, parts, brows)
        print_balanced(brows, len(keys))
    return 0


if __name__ == '__main__':
    sys.exit(main())
