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

"""The membership backend interface, its result and its loader.

A backend answers "which services of my role are alive, in my partition?".
It is built as ``Backend(settings, role)`` (a :class:`~ironic_partition.
settings.Settings`); ``start()`` makes the service
known (and, for the database backend, starts heartbeating), ``stop()``
makes it leave at once, and ``members(partition_key, peer_list)`` returns
an immutable :class:`Membership`.

Host names are compared ignoring case everywhere; results hold them
lower-cased.
"""

import abc
import dataclasses
import datetime

from oslo_log import log as logging
import stevedore
from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exc

from ironic_partition._i18n import _
from ironic_partition import conf as ip_conf
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: The stevedore namespace of the membership backends.
NAMESPACE = 'ironic_partition.membership'

#: The option that selects the backend, for messages.
BACKEND_OPTION = '[ironic_partition] membership_backend'

#: The service roles.
ROLE_NOVA_COMPUTE = 'nova-compute'
ROLE_CONDUCTOR = 'conductor'
ROLE_AGENT = 'agent'
ROLES = (ROLE_NOVA_COMPUTE, ROLE_CONDUCTOR, ROLE_AGENT)


def normalize_peers(peer_list):
    """Return a peer list as a frozenset of canonical host names.

    :param peer_list: an iterable of host names, or None.
    :returns: a frozenset, or None when ``peer_list`` is None.
    """
    if peer_list is None:
        return None
    return frozenset(ip_conf.normalize_host(p) for p in peer_list
                     if p and p.strip())


@dataclasses.dataclass(frozen=True)
class Membership:
    """Who is alive, as seen by one service.

    :param live: hosts that are alive, always including this service.
    :param dead: hosts that heartbeated once but are not alive now (stale
        or stopped); with a peer list only those in it.
    :param never_seen: hosts in the peer list that never heartbeated.
    :param stale: True when the source could not be reached and this is
        the last membership known.
    :param as_of: when the membership was read, by the source's clock
        (an aware UTC ``datetime``), or None when the source has no clock.
    :param elsewhere: hosts that are alive but heartbeat another
        partition key than this service's (with a peer list, only those
        in it): they serve another group and are not ring members here.
    :param alive_anywhere: every host with a live record of this role,
        whatever its partition key or peer list, and this service: an
        instance owned by one of them is not stranded.
    :param outside: hosts in ``live`` only because another view of the
        services (nova's service group, inside nova-compute) says they
        are up, while they do not heartbeat this membership: they run
        nova's own driver, or ours on another claims database. They are
        ring members; their share is theirs (:func:`with_outside`).
    :param counted_by: for the CLI's reads, which peer in ``outside``
        which live services count: ``((peer, (host, ...)), ...)``
        (:func:`with_recorded_outside`); empty inside nova-compute.
    """

    live: frozenset
    dead: frozenset = frozenset()
    never_seen: frozenset = frozenset()
    stale: bool = False
    as_of: datetime.datetime = None
    elsewhere: frozenset = frozenset()
    alive_anywhere: frozenset = frozenset()
    outside: frozenset = frozenset()
    counted_by: tuple = ()

    def replace(self, **changes):
        """Return a copy with some fields changed.

        :param changes: the fields to change.
        :returns: a new :class:`Membership`.
        """
        return dataclasses.replace(self, **changes)


