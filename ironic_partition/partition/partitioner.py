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

"""One refresh of a service's partition: the code path everything shares.

The nova driver mixin, the partition agent and the CLI all build a
:class:`Partitioner` and call :meth:`Partitioner.refresh`. A refresh:

1. brings the node index of this service's conductor group up to date
   (:mod:`ironic_partition.ironic.node_index`): a full listing, or only the
   nodes Ironic changed since the last refresh;
2. reads the live peers from the membership backend;
3. builds (or reuses) the ring of those peers;
4. applies :func:`ironic_partition.partition.rules.partition`;
5. when ownership claims are on (:mod:`ironic_partition.claims.manager`),
   runs a claim round: the instance-less nodes the ring gives this service are
   reported only while it holds a valid claim on them.

Faults fail closed: when this service cannot prove what it owns, the
refresh raises :class:`~ironic_partition.exception.PartitionNotReady`
and the last good result stays in :attr:`Partitioner.last_result`. That is
the case when Ironic cannot be listed, the membership cannot be read (or
has been unknown for longer than ``membership_stale_timeout``), the claim
round cannot reach the database, this process lost its host name to
another incarnation, the partition key names a conductor group that no
conductor and no node has, or a service that has reported nothing yet
may report none of its nodes because other processes' claims on them
have not run out (an empty list would make nova take every node of the
host for an orphan); the error's ``kind`` says which. It never
returns an empty, shorter or partial partition in place of an error: only
database and Ironic errors become "not ready", a bug is raised as it is.

The claims themselves are renewed by a timer of their own
(:meth:`~ironic_partition.claims.manager.ClaimManager.start`), so a listing
slower than the lease never lets them lapse. A service whose claims could not
be renewed before the lease (minus the fencing margin) ran out by its local
clock reports none of them (fenced), the nodes of its own instances
included: those are claimed and reported under the same rule, so that a
process cut off from the database, or replaced by ``takeover``, never
reports them next to its successor. Use :meth:`Partitioner.reported_nodes`
when acting on a result later than the refresh that produced it: it
applies the fence at that instant.

Seed 000's rule holds across conductor group changes: a node that carries
one of this service's instances stays in its list whatever its group,
until the instance leaves. The few instances the group listing did not
show are looked up one by one (never an unfiltered listing of the fleet).
"""

import threading

from oslo_log import log as logging

from ironic_partition.claims import manager as claims_mod
from ironic_partition.common import heap
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.ironic import node_index
from ironic_partition.membership import outside as outside_mod
from ironic_partition.partition import gate
from ironic_partition.partition import refresh_result
from ironic_partition.partition import rules
from ironic_partition.ring import base as ring_base
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)


def _shard_kwargs(settings):
    """The ``shard`` keyword argument, only when a shard is set.

    :param settings: a :data:`~ironic_partition.conf.PartitionSettings`.
    :returns: ``{'shard': ...}`` or ``{}``; the Ironic client, membership
        backends and claims written before shards keep working unchanged.
    """
    # NOTE(ironic-partition): shard (issue 15).
    return {'shard': settings.shard} if settings.shard is not None else {}


