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

"""The ring provider interface and its loader.

The ownership ring provider is the one ``[ironic_partition] ring_provider``
names in :data:`RING_PROVIDER_NAMESPACE`; :func:`from_settings` loads it as
:class:`~ironic_partition.partition.partitioner.Partitioner` and the ``ring``
command use it. A provider in that namespace is built with the keyword
arguments ``members_fn`` (``members_fn(partition_key)`` returns the live
members, as host names or an object with a ``live`` attribute), ``partitions``
and ``mode``, and implements :meth:`RingProvider.get_ring` with the ``keys``
argument and :meth:`RingProvider.reset`.
"""

import abc

from oslo_log import log as logging
import stevedore
from stevedore import driver as stevedore_driver

from ironic_partition._i18n import _
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)

RING_PROVIDER_NAMESPACE = 'ironic_partition.ring_providers'
"""Entry-point namespace of the ring providers."""

PROVIDER_OPTION = '[ironic_partition] ring_provider'
"""The option naming the provider, quoted in load errors."""

RING_MODES = ('tooz', 'balanced')
"""Ring modes a provider can build."""

MODE_OPTION = '[ironic_partition] ring_mode'
"""The option naming the ring mode, quoted in errors."""

CONDUCTOR = 'conductor'
"""The name the conductor ring had as an ownership provider."""


class RingProvider(object, metaclass=abc.ABCMeta):
    """Builds and caches the hash rings one kind of service is placed on.

    :param partitions: points per ring member (``2**partition_exponent``).
    :param hash_function: hashlib algorithm name.
    :param mode: ``'tooz'`` (bit-identical with tooz) or ``'balanced'``.
    :param load_factor: largest member load relative to its fair share, for
        the balanced mode.
    :raises: ValueError for an unknown mode; UnknownHashFunction.
    """

    def __init__(self, partitions=hash_ring.DEFAULT_PARTITION_NUMBER,
                 hash_function=hash_ring.DEFAULT_HASH_FUNCTION, mode='tooz',
                 load_factor=balanced_ring.DEFAULT_LOAD_FACTOR):
        if mode not in RING_MODES:
            raise ValueError(_("Unknown ring mode %(mode)r, expected one of "
                               "%(modes)s") % {'mode': mode,
                                               'modes': ', '.join(RING_MODES)})
        # NOTE: fail early on a bad hash function rather than on first use.
        hash_ring.HashRing((), hash_function=hash_function)
        self.partitions = partitions
        self.hash_function = hash_function
        self.mode = mode
        self.load_factor = load_factor

    def build_ring(self, members, keys=None):
        """Build a ring of the provider's mode and settings.

        :param members: iterable of member names.
        :param keys: the key set, used (and required) by the balanced mode.
        :returns: a :class:`~ironic_partition.ring.hash_ring.HashRing`.
        :raises: ValueError when the balanced mode gets no keys.
        """
        if self.mode == 'balanced':
            if keys is None:
                raise ValueError(_('The balanced ring mode needs the key '
                                   'set'))
            return balanced_ring.BalancedHashRing(
                members, keys, partitions=self.partitions,
                hash_function=self.hash_function,
                load_factor=self.load_factor)
        return hash_ring.HashRing(members, partitions=self.partitions,
                                  hash_function=self.hash_function)

    def ring_keys(self, nodes, partition_key):
        """Return the key set a balanced ring of a partition is built on.

        Every node UUID of the partition, with an instance or not, so that
        every service of the partition sees the same set (a node gaining or
        losing an instance changes nothing). Nodes listed only because one
        of this service's instances is on them while they are outside the
        conductor group (see :meth:`~ironic_partition.partition.partitioner.
        Partitioner.refresh`) are left out: other services do not list them.

        :param nodes: node records with ``id`` and ``conductor_group``.
        :param partition_key: the lower-cased conductor group, or None.
        :returns: a list of node UUIDs, or None in the ``tooz`` mode (which
            does not depend on the key set).
        """
        if self.mode != 'balanced':
            return None
        return [node.id for node in nodes
                if partition_key is None
                or (node.conductor_group or '').lower() == partition_key]

    @abc.abstractmethod
    def get_ring(self, key=None, keys=None):
        """Return the current ring for a key.

        :param key: provider-specific ring key (the partition key for the
            compute provider).
        :param keys: the key set of a balanced ring (:meth:`ring_keys`).
        :returns: a :class:`~ironic_partition.ring.hash_ring.HashRing`.
        """

    @abc.abstractmethod
    def reset(self):
        """Drop every cached ring; the next call rebuilds."""


