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

from ironic_partition import __version__
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


class ClaimNotProven(IronicPartitionException):
    """A write to a node is not proven to land under this service's claim.

    Raised by :class:`~ironic_partition.claims.write_guard.WriteGuard`; carries
    ``node_id`` and ``reason`` as attributes.
    """

    msg_fmt = _("the claim on node %(node_id)s is not proven: %(reason)s")

    def __init__(self, node_id, reason):
        super().__init__(node_id=node_id, reason=reason)
        self.node_id = node_id
        self.reason = reason


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


class InvalidShardPeerList(InvalidPeerList):
    """This service's host is not in the peer list of its shard."""

    msg_fmt = _("[ironic] peer_list %(peer_list)s must contain this "
                "service's own host %(host)r when it is set with [ironic] "
                "shard (%(shard)r): the listed services share the shard's "
                "nodes. Add %(host)r to peer_list, remove peer_list to "
                "manage the shard alone (as nova does), or set "
                "[ironic_partition] host to the name this service registers "
                "with.")


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

    @property
    def kind(self):
        """The kind of fault, a metrics label.

        One of ironic, membership, claims, identity, stopped and other.
        """
        return self.kwargs.get('kind', 'other')


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
                "(%(source)s): %(reason)s")

    def __init__(self, message=None, **kwargs):
        if 'source' not in kwargs:
            # NOTE(ironic-partition): a SQLite file may be the option's
            # default, which the operator never set: say so.
            kwargs['source'] = (
                _('[ironic_partition_database] connection, or its default: '
                  'a SQLite file under [ironic_partition] state_path')
                if str(kwargs.get('connection', '')).startswith('sqlite')
                else _('set by [ironic_partition_database] connection'))
        super().__init__(message, **kwargs)

    @classmethod
    def from_error(cls, connection, error):
        """The failure for an error the driver or the server raised.

        :param connection: the masked connection URL.
        :param error: the exception.
        :returns: a :class:`DatabaseConnectionFailed`.
        """
        reason = '%s: %s' % (type(error).__name__,
                             ' '.join(str(error).split()))
        hint = missing_driver_hint(error)
        if hint:
            reason = '%s. %s' % (reason, hint)
        return cls(connection=connection, reason=reason)


def one_line(text):
    """Collapse a message to a single line, for a log line or a report.

    :param text: any object; its ``str()`` is used.
    :returns: the text with every run of blanks and newlines as one space.
    """
    return ' '.join(str(text).split())


def missing_driver_hint(error):
    """What to do when a database URL names a driver not installed.

    :param error: an exception raised connecting or creating an engine.
    :returns: one sentence naming the URL forms the extras install, or
        None when ``error`` is not a missing driver.
    """
    if not (isinstance(error, ImportError) or
            type(error).__name__ == 'NoSuchModuleError'):
        return None
    # NOTE(ironic-partition): SQLAlchemy 2.1 reads a bare postgresql:// as
    # psycopg 3, which the postgresql extra does not install.
    return _('The URL\'s database driver is not installed: use '
             'mysql+pymysql:// (pip install \'ironic-partition[mysql]\') '
             'or postgresql+psycopg2:// (pip install '
             '\'ironic-partition[postgresql]\')')


class _SchemaMismatch(MembershipError):
    """The schema and this code do not go together.

    ``version`` (this code's package version) is filled in when not given;
    ``upgraded_by`` (who upgraded the schema), ``needs`` (the code the
    schema needs) and ``pending`` (the migrations an upgrade applies, the
    head by default) say so when they are unknown.
    """

    def __init__(self, message=None, **kwargs):
        kwargs.setdefault('version', __version__)
        # NOTE(ironic-partition): None (a schema without a contract, or
        # one no dbsync recorded) reads as unknown too.
        for name, unknown in (('upgraded_by', _('an unknown version')),
                              ('needs', _('(unknown)'))):
            if kwargs.get(name) is None:
                kwargs[name] = unknown
        kwargs.setdefault('pending', kwargs.get('expected'))
        super().__init__(message, **kwargs)


class DatabaseNotMigrated(_SchemaMismatch):
    """The membership database schema is missing or too old."""

    msg_fmt = _("The membership database %(connection)s is at schema "
                "revision %(current)s but this code (ironic-partition "
                "%(version)s) needs %(expected)s (the upgrade applies "
                "%(pending)s). Run \"ironic-partition-dbsync upgrade\" "
                "(with the same configuration files) first: it only adds "
                "to the schema, so the services still running the previous "
                "version keep running.")


