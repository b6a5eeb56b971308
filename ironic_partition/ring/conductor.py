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

"""Ironic's conductor hash rings, rebuilt outside Ironic.

Ironic maps a node to a conductor like this (``ironic.common.hash_ring``):

* for every alive conductor (online and heartbeating within
  ``[conductor] heartbeat_timeout``) and every hardware type it enables, the
  conductor's registered host name (``host``, or ``host:port`` when set so)
  joins the ring keyed ``"<conductor_group>:<hardware_type>"``; conductor
  groups are stored lower-cased. With ``use_groups=False`` the key is the
  hardware type alone;
* each ring is a ``tooz.hashring.HashRing`` with
  ``2**[DEFAULT] hash_partition_exponent`` partitions (default 32) and
  ``[DEFAULT] hash_ring_algorithm`` (default md5);
* a node belongs to ``ring.get_nodes(node.uuid.encode('utf-8')).pop()`` of the
  ring keyed by the node's conductor group and driver; this is the node's
  ``conductor`` field in the API;
* rings are cached for ``[DEFAULT] hash_ring_reset_interval`` seconds (default
  15), and rebuilt at once when a ring is missing.

Host names are used exactly as registered (not lower-cased): they are what
the ring hashes.

Conductors come from the bare metal API (``conductors(details=True)`` of an
openstacksdk ``Connection``) or from an injected list of dicts with
``hostname``, ``conductor_group``, ``alive`` and ``drivers``.
"""

import threading
import time

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import base
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)

DEFAULT_RESET_INTERVAL = 15
"""Seconds a set of rings is used before it is rebuilt (Ironic's default)."""


def _field(obj, name, default=None):
    """Read a field of a dict or of an SDK resource.

    :param obj: a dict or an object with attributes.
    :param name: the field name.
    :param default: returned when the field is missing.
    :returns: the field's value.
    """
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def ring_key(driver, conductor_group, use_groups=True):
    """Return the key of the ring a node or conductor belongs to.

    :param driver: the hardware type.
    :param conductor_group: the conductor group (None counts as ``''``).
    :param use_groups: whether rings are split by conductor group.
    :returns: ``"<group>:<driver>"``, or ``driver`` without groups.
    """
    if not use_groups:
        return driver
    return '%s:%s' % ((conductor_group or '').lower(), driver)


def rings_members(conductors, use_groups=True):
    """Group alive conductors by ring key, as Ironic does.

    :param conductors: iterable of conductor dicts or SDK resources with
        ``hostname``, ``conductor_group``, ``alive`` and ``drivers``.
    :param use_groups: whether rings are split by conductor group.
    :returns: dict mapping ring key to the set of host names.
    """
    members = {}
    for conductor in conductors:
        if not _field(conductor, 'alive', True):
            continue
        hostname = _field(conductor, 'hostname')
        if not hostname:
            continue
        group = _field(conductor, 'conductor_group')
        for driver in _field(conductor, 'drivers') or ():
            key = ring_key(driver, group, use_groups)
            members.setdefault(key, set()).add(hostname)
    return members


