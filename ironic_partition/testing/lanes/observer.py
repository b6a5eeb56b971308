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

"""An observer of partition agents that checks the invariants I1-I4.

It polls every agent's report file (``ironic-partition serve
--report-file``), records every reported set with its times, is told when
processes are started, killed, paused, resumed or stopped, optionally
polls the claims table, and checks, after the fact, the invariants of
``doc/source/admin/safety.rst``.

What "reported at an instant" means
===================================

A report file is a snapshot: its ``managed`` list holds what the agent
may report at the instant of the write, and its ``claims.valid_for`` says
for how long its instance-less (ring) nodes stay reportable without a new
successful claim round. The observer turns every report into an interval
per node, in two ways:

*conservative* (used for I1, I3 and I4: it can only make a report last
longer)
    from the report's own ``monotonic`` (read by the agent *before* it
    decides what to write) until the next report of the same host
    replaced the file, for which the upper bound
    ``min(seen, ctime + TICK)`` is used: ``seen`` is the observer's clock
    when it noticed the new file, and the file's ``ctime`` (set by the
    kernel at the ``os.replace`` and at most a clock tick late) is
    translated to the monotonic clock. The ring nodes' interval also ends
    at ``monotonic + valid_for + EPSILON`` (the fence, plus the rounding
    of ``valid_for``). Process death and SIGSTOP do *not* end it: a dead
    or paused agent's last report counts until its fence, as if a
    consumer still acted on it. The nodes whose instance the agent owns
    end at the fence too: they are claimed and fenced like the others.

*pessimistic* (used for I2: it can only make a report shorter)
    from the upper bound of the replace (``min(seen, ctime + TICK)``)
    until the ``monotonic`` of the host's next report (or, when the next
    report lists the node too, without a break), the fence (no epsilon),
    or the instant the process was killed or paused (SIGSTOP), whichever
    comes first. An agent cut off from the database still reports until
    its fence: that is real.

So a double report found by I1 is one that may have happened, and a gap
found by I2 is at least as long as any gap that happened. The observer
polls every ``poll_interval`` (10 ms by default) and only re-reads files
whose inode or ctime changed; a write it missed (the ``refresh_counter``
of one process jumped) is counted in :attr:`.analysis.Analysis.misses`,
which the tests require to be 0. When told of a kill or a pause it reads that
agent's file at once, so the last report of a process is not missed.

The invariants as checked are described in :mod:`.analysis`, which
turns the records into an :class:`~.analysis.Analysis`.
"""

import bisect
import collections
import json
import os
import sys
import threading
import time

import fixtures

from ironic_partition.testing.lanes import analysis

#: The largest lag of the kernel's coarse clock behind the real time.
TICK = 0.02
#: Added to the fence for the rounding of ``valid_for`` (3 decimals) and
#: the microseconds between reading the clock and ``valid_for``.
EPSILON = 0.01


def _intern(values):
    return frozenset(sys.intern(v) for v in values)


class Report(object):
    """One report file as read, with its times on the monotonic clock."""

    __slots__ = ('host', 'pid', 'written', 'seen', 'replaced', 'state',
                 'ready', 'managed', 'by_instance', 'claims_on',
                 'valid_until', 'counter', 'ring_members', 'round_seconds',
                 'refresh_seconds', 'fenced', 'waiting', 'doc')

    def __init__(self, host, doc, seen, replaced):
        self.host = host
        self.doc = doc
        self.pid = doc.get('pid')
        self.written = float(doc.get('monotonic') or seen)
        self.seen = seen
        #: The upper bound of the instant the file was replaced.
        self.replaced = min(seen, replaced)
        self.state = doc.get('state')
        self.ready = bool(doc.get('ready'))
        self.managed = _intern(doc.get('managed') or ())
        self.by_instance = _intern(doc.get('by_instance') or ())
        claims = doc.get('claims') or {}
        self.claims_on = bool(claims.get('enabled'))
        valid_for = claims.get('valid_for')
        self.valid_until = (None if valid_for is None
                            else self.written + float(valid_for))
        self.counter = doc.get('refresh_counter') or 0
        self.ring_members = tuple(doc.get('ring_members') or ())
        self.round_seconds = claims.get('last_round_seconds')
        self.refresh_seconds = doc.get('refresh_seconds')
        self.fenced = bool(claims.get('fenced'))
        self.waiting = _intern(doc.get('waiting') or ())

    def ring_nodes(self):
        """The managed nodes the agent does not own the instance of."""
        return self.managed - self.by_instance


class _Run(object):
    """Consecutive reporting of one node by one host."""

    __slots__ = ('start', 'end', 'certain_end')

    def __init__(self, start, end, certain_end):
        self.start = start
        self.end = end
        self.certain_end = certain_end