class DatabaseTooNew(_SchemaMismatch):
    """The membership database schema is newer than this code allows."""

    msg_fmt = _("The membership database %(connection)s is at schema "
                "revision %(current)s (upgraded by ironic-partition "
                "%(upgraded_by)s), which needs code of revision "
                "%(needs)s or later; this code (ironic-partition "
                "%(version)s) knows revisions up to %(expected)s. Install "
                "an ironic-partition that knows %(needs)s on this host.")


class DatabaseAheadOfDbsync(_SchemaMismatch):
    """An ``ironic-partition-dbsync upgrade`` older than the schema."""

    msg_fmt = _("the schema is at revision %(current)s (upgraded by "
                "ironic-partition %(upgraded_by)s), newer than this "
                "ironic-partition-dbsync knows (ironic-partition "
                "%(version)s, revisions up to %(expected)s): there is "
                "nothing it can upgrade. Run the ironic-partition-dbsync of "
                "the newest ironic-partition installed.")


class MembershipUnavailable(MembershipError):
    """No membership is known: the backend never reached its source."""

    msg_fmt = _("No membership is known for role %(role)s: %(reason)s")


class DuplicateService(MembershipError):
    """Another live process already holds this host name and role."""

    msg_fmt = _("Another process already runs as host %(host)r (role "
                "%(role)s): it started at %(started_at)s and runs on "
                "%(origin)s; its last heartbeat was %(age).1f s ago. Two "
                "processes with one host name would report the same nodes. "
                "Give this service its own host name ([ironic_partition] "
                "host or [DEFAULT] host), stop the other process, or, if it "
                "is hung and must be replaced, start this one with "
                "--takeover (\"ironic-partition serve --takeover\") or run "
                "\"ironic-partition takeover %(host)s\" first.")


class NothingToTakeOver(MembershipError):
    """A takeover was asked for a host no live process holds."""

    msg_fmt = _("Cannot take over host %(host)r (role %(role)s): no live "
                "process holds it (%(reason)s). Start the service without "
                "a takeover.")


class ClockStepTooLarge(MembershipError):
    """The database server's clock stepped more than the lease covers."""

    msg_fmt = _("Ownership cannot be proven: %(reason)s.")


class SeveralDatabaseWriters(MembershipError):
    """The live services write through several database nodes at once."""

    msg_fmt = _("Ownership cannot be proven: %(reason)s.")


class IdentityLost(MembershipError):
    """This process no longer holds its host name: it was taken over."""

    msg_fmt = _("This process (incarnation %(incarnation)s) no longer holds "
                "host %(host)r (role %(role)s): %(reason)s. It reports no "
                "node any more; stop it.")


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


# Operator CLI and partition agent (ironic_partition/cmd).


class RecoveryRefused(IronicPartitionException):
    """``recover`` cannot prove a host dead, or cannot move its servers.

    ``changed`` says what the run changed before it stopped (by default,
    nothing).
    """

    msg_fmt = _("Refusing to recover host %(host)r: %(reason)s. "
                "%(changed)s")

    def __init__(self, host, reason, changed=None):
        super().__init__(host=host, reason=reason,
                         changed=changed or _('Nothing was changed.'))


class InvalidCommandInput(IronicPartitionException):
    """A command-line value of ``ironic-partition`` is unusable."""

    msg_fmt = _("Invalid value %(value)r for %(option)s: %(reason)s")


class UnknownConductorGroup(ConfigurationError):
    """``[ironic] partition_key`` names no conductor group of Ironic."""

    msg_fmt = _("[ironic] partition_key %(group)r is not a conductor group "
                "of Ironic at %(endpoint)s: no conductor is registered in "
                "it. Known groups: %(known)s. Fix partition_key, or start "
                "an ironic-conductor with [conductor] conductor_group = "
                "%(group)s.")


# Allocations (ironic_partition/ironic/allocations.py): reserving a node of
# this service's own partition through Ironic's allocation API.


class AllocationError(IronicPartitionException):
    """Base class of the errors of reserving and releasing nodes."""

    msg_fmt = _("Allocation error: %(reason)s")


class AllocationsNotSupported(AllocationError):
    """Ironic is too old for the allocation API."""

    msg_fmt = _("Ironic at %(endpoint)s does not support allocations: they "
                "need API version %(needed)s or newer (Ironic 12.1, Stein), "
                "and it supports up to %(supported)s.")


