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

"""Ironic's change feed: the nodes changed since a watermark.

Ironic has no change API; its node list can be sorted by ``updated_at``
and ``created_at``, which it stamps on every change of a node row. A
:class:`ChangeFeed` reads, through an
:class:`~ironic_partition.ironic.baremetal.IronicClient`, the nodes updated or
created since the last watermark (fleet-wide), and proves the read
complete or says why not (:class:`ChangeFeedUnavailable`: list in full
instead). :class:`~ironic_partition.ironic.node_index.NodeIndex` keeps a
partition current with it; ``doc/source/admin/scale.rst`` explains the
reads, the anchors and the watermark.
"""

import collections
from concurrent import futures
import datetime
import time

from oslo_log import log as logging

from ironic_partition import exception
from ironic_partition.ironic import baremetal

LOG = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class ChangeFeedUnavailable(Exception):
    """The change feed cannot prove it saw every change; list in full."""


class _UntimedPage(ChangeFeedUnavailable):
    """A page of nodes without the timestamp sorted on, with more after."""


#: The most anchors a change feed keeps (see :class:`Anchor`). A new one
#: is kept only when it is at least one overlap newer than the newest
#: kept: a read goes back one overlap anyway, and the anchors then span
#: several overlaps of quiet, so that when the newest one changes again an
#: older one still works.
MAX_ANCHORS = 4

#: The nodes asked for in the first page of a newest-first read. Such a
#: read stops at the first node older than the watermark minus the
#: overlap: on a quiet fleet, after a handful of nodes. A full first page
#: cost Ironic a detailed page of its fleet at every refresh; the pages
#: after this one are full.
FIRST_PAGE = 32


class Anchor(collections.namedtuple('Anchor', ['uuid', 'stamp'])):
    """A node and its ``updated_at``, to read the change feed on from.

    ``GET /v1/nodes/detail?sort_key=updated_at&sort_dir=asc&marker=UUID``
    lists every node updated after the marker node's ``updated_at`` (by
    ``updated_at``, then the database id), never one without an
    ``updated_at``, whatever the database sorts first. Only while the
    node's ``updated_at`` is still ``stamp``: Ironic reads the marker's
    current row, so the feed checks it after the read.
    """

    __slots__ = ()


class Changes(object):
    """What changed in Ironic since a watermark.

    :ivar nodes: slim records of every node updated or created since the
        watermark (minus the overlap), whatever its group or shard.
    :ivar mark: the new watermark: the newest ``updated_at`` or
        ``created_at`` seen, or the Ironic API's time before the read ran
        when later (Ironic's clocks, never this host's).
    :ivar calls: API calls made.
    :ivar http_seconds: seconds spent in them.
    :ivar anchors: the :class:`Anchor` list to give the next read,
        newest first.
    """

    __slots__ = ('nodes', 'mark', 'calls', 'http_seconds', 'anchors')

    def __init__(self, nodes, mark, meter, anchors=()):
        self.nodes = nodes
        self.mark = mark
        self.calls = meter.calls
        self.http_seconds = meter.http_seconds
        self.anchors = tuple(anchors)


def _ascending(found):
    """The anchors of nodes read, in the order they were read."""
    return [Anchor(uuid, stamp) for uuid, (stamp, _node) in found.items()]


def _next_anchors(anchors, candidates, mark, overlap):
    """The anchors to keep: a newer quiet node first, when there is one.

    :param anchors: the anchors that worked, newest first.
    :param candidates: :class:`Anchor` of nodes just read, in Ironic's
        ascending ``(updated_at, id)`` order: of two nodes updated at the
        same instant, the later one is the better anchor (Ironic reads on
        from the marker's id too; nodes enrolled in bulk share a stamp).
    :param mark: the new watermark; only a node updated before it minus
        the overlap may be an anchor, so that every change after the
        next read's own limit is read.
    :param overlap: the ``timedelta`` read again; also the least spacing
        of two anchors.
    :returns: a tuple of at most :data:`MAX_ANCHORS`, newest first.
    """
    limit = mark - overlap
    quiet = [c for c in candidates if c.stamp is not None and
             c.stamp < limit]
    anchors = list(anchors)
    if quiet:
        best = quiet[0]
        for candidate in quiet[1:]:
            if candidate.stamp >= best.stamp:
                best = candidate
        if not anchors or best.stamp >= anchors[0].stamp + overlap:
            anchors.insert(0, best)
    return tuple(anchors[:MAX_ANCHORS])


