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

"""What the observer concludes about I1-I4, after the fact.

:class:`~ironic_partition.testing.lanes.observer.Observer` records, while the
agents run, every node's reporting intervals per host (conservative and
pessimistic, see its module documentation), the process events and the
claims table's owners. The functions here turn those records into an
:class:`Analysis`: the I1 overlaps, the I2 gaps, the I4 handovers, the
node moves and the memberships the agents agreed on.

The invariants as checked
=========================

I1
    For every instance-less node, no two conservative intervals of
    different hosts overlap. Every overlap is listed with its duration.
I2
    Within the analysis window (from :meth:`~.observer.Observer.steady`,
    once every node was reported), the union of all hosts' pessimistic
    intervals leaves no instance-less node uncovered for longer than the bound
    ``service_down_time + 2 x refresh_interval`` *after the last
    membership change*: a gap's ``settled`` length is the longest part of
    it that no membership change interrupts (a change restarts the clock,
    as I2 is stated: "within the bound of any membership change"). The
    instants of change are the process events the observer is told of
    (start, kill, pause, resume, term, exit, hup, cut, restore), each
    earlier than or equal to the moment the database's membership
    changes, so the measure is never more lenient than the invariant.
    With one fault at a time ``settled`` equals ``effective``, the raw
    length; both are recorded and the benchmark prints both. Windows
    declared with :meth:`~.observer.Observer.exempt` (the database gone
    for every service: no member can be live) are cut out of both.
I3
    A node with an instance is never reported by a host other than its
    instance's owner, and every ready, running report of the owner's
    process after its first ready report includes it or lists it as
    ``waiting`` (its claim is still held by the process it took the host
    name over from). Not-ready and stopped reports are not held to the
    second part: a fenced or stopped process reports no node at all.
I4
    From the claims table (read every ``claims_interval`` through a
    connection of the observer's own, which no proxy cuts): whenever a
    node's claim passes from host A to another host, the instant it
    became free (the lower bound of A's lease expiry by the database
    clock, translated to the monotonic clock, or the last poll that still
    showed A) must come after A's conservative end of reporting it. A
    handover is *ok* when proven so, a *violation* when A certainly still
    reported the node (file listing it, fence not reached) after the
    claim was certainly free, *inconclusive* otherwise (the poll was too
    coarse to tell). Tests require no violation, and report the smallest
    margin of the ok ones. Releases by a graceful stop (SIGTERM) are
    also counted apart (:attr:`Analysis.stop_order`).
"""

import collections

#: A release this long after a SIGTERM counts as the graceful stop's.
STOP_WINDOW = 10.0


Handover = collections.namedtuple(
    'Handover', ['node', 'from_host', 'to_host', 'free_lower', 'free_upper',
                 'reported_end', 'certain_end', 'status', 'margin', 'kind'])

#: One stretch of time an instance-less node was reported by no host:
#: ``effective`` is its length without the exempt windows, ``settled`` the
#: longest part of that which no membership change interrupted (I2).
Gap = collections.namedtuple('Gap', ['node', 'start', 'end', 'effective',
                                     'settled'])

#: The process events that change the membership the agents agree on.
CHANGE_EVENTS = frozenset(['start', 'kill', 'pause', 'resume', 'term',
                           'exit', 'hup', 'cut', 'restore'])


def longest_free_stretch(start, end, cuts, exempt):
    """The longest part of a gap that no change and no exempt window cut.

    :param start: the gap's start.
    :param end: its end.
    :param cuts: the sorted instants of membership change.
    :param exempt: ``[(start, end, reason)]`` windows to leave out.
    :returns: seconds.
    """
    points = [start] + [c for c in cuts if start < c < end] + [end]
    best = 0.0
    for a, b in zip(points, points[1:]):
        for x_start, x_end, _why in exempt:
            if x_start < b and x_end > a:
                a = max(a, x_end)
        best = max(best, b - a)
    return best


Overlap = collections.namedtuple('Overlap',
                                 ['node', 'hosts', 'start', 'end'])


