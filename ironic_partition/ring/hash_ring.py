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

"""Consistent hash rings: tooz's, exactly, and an opt-in balanced mode.

:class:`HashRing` gives, for every input, the same answer as
:class:`tooz.hashring.HashRing` (which Ironic uses to map nodes to
conductors, and nova to map nodes to nova-compute services):

* Every member ``m`` (encoded to UTF-8 bytes ``b`` when it is a ``str``) owns
  ``partitions * weight`` points on a ring of hash values. Point ``r`` (counted
  from 0) is the digest of ``b`` repeated ``r + 2`` times, which is what an
  incremental hash object fed ``b`` once and then once more per point yields.
  A digest is read as a big-endian unsigned integer.
* A key is hashed the same way (its digest) and belongs to the first point
  strictly greater than its digest, wrapping around to the lowest point.
* With ``replicas`` > 1 or ``ignore_nodes``, the ring is walked clockwise from
  that point, collecting members that are not ignored until ``replicas``
  distinct members are found (capped at the number of members not ignored).

Digests of one algorithm all have the same length, so comparing the digest
bytes orders them exactly like the integers: the ring is kept as a sorted list
of digest bytes, and a lookup is one ``bisect`` with no integer conversion.

:class:`ironic_partition.ring.balanced_ring.BalancedHashRing` is the opt-in
balanced mode: consistent hashing with bounded loads, computed for a whole
key set at once so that every service computing it from the same members
and keys gets the same mapping.
"""

import bisect
import hashlib

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import exception

LOG = logging.getLogger(__name__)

DEFAULT_PARTITION_NUMBER = 2 ** 5
"""Points per member and unit of weight (tooz's and Ironic's default)."""

DEFAULT_HASH_FUNCTION = 'md5'
"""Hash function (tooz's and Ironic's default)."""


def _hasher(name):
    """Return a function hashing bytes into a hash object.

    :param name: a hashlib algorithm name, as tooz accepts it.
    :returns: a callable taking bytes and returning a hashlib object.
    :raises: UnknownHashFunction if hashlib does not provide ``name`` or its
        digests have no fixed length.
    """
    supported = ', '.join(sorted(hashlib.algorithms_available))
    if not isinstance(name, str) or name not in hashlib.algorithms_available:
        raise exception.UnknownHashFunction(
            name=name, supported=supported,
            reason=_('not provided by hashlib on this system'))
    if name == 'md5':
        md5 = hashlib.md5

        def new(data=b''):
            return md5(data, usedforsecurity=False)
    else:
        def new(data=b''):
            return hashlib.new(name, data)
    try:
        new(b'').digest()
    except TypeError:
        # NOTE: shake_* need a length: tooz fails on them when adding nodes.
        raise exception.UnknownHashFunction(
            name=name, supported=supported,
            reason=_('its digests have no fixed length'))
    return new


def _member_bytes(member):
    """Return the bytes a member name is hashed from.

    :param member: a member name, ``str`` or ``bytes``.
    :returns: the UTF-8 encoding of a ``str``, or the ``bytes`` unchanged.
    :raises: InvalidRingMember for an empty name or another type.
    """
    if isinstance(member, bytes):
        raw = member
    elif isinstance(member, str):
        raw = member.encode('utf-8')
    else:
        raise exception.InvalidRingMember(
            member=member, reason=_('a member name must be str or bytes'))
    if not raw:
        raise exception.InvalidRingMember(
            member=member, reason=_('a member name must not be empty'))
    return raw


def key_bytes(key):
    """Return the bytes a key is hashed from.

    :param key: bytes, or a ``str`` which is encoded as UTF-8.
    :returns: bytes.
    """
    if isinstance(key, str):
        return key.encode('utf-8')
    return key


