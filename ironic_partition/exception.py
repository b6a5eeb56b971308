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

"""Every error ironic-partition raises.

Each class carries a message template with ``%(name)s`` fields. Raise it with
the fields as keyword arguments; the formatted message names the option or
value at fault and what is allowed.
"""

from oslo_log import log as logging

from ironic_partition._i18n import _

LOG = logging.getLogger(__name__)


class IronicPartitionException(Exception):
    """Base class for every ironic-partition error.

    Subclasses set ``msg_fmt``; the keyword arguments given to the
    constructor fill it in and stay available as ``self.kwargs``.
    """

    msg_fmt = _("An unknown error occurred.")

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # NOTE(ironic-partition): a wrong set of fields is a bug in
                # the caller, but it must never hide the original error.
                LOG.exception('Exception in string format operation, '
                              'kwargs: %s', kwargs)
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)


class ConfigurationError(IronicPartitionException):
    """A configuration value is missing or invalid."""

    msg_fmt = _("Invalid value %(value)r for option [%(group)s] %(option)s: "
                "%(reason)s")


class InvalidPeerList(ConfigurationError):
    """This service's host is not in ``[ironic] peer_list``."""

    msg_fmt = _("[ironic] peer_list %(peer_list)s must contain this "
                "service's own host %(host)r when [ironic] partition_key "
                "(%(partition_key)r) is set. Add %(host)r to peer_list, or "
                "set [ironic_partition] host to the name this service "
                "registers with.")


class ConflictingOptions(ConfigurationError):
    """Two names for the same setting were given different values."""

    msg_fmt = _("Options [%(group)s] %(option)s=%(value)r and "
                "[%(group)s] %(other)s=%(other_value)r name the same "
                "setting with different values; set only one of them.")


class PluginLoadError(IronicPartitionException):
    """A stevedore plugin could not be found or loaded."""

    msg_fmt = _("Could not load %(kind)s %(name)r from namespace "
                "%(namespace)s (set by %(option)s): %(reason)s. "
                "Available: %(available)s.")


class IronicUnavailable(IronicPartitionException):
    """Ironic could not be reached, or failed to answer."""

    msg_fmt = _("Ironic at %(endpoint)s is unavailable: %(reason)s")


class IronicRequestError(IronicPartitionException):
    """Ironic refused a request as invalid."""

    msg_fmt = _("Ironic refused GET %(path)s with %(params)s: %(reason)s")


class PartitionNotReady(IronicPartitionException):
    """The partition cannot be computed now; report "not ready", not "none".

    Inside nova-compute this becomes nova's ``VirtDriverNotReady``, so the
    resource tracker skips the run instead of deleting compute nodes.
    """

    msg_fmt = _("The partition is not ready: %(reason)s")


class MembershipError(IronicPartitionException):
    """Base class of the membership errors."""

    msg_fmt = _("Membership error: %(reason)s")


class MembershipBackendLoadError(PluginLoadError, MembershipError):
    """``[ironic_partition] membership_backend`` could not be loaded."""

    msg_fmt = _("Could not load membership backend %(name)r set by "
                "[ironic_partition] membership_backend: %(reason)s. "
                "Allowed values: %(allowed)s.")


class InvalidRole(MembershipError):
    """A service registered with a role that does not exist."""

    msg_fmt = _("Invalid service role %(role)r; allowed roles: "
                "%(allowed)s.")


class BackendNotSupported(MembershipError):
    """A backend was used where it cannot work."""

    msg_fmt = _("Membership backend %(backend)r cannot be used here: "
                "%(reason)s")


class DatabaseConnectionFailed(MembershipError):
    """The membership database cannot be reached."""

    msg_fmt = _("Cannot connect to the membership database %(connection)s "
                "(set by [ironic_partition_database] connection): "
                "%(reason)s")


class DatabaseNotMigrated(MembershipError):
    """The membership database schema is missing or too old."""

    msg_fmt = _("The membership database %(connection)s is at schema "
                "revision %(current)s but this code needs %(expected)s. "
                "Run \"ironic-partition-dbsync upgrade\" (with the same "
                "configuration files) first.")


class DatabaseTooNew(MembershipError):
    """The membership database schema is newer than this code."""

    msg_fmt = _("The membership database %(connection)s is at schema "
                "revision %(current)s, which this code does not know (its "
                "newest is %(expected)s). Upgrade ironic-partition on this "
                "host.")


class MembershipUnavailable(MembershipError):
    """No membership is known: the backend never reached its source."""

    msg_fmt = _("No membership is known for role %(role)s: %(reason)s")


# Hash ring errors. Mapping to tooz.hashring.HashRing's: an unknown hash
# function raises ValueError there (UnknownHashFunction is one), removing a
# non-member raises UnknownNode (UnknownRingMember is a LookupError with
# the same .node attribute), and tooz accepts an empty member name
# (InvalidRingMember, a ValueError, here).


class HashRingError(IronicPartitionException):
    """Base class for hash ring errors."""

    msg_fmt = _("Hash ring error: %(reason)s")


class UnknownHashFunction(HashRingError, ValueError):
    """The hash function is not provided by hashlib or is unsuitable."""

    msg_fmt = _("Hash function %(name)r is not supported: %(reason)s. "
                "Supported are: %(supported)s.")


class InvalidRingMember(HashRingError, ValueError):
    """A ring member name is empty, of the wrong type or a duplicate."""

    msg_fmt = _("Invalid hash ring member %(member)r: %(reason)s.")


class UnknownRingMember(HashRingError, LookupError):
    """A member to remove is not in the ring (tooz: ``UnknownNode``)."""

    msg_fmt = _("Unknown hash ring member %(member)r.")

    @property
    def node(self):
        """The unknown member, under the attribute name tooz uses."""
        return self.kwargs.get('member')


class RingProviderError(HashRingError):
    """A ring provider could not produce a ring."""

    msg_fmt = _("Ring provider %(provider)s failed: %(reason)s")


class UnknownRingKey(RingProviderError, LookupError):
    """No ring exists for a conductor group and hardware type."""

    msg_fmt = _("No alive conductor serves hardware type %(driver)r in "
                "conductor group %(group)r (ring key %(key)r). Known ring "
                "keys: %(known)s.")