class Analysis(object):
    """What the observer found; see the module documentation."""

    def __init__(self):
        self.window = None
        self.bound = None
        self.overlaps = []
        self.gaps = []
        self.i3 = []
        self.handovers = []
        self.misses = []
        self.reports = 0
        self.coverage = {}
        self.marks = []
        self.exempt = []
        self.round_seconds = []
        self.refresh_seconds = []
        #: ``(written, host, seconds)`` of every ready report's refresh.
        self.refresh_log = []
        #: ``(when, host, kind)`` of every process event.
        self.events = []
        #: node -> ``[(host, start, end, certain_end)]`` conservative runs.
        self.runs = {}
        self.moves = 0
        self.members_history = []

    # Summaries.

    @property
    def longest_gap(self):
        """The longest gap (raw, without exempt windows), or None."""
        return max(self.gaps, key=lambda g: g.effective, default=None)

    @property
    def refresh_allowance(self):
        """What I2's bound leaves out: the agents' own refresh time.

        The bound (``service_down_time`` plus two refresh intervals)
        counts the waits between refreshes, not the refreshes: the one
        that sees the peer dead and the one that takes its nodes each run
        before their report is written. Allowed: twice the longest ready
        refresh recorded in the observed window, measured in the same run
        (tenths of a second on an idle machine; what the load costs on a
        busy one).

        :returns: seconds.
        """
        start = self.window[0] if self.window else None
        seconds = [s for written, _host, s in self.refresh_log
                   if start is None or written >= start]
        return 2 * max(seconds, default=0.0)

    @property
    def effective_bound(self):
        """I2's bound plus :attr:`refresh_allowance`; None without one."""
        if self.bound is None:
            return None
        return self.bound + self.refresh_allowance

    @property
    def longest_settled(self):
        """The gap with the longest I2 ``settled`` part, or None."""
        return max(self.gaps, key=lambda g: g.settled, default=None)

    @property
    def violations(self):
        """The handovers proven wrong."""
        return [h for h in self.handovers if h.status == 'violation']

    @property
    def stop_order(self):
        """Graceful stops that released a claim before the last report.

        Counted apart as well because an agent once did so (it released
        its claims before writing its ``stopped`` report).
        """
        return [h for h in self.violations if h.kind == 'stop']

    @property
    def ok_handovers(self):
        """The I4 handovers proven right."""
        return [h for h in self.handovers if h.status == 'ok']

    def min_margin(self, kind=None):
        """The smallest I4 margin of the proven handovers.

        :param kind: ``expiry`` or ``release``; both by default.
        :returns: seconds, or None.
        """
        # NOTE(observer): a handover of a node the old owner never
        # reported is ok without a margin.
        margins = [h.margin for h in self.ok_handovers
                   if (kind is None or h.kind == kind)
                   and h.margin is not None]
        return min(margins, default=None)

    def covered_from(self, instant, nodes=None):
        """How long after ``instant`` until every node is reported.

        Pessimistic intervals, so it is never shorter than the truth.

        :param instant: a monotonic time.
        :param nodes: the nodes to consider; all by default.
        :returns: seconds (0 when all were covered at ``instant``), or
            None when some node was never covered again.
        """
        worst = 0.0
        for node in (self.coverage if nodes is None else nodes):
            intervals = self.coverage.get(node, ())
            found = None
            for start, end in intervals:
                if end <= instant:
                    continue
                found = max(0.0, start - instant)
                break
            if found is None:
                return None
            worst = max(worst, found)
        return worst

    def gaps_between(self, start, end):
        """The gaps that began within ``[start, end)``.

        :returns: a list of :data:`Gap`.
        """
        return [g for g in self.gaps if start <= g.start < end]

    def overlaps_between(self, start, end):
        """The I1 overlaps that began within ``[start, end)``."""
        return [o for o in self.overlaps if start <= o.start < end]

    def problems(self, bound=None):
        """Every invariant broken, one line each.

        :param bound: the I2 bound; :attr:`effective_bound` by default.
        :returns: a list of strings, empty when I1-I4 hold.
        """
        bound = self.effective_bound if bound is None else bound
        lines = []
        for o in self.overlaps[:20]:
            lines.append('I1: node %s reported by %s at once for %.3f s '
                         'from t=%.3f' % (o.node, ' and '.join(o.hosts),
                                          o.end - o.start, o.start))
        if len(self.overlaps) > 20:
            lines.append('I1: %d more overlaps' % (len(self.overlaps) - 20))
        longest = self.longest_settled
        if bound is not None and longest is not None and \
                longest.settled > bound:
            bad = [g for g in self.gaps if g.settled > bound]
            lines.append('I2: %d gaps longer than %.3f s after the last '
                         'membership change, the longest %.3f s (node %s '
                         'from t=%.3f)' % (len(bad), bound, longest.settled,
                                           longest.node, longest.start))
        lines.extend('I3: ' + p for p in self.i3[:20])
        for h in self.violations[:20]:
            lines.append('I4: %s still reported node %s until t=%.3f (at '
                         'least), its claim was free by t=%.3f and taken '
                         'by %s' % (h.from_host, h.node, h.certain_end,
                                    h.free_upper, h.to_host))
        for host, pid, counter, count in self.misses:
            lines.append('observer: missed %d report(s) of %s (pid %s) '
                         'after refresh %d' % (count, host, pid, counter))
        return lines

    def summary(self):
        """A few lines of figures, for logs and the benchmark.

        :returns: a list of strings.
        """
        longest = self.longest_gap
        settled = self.longest_settled
        margin_e = self.min_margin('expiry')
        margin_r = self.min_margin('release')
        inconclusive = sum(1 for h in self.handovers
                           if h.status == 'inconclusive')
        return [
            'reports read: %d, missed: %d' % (
                self.reports, sum(m[3] for m in self.misses)),
            'I1 double reports: %d (%.3f s in total)' % (
                len(self.overlaps),
                sum(o.end - o.start for o in self.overlaps)),
            'I2 longest unreported after the last membership change: %s '
            'against the bound %s s (+ %.3f s of refreshes); longest '
            'unreported at all: %s (%d gaps)' % (
                '%.3f s (node %s)' % (settled.settled, settled.node)
                if settled else 'none', self.bound, self.refresh_allowance,
                '%.3f s' % longest.effective if longest else 'none',
                len(self.gaps)),
            'I3 problems: %d' % len(self.i3),
            'I4 handovers: %d ok (smallest margin %s after an expiry, %s '
            'after a release), %d inconclusive, %d violations; %d nodes '
            'released by a graceful stop before its last report' % (
                len(self.ok_handovers),
                '%.3f s' % margin_e if margin_e is not None else '-',
                '%.3f s' % margin_r if margin_r is not None else '-',
                inconclusive, len(self.violations), len(self.stop_order)),
        ]