class AllocationRequestRefused(IronicRequestError, AllocationError):
    """Ironic refused an allocation request (HTTP 4xx)."""

    msg_fmt = _("Ironic refused %(method)s %(path)s (HTTP %(status)s): "
                "%(reason)s")

    @property
    def status(self):
        """The HTTP status code of Ironic's answer."""
        return self.kwargs.get('status')


class InvalidAllocationRequest(AllocationError, ValueError):
    """A reservation request that Ironic would refuse; nothing was sent."""

    msg_fmt = _("Invalid %(field)s %(value)r: %(allowed)s")


class InvalidResourceClass(InvalidAllocationRequest):
    """The resource class is empty, too long or not printable."""

    msg_fmt = _("Invalid resource class %(value)r: %(reason)s. A resource "
                "class is the node's resource_class as Ironic stores it: "
                "1 to %(max)d printable characters.")


class InvalidTrait(InvalidAllocationRequest):
    """A trait is neither a custom trait nor a standard (os-traits) one."""

    msg_fmt = _("Invalid trait %(value)r: %(reason)s. A trait is either "
                "CUSTOM_ followed by one or more of A-Z, 0-9 and \"_\", or "
                "a standard trait of the os-traits library (such as "
                "HW_CPU_X86_AVX2), at most %(max)d characters.")


class InvalidAllocationName(InvalidAllocationRequest):
    """The allocation name is not a valid Ironic logical name."""

    msg_fmt = _("Invalid allocation name %(value)r: a name has 1 to "
                "%(max)d characters among A-Z, a-z, 0-9, \"-\", \".\", "
                "\"_\" and \"~\".")


class InvalidInstanceUUID(InvalidAllocationRequest):
    """The instance UUID is not a UUID."""

    msg_fmt = _("Invalid instance UUID %(value)r: it must be a UUID such "
                "as 1c6a1e2b-8b4f-4a0e-9f65-3d1f5c9a7b21.")


class NoMatchingNode(AllocationError):
    """No node of this service's partition can satisfy the request."""

    msg_fmt = _("No node of %(partition)s matches resource class "
                "%(resource_class)r with traits %(traits)s: the candidates "
                "were restricted to the nodes this service (host %(host)s) "
                "manages there, and none of the %(considered)d instance-less "
                "nodes considered (%(with_class)d of them with that "
                "resource class at the last refresh) is available with that "
                "resource class and those traits. Nodes outside this "
                "partition are never used. %(detail)s")


class AllocationFailed(AllocationError):
    """Ironic put the allocation in the ``error`` state."""

    msg_fmt = _("Ironic could not allocate a node for allocation "
                "%(allocation)s (resource class %(resource_class)r, traits "
                "%(traits)s) in %(partition)s: %(last_error)s; the "
                "allocation %(cleanup)s.")


class AllocationTimeout(AllocationError):
    """The allocation did not become active in time."""

    msg_fmt = _("Allocation %(allocation)s (resource class "
                "%(resource_class)r, traits %(traits)s) did not become "
                "active within %(timeout)s s (last state: %(state)s); it "
                "%(cleanup)s. Raise [ironic_partition] allocation_timeout "
                "(or the timeout of the request) if Ironic is slow.")


class AllocationConflict(AllocationError):
    """An allocation with the same UUID (instance) or name exists."""

    msg_fmt = _("Ironic already has an allocation with UUID %(uuid)s or "
                "name %(name)r: %(reason)s. Release it first, or use "
                "another instance UUID or name.")


class ReleaseRefused(AllocationError):
    """Ironic refused to delete an allocation."""

    msg_fmt = _("Ironic refused to delete allocation %(allocation)s of node "
                "%(node)s: %(reason)s. The allocation of a deployed node "
                "goes away when the node is undeployed (or may be deleted "
                "in maintenance mode).")


# Inspection hook (ironic_partition/inspection): the partition map.


class InvalidPartitionMap(ConfigurationError):
    """An entry of ``[ironic_partition_inspection] map`` is invalid."""

    msg_fmt = _("Invalid value %(value)r for option [%(group)s] "
                "%(option)s: %(reason)s. An entry is \"cidr=<network>,"
                "group=<group>[,shard=<shard>]\" or \"switch=<LLDP system "
                "name or chassis ID>,group=<group>[,shard=<shard>]\".")
