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

"""The bookkeeping of a recurring database operation that may fail.

Heartbeats and claim rounds both retry at their next turn when the
database cannot be reached; both count the failures in a row, remember
the last error and when the operation last worked, and log the first
failure and every :data:`WARN_EVERY`-th one.
"""

import threading
import time

#: Log a still-failing operation every this many failures.
WARN_EVERY = 10


class Health(object):
    """Consecutive failures of one recurring database operation.

    :param clock: a monotonic clock.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._last_error = None
        self._last_ok = None

    @property
    def failures(self):
        """Failures in a row; 0 after a success."""
        with self._lock:
            return self._failures

    @property
    def last_error(self):
        """The last failure, ``Type: message``, or None after a success."""
        with self._lock:
            return self._last_error

    def failed(self, error):
        """Count a failure.

        :param error: the exception, or a description.
        :returns: the failures in a row, this one included.
        """
        if isinstance(error, BaseException):
            error = '%s: %s' % (type(error).__name__, error)
        with self._lock:
            self._failures += 1
            self._last_error = error
            return self._failures

    def succeeded(self, at=None):
        """Record a success.

        :param at: the monotonic instant it counts from, now by default.
        :returns: the failures in a row before it.
        """
        at = self._clock() if at is None else at
        with self._lock:
            failures, self._failures = self._failures, 0
            self._last_error = None
            self._last_ok = at
            return failures

    @staticmethod
    def worth_logging(failures):
        """Tell whether a failure is logged loudly.

        :param failures: the failures in a row.
        :returns: True for the first one and every :data:`WARN_EVERY`-th.
        """
        return failures == 1 or failures % WARN_EVERY == 0

    def seconds_since_ok(self, now=None):
        """Seconds since the last success.

        :param now: the monotonic time, now by default.
        :returns: a float rounded to milliseconds, or None.
        """
        now = self._clock() if now is None else now
        with self._lock:
            if self._last_ok is None:
                return None
            return round(now - self._last_ok, 3)