def overlaps(nodes, runs_by_node):
    """I1: the instants two hosts reported one node.

    :param nodes: the instance-less nodes.
    :param runs_by_node: node -> ``[(host, start, end, certain_end)]``,
        the closed conservative runs.
    :returns: a list of :data:`Overlap`.
    """
    found = []
    for node in nodes:
        runs = sorted(runs_by_node.get(node, ()), key=lambda r: r[1])
        for i, (host, start, end, _c) in enumerate(runs):
            for other, o_start, o_end, _oc in runs[i + 1:]:
                if o_start >= end:
                    break
                if other != host:
                    found.append(Overlap(node, (host, other), o_start,
                                         min(end, o_end)))
    return found


def coverage(nodes, spans_by_node, start, end, cuts, exempt):
    """I2: when each node was reported, and the gaps in the window.

    :param nodes: the instance-less nodes.
    :param spans_by_node: node -> ``[(start, end)]``, the closed
        pessimistic intervals.
    :param start: the analysis window's start (None: no gap is looked
        for).
    :param end: its end.
    :param cuts: the sorted instants of membership change.
    :param exempt: ``[(start, end, reason)]`` windows to leave out.
    :returns: ``(coverage, gaps)``: node -> merged ``[(start, end)]``,
        and a list of :data:`Gap`.
    """
    covered = {}
    gaps = []
    for node in nodes:
        spans = sorted(spans_by_node.get(node, ()))
        merged = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        covered[node] = [tuple(m) for m in merged]
        if start is None:
            continue
        cursor = start
        for s, e in merged + [[end, end]]:
            if e <= cursor:
                continue
            if s > cursor:
                gap_end = min(s, end)
                effective_start = cursor
                for x_start, x_end, _why in exempt:
                    if x_start < gap_end and x_end > effective_start:
                        effective_start = max(effective_start, x_end)
                gaps.append(Gap(
                    node, cursor, gap_end,
                    max(0.0, gap_end - effective_start),
                    longest_free_stretch(cursor, gap_end, cuts, exempt)))
            cursor = max(cursor, e)
            if cursor >= end:
                break
    return covered, gaps