def _check_not_ahead(mark, server_date, overlap):
    """Refuse a watermark ahead of Ironic API's own clock.

    A host whose clock runs ahead stamps its changes in the future; a
    watermark taken from them would hide, until the next full listing,
    the changes other hosts stamp with the right time.

    :param mark: the watermark (an aware datetime).
    :param server_date: the API's ``Date`` (1 s resolution), or None.
    :param overlap: the ``timedelta`` the feed reads again.
    :raises ChangeFeedUnavailable: ahead by more than the overlap.
    """
    if server_date is None:
        return
    # NOTE(ironic-partition): Date has whole seconds.
    if mark > server_date + overlap + datetime.timedelta(seconds=1):
        raise ChangeFeedUnavailable(
            'the newest change is stamped %s, %.0f s ahead of the clock of '
            'the Ironic API that answered (%s), more than '
            '[ironic_partition] change_feed_overlap (%.0f s): an Ironic '
            'host\'s clock runs ahead; fix its time (NTP)' % (
                mark.isoformat(), (mark - server_date).total_seconds(),
                server_date.isoformat(), overlap.total_seconds()))


def _read_began(meter, took):
    """The Ironic API's time before any query of a read ran, or the epoch.

    A quiet fleet's newest stamp does not move, and every refresh read
    again every node stamped within the overlap before it (all of a batch
    just enrolled). The API's clock moves the watermark on instead: every
    query of the read ran after the earliest ``Date`` answered (whole
    seconds, rounded down) minus the read's own duration (a duration, the
    same on both hosts' clocks). A change committed after its query is
    stamped no earlier than that minus the overlap, which covers the
    clock differences between Ironic's hosts and a transaction's length
    as for a watermark taken from a stamp.

    :param meter: the read's :class:`~ironic_partition.ironic.baremetal.Meter`.
    :param took: the read's seconds, by this host's monotonic clock.
    :returns: an aware datetime.
    """
    if meter.first_server_date is None:
        return _EPOCH
    return meter.first_server_date - datetime.timedelta(seconds=took)


def parse_timestamp(value):
    """Parse one of Ironic's ISO 8601 timestamps (always UTC).

    :param value: e.g. ``2026-11-23T16:32:07.843473+00:00``, or None.
    :returns: an aware ``datetime``, or None.
    """
    if value is None:
        return None
    stamp = datetime.datetime.fromisoformat(value)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp


def _later(stamp, other):
    """Whether ``stamp`` is later than ``other`` (None is earliest)."""
    if other is None:
        return stamp is not None
    return stamp is not None and stamp > other


def _not_found(error):
    """Whether an ``IronicUnavailable`` is Ironic's 404.

    A node, or the marker node of a list, that is gone.
    """
    return getattr(error.kwargs.get('reason'), 'status_code', None) == 404


def _run_both(executor, first, second):
    """Run two calls at once; return both results, or raise the first error.

    :param executor: the client's executor.
    :param first: a callable, run on the executor.
    :param second: a callable, run in this thread.
    :returns: ``[first(), second()]``; ``first`` has ended in any case.
    """
    pending = executor.submit(first)
    try:
        other = second()
    finally:
        futures.wait([pending])
    return [pending.result(), other]


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