class HashRing(object):
    """Map keys onto members by consistent hashing, exactly like tooz.

    Drop-in for :class:`tooz.hashring.HashRing`: same constructor, methods,
    ``nodes`` attribute and ``len()``, and the same result for every lookup.
    Differences, all in cases where tooz misbehaves:

    * an unknown hash function raises :class:`UnknownHashFunction` (a
      ``ValueError``, as in tooz); so does a variable-length one (``shake_*``)
      which tooz accepts but then fails on;
    * an empty member name raises :class:`InvalidRingMember` (tooz accepts it
      and stacks all its points on one spot); so does a ``bytes`` member equal
      to the UTF-8 encoding of a ``str`` member (tooz lets one silently take
      over the other's points and may then loop forever);
    * removing an unknown member raises :class:`UnknownRingMember` (a
      ``LookupError``; tooz raises ``tooz.hashring.UnknownNode``);
    * a walk never laps the ring more than once (tooz loops forever when a
      member owns no point, e.g. has weight 0, and more replicas are asked
      than the members owning points);
    * :meth:`remove_node` removes every point of the member; tooz leaves
      behind the extra points of a member re-added with a lower weight;
    * a ``str`` key is accepted and hashed as its UTF-8 encoding (tooz raises
      ``TypeError``).

    Not thread-safe for concurrent changes; concurrent lookups are safe.

    :param nodes: iterable of member names (``str`` or ``bytes``), each added
        with weight 1 (a mapping passes its keys, as in tooz).
    :param partitions: points per member and unit of weight.
    :param hash_function: name of a hashlib algorithm.
    :raises: UnknownHashFunction, InvalidRingMember.
    """

    DEFAULT_PARTITION_NUMBER = DEFAULT_PARTITION_NUMBER
    DEFAULT_HASH_FUNCTION = DEFAULT_HASH_FUNCTION

    def __init__(self, nodes=(), partitions=DEFAULT_PARTITION_NUMBER,
                 hash_function=DEFAULT_HASH_FUNCTION):
        self._new_hash = _hasher(hash_function)
        self._hash_function = hash_function
        self._partition_number = partitions
        self.nodes = {}
        # NOTE: number of points each member owns; equals partitions * weight
        # except after a member is re-added with a lower weight (see tooz).
        self._points = {}
        self._raw = {}
        self._positions = []
        # NOTE: owner of each position, plus the owner of the first position
        # appended once more, so that bisect's result len(positions) wraps.
        self._owners = []
        self.add_nodes(set(nodes))

    def add_node(self, node, weight=1):
        """Add a member to the ring.

        Not called by this package: part of :class:`tooz.hashring.HashRing`'s
        API (``add_node``, ``add_nodes``, ``remove_node``), which this class
        replaces exactly, for the code that drives a ring as tooz's.

        :param node: member name, ``str`` or ``bytes``.
        :param weight: integer; the member gets ``partitions * weight`` points
            and so a share of keys proportional to its weight.
        :raises: InvalidRingMember.
        """
        self.add_nodes((node,), weight)

    def add_nodes(self, nodes, weight=1):
        """Add members to the ring, all with the same weight.

        Adding a member again with the same weight changes nothing; with a
        higher weight it gains the extra points.

        :param nodes: iterable of member names.
        :param weight: integer weight of each member.
        :raises: InvalidRingMember.
        """
        new_points = {}
        for node in nodes:
            raw = _member_bytes(node)
            other = self._raw.get(raw)
            if other is not None and other is not node and other != node:
                raise exception.InvalidRingMember(
                    member=node,
                    reason=_('it hashes like member %r') % (other,))
            count = self._partition_number * weight
            have = self._points.get(node, 0)
            if count > have:
                digest = self._new_hash(raw)
                for _index in range(have):
                    digest.update(raw)
                for _index in range(count - have):
                    digest.update(raw)
                    new_points[digest.digest()] = node
                self._points[node] = count
            else:
                self._points.setdefault(node, have)
            self._raw[raw] = node
            self.nodes[node] = weight
        if new_points:
            points = dict(zip(self._positions, self._owners))
            points.update(new_points)
            self._set_points(points)

    def remove_node(self, node):
        """Remove a member and all its points from the ring.

        Only the keys the member owned move, each to the member owning the
        next point clockwise.

        :param node: member name.
        :raises: UnknownRingMember if ``node`` is not a member.
        """
        try:
            del self.nodes[node]
        except (KeyError, TypeError):
            raise exception.UnknownRingMember(member=node)
        del self._points[node]
        del self._raw[_member_bytes(node)]
        self._set_points({pos: owner for pos, owner in
                          zip(self._positions, self._owners)
                          if owner != node})

    def _set_points(self, points):
        """Replace the ring's points.

        :param points: dict mapping digest bytes to member.
        """
        positions = sorted(points)
        owners = [points[pos] for pos in positions]
        if owners:
            owners.append(owners[0])
        self._positions = positions
        self._owners = owners

    def _digest(self, data):
        """Hash a key.

        :param data: bytes, or ``str`` hashed as UTF-8.
        :returns: digest bytes.
        """
        return self._new_hash(key_bytes(data)).digest()

    def _index(self, data):
        """Return the index of the first point after a key's hash.

        :param data: key, bytes or str.
        :returns: an index into the positions, 0 for an empty ring.
        """
        index = bisect.bisect_right(self._positions, self._digest(data))
        return 0 if index >= len(self._positions) else index

    def get_node(self, data):
        """Return the one member a key maps to (``replicas=1``).

        :param data: key, bytes or str.
        :returns: the member, or None if the ring has no points.
        """
        if not self._owners:
            return None
        return self._owners[bisect.bisect_right(self._positions,
                                                self._digest(data))]

    def get_nodes(self, data, ignore_nodes=None, replicas=1):
        """Return the set of members a key maps to.

        :param data: key, bytes (or str, hashed as its UTF-8 encoding).
        :param ignore_nodes: iterable of members to skip.
        :param replicas: number of distinct members wanted; capped at the
            number of members not ignored.
        :returns: a set of up to ``replicas`` members; empty for an empty ring
            or ``replicas`` < 1.
        """
        if replicas == 1 and not ignore_nodes:
            node = self.get_node(data)
            return set() if node is None else {node}
        return self._walk(self._index(data), ignore_nodes, replicas)

    def _walk(self, index, ignore_nodes, replicas):
        """Collect distinct members walking clockwise from a point.

        :param index: index of the first point.
        :param ignore_nodes: iterable of members to skip, or None.
        :param replicas: number of members wanted.
        :returns: a set of members.
        """
        ignore = set(ignore_nodes) if ignore_nodes else set()
        wanted = min(replicas, len(set(self.nodes) - ignore))
        found = set()
        owners = self._owners
        total = len(self._positions)
        for _step in range(total):
            if len(found) >= wanted:
                break
            node = owners[index]
            if node not in ignore:
                found.add(node)
            index = index + 1 if index + 1 < total else 0
        return found

    def map_keys(self, keys):
        """Map many keys at once (``replicas=1``).

        Equivalent to ``{key: get_node(key) for key in keys}``.

        :param keys: iterable of keys, bytes or str.
        :returns: dict mapping each key to its member; empty for an empty
            ring.
        """
        owners = self._owners
        if not owners:
            return {}
        positions = self._positions
        bisect_right = bisect.bisect_right
        new = self._new_hash
        return {key: owners[bisect_right(positions,
                                         new(key_bytes(key)).digest())]
                for key in keys}

    def __getitem__(self, key):
        """Return ``get_nodes(key)``, like tooz.

        :param key: key, bytes or str.
        :returns: a set of one member.
        """
        return self.get_nodes(key)

    def __len__(self):
        """Return the number of points on the ring, like tooz.

        :returns: an integer.
        """
        return len(self._positions)

    def __repr__(self):
        return '<%s members=%d points=%d hash=%s>' % (
            type(self).__name__, len(self.nodes), len(self._positions),
            self._hash_function)


def diff(keys, ring_a, ring_b):
    """Compute exactly which keys move between two rings.

    Either ring may be a :class:`HashRing`, a
    :class:`~ironic_partition.ring.balanced_ring.BalancedHashRing` or
    anything with a ``map_keys(keys) -> dict`` method.

    :param keys: iterable of keys, bytes or str.
    :param ring_a: the ring before.
    :param ring_b: the ring after.
    :returns: dict mapping each key whose member differs to a tuple
        ``(member in ring_a, member in ring_b)``; a member is None when a
        ring has none for the key.
    """
    keys = list(keys)
    before = ring_a.map_keys(keys)
    after = ring_b.map_keys(keys)
    moved = {}
    for key in keys:
        old = before.get(key)
        new = after.get(key)
        if old != new:
            moved[key] = (old, new)
    return moved