class ConductorRingProvider(base.RingProvider):
    """The conductor-group-aware rings of Ironic's alive conductors.

    Not an ownership provider (not in the ring provider namespace): it maps
    nodes to Ironic conductors, not to the compute services reporting them.
    The ``ring --conductors`` command builds it directly.

    :param connection: an openstacksdk ``Connection``; conductors are read
        through
        :meth:`ironic_partition.ironic.baremetal.IronicClient.list_conductors`
        (``GET /v1/conductors?detail=True``).
    :param conductors: a list of conductor dicts, used when ``connection``
        is None; or a callable returning such a list.
    :param use_groups: split rings by conductor group (Ironic's default).
    :param partitions: points per conductor
        (``2**[DEFAULT] hash_partition_exponent`` in Ironic).
    :param hash_function: ``[DEFAULT] hash_ring_algorithm`` in Ironic.
    :param reset_interval: seconds a set of rings is reused.
    :param clock: monotonic clock returning seconds, for tests.
    :param mode: only ``'tooz'``: the rings must give Ironic's own mapping.
    :param load_factor: unused, for a uniform provider interface.
    :raises: ValueError if neither ``connection`` nor ``conductors`` is
        given, or for another mode.
    """

    def __init__(self, connection=None, conductors=None, use_groups=True,
                 partitions=hash_ring.DEFAULT_PARTITION_NUMBER,
                 hash_function=hash_ring.DEFAULT_HASH_FUNCTION,
                 reset_interval=DEFAULT_RESET_INTERVAL, clock=None,
                 mode='tooz', load_factor=balanced_ring.DEFAULT_LOAD_FACTOR):
        super(ConductorRingProvider, self).__init__(
            partitions=partitions, hash_function=hash_function, mode=mode,
            load_factor=load_factor)
        if mode != 'tooz':
            raise ValueError(_("Conductor rings must reproduce Ironic's own "
                               "mapping: only the 'tooz' ring mode is "
                               "supported, not %r") % (mode,))
        if connection is None and conductors is None:
            raise ValueError('ConductorRingProvider needs connection or '
                             'conductors')
        self._connection = connection
        self._conductors = conductors
        self.use_groups = use_groups
        self.reset_interval = reset_interval
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._rings = None
        self._built_at = None
        self.builds = 0

    def list_conductors(self):
        """Fetch the conductors.

        :returns: a list of conductor dicts or SDK resources.
        """
        if self._connection is not None:
            # NOTE(ironic-partition): openstacksdk's conductors(details=True)
            # sends "details", which Ironic ignores, so "drivers" is missing;
            # our client asks for "detail" explicitly.
            return baremetal.IronicClient(
                connection=self._connection).list_conductors()
        if callable(self._conductors):
            return list(self._conductors())
        return list(self._conductors)

    def _load(self):
        """Build every ring from the current conductors.

        :returns: dict mapping ring key to ring.
        """
        members = rings_members(self.list_conductors(), self.use_groups)
        rings = {}
        for key, hosts in members.items():
            rings[key] = hash_ring.HashRing(
                hosts, partitions=self.partitions,
                hash_function=self.hash_function)
        self.builds += 1
        LOG.debug('Built conductor rings: %s',
                  ', '.join('%s=%s' % (key, sorted(hosts))
                            for key, hosts in sorted(members.items())))
        return rings

    def rings(self):
        """Return every ring, rebuilt when older than the reset interval.

        :returns: dict mapping ring key to ring (do not modify).
        """
        now = self._clock()
        rings, built_at = self._rings, self._built_at
        if rings is not None and now - built_at <= self.reset_interval:
            return rings
        with self._lock:
            if (self._rings is None
                    or self._clock() - self._built_at > self.reset_interval):
                self._rings = self._load()
                self._built_at = self._clock()
            return self._rings

    def reset(self):
        """Drop the cached rings; the next lookup rebuilds them."""
        with self._lock:
            self._rings = None
            self._built_at = None

    def get_ring(self, key=None):
        """Return the ring of a ring key, rebuilding the rings once if absent.

        :param key: ``"<group>:<hardware type>"`` (or the hardware type
            without groups).
        :returns: a :class:`~ironic_partition.ring.hash_ring.HashRing`.
        :raises: UnknownRingKey if no alive conductor serves the key.
        """
        ring = self.rings().get(key)
        if ring is not None:
            return ring
        # NOTE: like Ironic, assume conductors came or left and retry once.
        LOG.debug('No conductor ring %s, rebuilding the rings', key)
        self.reset()
        rings = self.rings()
        ring = rings.get(key)
        if ring is None:
            group, _sep, driver = (key.rpartition(':') if self.use_groups
                                   else ('', '', key))
            raise exception.UnknownRingKey(
                driver=driver, group=group, key=key,
                known=', '.join(sorted(rings)) or _('none'))
        return ring

    def ring_for(self, driver, conductor_group=''):
        """Return the ring serving a hardware type in a conductor group.

        :param driver: the hardware type.
        :param conductor_group: the conductor group.
        :returns: a :class:`~ironic_partition.ring.hash_ring.HashRing`.
        :raises: UnknownRingKey.
        """
        return self.get_ring(ring_key(driver, conductor_group,
                                      self.use_groups))

    def conductor_for(self, node):
        """Return the conductor a node is mapped to, as Ironic reports it.

        :param node: a dict or SDK node with ``uuid`` (or ``id``),
            ``driver`` and ``conductor_group``.
        :returns: the conductor host name.
        :raises: UnknownRingKey if no alive conductor serves the node.
        """
        ring = self.ring_for(_field(node, 'driver'),
                             _field(node, 'conductor_group'))
        return ring.get_node(_node_uuid(node).encode('utf-8'))

    def map_nodes(self, nodes, ignore_unknown=False):
        """Map many nodes to their conductors in one pass.

        :param nodes: iterable of dicts or SDK nodes.
        :param ignore_unknown: leave out nodes whose ring does not exist
            instead of raising.
        :returns: dict mapping node UUID to conductor host name.
        :raises: UnknownRingKey unless ``ignore_unknown``.
        """
        by_key = {}
        for node in nodes:
            key = ring_key(_field(node, 'driver'),
                           _field(node, 'conductor_group'), self.use_groups)
            by_key.setdefault(key, []).append(_node_uuid(node))
        result = {}
        for key, uuids in by_key.items():
            try:
                ring = self.get_ring(key)
            except exception.UnknownRingKey:
                if ignore_unknown:
                    continue
                raise
            mapped = ring.map_keys([uuid.encode('utf-8') for uuid in uuids])
            for uuid in uuids:
                result[uuid] = mapped[uuid.encode('utf-8')]
        return result


def _node_uuid(node):
    """Return a node's UUID.

    :param node: a dict or SDK node.
    :returns: the UUID string.
    """
    uuid = _field(node, 'uuid') or _field(node, 'id')
    return uuid