class Partitioner(gate.ReportingGate):
    """Computes and caches which nodes this service manages.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`, validated (:func:`ironic_partition.settings.
        from_conf`); the claims' timings follow its cadence.
    :param client: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
    :param membership: a started
        :class:`~ironic_partition.membership.base.MembershipBackend`.
    :param clock: a monotonic clock, for the staleness bound and the
        claim leases: :func:`~ironic_partition.claims.manager.lease_clock` (one
        that counts a suspended machine) by default.
    :param claims: a :class:`~ironic_partition.claims.manager.ClaimManager`;
        None (the default) builds one as ``[ironic_partition] claims``
        says, False turns claims off.
    :param allow_local_database: False refuses a SQLite membership or
        claims database while ``[ironic] peer_list`` names other hosts.
    :param outside: another view of the live services, with the
        ``members()`` of a membership backend (inside nova-compute, nova's
        service group): the peers it has up that ``membership`` misses
        are ring members too (:class:`~ironic_partition.membership.
        outside.OutsideView`). None (the default): ``membership`` alone.
    :raises ConfigurationError: when the settings are invalid at start.
    """

    def __init__(self, settings, client, membership,
                 clock=claims_mod.lease_clock,
                 claims=None, allow_local_database=True, outside=None):
        self.client = client
        self.membership = membership
        #: The :class:`~ironic_partition.membership.outside.OutsideView`
        #: of the other view of the live services, or None.
        self.outside = None
        self._clock = clock
        self._lock = threading.Lock()
        self._settings = settings
        # NOTE(ironic-partition): backends that do not derive from
        # MembershipBackend (test fakes, third parties) keep no store.
        store = getattr(membership, 'store', None)
        if claims is None:
            claims = claims_mod.from_settings(
                settings, store=store,
                role=getattr(membership, 'role', None),
                takeover=getattr(membership, 'takeover', False),
                clock=clock)
        #: The :class:`~ironic_partition.claims.manager.ClaimManager`, or None
        #: when claims are off.
        self.claims = claims or None
        #: The :class:`~ironic_partition.db.store.Store` shared by the
        #: membership backend and the claims, or None when nothing shared
        #: is kept (claims off and a membership backend without a
        #: database).
        self.store = store or getattr(self.claims, 'store', None)
        #: This process's :class:`~ironic_partition.db.identity.Identity`,
        #: or None.
        self.identity = getattr(self.store, 'identity', None)
        if outside is not None:
            self.outside = outside_mod.OutsideView(
                outside, getattr(self.store, 'masked_connection', None))
        self._allow_local_database = allow_local_database
        if not allow_local_database:
            self._check_shared_store()
        self._live = frozenset()
        self.rings = ring_base.from_settings(
            settings, lambda key: self._live,
            claims=settings.claims_wanted(membership.store))
        #: The nodes of the partition, kept current by the change feed.
        self.index = node_index.NodeIndex(
            client, settings.full_resync_interval,
            settings.change_feed_overlap, clock=clock)
        self._owners_ring = None
        self._owners_memo = {}
        #: Our instances Ironic gave no node, remembered until the next
        #: full listing (servers in ERROR or BUILD without a node).
        self._nodeless = frozenset()
        self._stale_since = None
        self._elsewhere = frozenset()
        self._announce = False
        #: The last successful
        #: :class:`~ironic_partition.partition.refresh_result.
        #: RefreshResult`, or ``None``.
        self.last_result = None

    @property
    def settings(self):
        """The :class:`~ironic_partition.settings.Settings` in force."""
        return self._settings

    @property
    def cadence(self):
        """How the consumer refreshes (the agent's, or nova's cadence)."""
        return self._settings.cadence

    def start(self):
        """Start the claims' lease timer; idempotent.

        The claims take the host name too when no membership backend does.

        Call it after the membership backend started.

        :raises DuplicateService: another live process holds the host name.
        :raises MembershipError: when the database is unusable.
        :returns: None
        """
        self._check_shared_store()
        if self.claims is not None:
            self.claims.start()

    def _check_shared_store(self):
        # NOTE(ironic-partition): refused at once where it is not allowed
        # (nova-compute), only warned about by a service that starts (not
        # by a read-only CLI run).
        store = self.store
        if store is not None and store.dialect == 'sqlite':
            claim_settings.check_shared_database(
                self._settings.peer_list, store, self._settings.host,
                self._allow_local_database)

    def add_fence_listener(self, listener):
        """Be told from the lease timer when the claims stop being valid.

        :param listener: a callable without arguments.
        :returns: None
        """
        if self.claims is not None:
            self.claims.timer.add_fence_listener(listener)

    def add_renew_listener(self, listener):
        """Be told from the lease timer when the claims were renewed.

        :param listener: a callable without arguments.
        :returns: None
        """
        if self.claims is not None:
            self.claims.timer.add_renew_listener(listener)

    def reload_settings(self, read):
        """Apply new settings, or keep the old ones if invalid.

        Logs one line with the old and new partition values. The next
        refresh uses the new settings and logs the new node count.

        :param read: a callable returning the new :class:`~ironic_partition.
            settings.Settings` (:func:`ironic_partition.settings.from_conf`
            on the reloaded configuration); a ``ConfigurationError`` or
            ``ValueError`` it raises rejects the reload.
        :returns: ``True`` when the partition settings changed.
        """
        old = self._settings
        try:
            new = read()
        except (exception.ConfigurationError, ValueError) as e:
            LOG.error('Rejected the new partition settings, keeping '
                      'partition_key=%(key)r peer_list=%(peers)s: %(err)s',
                      {'key': old.partition_key,
                       'peers': ','.join(old.peer_list), 'err': e})
            return False
        if new.partition == old.partition:
            # NOTE(ironic-partition): other mutable options (such as
            # hand_over_on_stop and allocation_timeout) apply at once.
            with self._lock:
                self._settings = new
            return False
        # NOTE(ironic-partition): shard (issue 15). A shard change needs a
        # restart, as nova registers [ironic] shard immutable: the
        # membership row, the claims and the node cache all belong to the
        # old shard. Refuse the whole change and keep the old settings.
        if new.shard != old.shard:
            LOG.error('Rejected the new partition settings, keeping '
                      'partition_key=%(key)r peer_list=%(peers)s '
                      'shard=%(shard)r: [ironic] shard cannot change on '
                      'SIGHUP (%(shard)r -> %(new)r); restart the service '
                      'to change it',
                      {'key': old.partition_key,
                       'peers': ','.join(old.peer_list),
                       'shard': old.shard, 'new': new.shard})
            return False
        with self._lock:
            self._settings = new
            self.rings.reset()
            self.client.reset()
            self.index.invalidate()
            self.membership.set_partition_key(new.partition_key)
            self._announce = True
        LOG.info('Partition settings changed: partition_key %(ok)r -> '
                 '%(nk)r, peer_list [%(op)s] -> [%(np)s]; the next refresh '
                 'applies them',
                 {'ok': old.partition_key, 'nk': new.partition_key,
                  'op': ','.join(old.peer_list),
                  'np': ','.join(new.peer_list)})
        return True

    def _read_membership(self, settings, node_ids=None):
        peers = settings.peer_list if ip_conf.is_partitioned(settings) \
            else None
        try:
            membership = self.membership.members(settings.partition_key,
                                                 peers,
                                                 **_shard_kwargs(settings))
        except exception.SeveralDatabaseWriters as e:
            raise exception.PartitionNotReady(kind='membership',
                                              reason=str(e))
        except claims_mod.DATABASE_ERRORS as e:
            raise exception.PartitionNotReady(kind='membership', reason=(
                'the membership cannot be read: %s' % e))
        if peers is not None and membership.elsewhere != self._elsewhere:
            self._elsewhere = membership.elsewhere
            if membership.elsewhere:
                LOG.warning(
                    '[ironic] peer_list names %(peers)s, live in the '
                    'membership database for another partition than '
                    '%(key)s (another [ironic] conductor_group or shard): '
                    'they get no share of %(key)s. Remove them from '
                    '[ironic] peer_list here, or correct their [ironic] '
                    'conductor_group.',
                    {'peers': ', '.join(sorted(membership.elsewhere)),
                     'key': ip_conf.describe_partition(
                         settings.partition)})
        if self.outside is not None:
            membership = self.outside.merge(membership, settings, peers,
                                            node_ids=node_ids)
            # NOTE(ironic-partition): for status and check, which cannot
            # read nova's service group.
            note = getattr(self.membership, 'note_outside', None)
            if note is not None:
                note(membership.outside)
        if not membership.stale:
            self._stale_since = None
            return membership
        now = self._clock()
        if self._stale_since is None:
            self._stale_since = now
        timeout = self._settings.membership_stale_timeout
        age = now - self._stale_since
        if age >= timeout:
            raise exception.PartitionNotReady(
                reason='the membership source has been unreachable for '
                       '%d s ([ironic_partition] membership_stale_timeout '
                       'is %d s)' % (age, timeout), kind='membership')
        LOG.warning('Membership source unreachable for %(age)d s; using '
                    'the last known members %(members)s for up to '
                    '%(left)d s more',
                    {'age': age, 'members': sorted(membership.live),
                     'left': timeout - age})
        return membership

    def _check_identity(self):
        if self.identity is not None and self.identity.lost:
            raise exception.PartitionNotReady(
                reason='this process lost host %s to another process: %s'
                % (self.identity.host, self.identity.lost), kind='identity')

    def _list(self, settings, my_instances):
        """The partition's nodes, plus the nodes of our instances outside.

        :returns: ``(nodes, my_instances, update, extra_meter, asked)``: a
            list of slim records, a frozenset read after the listing, the
            :data:`~ironic_partition.ironic.node_index.IndexUpdate`, the
            :class:`~ironic_partition.ironic.baremetal.Meter` of the instance
            look-ups and their number.
        """
        extra = baremetal.Meter()
        ask = frozenset()
        try:
            update = self.index.refresh(settings.partition_key,
                                        settings.shard)
            nodes = list(self.index.nodes.values())
            if not nodes and settings.partition_key is not None:
                self._check_group_served(settings.partition_key)
            # NOTE(ironic-partition): read after the listing, as nova
            # does: an instance spawned during a long listing is kept.
            mine = frozenset(my_instances)
            missing = mine - {n.instance_id for n in nodes
                              if n.instance_id is not None}
            if update.full:
                self._nodeless = frozenset()
            if missing and ip_conf.is_partitioned(settings):
                # NOTE(ironic-partition): an instance without a node gets
                # one only by a deploy to a node this service reports,
                # which the listing shows: ask Ironic again only after
                # the next full listing, not at every refresh.
                ask = missing - self._nodeless
                listed = self.index.nodes
                found = (self.client.nodes_for_instances(ask, meter=extra)
                         if ask else [])
                self._nodeless = (
                    (self._nodeless | ask) -
                    {n.instance_id for n in found}) & mine
                nodes.extend(n for n in found if n.id not in listed)
        except (exception.IronicUnavailable,
                exception.IronicRequestError) as e:
            raise exception.PartitionNotReady(reason=e, kind='ironic')
        return nodes, mine, update, extra, len(ask)

    def _owners(self, ring, node_ids):
        """:func:`~.rules.ring_owners`, remembered per ring.

        The ring changes only with the members; in between, only the nodes
        the change feed brought in are looked up.

        :returns: a mapping of (at least) ``node_ids`` to their owner.
        """
        if ring is not self._owners_ring:
            self._owners_ring, self._owners_memo = ring, {}
        memo = self._owners_memo
        missing = [u for u in node_ids if u not in memo]
        if missing:
            memo.update(rules.ring_owners(ring, missing))
            if len(memo) > 2 * len(node_ids) + 1000:
                # NOTE(ironic-partition): forget deleted and moved nodes.
                self._owners_memo = memo = {u: memo[u] for u in node_ids}
        return memo

    def _check_group_served(self, key):
        """Refuse a partition key that no conductor and no node has."""
        groups = {c['conductor_group'] for c in self.client.list_conductors()}
        if key not in groups:
            raise exception.PartitionNotReady(
                reason='[ironic] partition_key %r names a conductor group '
                       'that no Ironic conductor serves and no node is in '
                       '(known groups: %s); check the spelling'
                       % (key, ', '.join(repr(g) for g in sorted(groups))
                          or 'none'), kind='ironic')

    def refresh(self, my_instances=(), instance_hosts=None):
        """Compute the partition now.

        :param my_instances: UUIDs of the instances this service owns; an
            iterable read only after the Ironic listing.
        :param instance_hosts: optional mapping of instance UUID to the
            host owning it, to report stranded nodes.
        :returns: a
            :class:`~ironic_partition.partition.refresh_result.RefreshResult`.
        :raises PartitionNotReady: this service cannot prove what it owns
            (Ironic, the membership or the claims database unavailable,
            the host name lost, a partition key nothing serves); the
            previous result is kept in :attr:`last_result`.
        """
        start = self._clock()
        with self._lock:
            self._check_identity()
            settings = self._settings
            nodes, mine, update, extra, asked = self._list(settings,
                                                           my_instances)
            membership = self._read_membership(settings, self.index.nodes)
            self._live = frozenset(membership.live)
            # NOTE(ironic-partition): only a balanced ring depends on the
            # key set (None otherwise): every node of the partition.
            keys = self.rings.ring_keys(nodes, settings.partition_key)
            ring = self.rings.get_ring(settings.partition_key, keys=keys)
            ring_ownership = rules.partition(
                nodes, ring, settings.host, mine, instance_hosts,
                alive_hosts=membership.alive_anywhere or None,
                owners_fn=self._owners)
            ownership, outcome = self._claim(ring_ownership, settings)
            if outcome is not None and not outcome.ok:
                self._check_identity()
                raise exception.PartitionNotReady(
                    reason='cannot prove which nodes this service holds: '
                           'the claim round failed (%s)' % outcome.error,
                    kind='claims')
            if (outcome is not None and outcome.waiting and
                    not ownership.managed and
                    (self.last_result is None or
                     not self.last_result.nodes)):
                # NOTE(ironic-partition): an empty list would tell nova
                # that every node of this host is gone (its orphan
                # check), while nothing is reportable yet only because
                # other processes' claims have not run out: a previous
                # incarnation of this host (a container restarted in a
                # new PID namespace), or peers handing over to a service
                # that just joined. Not proven is not empty. A service
                # that reported nodes before does report an empty list:
                # nova must drop those, before their claims are released.
                raise exception.PartitionNotReady(
                    reason='the ring and this service\'s instances give it '
                           '%d nodes and it may report none of them yet: '
                           '%d wait for claims held by other processes to '
                           'run out' % (len(ring_ownership.managed),
                                        len(outcome.waiting)),
                    kind='claims', waiting=len(outcome.waiting))
            managed = frozenset(ownership.managed)
            by_id = {n.id: n for n in nodes if n.id in managed}
            previous = (frozenset(self.last_result.nodes)
                        if self.last_result is not None else frozenset())
            metrics = refresh_result.RefreshMetrics(
                listed=len(nodes), full=update.full, changed=update.changed,
                api_calls=update.calls + extra.calls,
                http_seconds=update.http_seconds + extra.http_seconds,
                seconds=self._clock() - start,
                claim_seconds=outcome.seconds if outcome else 0.0,
                instance_lookups=asked,
                date_ahead=self.index.feed.date_ahead)
            result = refresh_result.RefreshResult(
                settings=settings.partition, membership=membership,
                ring_ownership=ring_ownership, ownership=ownership,
                nodes=by_id, gained=managed - previous,
                lost=previous - managed, claims=outcome, metrics=metrics)
            self.last_result = result
            announce, self._announce = self._announce, False
        # NOTE(ironic-partition): the pages this refresh decoded were
        # freed; give the C heap's free pages back rather than hold them.
        heap.release()
        result.log(announce)
        result.warn_overrun(self.cadence)
        return result

    def _claim(self, ownership, settings):
        """Cut the ring's nodes down to those this service holds claims on.

        :param ownership: the rules' :data:`~ironic_partition.partition.rules.
            Ownership`.
        :param settings: the partition settings in force.
        :returns: ``(ownership to report, ClaimOutcome or None)``.
        """
        if self.claims is None:
            return ownership, None
        outcome = self.claims.round(ownership.by_ring, ownership.by_instance,
                                    partition_key=settings.partition_key,
                                    **_shard_kwargs(settings))
        by_ring = tuple(u for u in ownership.by_ring
                        if u in outcome.reported)
        by_instance = tuple(u for u in ownership.by_instance
                            if u in outcome.reported)
        return ownership._replace(
            managed=by_instance + by_ring, by_ring=by_ring,
            by_instance=by_instance), outcome

    def status(self):
        """Describe the claims of this service, for the CLI and logs.

        :returns: a dict of plain values; ``{'enabled': False}`` when
            claims are off.
        """
        if self.claims is None:
            return {'claims': {'enabled': False}}
        return {'claims': self.claims.status()}

    def release_unreported(self):
        """Hand over at once the nodes the last refresh stopped reporting.

        Optional: without it, they are released at the next refresh. Call
        it only after the consumer adopted the last refresh's result.

        :returns: the number of claims released.
        """
        if self.claims is None:
            return 0
        with self._lock:
            return self.claims.release_unreported()

    def stop(self, release=True):
        """Stop reporting claimed nodes; release the claims by default.

        Call it after the consumer stopped reporting nodes; from then on
        :meth:`reported_nodes` reports nothing, instance nodes included
        (a successor, or this service started again, reports them once it
        holds their claims). Never raises.

        :param release: False keeps the claims in the database for a
            restart (``[ironic_partition] hand_over_on_stop``).
        :returns: the number of claims released.
        """
        self.client.close()
        if self.claims is None:
            return 0
        with self._lock:
            return self.claims.stop(release=release)
