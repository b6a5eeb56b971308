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

"""The nodes of one partition, kept current at the cost of what changed.

A :class:`NodeIndex` holds one slim record per node of a conductor group
(and shard), the one copy of the fleet a service keeps. Its first
:meth:`~NodeIndex.refresh` lists the partition in full, page by page as
the pages arrive. Later refreshes read only Ironic's change feed: the
nodes updated or created since the last watermark, fleet-wide, so that a
node moved out of the partition is seen (and dropped) as well as one
moved in. The watermark is the newest of Ironic's own ``updated_at`` and
``created_at`` stamps, read again with an overlap; the updated nodes are
read on from an *anchor*, a node updated before it, so that nodes never
updated since they were enrolled (which PostgreSQL sorts first, and
Ironic cannot page past) never force a full listing (see
:meth:`~ironic_partition.ironic.change_feed.ChangeFeed.node_changes`).

Ironic keeps no trace of a deleted node, so deletions are found by the
full listing that runs every ``[ironic_partition] full_resync_interval``
seconds (and whenever the feed cannot prove it is complete, the partition
changed, or the last listing failed half-way). Until then a deleted node
that carried no instance stays listed; Ironic refuses to delete a node
that carries one.
"""

import collections
from concurrent import futures
import datetime
import time

from oslo_log import log as logging

from ironic_partition.ironic import baremetal
from ironic_partition.ironic import change_feed

LOG = logging.getLogger(__name__)

#: What one :meth:`NodeIndex.refresh` did: ``full`` (a full listing or
#: the change feed), ``changed`` (records the feed applied), ``calls`` and
#: ``http_seconds`` (its Ironic API calls) and ``reason`` (why it listed
#: in full, or None).
IndexUpdate = collections.namedtuple(
    'IndexUpdate', ['full', 'changed', 'calls', 'http_seconds', 'reason'])


