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

"""The ring of live compute services of one partition, as nova builds it.

Nova's Ironic driver puts the live ``nova-compute`` services that share a
partition key (host names lower-cased) on a ``tooz.hashring.HashRing`` with
default settings, and a node belongs to
``ring.get_nodes(node_uuid.encode('utf-8'))``. This provider builds the same
ring from a membership source.

The membership source is a callable ``members_fn(partition_key)`` returning
either an iterable of host names or an object with a ``live`` attribute
holding one (such as a membership backend's result). :class:`StaticMembers`
is a fixed list.
"""

import threading

from oslo_log import log as logging

from ironic_partition import conf as ip_conf
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import base
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)


def normalize_members(hosts):
    """Return the set of ring members for some host names.

    :param hosts: an iterable of host names, or an object with a ``live``
        attribute holding one.
    :returns: a frozenset of normalized, non-empty host names.
    """
    hosts = getattr(hosts, 'live', hosts)
    members = (ip_conf.normalize_host(host) for host in hosts if host)
    return frozenset(member for member in members if member)


class StaticMembers(object):
    """A membership source returning a fixed list of hosts.

    :param hosts: host names, the same for every partition key; or a mapping
        of partition key to host names.
    """

    def __init__(self, hosts):
        if isinstance(hosts, dict):
            self._by_key = {key: list(value) for key, value in hosts.items()}
            self._hosts = None
        else:
            self._by_key = None
            self._hosts = list(hosts)

    def __call__(self, partition_key=None):
        """Return the hosts of a partition.

        :param partition_key: the partition key.
        :returns: a list of host names (empty for an unknown key of a
            mapping).
        """
        if self._by_key is not None:
            return list(self._by_key.get(partition_key, ()))
        return list(self._hosts)


class ComputeRingProvider(base.RingProvider):
    """The ring of live compute services for one partition key.

    The ring is cached per partition key and rebuilt only when the member
    set (or, in balanced mode, the key set) changes.

    :param members_fn: membership source, ``members_fn(partition_key) ->
        iterable of host names`` (or an object with ``live``).
    :param members: a static host list, used when ``members_fn`` is None.
    :param partitions: points per member (``2**partition_exponent``).
    :param hash_function: hashlib algorithm name.
    :param mode: ``'tooz'`` or ``'balanced'``.
    :param load_factor: for the balanced mode.
    :raises: ValueError if neither ``members_fn`` nor ``members`` is given.
    """

    def __init__(self, members_fn=None, members=None,
                 partitions=hash_ring.DEFAULT_PARTITION_NUMBER,
                 hash_function=hash_ring.DEFAULT_HASH_FUNCTION, mode='tooz',
                 load_factor=balanced_ring.DEFAULT_LOAD_FACTOR):
        super(ComputeRingProvider, self).__init__(
            partitions=partitions, hash_function=hash_function, mode=mode,
            load_factor=load_factor)
        if members_fn is None:
            if members is None:
                raise ValueError('ComputeRingProvider needs members_fn or '
                                 'members')
            members_fn = StaticMembers(members)
        self._members_fn = members_fn
        self._cache = {}
        self._lock = threading.Lock()
        self.builds = 0

    def members(self, partition_key=None):
        """Return the current ring members of a partition.

        :param partition_key: the partition key (None: no partitioning).
        :returns: a frozenset of lower-cased host names.
        """
        return normalize_members(self._members_fn(partition_key))

    def get_ring(self, key=None, keys=None):
        """Return the ring of a partition, rebuilt if its members changed.

        :param key: the partition key.
        :param keys: the node key set, for the balanced mode.
        :returns: a :class:`~ironic_partition.ring.hash_ring.HashRing`.
        """
        members = self.members(key)
        keyset = frozenset(keys) if (keys is not None
                                     and self.mode == 'balanced') else None
        with self._lock:
            cached = self._cache.get(key)
            if (cached is not None and cached[0] == members
                    and cached[1] == keyset):
                return cached[2]
            LOG.debug('Building the compute ring of partition %(key)r with '
                      'members %(members)s',
                      {'key': key, 'members': ', '.join(sorted(members))})
            ring = self.build_ring(members, keys)
            self._cache[key] = (members, keyset, ring)
            self.builds += 1
            return ring

    def reset(self):
        """Drop every cached ring."""
        with self._lock:
            self._cache.clear()
