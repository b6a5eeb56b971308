# Copyright 2026 The ironic-partition Authors.
# SPDX-License-Identifier: Apache-2.0
"""The tests of a subunit stream, for the scripts of this folder."""

import subunit
import testtools


def read_tests(stream):
    """Read every test of a subunit v2 stream.

    :param stream: a binary file, e.g. ``sys.stdin.buffer`` fed by
        ``stestr last --subunit``.
    :returns: a list of testtools' test dicts (``id``, ``status``,
        ``tags``, ``timestamps``, ``details``), in the stream's order.
    """
    tests = []
    result = testtools.StreamToDict(tests.append)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(stream).run(result)
    finally:
        result.stopTestRun()
    return tests