def _last_run(runs_by_node, host, node, before):
    best = None
    for run in runs_by_node.get(node, ()):
        if run[0] == host and run[1] < before:
            if best is None or run[1] > best[1]:
                best = run
    return best


def _stopping(events_by_host, host, start, end):
    """Tell whether a host was sent SIGTERM shortly before ``end``."""
    return any(kind == 'term' and start - STOP_WINDOW <= when <= end
               for when, kind in events_by_host.get(host, ()))


def handovers(segments_by_node, runs_by_node, events_by_host):
    """I4: every passing of a claim, judged against the old reports.

    :param segments_by_node: node -> the claim segments polled, in order
        (``owner``, ``epoch``, ``first_seen``, ``last_seen_start``,
        ``expires_lower``).
    :param runs_by_node: node -> the closed conservative runs.
    :param events_by_host: host -> ``[(when, kind)]`` process events.
    :returns: a list of :data:`Handover`.
    """
    found = []
    for node, segments in segments_by_node.items():
        previous = None
        for segment in segments:
            if segment.owner is None:
                continue
            if previous is not None and segment.owner != previous.owner:
                found.append(_handover(node, previous, segment, segments,
                                       runs_by_node, events_by_host))
            previous = segment
    return found


def _handover(node, old, new, segments, runs_by_node, events_by_host):
    index = segments.index(old)
    following = segments[index + 1]
    released = following.owner is None
    free_lower = min(old.expires_lower, old.last_seen_start)
    free_upper = following.first_seen
    kind = 'release' if (released or old.expires_lower > free_upper) \
        else 'expiry'
    if kind == 'release' and _stopping(events_by_host, old.owner,
                                       free_lower, free_upper):
        kind = 'stop'
    run = _last_run(runs_by_node, old.owner, node, new.first_seen)
    if run is None:
        return Handover(node, old.owner, new.owner, free_lower,
                        free_upper, None, None, 'ok', None, kind)
    _host, _start, end, certain = run
    if end <= free_lower:
        status, margin = 'ok', free_lower - end
    elif certain > free_upper:
        status, margin = 'violation', free_lower - end
    else:
        status, margin = 'inconclusive', free_lower - end
    return Handover(node, old.owner, new.owner, free_lower, free_upper,
                    end, certain, status, margin, kind)


def moves(nodes, runs_by_node, steady):
    """Count how often a node's reporting host changed.

    Only the changes to a host that began reporting the node within the
    analysis window count: the initial split, as agents start one after
    the other, is not rebalancing.

    :param nodes: the instance-less nodes.
    :param runs_by_node: node -> the closed conservative runs.
    :param steady: the window's start, or None.
    :returns: the number of moves.
    """
    steady = steady if steady is not None else float('-inf')
    count = 0
    for node in nodes:
        runs = sorted(runs_by_node.get(node, ()), key=lambda r: r[1])
        last = None
        for host, start, _e, _c in runs:
            if last is not None and host != last and start >= steady:
                count += 1
            last = host
    return count


def agreed_members(members, window):
    """The successive ring memberships every live reporter agreed on.

    :param members: ``[(time, host, ring members)]`` from the reports.
    :param window: seconds after which a host's report no longer counts
        as a live agent's view.
    :returns: a list of ``(time, members)``.
    """
    latest = {}
    agreed = []
    for when, host, ring in sorted(members):
        latest[host] = (when, ring)
        recent = {h: m for h, (w, m) in latest.items() if when - w < window}
        current = list(recent.values())
        if all(m == current[0] for m in current) and \
                set(current[0]) >= set(recent):
            if not agreed or agreed[-1][1] != current[0]:
                agreed.append((when, current[0]))
    return agreed
