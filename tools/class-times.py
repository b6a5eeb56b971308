#!/usr/bin/env python3
# Copyright 2026 The ironic-partition Authors.
# SPDX-License-Identifier: Apache-2.0
"""Print each test class's share of a stestr run, setup included.

A class's setup (its deployment, ``setUpClass``) is not a test, so
stestr's own timings leave it out. This measures a class as the testing
page states its figures: on its worker, from the end of the previous
class's last test (or the worker's first test start, for its first
class) to the end of its own last test, so with its setup and the
previous class's teardown. Reads ``stestr last --subunit`` on standard
input.

Usage: stestr last --subunit | python tools/class-times.py [--min SECONDS]
"""

import argparse
import collections
import sys

import subunit_tests


def _class_of(test_id):
    # NOTE(ironic-partition): scenario tests read "module.Class.test(x)".
    return test_id.split('(')[0].rsplit('.', 1)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--min', type=float, default=0.0,
                        help='leave out classes shorter than this (s)')
    args = parser.parse_args()
    tests = []
    for test in subunit_tests.read_tests(sys.stdin.buffer):
        start, stop = test['timestamps']
        if start is None or stop is None or test['status'] == 'exists':
            continue
        worker = next((t for t in test['tags'] if t.startswith('worker-')),
                      'worker-0')
        tests.append((worker, start, stop, test['id'], test['status']))
    if not tests:
        print('No timed test recorded.')
        return 1
    by_worker = collections.defaultdict(list)
    for test in tests:
        by_worker[test[0]].append(test)
    rows = []
    for worker, runs in sorted(by_worker.items()):
        runs.sort(key=lambda t: t[1])
        edge = runs[0][1]
        first = runs[0][1]
        spans = collections.OrderedDict()
        for _worker, start, stop, test_id, status in runs:
            name = _class_of(test_id)
            span = spans.get(name)
            if span is None:
                span = spans[name] = {'begin': edge, 'end': stop,
                                      'first': start, 'tests': 0,
                                      'skipped': 0}
            span['end'] = max(span['end'], stop)
            span['tests'] += 1
            span['skipped'] += status == 'skip'
            edge = span['end']
        total = (edge - first).total_seconds()
        print('%s: %.0f s of tests, first to last' % (worker, total))
        for name, span in spans.items():
            rows.append((worker, name, span))
    rows.sort(key=lambda r: r[2]['begin'] - r[2]['end'])
    print('| class | worker | s | before its first test (s) | tests |')
    print('|---|---|---|---|---|')
    for worker, name, span in rows:
        seconds = (span['end'] - span['begin']).total_seconds()
        if seconds < args.min:
            continue
        setup = (span['first'] - span['begin']).total_seconds()
        tests = '%d' % span['tests']
        if span['skipped']:
            tests += ' (%d skipped)' % span['skipped']
        print('| %s | %s | %.0f | %.0f | %s |' % (
            name.rsplit('.', 1)[-1], worker[len('worker-'):], seconds,
            setup, tests))
    return 0


if __name__ == '__main__':
    sys.exit(main())