def get_provider(name, **kwargs):
    """Load a ring provider by entry-point name and construct it.

    :param name: entry-point name in :data:`RING_PROVIDER_NAMESPACE`, e.g.
        ``'compute'``.
    :param kwargs: passed to the provider's constructor.
    :returns: a :class:`RingProvider`.
    :raises: PluginLoadError if the plugin is unknown, cannot be imported or
        fails to construct.
    """
    try:
        manager = stevedore_driver.DriverManager(
            namespace=RING_PROVIDER_NAMESPACE, name=name,
            invoke_on_load=True, invoke_kwds=kwargs,
            on_load_failure_callback=_reraise)
    except Exception as exc:
        raise exception.PluginLoadError(
            kind=_('ring provider'), name=name,
            namespace=RING_PROVIDER_NAMESPACE, option=PROVIDER_OPTION,
            reason=str(exc) or type(exc).__name__,
            available=', '.join(_available()) or _('none'))
    provider = manager.driver
    LOG.debug('Loaded ring provider %(name)s: %(provider)r',
              {'name': name, 'provider': provider})
    return provider


def from_settings(settings, members_fn, claims=True):
    """Load the ownership ring provider the settings name.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`.
    :param members_fn: ``members_fn(partition_key)`` returning the live
        members of a partition.
    :param claims: whether ownership claims are on for this service
        (:func:`ironic_partition.settings.claims.wanted`); the balanced
        mode needs them.
    :returns: a :class:`RingProvider` built with ``members_fn``,
        ``partitions=2**partition_exponent`` and ``mode=ring_mode``.
    :raises: PluginLoadError naming ``[ironic_partition] ring_provider``
        and the installed providers; ConfigurationError when the ring mode
        cannot be used safely with the other settings.
    """
    name = settings.ring_provider
    mode = settings.ring_mode
    if name == CONDUCTOR:
        raise exception.PluginLoadError(
            kind=_('ring provider'), name=name,
            namespace=RING_PROVIDER_NAMESPACE, option=PROVIDER_OPTION,
            reason=_('Ironic\'s conductor ring maps nodes to Ironic '
                     'conductors, not to the compute services that report '
                     'them, so it cannot decide ownership; it is shown by '
                     '"ironic-partition ring --conductors"'),
            available=', '.join(_available()) or _('none'))
    if mode == 'balanced':
        _check_balanced(settings, claims)
    return get_provider(name, members_fn=members_fn,
                        partitions=2 ** settings.partition_exponent,
                        mode=mode)


def _check_balanced(settings, claims):
    """Refuse the balanced mode where services could disagree for long.

    :param settings: the :class:`~ironic_partition.settings.Settings`.
    :param claims: whether ownership claims are on.
    :raises: ConfigurationError.
    """
    if not claims:
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='ring_mode', value='balanced',
            reason=_('the balanced ring needs ownership claims '
                     '([ironic_partition] claims = database, or auto with '
                     'the database membership backend): two services '
                     'that listed the partition before and after a node '
                     'was enrolled or deleted map some nodes differently '
                     'until both list again, and only the claims keep '
                     'them from reporting the same node'))
    if settings.shard is not None:
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='ring_mode', value='balanced',
            reason=_('the balanced ring cannot be used with [ironic] shard: '
                     'a node that carries an instance and moved to another '
                     'shard of the group is listed by its instance\'s '
                     'service only, so the services\' key sets would '
                     'differ for as long as the instance stays'))


def _reraise(manager, entrypoint, exc):
    """Let a plugin's load error reach :func:`get_provider`.

    :param manager: the stevedore manager.
    :param entrypoint: the failing entry point.
    :param exc: the error.
    :raises: the error.
    """
    raise exc


def _available():
    """List the installed ring providers.

    :returns: a sorted list of entry-point names.
    """
    try:
        extensions = stevedore.ExtensionManager(RING_PROVIDER_NAMESPACE)
        return sorted(extensions.names())
    except Exception:
        LOG.debug('Could not list the ring providers', exc_info=True)
        return []
