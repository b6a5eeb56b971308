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

"""The ring provider interface and its loader."""

import abc

from oslo_log import log as logging
import stevedore
from stevedore import driver as stevedore_driver

from ironic_partition._i18n import _
from ironic_partition import exception
from ironic_partition import hash_ring

LOG = logging.getLogger(__name__)

RING_PROVIDER_NAMESPACE = 'ironic_partition.ring_providers'
"""Entry-point namespace of the ring providers."""

PROVIDER_OPTION = '[ironic_partition] ring_provider'
"""The option naming the provider, quoted in load errors."""

RING_MODES = ('tooz', 'balanced')
"""Ring modes a provider can build."""


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
                 load_factor=hash_ring.DEFAULT_LOAD_FACTOR):
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
        :returns: a :class:`~ironic_partition.hash_ring.HashRing`.
        :raises: ValueError when the balanced mode gets no keys.
        """
        if self.mode == 'balanced':
            if keys is None:
                raise ValueError(_('The balanced ring mode needs the key '
                                   'set'))
            return hash_ring.BalancedHashRing(
                members, keys, partitions=self.partitions,
                hash_function=self.hash_function,
                load_factor=self.load_factor)
        return hash_ring.HashRing(members, partitions=self.partitions,
                                  hash_function=self.hash_function)

    @abc.abstractmethod
    def get_ring(self, key=None):
        """Return the current ring for a key.

        :param key: provider-specific ring key (a partition key for the
            compute provider, ``"<group>:<hardware type>"`` for the conductor
            provider).
        :returns: a :class:`~ironic_partition.hash_ring.HashRing`.
        """

    @abc.abstractmethod
    def reset(self):
        """Drop every cached ring; the next call rebuilds."""


def get_provider(name, **kwargs):
    """Load a ring provider by entry-point name and construct it.

    :param name: entry-point name in :data:`RING_PROVIDER_NAMESPACE`, e.g.
        ``'compute'`` or ``'conductor'``.
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
