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

"""The opt-in balanced ring: consistent hashing with bounded loads.

Computed for a whole key set at once, on the points of a
:class:`ironic_partition.ring.hash_ring.HashRing`, so that every service
computing it from the same members and keys gets the same mapping (see
:class:`BalancedHashRing`).
"""

import bisect
import collections
import heapq
import math

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)

BALANCED_PARTITION_NUMBER = 2 ** 10
"""Default points per member of a :class:`BalancedHashRing`.

More points even out the members' first-choice shares, so fewer keys overflow
and fewer keys move when a member leaves or joins.
"""

DEFAULT_LOAD_FACTOR = 1.05
"""Largest load of a balanced-ring member relative to its fair share."""


class BalancedHashRing(hash_ring.HashRing):
    """Consistent hashing with bounded loads over a known key set.

    Each key ranks the members in its ring order: the member a plain
    :class:`~ironic_partition.ring.hash_ring.HashRing` gives first, then the
    next distinct member clockwise, and so on. Each member has a capacity of
    ``floor(load_factor * len(keys) * weight / total_weight)`` keys (rounded
    up instead when the floors would not hold every key). Keys are then
    matched to members by deferred acceptance: keys ask members in their
    order; a member holds the keys it prefers up to its capacity and turns
    the others away. A member prefers keys that rank it higher (a key for
    which it is the first choice over one for which it is the second), then
    keys with the lower digest, then the lower key bytes.

    The result is the key-optimal stable matching, which depends only on the
    members, their weights, ``partitions``, ``hash_function``,
    ``load_factor`` and the *set* of keys, never on the order keys are given
    or processed in. So every service computing it from the same inputs gets
    the same mapping, but **all of them must use the same full key set**: a
    service that sees a different set of keys may map some keys differently
    (:meth:`ironic_partition.ring.base.RingProvider.ring_keys` says which
    set the services use).

    Keys that fit below their first choice's capacity stay where
    :class:`~ironic_partition.ring.hash_ring.HashRing` puts them; only the
    overflow of overloaded members moves, each key to the nearest member
    clockwise with room.

    Keys outside the key set are mapped by the plain ring. Each key maps to
    one member: ``get_nodes`` with ``replicas`` or ``ignore_nodes`` is
    refused for a key of the key set.

    :param nodes: iterable of member names.
    :param keys: iterable of the keys to balance (bytes or str).
    :param partitions: points per member and unit of weight.
    :param hash_function: name of a hashlib algorithm.
    :param load_factor: largest load of a member relative to its fair
        share, a number >= 1.
    :raises: UnknownHashFunction, InvalidRingMember, ValueError for a
        ``load_factor`` below 1.
    """

    def __init__(self, nodes=(), keys=(),
                 partitions=BALANCED_PARTITION_NUMBER,
                 hash_function=hash_ring.DEFAULT_HASH_FUNCTION,
                 load_factor=DEFAULT_LOAD_FACTOR):
        if not load_factor >= 1:
            raise ValueError(_('load_factor must be >= 1, got %r')
                             % (load_factor,))
        self._load_factor = load_factor
        self._keys = list(dict.fromkeys(keys))
        self._assignment = None
        super(BalancedHashRing, self).__init__(
            nodes, partitions=partitions, hash_function=hash_function)

    def add_nodes(self, nodes, weight=1):
        super(BalancedHashRing, self).add_nodes(nodes, weight)
        self._assignment = None

    def _set_points(self, points):
        super(BalancedHashRing, self)._set_points(points)
        self._assignment = None

    def capacities(self):
        """Return the capacity of each member for the current key set.

        :returns: dict mapping member to the number of keys it may hold.
        """
        count = len(self._keys)
        owning = {node: weight for node, weight in self.nodes.items()
                  if weight > 0 and self._points.get(node)}
        total = sum(owning.values())
        if not total:
            return {}
        caps = {node: max(int(self._load_factor * count * weight // total),
                          -(-count * weight // total))
                for node, weight in owning.items()}
        if sum(caps.values()) < count:
            caps = {node: math.ceil(self._load_factor * count * weight
                                    / total)
                    for node, weight in owning.items()}
        return caps

    def assignment(self):
        """Return the balanced mapping of the whole key set.

        :returns: dict mapping each key to its member (a copy is not made:
            do not modify it).
        """
        if self._assignment is None:
            self._assignment = self._assign()
        return self._assignment

    def _assign(self):
        """Run deferred acceptance over the key set.

        :returns: dict mapping each key to its member.
        """
        keys = self._keys
        owners = self._owners
        if not keys or not owners:
            return {}
        positions = self._positions
        total = len(positions)
        caps = self.capacities()
        digests = [self._digest(key) for key in keys]
        # NOTE: index of the point each key looks at next, per key index.
        cursor = [0] * len(keys)
        rank = [0] * len(keys)
        # NOTE: members each key already asked, only for keys turned away.
        asked = {}
        # NOTE: per member, a heap of held keys, worst on top:
        # (-rank, -digest as int, inverted key bytes, key index).
        held = collections.defaultdict(list)
        bisect_right = bisect.bisect_right
        pending = list(range(len(keys)))
        pending.reverse()
        while pending:
            k = pending.pop()
            if k in asked:
                seen = asked[k]
                index = cursor[k]
                for _step in range(total):
                    index = index + 1 if index + 1 < total else 0
                    if owners[index] not in seen:
                        break
                else:
                    LOG.warning('Balanced ring: key %r fits no member',
                                keys[k])
                    continue
                cursor[k] = index
                rank[k] = len(seen)
            else:
                index = bisect_right(positions, digests[k])
                if index >= total:
                    index = 0
                cursor[k] = index
            node = owners[index]
            heap = held[node]
            entry = (-rank[k], -int.from_bytes(digests[k], 'big'),
                     _invert(hash_ring.key_bytes(keys[k])), k)
            if len(heap) < caps.get(node, 0):
                heapq.heappush(heap, entry)
                continue
            if heap and entry > heap[0]:
                entry = heapq.heapreplace(heap, entry)
            loser = entry[3]
            asked.setdefault(loser, set()).add(owners[cursor[loser]])
            pending.append(loser)
        result = {}
        for node, heap in held.items():
            for entry in heap:
                result[keys[entry[3]]] = node
        return result

    def get_node(self, data):
        """Return the member a key maps to.

        :param data: key, bytes or str.
        :returns: the member; keys outside the key set map as in
            :class:`~ironic_partition.ring.hash_ring.HashRing`.
        """
        node = self.assignment().get(data)
        if node is None:
            return super(BalancedHashRing, self).get_node(data)
        return node

    def get_nodes(self, data, ignore_nodes=None, replicas=1):
        """Return the set of the one member a key maps to.

        :param data: key, bytes or str.
        :param ignore_nodes: only for keys outside the key set.
        :param replicas: only 1 for keys of the key set.
        :returns: a set of members.
        :raises: ValueError for ``replicas`` or ``ignore_nodes`` with a key
            of the key set.
        """
        node = self.assignment().get(data)
        if node is None:
            return super(BalancedHashRing, self).get_nodes(
                data, ignore_nodes=ignore_nodes, replicas=replicas)
        if replicas != 1 or ignore_nodes:
            raise ValueError(_('a balanced ring maps each key of its key set '
                               'to one member: replicas and ignore_nodes '
                               'are not supported'))
        return {node}

    def map_keys(self, keys):
        """Map many keys at once.

        :param keys: iterable of keys, bytes or str.
        :returns: dict mapping each key to its member.
        """
        assignment = self.assignment()
        result = {}
        missing = []
        for key in keys:
            node = assignment.get(key)
            if node is None:
                missing.append(key)
            else:
                result[key] = node
        if missing:
            result.update(super(BalancedHashRing, self).map_keys(missing))
        return result


_INVERT = bytes(range(255, -1, -1))


def _invert(raw):
    """Return bytes that order in reverse of ``raw``.

    Inverting every byte reverses the order of keys of the same length;
    the trailing 0xff byte puts a key after its own extensions, as a
    reverse order must.

    :param raw: bytes.
    :returns: bytes.
    """
    return raw.translate(_INVERT) + b'\xff'