def compute_membership(host, records, partition_key, peer_list, as_of,
                       stale=False, shard=None):
    """Apply the partitioning rules to a list of heartbeat records.

    * ``partition_key`` is None: every live service of the role;
    * ``partition_key`` is set (``''`` included): live services in
      ``peer_list`` only (none other when ``peer_list`` is empty or None,
      as nova does for shards).

    This service is always live. A record that carries the partition key
    its service heartbeats with (the database backend's do) counts as live
    only when that key is this service's: a peer still listed in
    ``peer_list`` but serving another group is reported in
    ``elsewhere``, not given a share of this group that it would never
    report. Records without the attribute (nova's) are taken as they are.

    With a ``shard``, the partition is the pair (``partition_key``,
    ``shard``): the rules above apply to the pair, as to the key alone
    (peers of ``peer_list`` only; none but this service without one, as
    nova does for shards), and a live peer heartbeating another pair is
    in ``elsewhere``. Records without a ``shard`` attribute are taken as
    being of this service's shard.

    :param host: this service's host name.
    :param records: an iterable of objects with ``host`` and ``alive``.
    :param partition_key: this service's partition key, or None.
    :param peer_list: host names allowed in the partition, or None.
    :param as_of: when ``records`` were read.
    :param stale: whether ``records`` are the last known ones only.
    :param shard: this service's shard, or None.
    :returns: a :class:`Membership`.
    """
    me = ip_conf.normalize_host(host)
    peers = normalize_peers(peer_list)
    mine = partition_key.lower() if partition_key is not None else None
    my_shard = shard.lower() if shard is not None else None
    partitioned = partition_key is not None or shard is not None
    seen = {}
    elsewhere = set()
    anywhere = set()
    for rec in records:
        name = ip_conf.normalize_host(rec.host)
        alive = bool(rec.alive)
        if alive:
            anywhere.add(name)
        key = getattr(rec, 'partition_key', mine)
        rec_shard = getattr(rec, 'shard', my_shard)
        if alive and ((key.lower() if key is not None else None) != mine
                      or (rec_shard.lower() if rec_shard is not None
                          else None) != my_shard):
            elsewhere.add(name)
            alive = False
        seen[name] = seen.get(name, False) or alive
    # NOTE(ironic-partition): a host with a live record of this partition
    # is here, whatever other records it has.
    elsewhere -= {name for name, alive in seen.items() if alive}
    if not partitioned:
        live = {name for name, alive in seen.items() if alive}
        dead = {name for name, alive in seen.items() if not alive}
        never_seen = set()
    else:
        peers = peers or frozenset()
        live = {name for name in peers if seen.get(name)}
        dead = {name for name in peers
                if name in seen and not seen[name]}
        never_seen = {name for name in peers if name not in seen}
    if partitioned:
        elsewhere &= peers
    dead -= elsewhere
    live.add(me)
    dead.discard(me)
    never_seen.discard(me)
    elsewhere.discard(me)
    anywhere.add(me)
    return Membership(live=frozenset(live), dead=frozenset(dead),
                      never_seen=frozenset(never_seen), stale=stale,
                      as_of=as_of, elsewhere=frozenset(elsewhere),
                      alive_anywhere=frozenset(anywhere))


def with_outside(membership, seen):
    """Count the peers another view sees up and this membership misses.

    Inside nova-compute, ``seen`` is nova's service group, read the way
    nova's own driver builds its ring (the Ironic computes that are up;
    with a peer list, those in it). A peer it has up that is neither
    live here nor live for another partition here does not heartbeat
    this membership at all: it runs nova's own driver (a rolling switch
    of ``compute_driver``, or a rollback), or ours against another
    ``[ironic_partition_database] connection``. Such a peer reports its
    share of nova's ring whatever this service does, so it is a ring
    member here too: its share is left to it, and the mapping stays
    nova's. A peer live here for another partition key serves another
    group, which this membership knows better than nova does.

    A peer this membership saw stop (a graceful stop, or a heartbeat
    older than ``service_down_time``) still counts while nova has it up:
    after a switch back to nova's driver it still reports its share.

    :param membership: this service's :class:`Membership`.
    :param seen: the other view's :class:`Membership` (its ``live``
        holds every host it has up, this service included).
    :returns: a :class:`Membership` whose ``live`` also holds those
        peers, listed in ``outside``; ``stale`` when either view is, and
        ``never_seen`` only the peers that neither view knows.
    """
    outside = frozenset(seen.live - membership.live - membership.elsewhere)
    return membership.replace(
        live=membership.live | outside,
        dead=membership.dead - outside,
        never_seen=membership.never_seen & frozenset(seen.never_seen),
        stale=membership.stale or seen.stale,
        alive_anywhere=membership.alive_anywhere | seen.live,
        outside=outside)


def with_recorded_outside(membership, records, peer_list):
    """Count the peers that this partition's live services count outside.

    The CLI cannot read nova's service group; each nova-compute records,
    with its heartbeat, the peers it counts from there
    (:func:`with_outside`). Merged here, ``status`` and ``check`` see the
    ring the computes use, and who counts whom.

    :param membership: the :class:`Membership` read from ``records``.
    :param records: the heartbeat records, with ``outside_peers``.
    :param peer_list: the peer list read with, or None (unpartitioned):
        a recorded peer outside it is not counted.
    :returns: a :class:`Membership` with those peers in ``live`` and
        ``outside``, and ``counted_by`` saying by whom.
    """
    peers = normalize_peers(peer_list)
    by = {}
    for rec in records:
        name = ip_conf.normalize_host(rec.host)
        if not rec.alive or name not in membership.live:
            continue
        for peer in getattr(rec, 'outside_peers', ()) or ():
            peer = ip_conf.normalize_host(peer)
            if peers is None or peer in peers:
                by.setdefault(peer, set()).add(name)
    if not by:
        return membership
    recorded = frozenset(by)
    merged = with_outside(membership, Membership(
        live=membership.live | recorded,
        never_seen=membership.never_seen - recorded))
    return merged.replace(counted_by=tuple(
        (peer, tuple(sorted(by[peer]))) for peer in sorted(merged.outside)))


