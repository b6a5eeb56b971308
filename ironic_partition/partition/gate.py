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

"""The reporting gate: what a consumer may act on between two refreshes.

A refresh (:meth:`~ironic_partition.partition.partitioner.Partitioner.
refresh`) writes ``last_result``; the consumer acts on it later, node by
node (nova's resource tracker, a spawn, a claim), possibly long after. The
questions it asks then only read that state and the claims, at the
instant of asking: which nodes may be reported now, whether one may, why
a spawn may not go ahead, whether the index lists a node, who holds a
claim. A mixin of :class:`~ironic_partition.partition.partitioner.
Partitioner`, which owns the state.
"""

from oslo_log import log as logging

from ironic_partition.claims import manager as claims_mod
from ironic_partition.partition import readonly

LOG = logging.getLogger(__name__)


class ReportingGate(object):
    """Questions on the last refresh, answered at the instant asked.

    Expects the partitioner's ``last_result``, ``identity``, ``claims``,
    ``index``, ``store``, ``membership``, ``_settings`` and ``_clock``.
    """

    def reported_nodes(self, now=None):
        """The nodes of the last result that may be reported at this instant.

        Equal to ``last_result.nodes`` while the claims are valid (or when
        claims are off); once the lease has run out by the local clock
        without a successful renewal, or after :meth:`stop`, none, instance
        nodes included. Call it at the moment of acting on a result, e.g.
        when publishing the reported set.

        :param now: the monotonic time, ``clock()`` by default.
        :returns: a dict of node UUID to slim node record; empty before
            the first successful refresh.
        """
        result = self.last_result
        if result is None:
            return {}
        if self.identity is not None and self.identity.lost:
            # NOTE(ironic-partition): another process holds this host
            # name and reports its nodes, instance nodes included.
            return {}
        if self.claims is None:
            return dict(result.nodes)
        now = self._clock() if now is None else now
        allowed = self.claims.reportable(result.nodes, now=now)
        return {u: n for u, n in result.nodes.items() if u in allowed}

    def may_report(self, node_id, now=None):
        """Whether one node of the last result may be reported now.

        The per-node, constant-time form of :meth:`reported_nodes`, for a
        consumer that acts on the nodes of a result one by one, possibly
        long after the refresh (nova's resource tracker, which may also
        have been paused half-way through its run).

        :param node_id: a node UUID.
        :param now: the monotonic time, ``clock()`` by default.
        :returns: True when the node is in the last result and its claim
            is still valid by the local clock (instance nodes included);
            False also once this process lost its host name.
        """
        result = self.last_result
        if result is None or node_id not in result.nodes:
            return False
        if self.identity is not None and self.identity.lost:
            return False
        if self.claims is None:
            return True
        return bool(self.claims.reportable((node_id,), now=now))

    def spawn_refusal(self, node_id, now=None):
        """Tell why this service may not deploy to a node now.

        The test :meth:`may_report` makes, with its reason: a service
        deploys only to a node it may report at that instant (nova's
        resource tracker runs the same test). Between scheduling and the
        spawn a node's claim can move to another service.

        :param node_id: a node UUID.
        :param now: the monotonic time, ``clock()`` by default.
        :returns: None when it may, else the reason (a sentence).
        """
        now = self._clock() if now is None else now
        if self.may_report(node_id, now=now):
            return None
        result = self.last_result
        if result is None:
            return 'no refresh of this service has succeeded yet'
        if self.identity is not None and self.identity.lost:
            return 'this process lost its host name to another process'
        if node_id not in result.nodes:
            return ("the node is not in this service's last node list (the "
                    "ring gives it to another service, or another "
                    "service's instance is on it)")
        if self.claims.fenced(now):
            return ("this service's claims ran out (fenced) since its last "
                    "successful claim round")
        return 'this service holds no valid claim on it'

    def listed(self, node_id):
        """Whether the node is in this service's partition, by its index.

        Read without any call: the partition as Ironic last listed it,
        kept current by the change feed. A node deleted in Ironic stays
        in it until the next full listing; a node in the middle of a full
        listing may be missing.

        :param node_id: a node UUID.
        :returns: True when the index holds the node.
        """
        return node_id in self.index.nodes

    def claimed_by_others(self, node_ids):
        """Read which nodes another service holds a valid claim on.

        See :func:`ironic_partition.partition.readonly.claimed_by_others`.
        """
        return readonly.claimed_by_others(
            self._settings, self.store,
            getattr(self.membership, 'role', None) or
            claims_mod.DEFAULT_ROLE, node_ids)

    def claim_holder(self, node_id):
        """Read who holds a valid claim on a node, by the database.

        For log lines: never raises.

        :param node_id: a node UUID.
        :returns: the holder's host name, ``'nobody'``, or ``'unknown'``
            when claims are off or the database cannot be read.
        """
        if self.claims is None:
            return 'unknown'
        try:
            snapshot = self.claims.store.claims.read_claims(
                self.claims.role, node_ids=[node_id])
        except Exception as e:
            LOG.debug('Could not read the claim on node %(node)s: %(err)s',
                      {'node': node_id, 'err': e})
            return 'unknown'
        holders = [c.owner for c in snapshot.claims if c.valid]
        return holders[0] if holders else 'nobody'
