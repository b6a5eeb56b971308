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

"""How far the database server's clock jumps between two claim rounds.

Claims expire by the database server's clock; a holder stops reporting
its nodes ``fencing_margin`` seconds before the lease runs out by its own
monotonic clock. On one database server the two clocks advance together.
On a Galera cluster behind HAProxy, "the database server" is whichever
node takes the writes, and a failover moves it to a node whose clock may
differ: if the new node's clock is ``d`` seconds ahead, every claim looks
``d`` seconds closer to its expiry to the services that read it there, and
a peer may take a node ``d`` seconds before its holder stopped reporting
it. The holder is safe only while ``d`` stays below its fencing margin.

:class:`ClockWatch` measures it: each claim round reads the server's time
with its first statement and pairs it with the local monotonic time around
that statement. The offset between the two is constant on one server (up
to the statement's round trip and the drift of NTP slewing); a change
larger than that is a *step*: a failover to a node whose clock differs, or
a clock stepped on the server. Adding the steps up gives each clock met a
level; the distance between the highest and the lowest level is the
clock difference between the database nodes that this service has met
(:attr:`ClockWatch.difference`), and :meth:`ClockWatch.margin` widens
the fencing margin to cover it, so the next failover between the same
nodes cannot hand a node over early. A difference too large for the
lease to cover is refused (:meth:`ClockWatch.problem`): the service is
not ready rather than unsafe.

Not every jump is the server's: when this machine stops with its clocks
(a paused or saved VM whose clock the hypervisor froze), the lease clock
falls behind the server's by the pause. A forward jump read from the same
database node as the sample before it, or where the database cannot name
its node (PostgreSQL, SQLite: one writer), is taken for such a *stall*
(:data:`STALL`): the caller fences at once and the round proves its
claims again, but the margin is not widened and nothing is refused, for
the database is not to blame. Only a jump across two database nodes, or
backwards, is a step. A server clock stepped forward on one writer is a
stall by this rule: fencing at once covers it as well.

A step can only be seen after it happened: the first failover to a node
whose clock is ahead by more than the configured ``fencing_margin`` is not
covered. Keeping the database nodes' clocks within ``fencing_margin`` of
each other (NTP) is the requirement (less the consumer's hold inside
nova: :meth:`ClockWatch.tolerance`); the watch makes a breach visible and
stops it from repeating.
"""

import collections
import threading

from ironic_partition._i18n import _

#: Seconds of offset change that are never a step: scheduling and timer
#: resolution on both sides.
BASE_ALLOWANCE = 0.05
#: Offset change per second between two samples that is never a step: NTP
#: slews a clock by at most 500 ppm.
DRIFT_RATE = 0.0005
#: The smallest part of the configured reporting window (``lease_time -
#: fencing_margin``) that a widened margin must leave: below it, claims
#: renewed every third of what is left could lapse between two renewals
#: on a loaded host.
MIN_WINDOW_FRACTION = 0.5
#: The smallest reporting window in seconds, as for the configuration.
MIN_WINDOW = 0.6

#: What :meth:`ClockWatch.sample` saw: ``kind`` (:data:`STEP` or
#: :data:`STALL`) and the jump in seconds (positive: the server ahead).
Jump = collections.namedtuple('Jump', ['kind', 'seconds'])
#: A jump of the database server's clock (a failover, a clock stepped).
STEP = 'step'
#: This machine stopped with its clocks (paused, saved, frozen).
STALL = 'stall'


class ClockWatch(object):
    """The steps of the database server's clock seen by one service.

    :param fencing_margin: the configured margin, in seconds.
    :param lease_time: the lease, in seconds.
    :param hold: how long the consumer may go on acting on a result after
        the fence (nova's ``update_resources_interval``), the part of the
        margin that a clock step cannot use.
    """

    def __init__(self, fencing_margin, lease_time, hold=0.0):
        self.fencing_margin = float(fencing_margin)
        self.lease_time = float(lease_time)
        self.hold = float(hold)
        self._lock = threading.Lock()
        self._offset = None
        self._error = 0.0
        self._at = None
        self._level = 0.0
        self._low = self._high = 0.0
        #: The largest difference between the clocks met, in seconds:
        #: the highest level the steps reached minus the lowest.
        self.difference = 0.0
        #: The last step seen (signed, seconds), or None.
        self.last_step = None
        #: How many steps were seen.
        self.steps = 0
        #: The last stall seen (seconds this machine stood still), or
        #: None, and how many were seen.
        self.last_stall = None
        self.stalls = 0
        self._node = None

    def sample(self, server_time, before, after, node=None):
        """Record the server's time read between two local instants.

        :param server_time: an aware ``datetime`` (the server's clock).
        :param before: the local lease-clock time before the statement.
        :param after: the local lease-clock time after it.
        :param node: the database node that answered, or None where the
            database cannot tell.
        :returns: a :data:`Jump` when this sample shows one, else None.
        """
        middle = (before + after) / 2.0
        error = max(0.0, (after - before) / 2.0)
        offset = server_time.timestamp() - middle
        with self._lock:
            jump = None
            if self._offset is not None:
                change = offset - self._offset
                allowed = (BASE_ALLOWANCE + error + self._error
                           + DRIFT_RATE * max(0.0, middle - self._at))
                if abs(change) <= allowed:
                    pass
                elif change > 0 and node == self._node:
                    jump = Jump(STALL, change)
                    self.stalls += 1
                    self.last_stall = change
                else:
                    jump = Jump(STEP, change)
                    self.steps += 1
                    self.last_step = change
                    self._level += change
                    self._low = min(self._low, self._level)
                    self._high = max(self._high, self._level)
                    self.difference = self._high - self._low
            self._offset, self._error, self._at = offset, error, middle
            self._node = node
            return jump

    def margin(self):
        """The fencing margin to apply: the configured one, or wider.

        :returns: seconds; at least the configured margin, and at least
            the consumer's hold plus the largest clock difference seen
            plus the allowance of a sample.
        """
        with self._lock:
            if not self.difference:
                return self.fencing_margin
            return max(self.fencing_margin,
                       self.hold + self.difference + BASE_ALLOWANCE)

    def problem(self):
        """Why the lease cannot cover the clock difference, if it cannot.

        :returns: a sentence, or None.
        """
        with self._lock:
            difference = self.difference
        window = self.lease_time - self.margin()
        needed = max(MIN_WINDOW, MIN_WINDOW_FRACTION
                     * (self.lease_time - self.fencing_margin))
        if window >= needed:
            return None
        return _('the clocks of the database server differed by '
                 '%(step).1f s between claim rounds (database nodes whose '
                 'clocks differ, or a clock stepped on the server), more '
                 'than '
                 '[ironic_partition] lease_time (%(lease).1f s) and '
                 'fencing_margin (%(margin).1f s) can cover; keep the '
                 'clocks of the database nodes within %(tolerance).2f s of '
                 'each other (NTP), then restart this service') % {
                     'step': difference, 'lease': self.lease_time,
                     'margin': self.fencing_margin,
                     'tolerance': self.tolerance()}

    def tolerance(self):
        """The clock difference the configured margin covers unwidened.

        :returns: seconds: the margin less the consumer's hold and the
            allowance of a sample.
        """
        return max(0.0, self.fencing_margin - self.hold - BASE_ALLOWANCE)