class MembershipBackend(metaclass=abc.ABCMeta):
    """The interface of a membership backend.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`: its host name (compared ignoring case), partition key
        (None when unset; ``''`` is the default group, distinct from
        None), shard and the membership timings.
    :param role: this service's role, one of :data:`ROLES`.
    :param version: this service's version string, recorded where the
        backend can.
    :param takeover: at start, replace a live process that holds this host
        name instead of refusing to start (backends that know identities).
    """

    #: The entry-point name of the backend.
    name = None

    #: The :class:`~ironic_partition.db.store.Store` the backend keeps its
    #: state in (the ``database`` backend), with this process's identity,
    #: else None. The claims share it.
    store = None

    def __init__(self, settings, role, version=None, takeover=False):
        if role not in ROLES:
            raise exception.InvalidRole(role=role, allowed=', '.join(ROLES))
        #: The :class:`~ironic_partition.settings.Settings` at start.
        self.settings = settings
        self.host = ip_conf.normalize_host(settings.host)
        self.role = role
        key = settings.partition_key
        self.partition_key = key.lower() if key is not None else None
        self.version = version
        #: Replace a live process holding this host name at start
        #: (``serve --takeover``), where the backend knows identities.
        self.takeover = takeover
        shard = settings.shard
        self.shard = shard.lower() if shard is not None else None

    def set_partition_key(self, partition_key):
        """Change this service's partition key (SIGHUP).

        Backends that record the key (the ``database`` backend's
        heartbeats) record the new one from their next heartbeat on.

        :param partition_key: the new partition key, or None when unset.
        :returns: None
        """
        self.partition_key = (partition_key.lower()
                              if partition_key is not None else None)

    @abc.abstractmethod
    def start(self):
        """Join: make this service known, start heartbeating if needed.

        :raises: MembershipError when the source cannot be used.
        :returns: None
        """

    def stop(self, leave=True):
        """Stop; leave at once (graceful stop) unless told not to.

        Never raises. The default does nothing: a backend without
        heartbeats of its own (``static``, ``nova``) has nothing to leave.

        :param leave: False stops heartbeating without leaving: peers see
            this service dead only after ``service_down_time``, unless it
            is back by then (a quick restart).
        :returns: None
        """

    def heartbeat(self):
        """Send one heartbeat now.

        The default sends nothing: liveness comes from elsewhere (the
        peer list, nova's service group).

        :returns: True when it was recorded, False when it failed.
        """
        return True

    @abc.abstractmethod
    def members(self, partition_key=None, peer_list=None, shard=None):
        """Return the current membership.

        :param partition_key: the partition key, or None when unset.
        :param peer_list: host names allowed in the partition when
            ``partition_key`` or ``shard`` is set.
        :param shard: the shard, or None when unset.
        :returns: a :class:`Membership`.
        """

    def status(self):
        """Describe the backend's state, for the CLI and logs.

        :returns: a dict of plain values.
        """
        return {'backend': self.name, 'host': self.host, 'role': self.role,
                'partition_key': self.partition_key, 'shard': self.shard}


def _reraise(manager, entrypoint, exc):
    raise exc


def get_backend(settings, role, name=None, **kwargs):
    """Load and build a membership backend by its entry-point name.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`.
    :param role: this service's role.
    :param name: the entry-point name in :data:`NAMESPACE`; the settings'
        ``membership_backend`` by default.
    :param kwargs: more keyword arguments for the backend's constructor.
    :raises: MembershipBackendLoadError naming the option and the allowed
        names when it cannot be loaded.
    :returns: a :class:`MembershipBackend`.
    """
    if name is None:
        name = settings.membership_backend
    try:
        manager = stevedore_driver.DriverManager(
            NAMESPACE, name, invoke_on_load=True,
            invoke_args=(settings, role), invoke_kwds=kwargs,
            on_load_failure_callback=_reraise)
    except exception.MembershipError:
        raise
    except Exception as exc:
        try:
            allowed = sorted(stevedore.ExtensionManager(NAMESPACE).names())
        except Exception:
            allowed = []
        allowed = ', '.join(allowed) or _('(none installed)')
        if isinstance(exc, stevedore_exc.NoMatches):
            reason = _('no such backend')
        else:
            reason = '%s: %s' % (type(exc).__name__, exc)
        raise exception.MembershipBackendLoadError(
            name=name, reason=reason, allowed=allowed, kind='membership '
            'backend', namespace=NAMESPACE, option=BACKEND_OPTION,
            available=allowed)
    return manager.driver