class _Host(object):

    def __init__(self, host, path):
        self.host = host
        self.path = path
        self.key = None
        self.last = None
        self.events = []          # (time, kind), sorted
        self.cons = {}            # node -> open _Run (conservative)
        self.pess = {}            # node -> open [start, end] (pessimistic)
        self.ready_pids = set()
        self.reports = 0


class _ClaimSegment(object):
    """A run of polls that saw the same owner and epoch of one claim."""

    __slots__ = ('owner', 'epoch', 'first_seen', 'last_seen_start',
                 'expires_lower')

    def __init__(self, owner, epoch, poll_start, poll_end, expires_lower):
        self.owner = owner
        self.epoch = epoch
        self.first_seen = poll_end
        self.last_seen_start = poll_start
        self.expires_lower = expires_lower


class Observer(fixtures.Fixture):
    """Watch agents' report files (and the claims table) in threads.

    :param nodes: the instance-less nodes of the partition.
    :param instance_owner: node UUID -> the host owning its instance.
    :param bound: the I2 bound in seconds.
    :param claims_db: an :class:`ironic_partition.db.api.Connection` to
        read the claims table from, or None (no I4 handover check).
    :param role: the agents' role, for the claims table.
    :param poll_interval: seconds between two looks at the files.
    :param claims_interval: seconds between two reads of the claims.
    """

    def __init__(self, nodes, instance_owner=None, bound=None,
                 claims_db=None, role='agent', poll_interval=0.01,
                 claims_interval=0.05):
        super().__init__()
        self.nodes = _intern(nodes)
        self.instance_owner = {sys.intern(n): h.lower() for n, h in
                               (instance_owner or {}).items()}
        self.bound = bound
        self.claims_db = claims_db
        self.role = role
        self.poll_interval = poll_interval
        self.claims_interval = claims_interval
        self._lock = threading.RLock()
        self._hosts = collections.OrderedDict()
        self._stop = threading.Event()
        self._threads = []
        self._closed_cons = collections.defaultdict(list)
        self._closed_pess = collections.defaultdict(list)
        self._i3 = []
        self._misses = []
        self._marks = []
        self._exempt = []
        self._steady = None
        self._stopped_at = None
        self._round_seconds = []
        self._refresh_seconds = []
        self._refresh_log = []
        self._claims = {}                 # node -> list of segments
        self._claim_polls = 0
        self._claim_errors = 0
        self._members = []                # (time, host, ring members)
        #: Reports older than this (seconds) do not count as a live
        #: agent's view when looking for agreed memberships.
        self.agree_window = 3.0

    # Set-up.

    def _setUp(self):
        self.addCleanup(self.stop)
        self.start()

    def start(self):
        """Start polling.

        :returns: None
        """
        self._stop.clear()
        thread = threading.Thread(target=self._poll_files,
                                  name='observer-files', daemon=True)
        thread.start()
        self._threads.append(thread)
        if self.claims_db is not None:
            thread = threading.Thread(target=self._poll_claims,
                                      name='observer-claims', daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self):
        """Stop polling (idempotent); closes every open interval.

        :returns: None
        """
        if self._stop.is_set():
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        with self._lock:
            self.poll_all()
            self._stopped_at = time.monotonic()
            for host in self._hosts.values():
                self._finalise(host, None)

    def add_agent(self, host, path):
        """Watch an agent's report file.

        :param host: the agent's host name.
        :param path: its report file.
        :returns: None
        """
        with self._lock:
            self._hosts.setdefault(host.lower(), _Host(host.lower(), path))

    # Being told.

    def event(self, host, kind, when=None):
        """Record what happened to an agent's process.

        :param host: the agent.
        :param kind: ``start``, ``kill``, ``pause``, ``resume``, ``term``,
            ``exit``, ``hup``, ``cut`` or ``restore``.
        :param when: the monotonic instant; now by default.
        :returns: None
        """
        when = time.monotonic() if when is None else when
        with self._lock:
            state = self._hosts[host.lower()]
            bisect.insort(state.events, (when, kind))
            if kind in ('kill', 'pause', 'exit', 'cut'):
                self._poll(state)

    def mark(self, label, when=None):
        """Record a labelled instant (a fault), for per-fault figures.

        :param label: a short text.
        :param when: the monotonic instant; now by default.
        :returns: the instant.
        """
        when = time.monotonic() if when is None else when
        with self._lock:
            self._marks.append((when, label))
        return when

    def steady(self, when=None):
        """Start the I2 analysis window (every node reported by now).

        :param when: the monotonic instant; now by default.
        :returns: the instant.
        """
        self._steady = time.monotonic() if when is None else when
        return self._steady

    def exempt(self, start, end, reason):
        """Cut a window out of I2's gaps (no member can be live in it).

        :param start: the monotonic start.
        :param end: the monotonic end.
        :param reason: why, for the record.
        :returns: None
        """
        with self._lock:
            self._exempt.append((start, end, reason))

    # Reading.

    def latest(self, host=None):
        """The last report read.

        :param host: an agent; all by default.
        :returns: the report document (``{}`` when none), or a dict of
            host -> document.
        """
        with self._lock:
            if host is not None:
                last = self._hosts[host.lower()].last
                return dict(last.doc) if last is not None else {}
            return {h: dict(s.last.doc) for h, s in self._hosts.items()
                    if s.last is not None}

    def reported(self):
        """Host -> the set each host's last report manages."""
        with self._lock:
            return {h: s.last.managed for h, s in self._hosts.items()
                    if s.last is not None}

    def poll_all(self):
        """Read every changed report file now.

        :returns: None
        """
        with self._lock:
            for state in self._hosts.values():
                self._poll(state)

    def _poll_files(self):
        while not self._stop.wait(self.poll_interval):
            try:
                self.poll_all()
            except Exception:   # pragma: no cover - never kill the thread
                time.sleep(self.poll_interval)

    def _poll(self, state):
        try:
            st = os.stat(state.path)
        except OSError:
            return
        key = (st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size)
        if key == state.key:
            return
        seen = time.monotonic()
        offset = time.time() - seen
        try:
            with open(state.path) as stream:
                doc = json.load(stream)
        except (OSError, ValueError):
            return
        state.key = key
        last = state.last
        if last is not None and last.pid == doc.get('pid') and \
                last.written == doc.get('monotonic'):
            return
        replaced = st.st_ctime_ns / 1e9 - offset + TICK
        self._ingest(state, Report(state.host, doc, seen, replaced))

    # Turning reports into intervals.

    def _cut_after(self, state, instant):
        """The first kill or pause of a host after an instant."""
        index = bisect.bisect_right(state.events, (instant, '\xff'))
        for when, kind in state.events[index:]:
            if kind in ('kill', 'pause'):
                return when
        return None

    def _ingest(self, state, report):
        previous = state.last
        if previous is not None and report.written < previous.written:
            return
        self._check_misses(state, previous, report)
        self._finalise(state, report)
        state.last = report
        state.reports += 1
        if report.ready and report.state == 'running':
            state.ready_pids.add(report.pid)
            if report.round_seconds is not None:
                self._round_seconds.append(report.round_seconds)
            if report.refresh_seconds is not None:
                self._refresh_seconds.append(report.refresh_seconds)
                self._refresh_log.append((report.written, state.host,
                                          report.refresh_seconds))
            self._members.append((report.written, state.host,
                                  report.ring_members))
        self._check_i3(state, report)

    def _check_misses(self, state, previous, report):
        if previous is None or report.pid != previous.pid:
            missed = report.counter - (1 if report.state == 'running'
                                       else 0)
            base = 0
        else:
            missed = report.counter - previous.counter - (
                1 if report.state == 'running' else 0)
            base = previous.counter
        if missed > 0:
            self._misses.append((state.host, report.pid, base, missed))

    def _finalise(self, state, nxt):
        """Close the intervals of a host's last report.

        :param state: the host.
        :param nxt: the report replacing it, or None at the end.
        """
        report = state.last
        if report is None:
            return
        if nxt is not None:
            end_all = nxt.replaced
            certain_all = nxt.written
            listed = nxt.managed
        else:
            end_all = certain_all = self._stopped_at
            listed = frozenset()
        fence = report.valid_until if report.claims_on else None
        cut = self._cut_after(state, report.written)
        pess_start = report.replaced
        kept = set()
        for node in report.managed:
            end = end_all
            certain = certain_all
            # NOTE(observer): a node the next report lists too never left
            # the file; otherwise it left at some instant after the next
            # report's own clock reading.
            pess_end = end_all if node in listed else certain_all
            if report.claims_on:
                fence_at = fence if fence is not None else report.written
                end = min(end, fence_at + EPSILON)
                certain = min(certain, fence_at)
                pess_end = min(pess_end, fence_at)
            if cut is not None:
                pess_end = min(pess_end, cut)
            start = report.written
            run = state.cons.get(node)
            if run is not None and start <= run.end:
                run.end = max(run.end, end)
                run.certain_end = max(run.certain_end, certain)
            else:
                if run is not None:
                    self._closed_cons[node].append(
                        (state.host, run.start, run.end, run.certain_end))
                state.cons[node] = _Run(start, max(start, end),
                                        max(start, certain))
            kept.add(node)
            if pess_end > pess_start:
                span = state.pess.get(node)
                if span is not None and pess_start <= span[1]:
                    span[1] = max(span[1], pess_end)
                else:
                    if span is not None:
                        self._closed_pess[node].append(tuple(span))
                    state.pess[node] = [pess_start, pess_end]
        for node in list(state.cons):
            if node not in kept:
                run = state.cons.pop(node)
                self._closed_cons[node].append(
                    (state.host, run.start, run.end, run.certain_end))
        for node in list(state.pess):
            if node not in kept:
                self._closed_pess[node].append(tuple(state.pess.pop(node)))
        if nxt is None:
            for node, run in state.cons.items():
                self._closed_cons[node].append(
                    (state.host, run.start, run.end, run.certain_end))
            for node, span in state.pess.items():
                self._closed_pess[node].append(tuple(span))
            state.cons = {}
            state.pess = {}

    def _check_i3(self, state, report):
        for node in report.managed:
            owner = self.instance_owner.get(node)
            if owner is not None and owner != state.host:
                self._i3.append('%s reported node %s whose instance belongs '
                                'to %s (t=%.3f)' % (state.host, node, owner,
                                                    report.written))
        # NOTE(observer): a fenced (not ready) or stopped process reports
        # nothing, instance nodes included; a ready one may wait for an
        # instance node's claim only while it says so (after a takeover).
        if (report.pid in state.ready_pids and report.state == 'running'
                and report.ready):
            mine = {n for n, h in self.instance_owner.items()
                    if h == state.host}
            missing = mine - report.managed - report.waiting
            if missing:
                self._i3.append('%s (pid %s) stopped reporting its instance '
                                'nodes %s (t=%.3f)' % (
                                    state.host, report.pid,
                                    ', '.join(sorted(missing)),
                                    report.written))

    # The claims table.

    def _poll_claims(self):
        while not self._stop.wait(self.claims_interval):
            try:
                self.poll_claims()
            except Exception:
                self._claim_errors += 1

    def poll_claims(self):
        """Read the claims table once and record owner changes.

        :returns: None
        """
        start = time.monotonic()
        snapshot = self.claims_db.claims.read_claims(self.role)
        end = time.monotonic()
        with self._lock:
            self._claim_polls += 1
            for claim in snapshot.claims:
                node = sys.intern(claim.node_id)
                owner = claim.owner
                expires = (start + (claim.expires_at - snapshot.as_of)
                           .total_seconds())
                segments = self._claims.setdefault(node, [])
                last = segments[-1] if segments else None
                if last is not None and last.owner == owner and \
                        last.epoch == claim.epoch:
                    last.last_seen_start = start
                    last.expires_lower = expires
                    continue
                segments.append(_ClaimSegment(owner, claim.epoch, start,
                                              end, expires))

    # Analysis.

    def analyse(self):
        """Check I1-I4 over everything recorded; call after :meth:`stop`.

        :returns: an
            :class:`~ironic_partition.testing.lanes.analysis.Analysis`.
        """
        self.stop()
        with self._lock:
            result = analysis.Analysis()
            result.bound = self.bound
            result.reports = sum(s.reports for s in self._hosts.values())
            result.misses = list(self._misses)
            result.i3 = list(self._i3)
            result.marks = sorted(self._marks)
            result.exempt = sorted(self._exempt)
            result.round_seconds = list(self._round_seconds)
            result.refresh_seconds = list(self._refresh_seconds)
            result.refresh_log = list(self._refresh_log)
            result.runs = {node: sorted(runs, key=lambda r: r[1])
                           for node, runs in self._closed_cons.items()}
            result.events = sorted(
                (when, host, kind) for host, state in self._hosts.items()
                for when, kind in state.events)
            start = self._steady
            end = self._stopped_at
            result.window = (start, end)
            result.overlaps = analysis.overlaps(self.nodes,
                                                self._closed_cons)
            result.coverage, result.gaps = analysis.coverage(
                self.nodes, self._closed_pess, start, end,
                self._change_instants(), result.exempt)
            result.handovers = analysis.handovers(
                self._claims, self._closed_cons,
                {h: state.events for h, state in self._hosts.items()})
            result.moves = analysis.moves(self.nodes, self._closed_cons,
                                          self._steady)
            result.members_history = analysis.agreed_members(
                self._members, self.agree_window)
        return result

    def change_instants(self):
        """Every instant the observer was told of a membership change.

        :returns: a sorted list of monotonic times.
        """
        with self._lock:
            return self._change_instants()

    def _change_instants(self):
        return sorted(when for state in self._hosts.values()
                      for when, kind in state.events
                      if kind in analysis.CHANGE_EVENTS)
