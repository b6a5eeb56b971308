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

"""``ironic-partition`` for a process whose wall clock libfaketime shifts.

Used by :func:`ironic_partition.testing.commands.agents.clock_offset_env`
agents only; never in production. libfaketime 0.9.10 (Debian 12), with
``FAKETIME_DONT_FAKE_MONOTONIC=1`` so that only the wall clock is off,
fails every ``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`` with
``EINVAL``, and CPython 3.11's ``time.sleep()`` is made of exactly that
call (oslo.db's ``time.sleep(0)`` then breaks every database connection).
Faking the monotonic clock too is no way out: timed waits
(``threading.Event.wait``) then never return. So this module replaces
``time.sleep`` with a timed wait on an event, which libfaketime leaves
alone, and runs the real command line. Every wall-clock read of the
process (``time.time()``, ``datetime.now()``, the C libraries') stays
off by the offset; the monotonic clock is the real one.

Usage: ``python -m ironic_partition.testing.commands.skewed_cli ARGS``,
with the same arguments as ``ironic-partition``.
"""

import sys
import threading
import time


def _sleep(seconds):
    """Sleep without ``clock_nanosleep``.

    :param seconds: how long; negative values are refused, as
        ``time.sleep`` does.
    :returns: None
    """
    if seconds < 0:
        raise ValueError('sleep length must be non-negative')
    threading.Event().wait(seconds)


def main():
    """Patch ``time.sleep``, then run ``ironic-partition``.

    :returns: its exit code.
    """
    time.sleep = _sleep
    from ironic_partition.cmd import cli
    return cli.main()


if __name__ == '__main__':
    sys.exit(main())