class NodeIndex(object):
    """The nodes of one partition, by UUID.

    :param client: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
    :param resync_interval: seconds between full listings; 0 lists in
        full at every refresh.
    :param overlap: seconds of the change feed read again before the
        watermark.
    :param clock: a monotonic clock.
    """

    def __init__(self, client, resync_interval, overlap,
                 clock=time.monotonic):
        self.client = client
        #: The :class:`~ironic_partition.ironic.change_feed.ChangeFeed` read.
        self.feed = change_feed.ChangeFeed(client)
        self.resync_interval = resync_interval
        self.overlap = datetime.timedelta(seconds=overlap)
        self._clock = clock
        #: node UUID -> slim :class:`~ironic_partition.ironic.baremetal.Node`.
        self.nodes = {}
        self._key = None
        self._synced_at = None
        self._mark = None
        #: Whether Ironic's shard filter proved to ignore case.
        self._shard_ignores_case = False
        #: Why the change feed could not be used last time, or None.
        self.feed_problem = None
        #: Where the feed reads the updated nodes on from (fleet-wide,
        #: kept across full listings and partition changes).
        self._anchors = ()

    def __len__(self):
        return len(self.nodes)

    def invalidate(self):
        """List in full at the next refresh (e.g. after a settings change)."""
        self._synced_at = None

    def _full_reason(self, key):
        if self._key != key:
            return 'first listing' if self._key is None else \
                'the partition changed'
        if self._synced_at is None:
            return 'the last listing did not finish'
        if self._mark is None:
            return 'no change feed watermark'
        if self.resync_interval <= 0:
            return 'full_resync_interval is 0'
        if self._clock() - self._synced_at >= self.resync_interval:
            return 'periodic full resync'
        return None

    @staticmethod
    def _microversion(shard):
        return (baremetal.SHARD_MICROVERSION if shard is not None
                else baremetal.MIN_MICROVERSION)

    def refresh(self, conductor_group, shard=None):
        """Bring the index up to date with Ironic.

        :param conductor_group: the partition's group, None for all.
        :param shard: the partition's shard, None for all.
        :returns: an :data:`IndexUpdate`.
        :raises IronicUnavailable: Ironic cannot be reached or failed; a
            full listing that failed half-way is done again next time.
        :raises IronicRequestError: Ironic refused a query.
        """
        key = (conductor_group, shard)
        reason = self._full_reason(key)
        if reason is None:
            update = self._read_feed(key)
            if update is not None:
                return update
            reason = 'the change feed is incomplete (%s)' % self.feed_problem
        return self._list_all(key, reason)

    def _read_feed(self, key):
        """Apply the change feed to the index.

        :returns: the :data:`IndexUpdate`, or None when the feed cannot be
            used (:attr:`feed_problem` says why).
        """
        try:
            update = self._apply_changes(key)
        except change_feed.ChangeFeedUnavailable as e:
            self._feed_unusable(e)
            return None
        self.feed_problem = None
        return update

    def check_feed(self):
        """Read the change feed once, as the next refresh would.

        For ``status``: unlike :meth:`refresh`, a feed that cannot be used
        is reported, not replaced by a full listing (the next refresh
        lists in full).

        :returns: why the feed cannot be used, or None when it can.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises IronicRequestError: Ironic refused a query.
        """
        if self._key is None or self._mark is None:
            return self.feed_problem or 'no change feed watermark'
        if self._read_feed(self._key) is None:
            self.invalidate()
        return self.feed_problem

    def _feed_unusable(self, error):
        # NOTE(ironic-partition): a WARNING when the reason changes, not
        # at every refresh: a fleet stuck on full listings says so once.
        reason = str(error)
        if reason != self.feed_problem:
            LOG.warning('The change feed cannot be used, listing in full '
                        '(until it can): %s', reason)
        self.feed_problem = reason

    def _list_all(self, key, reason):
        conductor_group, shard = key
        if self._key != key:
            self.nodes = {}
            self._key = key
            self._shard_ignores_case = False
        self._synced_at = None
        started = self._clock()
        mv = self._microversion(shard)
        # NOTE(ironic-partition): the watermark is read while the first
        # page is: a change committed since is newer than it, and the
        # next change feed reads it.
        stamps = self.client.executor.submit(self.feed.newest_stamp, mv,
                                             self.overlap)
        try:
            meter = self._list_pages(conductor_group, shard)
        finally:
            futures.wait([stamps])
        try:
            mark, head = stamps.result()
        except change_feed.ChangeFeedUnavailable as e:
            self._feed_unusable(e)
            mark = None
            head = baremetal.Meter()
        nodes = self.nodes
        self._mark = mark
        self._synced_at = started
        LOG.debug('Listed %(count)d nodes in full (%(reason)s) in '
                  '%(calls)d calls', {'count': len(nodes), 'reason': reason,
                                      'calls': meter.calls + head.calls})
        return IndexUpdate(True, len(nodes), meter.calls + head.calls,
                           meter.http_seconds + head.http_seconds, reason)

    def _list_pages(self, conductor_group, shard):
        """List the partition into the index, in place, page by page.

        :returns: the :class:`~ironic_partition.ironic.baremetal.Meter` of the
            listing.
        """
        meter = baremetal.Meter()
        nodes = self.nodes
        seen = set()
        # NOTE(ironic-partition): updated in place, page by page, so that
        # the fleet is held once; a listing that fails half-way leaves
        # _synced_at unset and the next refresh lists in full again.
        fields = baremetal.NODE_FIELDS + (('shard',) if shard is not None
                                          else ())
        lowered = shard.lower() if shard is not None else None
        for page in self.client.node_pages(conductor_group, fields=fields,
                                           shard=shard, meter=meter):
            for node in page:
                # NOTE(ironic-partition): an unchanged node keeps the
                # record held (and its UUID string), so that a periodic
                # full listing does not allocate the fleet's records
                # again while the old ones are still held.
                if nodes.get(node.id) != node:
                    nodes[node.id] = node
                seen.add(node.id)
                if lowered is not None and node.shard != lowered:
                    # NOTE(ironic-partition): Ironic's database matched
                    # the lower-cased filter to another case.
                    self._shard_ignores_case = True
        for gone in [u for u in nodes if u not in seen]:
            del nodes[gone]
        return meter

    def _shard_matches(self, node, shard):
        """Whether Ironic's shard filter lists this changed node.

        Ironic stores a node's shard as written and lower-cases the
        filter; whether ``Rack-A`` matches ``rack-a`` is its database's
        collation: yes on MySQL/MariaDB, no on PostgreSQL. A full listing
        that returned such a node proved "yes"; otherwise the feed cannot
        tell, and the refresh lists in full.

        :param node: a changed node.
        :param shard: the lower-cased shard filter.
        :returns: a bool.
        :raises ChangeFeedUnavailable: when it cannot tell.
        """
        if node.shard == shard:
            return True
        if node.shard is None or node.shard.lower() != shard:
            return False
        if self._shard_ignores_case:
            return True
        raise change_feed.ChangeFeedUnavailable(
            'node %s has shard %r: whether Ironic lists it under shard %r '
            'depends on its database (MySQL ignores case, PostgreSQL does '
            'not); use lower-case shard names' % (node.id, node.shard,
                                                  shard))

    def _apply_changes(self, key):
        conductor_group, shard = key
        changes = self.feed.node_changes(
            self._mark, self.overlap,
            microversion=self._microversion(shard), anchors=self._anchors)
        group = conductor_group.lower() if conductor_group is not None \
            else None
        shard = shard.lower() if shard is not None else None
        nodes = self.nodes
        for node in changes.nodes:
            # NOTE(ironic-partition): the filters Ironic applies to a
            # listing: the group and the shard as given, lower-cased.
            if ((group is None or node.conductor_group == group)
                    and (shard is None or
                         self._shard_matches(node, shard))):
                nodes[node.id] = node
            else:
                nodes.pop(node.id, None)
        self._mark = changes.mark
        self._anchors = changes.anchors
        return IndexUpdate(False, len(changes.nodes), changes.calls,
                           changes.http_seconds, None)