class ChangeFeed(object):
    """Ironic's change feed, read through one client.

    :param client: an :class:`~ironic_partition.ironic.baremetal.IronicClient`
        (its ``get_json``, ``page_bodies`` and ``page_size``).
    :param wall_clock: this host's UTC clock (an aware ``datetime``), the
        independent check of the API's ``Date`` header; for tests.
    """

    def __init__(self, client, wall_clock=None):
        self.client = client
        self._wall = wall_clock or _utcnow
        #: Seconds the API's ``Date`` was ahead of this host's clock at
        #: the last read that ignored it; 0 while it is trusted.
        self.date_ahead = 0.0

    def node_changes(self, since, overlap,
                     microversion=baremetal.MIN_MICROVERSION, anchors=()):
        """The nodes changed or created since a watermark, fleet-wide.

        Two reads of ``GET /v1/nodes/detail`` run at once (``fields``
        cannot ask for the timestamps, so the detailed view is read, for
        the changed nodes only):

        * the updated nodes: from an :class:`Anchor` (a node updated
          before the watermark minus ``overlap``), every node updated
          after it, oldest first. Without an anchor that works, newest
          first by ``updated_at`` down to the watermark minus ``overlap``,
          which also yields the first anchor. A node never updated since
          it was created has no ``updated_at``: PostgreSQL sorts those
          first (MySQL last) and Ironic cannot page past them; when a
          page of them has a next one, the read starts instead from the
          node updated longest ago (once: the anchors then move on), so
          never-updated nodes cost nothing.
        * the created nodes: newest first by ``created_at`` (always set),
          down to the watermark minus ``overlap``.

        The watermark is Ironic's own timestamp, never this host's clock;
        the overlap covers transactions that committed out of order and
        clock differences between Ironic's hosts.

        :param since: the watermark (a datetime).
        :param overlap: a ``timedelta`` read again before the watermark.
        :param microversion: the API microversion (``shard`` needs 1.82).
        :param anchors: the :attr:`Changes.anchors` of the previous read.
        :returns: :class:`Changes`, one record per node (its latest
            state).
        :raises ChangeFeedUnavailable: the feed cannot prove it is
            complete; list in full instead.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises IronicRequestError: Ironic refused the query.
        """
        meter = baremetal.Meter()
        local = self._wall()
        began = time.monotonic()
        # NOTE(ironic-partition): the two reads run at once: a refresh
        # waits for Ironic once, not twice.
        (updated, newest_u, anchors, candidates), (created, newest_c, _b) = \
            _run_both(
                self.client.executor,
                lambda: self._updated_pass(since, overlap, microversion,
                                           meter, anchors),
                lambda: self._feed_pass('created_at', since, overlap,
                                        microversion, meter))
        seen = dict(created)
        for uuid, (stamp, node) in updated.items():
            # One record per node: the later state of the two reads.
            if uuid not in seen or _later(stamp, seen[uuid][0]):
                seen[uuid] = (stamp, node)
        # NOTE(ironic-partition): one watermark for both reads, the
        # newest stamp of either kind: the overlap already covers clock
        # differences between Ironic's hosts, and a created_at watermark
        # alone would not move while nothing is created, reading the last
        # batch of enrolled nodes at every refresh.
        mark = max(newest_u, newest_c)
        if mark > since:
            # NOTE(ironic-partition): only a stamp read now; the previous
            # watermark was checked when it was read.
            _check_not_ahead(mark, meter.server_date, overlap)
        clock_mark = _read_began(meter, time.monotonic() - began)
        if self._date_trusted(clock_mark, local, overlap):
            mark = max(mark, clock_mark)
        return Changes([node for _stamp, node in seen.values()], mark, meter,
                       _next_anchors(anchors, candidates, mark, overlap))

    def _date_trusted(self, clock_mark, local, overlap):
        """Whether the watermark may follow the API's ``Date``.

        The ``Date`` is the clock of whatever answered: the API host, or
        a TLS proxy in front of it. Ahead of Ironic's own stamps by more
        than the overlap, a watermark taken from it would skip, until the
        next full listing, exactly the changes the overlap is there for
        (a lagging conductor, transactions committed out of order). This
        host's clock is the independent check: a ``Date`` ahead of it by
        more than the overlap is ignored (the watermark then follows
        Ironic's stamps alone, which is always complete, only slower on a
        quiet fleet), with a WARNING once per episode. A ``Date`` behind
        is harmless here: it only holds the watermark back.

        :param clock_mark: the read's start by the ``Date``
            (:func:`_read_began`).
        :param local: this host's clock when the read began.
        :param overlap: the ``timedelta`` the feed reads again.
        :returns: True when ``clock_mark`` may move the watermark.
        """
        if clock_mark == _EPOCH:
            return False
        ahead = (clock_mark - local).total_seconds()
        # NOTE(ironic-partition): Date has whole seconds.
        if ahead <= overlap.total_seconds() + 1:
            if self.date_ahead:
                LOG.info('The Date of the Ironic API at %(api)s is within '
                         '[ironic_partition] change_feed_overlap of this '
                         'host\'s clock again: the change feed\'s '
                         'watermark follows it again',
                         {'api': self._endpoint()})
            self.date_ahead = 0.0
            return True
        if not self.date_ahead:
            LOG.warning(
                'Ignoring the Date of the Ironic API at %(api)s for the '
                'change feed\'s watermark: it is %(ahead).0f s ahead of '
                'this host\'s clock, more than [ironic_partition] '
                'change_feed_overlap (%(overlap).0f s). A proxy in front '
                'of the API, or the API host, has a wrong clock (NTP); '
                'until it is fixed the watermark follows Ironic\'s own '
                'node timestamps only.',
                {'api': self._endpoint(), 'ahead': ahead,
                 'overlap': overlap.total_seconds()})
        self.date_ahead = ahead
        return False

    def _endpoint(self):
        return getattr(self.client, 'endpoint', None) or 'Ironic'

    def _updated_pass(self, since, overlap, microversion, meter, anchors):
        """Read the nodes updated since the watermark minus the overlap.

        :returns: ``({uuid: (updated_at, Node)}, newest stamp, the anchors
            that still work, anchor candidates in ascending order)``.
        :raises ChangeFeedUnavailable: no way to read them completely.
        """
        for index, anchor in enumerate(anchors):
            try:
                found, newest = self._read_on_from(anchor, since,
                                                   microversion, meter)
            except ChangeFeedUnavailable as e:
                # NOTE(ironic-partition): an older anchor, or the reads
                # below, still work.
                LOG.debug('Change feed: %s', e)
                continue
            return found, newest, anchors[index:], _ascending(found)
        try:
            found, newest, below = self._feed_pass(
                'updated_at', since, overlap, microversion, meter)
        except _UntimedPage:
            oldest = self._oldest_updated(microversion, meter)
            if oldest is None:
                # NOTE(ironic-partition): the first node either way has no
                # updated_at: whichever end the database sorts those at,
                # no node was ever updated.
                return {}, since, (), ()
            anchor, body = oldest
            found, newest = self._read_on_from(anchor, since, microversion,
                                               meter)
            candidates = [anchor] + _ascending(found)
            found[anchor.uuid] = (anchor.stamp, baremetal.Node.from_api(body))
            newest = max(newest, anchor.stamp)
            return found, newest, (), candidates
        # NOTE(ironic-partition): read newest first: reversed, and the
        # first node below the limit is the oldest.
        return found, newest, (), ([below] if below else []) + list(
            reversed(_ascending(found)))

    def _read_on_from(self, anchor, since, microversion, meter):
        """Read every node updated after an anchor, oldest first.

        :returns: ``({uuid: (updated_at, Node)}, newest stamp)``.
        :raises ChangeFeedUnavailable: the anchor, or a node the pages
            went on from, was deleted or changed during the read (Ironic
            would then have skipped nodes).
        """
        found = {}
        newest = since
        markers = [anchor]
        params = {'sort_key': 'updated_at', 'sort_dir': 'asc',
                  'limit': self.client.page_size, 'marker': anchor.uuid}
        try:
            pages = self.client.page_bodies('/nodes/detail', 'nodes',
                                            params, microversion, meter,
                                            with_next=True)
            for page, more in pages:
                for body in page:
                    stamp = parse_timestamp(body.get('updated_at'))
                    if stamp is None:
                        continue
                    if stamp > newest:
                        newest = stamp
                    found[body['uuid']] = (stamp,
                                           baremetal.Node.from_api(body))
                if more and page:
                    markers.append(Anchor(
                        page[-1]['uuid'],
                        parse_timestamp(page[-1].get('updated_at'))))
        except exception.IronicUnavailable as e:
            if not _not_found(e):
                raise
            raise ChangeFeedUnavailable(
                'node %s, which the change feed reads on from, was deleted'
                % anchor.uuid)
        for marker in markers:
            # NOTE(ironic-partition): Ironic reads the marker's row when it
            # answers: one updated in between moved on, and the nodes
            # updated in between were skipped.
            if self._updated_at(marker.uuid, microversion,
                                meter) != marker.stamp:
                raise ChangeFeedUnavailable(
                    'node %s, which the change feed read on from, changed '
                    'or was deleted during the read' % marker.uuid)
        return found, newest

    def _updated_at(self, uuid, microversion, meter):
        """A node's ``updated_at`` now, or None once it is deleted."""
        try:
            body = self.client.get_json('/nodes/%s' % uuid, {},
                                        microversion, meter)
        except exception.IronicUnavailable as e:
            if _not_found(e):
                return None
            raise
        return parse_timestamp(body.get('updated_at'))

    def _oldest_updated(self, microversion, meter):
        """The node updated longest ago, as an anchor, with its record.

        :returns: ``(Anchor, its JSON)``, or None when the first node has
            no ``updated_at``: PostgreSQL sorts those last here, so no
            node has one. (MySQL sorts them first here, but last newest
            first: the newest-first read meets one first only when no
            node has one either.)
        """
        params = {'sort_key': 'updated_at', 'sort_dir': 'asc', 'limit': 1}
        page = self.client.get_json('/nodes/detail', params, microversion,
                                    meter).get('nodes') or ()
        if not page:
            return None
        stamp = parse_timestamp(page[0].get('updated_at'))
        if stamp is None:
            return None
        return Anchor(page[0]['uuid'], stamp), page[0]

    def _feed_pass(self, key, since, overlap, microversion, meter):
        """One newest-first read of the change feed, by ``key``.

        :returns: ``({uuid: (updated_at, Node)}, newest stamp seen, the
            first node stamped before the watermark minus the overlap as
            an :class:`Anchor`, or None)``.
        :raises ChangeFeedUnavailable: a page ends on a node without
            ``key`` and has a next one.
        """
        found = {}
        newest = since
        stop = since - overlap
        params = {'sort_key': key, 'sort_dir': 'desc',
                  'limit': self.client.page_size}
        timed = False
        pages = self.client.page_bodies('/nodes/detail', 'nodes', params,
                                        microversion, meter, with_next=True,
                                        first_limit=FIRST_PAGE)
        for page, more in pages:
            for body in page:
                stamp = parse_timestamp(body.get(key))
                if stamp is None and timed:
                    # NOTE(ironic-partition): the database sorts the nodes
                    # without one last (MySQL): every stamped node was
                    # read, and these are older than any change.
                    return found, newest, None
                timed = timed or stamp is not None
                if stamp is not None and stamp < stop:
                    below = parse_timestamp(body.get('updated_at'))
                    return found, newest, (
                        Anchor(body['uuid'], below) if below else None)
                if stamp is not None and stamp > newest:
                    newest = stamp
                if body['uuid'] not in found:
                    found[body['uuid']] = (
                        parse_timestamp(body.get('updated_at')),
                        baremetal.Node.from_api(body))
            if more and page and page[-1].get(key) is None:
                # NOTE(ironic-partition): the next page's marker would have
                # no timestamp, and Ironic's keyset pagination then skips
                # newer nodes. Ironic says there is a next page by its
                # "next" link; the page's length says nothing when its
                # [api] max_limit is below our page size.
                raise _UntimedPage(
                    'a page of nodes ends with one without %s' % key)
        return found, newest, None

    def newest_stamp(self, microversion=baremetal.MIN_MICROVERSION,
                     overlap=None):
        """Ironic's newest ``updated_at`` or ``created_at``: a watermark.

        Read before a full listing: what changes during the listing is
        newer, and the next :meth:`node_changes` reads it.

        :param microversion: the API microversion.
        :param overlap: the feed's overlap (a ``timedelta``); when given,
            a watermark ahead of the API's clock by more is refused.
        :returns: ``(mark, meter)``: the newer of the two newest
            timestamps (the epoch when Ironic has no node).
        :raises ChangeFeedUnavailable: the watermark is ahead of Ironic
            API's clock (an Ironic host's clock runs ahead).
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        """
        meter = baremetal.Meter()

        def updated():
            try:
                return self._newest_stamp('updated_at', microversion, meter)
            except _UntimedPage:
                # NOTE(ironic-partition): more never-updated nodes than a
                # page, sorted first (PostgreSQL): the created_at stamp
                # alone is the watermark; node_changes reads the updated
                # nodes from an anchor, which needs none.
                return _EPOCH
        stamps = _run_both(
            self.client.executor, updated,
            lambda: self._newest_stamp('created_at', microversion, meter))
        # NOTE(ironic-partition): one watermark, as node_changes keeps.
        mark = max(stamps)
        if overlap is not None:
            _check_not_ahead(mark, meter.server_date, overlap)
        return mark, meter

    def _newest_stamp(self, key, microversion, meter):
        stamp = _EPOCH
        # NOTE(ironic-partition): one node usually answers; a page only
        # when the newest has no timestamp (PostgreSQL sorts those first).
        # Whether more nodes follow is Ironic's "next" link: a short page
        # may be its [api] max_limit, not the end.
        for limit in (1, self.client.page_size):
            params = {'sort_key': key, 'sort_dir': 'desc', 'limit': limit}
            body = self.client.get_json('/nodes/detail', params,
                                        microversion, meter)
            page = body.get('nodes') or ()
            found = [parse_timestamp(b.get(key)) for b in page]
            found = [f for f in found if f is not None]
            if found:
                return max(found)
            if not body.get('next'):
                return stamp
        raise _UntimedPage(
            'a page of %d nodes without %s, and more after it (nodes never '
            'updated since they were enrolled)' % (len(page), key))
