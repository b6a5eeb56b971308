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

Claims expire by the database server's clock; a holder stops reporting its
nodes ``fencing_margin`` seconds before the lease runs out by its own
lease clock (``CLOCK_BOOTTIME`` on Linux). On one database server the two
clocks advance together. On a Galera cluster behind HAProxy, "the database
server" is whichever node takes the writes, and a failover moves it to a
node whose clock may differ: if the new node's clock is ``d`` seconds
ahead, every claim looks ``d`` seconds closer to its expiry to the
services that read it there, and a peer may take a node ``d`` seconds
before its holder stopped reporting it. The holder is safe only while
``d`` stays below its fencing margin.

:class:`ClockWatch` measures it: each claim round reads the server's time
with its first statement and pairs it with the local lease-clock time
around that statement. The offset between the two is constant on one
server (up to the statement's round trip and the drift of NTP slewing); a
change larger than that is a *step*: a failover to a node whose clock
differs, or a clock stepped on the server. The watch keeps a *level* for
each database node it met (``@@hostname:@@port``): how far that node's
clock runs ahead of the others', as last measured. The distance between
the highest and the lowest level is the clock difference between the
database nodes (:attr:`ClockWatch.difference`), and
:meth:`ClockWatch.margin` widens the fencing margin to cover it, so the
next failover between the same nodes cannot hand a node over early. A
difference too large for the lease to cover is refused
(:meth:`ClockWatch.problem`): the service is not ready rather than unsafe.

A node's level is what was measured on it last: once its clock is put
right, the next round answered by it measures it again (a step back, or
NTP's slow slew followed round by round), and a refusal lifts by itself
when the nodes are measured within what the lease covers, never before.
The levels outlive the process: :meth:`ClockWatch.levels` gives them for
the service's row (recorded with each heartbeat), and a restarted service
starts from them (:meth:`ClockWatch.inherit`), so a restart neither
forgets a difference nor lifts a refusal.

A reading is only as sharp as the statement that made it: one that
waited (the first statements after a failover may) could place a node's
level up to that wait away from the truth, and a later sharp reading of
the same node would then look like a stall while the difference stayed
unseen. A reading blurred by more than :data:`MAX_SAMPLE_ERROR` is
:data:`IMPRECISE`: it places no level and is not the reference of the
next one; only a stall that its blur cannot explain is taken from it.

Not every jump is the server's: when this machine stops with its clocks
(a paused or saved VM whose clock the hypervisor froze), the lease clock
falls behind the server's by the pause. A forward jump read from the same
database node as the sample before it, or where the database cannot name
its node (PostgreSQL, SQLite: one writer), is taken for such a *stall*
(:data:`STALL`): the caller fences at once and the round proves its
claims again, but no level changes and nothing is refused, for the
database is not to blame. Only a jump across two database nodes, or
backwards, is a step. A server clock stepped forward on one writer is a
stall by this rule: fencing at once covers it as well; a clock stepped
back on the one writer every service uses delays every expiry alike and
widens nothing.

A step can only be seen after it happened: the first failover to a node
whose clock is ahead by more than the configured ``fencing_margin`` is not
covered. Keeping the database nodes' clocks within ``fencing_margin`` of
each other (NTP) is the requirement (less the consumer's hold inside
nova: :meth:`ClockWatch.tolerance`); the watch makes a breach visible and
stops it from repeating.

:func:`observe` and :func:`take_over` are the claim manager's use of a
watch: one sample of a claim round judged and logged, and the levels a
previous process recorded taken over at start.
"""

import collections
import threading

from oslo_log import log as logging

from ironic_partition._i18n import _

LOG = logging.getLogger(__name__)

#: Seconds of offset change that are never a step: scheduling and timer
#: resolution on both sides.
BASE_ALLOWANCE = 0.05
#: Offset change per second between two samples that is never a step: NTP
#: slews a clock by at most 500 ppm.
DRIFT_RATE = 0.0005
#: The largest uncertainty of one sample (half the round trip of the
#: statement that read the server's time) that may relate two clocks.
#: Each level is measured by two samples (the last one before the node
#: changed and the first one after), so a level is off by at most
#: :data:`BASE_ALLOWANCE`, which the widened margin adds. A reading
#: blurred by more (a statement that waited) only tells a stall that
#: even its blur cannot explain; it places no level and the next sample
#: is compared with the one before it.
MAX_SAMPLE_ERROR = BASE_ALLOWANCE / 2
#: How many blurred readings in a row are logged as a warning: the watch
#: measures nothing while they last.
IMPRECISE_WARNING = 3
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
#: A reading too blurred to measure anything (``seconds``: its
#: uncertainty); it was not used.
IMPRECISE = 'imprecise'


def spread(levels):
    """How far apart the highest and the lowest clock levels are.

    :param levels: ``{node: seconds}``, or None.
    :returns: seconds (0 for none).
    """
    return (max(levels.values()) - min(levels.values())) if levels else 0.0


def describe_levels(levels):
    """Say how far each node's clock runs ahead of the lowest one.

    :param levels: ``{node: seconds}`` (:meth:`ClockWatch.levels`), or
        None.
    :returns: a string such as ``db2:3306 +6.000 s, db1:3306 +0.000 s``
        (highest first), or '' with fewer than two nodes.
    """
    if not levels or len(levels) < 2:
        return ''
    return ', '.join('%s %+.3f s' % (node, level) for node, level in
                     sorted(levels.items(), key=lambda i: -i[1]))


class ClockWatch(object):
    """The steps of the database server's clock seen by one service.

    :param fencing_margin: the configured margin, in seconds.
    :param lease_time: the lease, in seconds.
    :param hold: how long the consumer may go on acting on a node after
        the fence (the ``hold`` of its :data:`~ironic_partition.settings.
        claims.Cadence`), the part of the margin that a clock step
        cannot use.
    """

    def __init__(self, fencing_margin, lease_time, hold=0.0):
        self.fencing_margin = float(fencing_margin)
        self.lease_time = float(lease_time)
        self.hold = float(hold)
        self._lock = threading.Lock()
        self._offset = None
        self._error = 0.0
        self._at = None
        self._node = None
        #: The level of the clock answering now (seconds; only
        #: differences of levels mean anything).
        self._level = 0.0
        #: ``{node: level}`` of the nodes met (or inherited), related to
        #: each other.
        self._levels = {}
        #: Inherited levels not yet related to the clock answering now
        #: (the first node met after a restart was not among them).
        self._unanchored = {}
        #: The largest difference between the clocks met, in seconds:
        #: the highest level minus the lowest.
        self.difference = 0.0
        #: The last step seen (signed, seconds), or None.
        self.last_step = None
        #: How many steps were seen.
        self.steps = 0
        #: The last stall seen (seconds this machine stood still), or
        #: None, and how many were seen.
        self.last_stall = None
        self.stalls = 0
        #: Blurred readings in a row (:data:`IMPRECISE`).
        self.imprecise = 0

    def sample(self, server_time, before, after, node=None):
        """Record the server's time read between two local instants.

        :param server_time: an aware ``datetime`` (the server's clock).
        :param before: the local lease-clock time before the statement.
        :param after: the local lease-clock time after it.
        :param node: the database node that answered, or None where the
            database cannot tell.
        :returns: a :data:`Jump` when this sample shows one or was too
            blurred to use (:data:`IMPRECISE`), else None.
        """
        middle = (before + after) / 2.0
        error = max(0.0, (after - before) / 2.0)
        offset = server_time.timestamp() - middle
        with self._lock:
            jump = None
            change = allowed = None
            if self._offset is not None:
                change = offset - self._offset
                allowed = (BASE_ALLOWANCE + error + self._error
                           + DRIFT_RATE * max(0.0, middle - self._at))
            stall = (change is not None and change > allowed
                     and node == self._node)
            if error > MAX_SAMPLE_ERROR and not stall:
                # NOTE(ironic-partition): the server's time was read
                # somewhere in a wait: taken as measured, it could place
                # a node's level up to that wait away from the truth,
                # and a later sharp reading of the same node would then
                # look like a stall while the difference stayed unseen.
                self.imprecise += 1
                return Jump(IMPRECISE, error)
            self.imprecise = 0
            if change is None:
                self._level = self._levels.get(node, 0.0)
            elif stall:
                jump = Jump(STALL, change)
                self.stalls += 1
                self.last_stall = change
            else:
                if abs(change) > allowed:
                    jump = Jump(STEP, change)
                    self.steps += 1
                    self.last_step = change
                # NOTE(ironic-partition): below the allowance too: NTP
                # slewing a node's clock right, round by round, is
                # measured as it happens.
                self._level += change
            self._offset, self._error, self._at = offset, error, middle
            self._node = node
            self._place(node)
            return jump

    def _place(self, node):
        if node is None:
            return
        if node in self._unanchored and node not in self._levels:
            # NOTE(ironic-partition): met again: the inherited levels
            # relate to the ones measured since through this node.
            shift = self._level - self._unanchored[node]
            for other, level in self._unanchored.items():
                self._levels.setdefault(other, level + shift)
            self._unanchored = {}
        self._levels[node] = self._level
        self._unanchored.pop(node, None)
        self.difference = max(spread(self._levels),
                              spread(self._unanchored))

    def levels(self):
        """The levels of the database nodes met, to be kept for a restart.

        :returns: ``{node: seconds}``, the lowest at 0, each node's clock
            ahead of the lowest's by that much, as last measured; None
            when no node was named (there is nothing to keep). Inherited
            levels not yet related to the ones measured here are kept
            beside them, each set from 0: their spread, and so the
            difference, is not lost by another restart.
        """
        with self._lock:
            groups = [g for g in (self._levels, self._unanchored) if g]
        if not groups:
            return None
        result = {}
        for group in groups:
            low = min(group.values())
            for node, level in group.items():
                result.setdefault(node, round(level - low, 3))
        return dict(sorted(result.items()))

    def inherit(self, levels):
        """Take in the levels a previous process of the service kept.

        Related to the levels measured here through a node both know;
        until such a node is met, kept apart (their spread counts, and is
        measured away only once related). A node measured here keeps its
        measured level.

        :param levels: what :meth:`levels` returned there, or None.
        :returns: True when something was inherited.
        """
        levels = {str(node): float(level)
                  for node, level in (levels or {}).items()}
        if not levels:
            return False
        with self._lock:
            common = [n for n in levels if n in self._levels]
            if common:
                anchor = self._node if self._node in common else common[0]
                shift = self._levels[anchor] - levels[anchor]
                for node, level in levels.items():
                    self._levels.setdefault(node, level + shift)
            else:
                self._unanchored = levels
            self.difference = max(spread(self._levels),
                                  spread(self._unanchored))
            return True

    def describe(self):
        """Say how far each node's clock runs ahead of the lowest one.

        :returns: :func:`describe_levels` of :meth:`levels`.
        """
        return describe_levels(self.levels())

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
        nodes = self.describe()
        return _('the clocks of the database server differed by '
                 '%(step).1f s between claim rounds (database nodes whose '
                 'clocks differ, or a clock stepped on the server%(nodes)s), '
                 'more than '
                 '[ironic_partition] lease_time (%(lease).1f s) and '
                 'fencing_margin (%(margin).1f s) can cover; keep the '
                 'clocks of the database nodes within %(tolerance).2f s of '
                 'each other (NTP): this service reports again once its '
                 'claim rounds measure them within that again (a round '
                 'answered by each node that was off; a restart keeps what '
                 'was measured)') % {
                     'step': difference, 'lease': self.lease_time,
                     'margin': self.fencing_margin,
                     'nodes': ': %s' % nodes if nodes else '',
                     'tolerance': self.tolerance()}

    def tolerance(self):
        """The clock difference the configured margin covers unwidened.

        :returns: seconds: the margin less the consumer's hold and the
            allowance of a sample.
        """
        return max(0.0, self.fencing_margin - self.hold - BASE_ALLOWANCE)


#: What :func:`observe` concluded of one sample, for the claim manager:
#: ``fence`` (forget what the last rounds proved: the local clock stood
#: still, or the difference is refused), ``shorten`` (seconds to take off
#: what they proved: the margin widened) and ``problem`` (the refusal,
#: a sentence, or None).
Verdict = collections.namedtuple('Verdict', ['fence', 'shorten', 'problem'])


def observe(watch, host, fencing_margin, server):
    """Judge one claim round's reading of the server's time, and log it.

    :param watch: the service's :class:`ClockWatch`.
    :param host: the service's host name, for the log lines.
    :param fencing_margin: the configured margin, for the log lines.
    :param server: the :data:`~ironic_partition.db.claims.ServerTime`
        the round read: the server's time, the node that answered and the
        local lease-clock instants around that statement.
    :returns: a :data:`Verdict`.
    """
    old_margin = watch.margin()
    jump = watch.sample(server.time, server.before, server.after,
                        server.node)
    fence, shorten = False, 0.0
    if jump is not None and jump.kind == IMPRECISE:
        log = (LOG.warning if watch.imprecise == IMPRECISE_WARNING
               else LOG.debug)
        log('The database server\'s time took %(rtt).3f s to read in a '
            'claim round of %(host)s (%(n)d in a row): too blurred to '
            'measure its clock against this host\'s (at most %(max).3f '
            's); the next rounds measure it. A failover to a database '
            'node whose clock differs is not seen while the reads stay '
            'this slow.',
            {'rtt': 2 * jump.seconds, 'host': host, 'n': watch.imprecise,
             'max': 2 * MAX_SAMPLE_ERROR})
    elif jump is not None and jump.kind == STALL:
        fence = True
        LOG.warning('This host\'s lease clock fell %(stall).3f s behind '
                    'the database server\'s between two claim rounds '
                    'of %(host)s: this machine or process stood still '
                    'with its clocks (a paused, saved or frozen VM), or '
                    'the server\'s clock was stepped forward. Fenced at '
                    'once; this round proves the claims again. The '
                    'fencing margin is unchanged.',
                    {'stall': jump.seconds, 'host': host})
    elif jump is not None and jump.kind == STEP:
        shorten = max(0.0, watch.margin() - old_margin)
        LOG.warning('The database server\'s clock stepped by %(step)+.3f '
                    's between two claim rounds of %(host)s (a failover '
                    'to a database node whose clock differs, or a '
                    'clock stepped on the server); largest difference '
                    'so far %(max).3f s, fencing_margin %(margin)s s: '
                    'claims now stop being reported %(eff).3f s before '
                    'their lease runs out',
                    {'step': jump.seconds, 'host': host,
                     'max': watch.difference, 'margin': fencing_margin,
                     'eff': watch.margin()})
    problem = watch.problem()
    return Verdict(fence or problem is not None, shorten, problem)


def take_over(watch, host, inherited, forget):
    """Start a watch from the levels the previous process recorded.

    :param watch: the service's :class:`ClockWatch`, before its first
        sample.
    :param host: the service's host name, for the log lines.
    :param inherited: ``{node: level}`` from the service's row, or None.
    :param forget: lower-case database node names not to take over
        (``[ironic_partition] forget_database_clocks``).
    :returns: None
    """
    inherited = dict(inherited or {})
    for node in sorted(n for n in inherited if n.lower() in forget):
        LOG.warning('Not taking over the clock of database node '
                    '%(node)s (%(level)+.3f s) that the previous process '
                    'of %(host)s measured: [ironic_partition] '
                    'forget_database_clocks lists it. It is measured '
                    'anew if it answers a claim round again.',
                    {'node': node, 'level': inherited.pop(node),
                     'host': host})
    if watch.inherit(inherited):
        LOG.info('Inherited the clock measurements of the database '
                 'nodes that the previous process of %(host)s made: '
                 '%(nodes)s (difference %(diff).3f s; the next claim '
                 'rounds measure again the nodes that answer them)',
                 {'host': host,
                  'nodes': watch.describe() or ', '.join(sorted(inherited)),
                  'diff': watch.difference})
