#!/usr/bin/env python3
# Copyright 2026 The ironic-partition Authors.
# SPDX-License-Identifier: Apache-2.0
"""Print the failed tests of the stestr repository, briefly, last.

CI keeps only the tail of its output, and tox runs the docs after the
functional tests, so a failed test's name would otherwise be lost. Reads
``stestr failing --subunit`` on standard input and prints each failed
test's id with the last lines of its traceback.

Usage: stestr failing --subunit | python tools/ci-failures.py [LINES]
"""

import sys

import subunit_tests


def main():
    keep = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    failed = [test for test in subunit_tests.read_tests(sys.stdin.buffer)
              if test['status'] in ('fail', 'uxsuccess')]
    if not failed:
        print('No failed test recorded.')
        return
    print('%d failed test(s):' % len(failed))
    for test in failed:
        print('FAILED %s' % test['id'])
    for test in failed:
        tb = test['details'].get('traceback')
        text = tb.as_text() if tb is not None else '(no traceback)'
        lines = text.rstrip().splitlines()
        print('--- %s (last %d lines of its traceback)' % (
            test['id'], min(keep, len(lines))))
        print('\n'.join(lines[-keep:]))


if __name__ == '__main__':
    main()
