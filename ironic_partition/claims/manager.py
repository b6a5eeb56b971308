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

"""Ownership claims: leases with fencing, kept in the membership database.

The ring decides which service *should* manage an instance-less node; a
claim decides which service *may* report it. A service reports a node only
while it holds a valid claim on it, so two services (or two processes of
one host name, around a takeover) never report the same node, even while
they disagree about the membership (see ``doc/source/admin/safety.rst``
for the invariants and the timing argument).

One claim round (:meth:`ClaimManager.round`, run by every refresh):

1. read this service's claim rows (one ``SELECT``);
2. release the claims it neither wants any more nor reported at the
   previous refresh (a release is *deferred* by one refresh: a node leaves
   the reported set first, and its claim is given up only at the next
   round, once the consumer has adopted the smaller set);
3. renew every valid claim it holds (one ``UPDATE`` per chunk of
   nodes);
4. take the wanted nodes it does not hold, where unclaimed or expired by
   the database clock (compare-and-swap on the epoch);
5. read back which claims it holds now (one ``SELECT``).

The local time at which the last successful round *started* is
remembered, by :func:`lease_clock`: ``CLOCK_BOOTTIME`` on Linux, a
monotonic clock that also counts the time the machine was suspended (a
VM saved and restored, a laptop asleep), where ``CLOCK_MONOTONIC`` stops
and a resumed process would believe its leases younger than they are.
Every claim renewed or taken by that round expires in the database no
earlier than ``lease_time`` after that instant, so the service may report
those nodes until ``start + lease_time - fencing_margin`` by that clock.
Past that instant without another successful round it
reports none of them: it is *fenced*. This covers a database that cannot be
reached, a network cut, and a process that was paused (SIGSTOP, a long GC
pause) and resumes believing it still owns its nodes.

Nodes whose instance this service owns (rule 1) are claimed too, so that
a node whose instance is deleted cannot be taken by another service before
this one stops reporting it, and they are reported under the same rule:
while the claim is valid. A fenced process reports nothing, instance nodes
included; a new process that took the host name over (or a service whose
new instance's node another service still holds) reports an instance node
once its claim is taken, when the previous holder's lease ran out or it
released the node. Nodes whose instance belongs to another service are
never claimed: a node whose instance's owner is dead stays stranded.
"""

import threading
import time
import types

from oslo_db import exception as db_exc
from oslo_log import log as logging
import sqlalchemy.exc as sa_exc

from ironic_partition._i18n import _
from ironic_partition.claims import db_clock
from ironic_partition.claims import lease_timer
from ironic_partition.claims import outcome as outcome_mod
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import health
from ironic_partition.db import store as store_mod
from ironic_partition import exception
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)

#: The role claims are kept under when the membership backend has none.
DEFAULT_ROLE = 'nova-compute'

#: What a claim round treats as "the database cannot be reached": a
#: database error, or a membership error (schema, connection, identity).
#: Anything else (a TypeError...) is a bug and is raised as it is.
DATABASE_ERRORS = (sa_exc.SQLAlchemyError, db_exc.DBError,
                   exception.MembershipError)


def _boot_time():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


#: The clock leases and fences are judged by: seconds of
#: ``CLOCK_BOOTTIME`` where the platform has it (Linux), which keeps
#: counting while the machine is suspended; ``time.monotonic`` elsewhere
#: (there a suspended machine resumes believing its leases younger, until
#: its next claim round). Only differences of it are used, never compared
#: with another process's or host's.
lease_clock = (_boot_time if hasattr(time, 'CLOCK_BOOTTIME')
               else time.monotonic)


def from_settings(settings, store=None, role=None, takeover=False,
                  clock=lease_clock):
    """Build the claim manager the settings ask for.

    The claims share the membership backend's store (connection and
    identity) when it has one; otherwise (``claims = database`` with the
    ``nova`` or ``static`` backend) a store is opened from the settings'
    database, and the claims register and heartbeat its identity
    themselves.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`; the claim timings follow its cadence (see
        :func:`~ironic_partition.settings.claims.resolve`).
    :param store: the membership backend's :class:`~ironic_partition.db.
        store.Store`, or None.
    :param role: this service's role; :data:`DEFAULT_ROLE` when None.
    :param takeover: with a store of their own, the claims replace a live
        holder of the host name at start.
    :param clock: a monotonic clock, :func:`lease_clock` by default.
    :returns: a :class:`ClaimManager`, or None when claims are off.
    :raises ConfigurationError: for invalid claim options, or an SQLite
        library too old for the claim statements.
    """
    if not settings.claims_wanted(store):
        if settings.claims_mode == claim_settings.MODE_AUTO:
            # NOTE(ironic-partition): inside nova, membership_backend =
            # nova is the one choice that silently turns claims off.
            log = (LOG.warning if settings.membership_backend == 'nova'
                   else LOG.info)
            log('Ownership claims are off: the membership backend '
                '(%s) keeps no shared database; set [ironic_partition] '
                'claims = database (with a shared '
                '[ironic_partition_database] connection) to make '
                'rebalancing safe', settings.membership_backend)
        return None
    timings = settings.claims()
    role = role or DEFAULT_ROLE
    owns_store = store is None
    if owns_store:
        store = store_mod.Store.open(settings, role, takeover=takeover)
    store.claims.check_supported()
    return ClaimManager(store, settings.host, role,
                        lease_time=timings.lease_time,
                        fencing_margin=timings.fencing_margin,
                        clock=clock, owns_store=owns_store,
                        renew_interval=timings.renew_interval,
                        hold=settings.cadence.hold,
                        forget_clocks=settings.forget_database_clocks)


class ClaimManager(object):
    """Holds this service's claims and decides what it may report.

    :param store: a :class:`~ironic_partition.db.store.Store`: the claims
        database and this process's identity in it. With an identity,
        claims are taken, renewed and released for its incarnation only,
        and only while it holds the host name; without one (tests) the
        host name alone is used.
    :param host: this service's host name (the claim owner).
    :param role: this service's role; claims of different roles are
        separate.
    :param lease_time: seconds a claim lasts after each renewal, by the
        database clock.
    :param fencing_margin: seconds before the lease runs out (by the local
        monotonic clock) at which unrenewed claims stop being reported.
    :param clock: a monotonic clock.
    :param owns_store: whether this manager registers the store's
        identity at :meth:`start`, heartbeats it, gives it up and closes
        the store at :meth:`stop` (no membership backend does it).
    :param renew_interval: seconds between the lease timer's renewals
        (:meth:`start`); a third of ``lease_time - fencing_margin`` by
        default.
    :param forget_clocks: database nodes whose clock levels are not taken
        over from the previous process (``forget_database_clocks``).
    """

    def __init__(self, store, host, role, lease_time, fencing_margin,
                 clock=lease_clock, owns_store=False,
                 renew_interval=None, hold=0.0, forget_clocks=()):
        if fencing_margin >= lease_time:
            raise exception.ConfigurationError(
                group=partition_conf.GROUP, option='fencing_margin',
                value=fencing_margin, reason=_(
                    'it must be smaller than [ironic_partition] lease_time '
                    '(%s)') % lease_time)
        #: The :class:`~ironic_partition.db.store.Store`.
        self.store = store
        #: This process's :class:`~ironic_partition.db.identity.Identity`,
        #: or None.
        self.identity = store.identity
        self._owns_identity = owns_store
        self.renew_interval = (
            renew_interval if renew_interval is not None else
            max(claim_settings.MIN_RENEW_INTERVAL,
                (lease_time - fencing_margin) / 3.0))
        self.host = host.lower()
        self.role = role
        self.lease_time = float(lease_time)
        self.fencing_margin = float(fencing_margin)
        self._clock = clock
        self._owns_store = owns_store
        self._lock = threading.Lock()
        self._schema_checked = False
        self._held = frozenset()
        self._epochs = types.MappingProxyType({})
        self._valid_until = None
        self._last_desired = frozenset()
        self._last_reported = frozenset()
        self._was_fenced = False
        self._health = health.Health(clock)
        self._last_seconds = None
        self._last_statements = None
        self._adopted = False
        self._clocks_inherited = False
        self._forget_clocks = frozenset(n.lower() for n in forget_clocks)
        #: The :class:`~ironic_partition.claims.db_clock.ClockWatch` of the
        #: database server's clock: it widens the fencing margin to the
        #: clock differences seen between database nodes.
        self.clock_watch = db_clock.ClockWatch(self.fencing_margin,
                                               self.lease_time, hold=hold)
        #: The :class:`~ironic_partition.claims.lease_timer.LeaseTimer`
        #: renewing the held claims between rounds.
        self.timer = lease_timer.LeaseTimer(self, DATABASE_ERRORS)

    @property
    def clock(self):
        """The monotonic clock this manager judges its leases by."""
        return self._clock

    @property
    def owns_identity(self):
        """Whether this manager registers and heartbeats the identity."""
        return self._owns_identity and self.identity is not None

    @property
    def incarnation(self):
        """This process's incarnation, or None without an identity."""
        return self.identity.incarnation if self.identity else None

    def start(self):
        """Start: register, adopt the claims left, start the lease timer.

        This manager takes the host name only when it owns the identity
        (no membership backend does); it adopts the claims a previous
        incarnation left, and starts the lease timer. Idempotent. The
        timer renews the held claims every :attr:`renew_interval`
        seconds, whatever the refreshes do: a listing slower than the
        lease never lets a claim lapse.

        :raises DuplicateService: another live process holds the host name.
        :raises: other MembershipError subclasses when the database is
            unusable.
        :returns: None
        """
        if self.owns_identity:
            try:
                self._ensure_schema()
                self.identity.register()
            except exception.MembershipError:
                raise
            except DATABASE_ERRORS as exc:
                raise exception.DatabaseConnectionFailed.from_error(
                    self.store.masked_connection, exc)
        self._adopt()
        self.timer.start()

    def _adopt(self):
        if self._adopted or self.identity is None:
            return
        try:
            adopted = self.store.claims.adopt_claims(
                self.role, self.host, self.identity.incarnation,
                self.identity.adoptable)
        except DATABASE_ERRORS as exc:
            LOG.warning('Could not adopt the claims a previous process of '
                        '%(host)s left; the next rounds retry: %(err)s',
                        {'host': self.host, 'err': exc})
            return
        self._adopted = True
        if adopted:
            LOG.info('Adopted %(n)d claims left by the previous process of '
                     '%(host)s', {'n': adopted, 'host': self.host})

    # Queries.

    @property
    def valid_until(self):
        """The local monotonic instant the held claims stop being reportable.

        :returns: a float, or None when no round ever succeeded.
        """
        with self._lock:
            return self._valid_until

    def fenced(self, now=None):
        """Tell whether the held claims must not be reported any more.

        :param now: the monotonic time, ``clock()`` by default.
        :returns: True when no successful round renewed them in time.
        """
        now = self._clock() if now is None else now
        with self._lock:
            return self._valid_until is None or now >= self._valid_until

    def reportable(self, node_ids, now=None):
        """Filter nodes down to those a valid claim allows reporting now.

        Use it at the moment of acting on a previous refresh's result.

        :param node_ids: node UUIDs (ring or instance nodes).
        :param now: the monotonic time, ``clock()`` by default.
        :returns: a frozenset, empty while fenced.
        """
        now = self._clock() if now is None else now
        with self._lock:
            if self._valid_until is None or now >= self._valid_until:
                return frozenset()
            return frozenset(node_ids) & self._held

    def status(self):
        """Describe the claims, for the CLI and logs.

        :returns: a dict of plain values.
        """
        now = self._clock()
        with self._lock:
            until = self._valid_until
            return {
                'enabled': True,
                'host': self.host,
                'role': self.role,
                'connection': self.store.masked_connection,
                'lease_time': self.lease_time,
                'fencing_margin': self.fencing_margin,
                'effective_fencing_margin': self.clock_watch.margin(),
                'database_clock_difference': self.clock_watch.difference,
                'held': len(self._held),
                'fenced': until is None or now >= until,
                'valid_for': (None if until is None
                              else round(max(0.0, until - now), 3)),
                'consecutive_failures': self._health.failures,
                'last_error': self._health.last_error,
                'seconds_since_last_round': self._health.seconds_since_ok(
                    now),
                'last_round_seconds': self._last_seconds,
                'last_round_statements': self._last_statements,
            }

    # Rounds.

    def _ensure_schema(self):
        if self._schema_checked:
            return
        self.store.ensure_schema()
        self._schema_checked = True

    def round(self, ring_nodes, instance_nodes=(), partition_key=None,
              shard=None):
        """Run one claim round and decide what may be reported.

        Never raises for a database fault: the round then fails closed
        (see :class:`~ironic_partition.claims.outcome.ClaimOutcome`
        ``fenced``) and is retried at the next refresh.

        :param ring_nodes: instance-less node UUIDs the ring gives this
            service.
        :param instance_nodes: node UUIDs whose instance this service owns;
            claimed like the ring nodes, never released while wanted.
        :param partition_key: recorded with new claims.
        :param shard: the shard, recorded with new claims.
        :returns: a
            :class:`~ironic_partition.claims.outcome.ClaimOutcome`.
        """
        ring_nodes = frozenset(ring_nodes)
        instance_nodes = frozenset(instance_nodes)
        desired = ring_nodes | instance_nodes
        start = self._clock()
        statements = self.store.stats['claim_statements']
        released = frozenset()
        claimed = frozenset()
        error = None
        inc = self.incarnation
        try:
            self._ensure_schema()
            self._adopt()
            self._inherit_clocks()
            owned, server = self.store.claims.owned_claims(
                self.role, self.host, incarnation=inc, clock=self._clock)
            try:
                self._watch_clock(server)
            finally:
                if self.identity is not None:
                    self.identity.note_claim_round(
                        server.node, self.clock_watch.levels())
            with self._lock:
                keep = self._last_reported
            to_release = frozenset(owned) - desired - keep
            if to_release:
                # NOTE(ironic-partition): forget them locally before the
                # database may hand them to another service, even if the
                # release fails half-way.
                with self._lock:
                    self._held = self._held - to_release
                self.store.claims.release_claims(
                    self.role, self.host, to_release, incarnation=inc)
                released = to_release
            valid = frozenset(n for n, c in owned.items() if c.valid)
            renewing = valid - released
            renewed = self.store.claims.renew_claims(
                self.role, self.host, self.lease_time, incarnation=inc,
                node_ids=renewing)
            to_claim = desired - valid
            won = {}
            if to_claim:
                extra = {'shard': shard} if shard is not None else {}
                won = self.store.claims.acquire_claims(
                    self.role, self.host, to_claim, self.lease_time,
                    partition_key, incarnation=inc, **extra)
            if won is not None and renewed == len(renewing):
                # NOTE(ironic-partition): every valid claim was renewed
                # (the epochs do not change on renewal) and every claim
                # wanted was won (at the epoch read plus one), none lost
                # in between: what the database holds for us is known
                # without reading it again.
                held = {n: owned[n].epoch for n in renewing}
                held.update(won)
            else:
                held = self.store.claims.held_claims(
                    self.role, self.host, incarnation=inc)
        except DATABASE_ERRORS as exc:
            self.forget_if_identity_lost(exc)
            error = '%s: %s' % (type(exc).__name__, exc)
            if self.identity is not None:
                # NOTE(ironic-partition): where a failed round's statements
                # went says nothing about where the next ones go (an
                # outage, a failover): the heartbeats record no claims
                # node until a round succeeds again.
                self.identity.note_claim_round(None, None)
        else:
            claimed = frozenset(held) - valid
        return self._conclude(start, statements, ring_nodes, desired,
                              released, claimed, error,
                              None if error else held)

    def _inherit_clocks(self):
        """Start from what the previous processes measured, once known."""
        identity = self.identity
        if self._clocks_inherited or identity is None or \
                not identity.registered:
            return
        self._clocks_inherited = True
        db_clock.take_over(self.clock_watch, self.host,
                           identity.inherited_clocks, self._forget_clocks)

    def _watch_clock(self, server):
        """Record the server's time; a stall fences, a clock step is logged.

        :param server: the :data:`~ironic_partition.db.claims.ServerTime`
            a claim round read.
        :raises ClockStepTooLarge: the steps seen are more than the lease
            can cover.
        """
        if server is None or server.time is None:
            return
        verdict = db_clock.observe(self.clock_watch, self.host,
                                   self.fencing_margin, server)
        with self._lock:
            if verdict.fence:
                # NOTE(ironic-partition): what the last rounds proved was
                # measured by a clock that stood still, or no margin covers
                # the clocks: nothing of it may be reported any more (this
                # round proves the claims again, if it may).
                self._valid_until = None
            elif verdict.shorten and self._valid_until is not None:
                # NOTE(ironic-partition): proven with the narrower margin.
                self._valid_until -= verdict.shorten
        if verdict.problem:
            raise exception.ClockStepTooLarge(reason=verdict.problem)

    def _conclude(self, start, statements, ring_nodes, desired, released,
                  claimed, error, held):
        with self._lock:
            now = self._clock()
            margin = self.clock_watch.margin()
            if held is not None:
                self._held = frozenset(held)
                self._epochs = types.MappingProxyType(dict(held))
                self._valid_until = start + self.lease_time - margin
                if now >= self._valid_until:
                    # NOTE(ironic-partition): the round's writes succeeded
                    # but it ended past the fence they set (a statement
                    # waited on a row lock, a stalled connection): what it
                    # proves ran out before it could be used. Fail closed,
                    # as for a database error: not ready, never a ready
                    # and shorter list.
                    error = _('the claim round ended %(late).1f s after '
                              'its own fence (it took %(took).1f s; '
                              'lease_time minus fencing_margin is '
                              '%(window).1f s)') % {
                        'late': now - self._valid_until,
                        'took': now - start,
                        'window': self.lease_time - margin}
                    held = None
            if held is not None:
                failures = self._health.succeeded(start)
            else:
                failures = self._health.failed(error)
            until = self._valid_until
            expired = until is None or now >= until
            mine = self._held
            # NOTE(ironic-partition): an instance node too is reported
            # only under a valid claim of this process: after a takeover,
            # or while another service still holds it, it waits like a
            # ring node; once fenced, nothing is reported.
            reported = frozenset() if expired else desired & mine
            ring_reported = ring_nodes & reported
            if held is not None:
                waiting = desired - mine
                fenced = desired & mine if expired else frozenset()
            else:
                waiting = frozenset()
                fenced = desired - reported
            if held is not None:
                # NOTE(ironic-partition): a failed round makes the refresh
                # "not ready", and the consumer goes on acting on the last
                # good result: what is kept from release must stay what
                # that result reported, not this round's smaller view.
                self._last_reported = reported
                self._last_desired = desired
            # NOTE(ironic-partition): fenced means a lease was held once
            # and ran out; never having held one is not news.
            now_fenced = expired and until is not None
            was_fenced, self._was_fenced = self._was_fenced, now_fenced
            seconds = self._clock() - start
            self._last_seconds = round(seconds, 6)
            self._last_statements = (self.store.stats['claim_statements']
                                     - statements)
            outcome = outcome_mod.ClaimOutcome(
                reported=reported, ring_reported=ring_reported, held=mine,
                claimed=claimed, released=released, fenced=fenced,
                waiting=waiting, ok=held is not None, error=error,
                valid_until=None if expired else until,
                epochs=self._epochs, seconds=seconds,
                statements=self._last_statements)
        self._log(outcome, failures, was_fenced, now_fenced, now)
        return outcome

    def _log(self, outcome, failures, was_fenced, now_fenced, now):
        if not outcome.ok:
            if self._health.worth_logging(failures):
                if outcome.valid_until is not None:
                    state = (_('still reporting %(n)d claimed nodes for '
                               '%(left).1f s') %
                             {'n': len(outcome.reported),
                              'left': outcome.valid_until - now})
                else:
                    state = _('reporting none of its %d nodes, instance '
                              'nodes included (fenced)') % len(
                                  outcome.fenced)
                LOG.error('Claim round of %(host)s in %(conn)s failed '
                          '(%(n)d in a row); %(state)s: %(err)s',
                          {'host': self.host,
                           'conn': self.store.masked_connection,
                           'n': failures, 'state': state,
                           'err': outcome.error})
        elif failures:
            LOG.info('Claim round of %(host)s succeeded again after '
                     '%(n)d failures', {'host': self.host, 'n': failures})
        if now_fenced and not was_fenced:
            LOG.warning('Fenced: the claims of %(host)s were not renewed '
                        'within lease_time (%(lease)s s) minus '
                        'fencing_margin (%(margin)s s); not reporting '
                        'any of its %(n)d nodes, instance nodes included',
                        {'host': self.host, 'lease': self.lease_time,
                         'margin': self.clock_watch.margin(),
                         'n': len(outcome.fenced)})
        elif was_fenced and not now_fenced and outcome.ok:
            LOG.info('No longer fenced: %(host)s holds %(n)d claims again',
                     {'host': self.host, 'n': len(outcome.held)})

    def keepalive(self):
        """Renew the held claims without changing them.

        For a refresh that cannot list the nodes (Ironic down): the claims
        stay valid, nothing is taken or released, and what the last
        refresh reported stays reportable. Never raises.

        :returns: True when the claims were renewed.
        """
        start = self._clock()
        inc = self.incarnation
        if self.clock_watch.problem():
            # NOTE(ironic-partition): refused by the clock watch: only a
            # claim round that measures the clocks within what the lease
            # covers reports again (a restart inherits the refusal).
            return False
        try:
            self._ensure_schema()
            self.store.claims.renew_claims(
                self.role, self.host, self.lease_time, incarnation=inc)
            held = self.store.claims.held_claims(
                self.role, self.host, incarnation=inc)
        except DATABASE_ERRORS as exc:
            self.forget_if_identity_lost(exc)
            failures = self._health.failed(exc)
            if self._health.worth_logging(failures):
                LOG.warning('Renewing the claims of %(host)s in %(conn)s '
                            'failed (%(n)d in a row): %(err)s',
                            {'host': self.host,
                             'conn': self.store.masked_connection,
                             'n': failures, 'err': exc})
            return False
        with self._lock:
            # NOTE(ironic-partition): only claims held before may stay:
            # anything else in the database is not reported and will be
            # sorted out by the next full round.
            mine = self._held & frozenset(held)
            self._held = mine
            self._epochs = types.MappingProxyType(
                {n: held[n] for n in mine})
            self._valid_until = (start + self.lease_time
                                 - self.clock_watch.margin())
        self._health.succeeded(start)
        return True

    def forget_if_identity_lost(self, exc):
        """Hold nothing any more if ``exc`` says the host name was lost.

        :param exc: an exception from the claims database.
        :returns: True when it did (``exc`` is ``IdentityLost``).
        """
        if (not isinstance(exc, exception.IdentityLost)
                or self.identity is None):
            return False
        self.identity.mark_lost(exc.kwargs.get('reason', str(exc)))
        with self._lock:
            self._held = frozenset()
            self._valid_until = None
        return True

    def release_unreported(self):
        """Release now the claims the last round kept but did not report.

        A round releases a claim one refresh after it stopped reporting
        the node. A consumer that has adopted the last refresh's result
        may call this to hand such nodes over at once.

        :returns: the number of claims released; 0 on a database fault.
        """
        with self._lock:
            keep = self._last_desired | self._last_reported
            if not self._held - keep:
                # NOTE(ironic-partition): nothing held is pending release;
                # claims owned but not held have expired already.
                return 0
        inc = self.incarnation
        try:
            owned = self.store.claims.owned_claims(
                self.role, self.host, incarnation=inc)
            to_release = frozenset(owned) - keep
            if not to_release:
                return 0
            with self._lock:
                self._held = self._held - to_release
            return self.store.claims.release_claims(
                self.role, self.host, to_release, incarnation=inc)
        except DATABASE_ERRORS as exc:
            LOG.warning('Could not release the unreported claims of '
                        '%(host)s: %(err)s', {'host': self.host, 'err': exc})
            return 0

    def _release_all(self):
        if self.identity is not None and self.identity.lost:
            # NOTE(ironic-partition): the claims of this host belong to
            # the incarnation that took it over, or expire.
            return 0
        try:
            released = self.store.claims.release_claims(
                self.role, self.host, incarnation=self.incarnation)
        except Exception as exc:
            LOG.warning('Could not release the claims of %(host)s in '
                        '%(conn)s; they expire after %(lease)s s: %(err)s',
                        {'host': self.host,
                         'conn': self.store.masked_connection,
                         'lease': self.lease_time, 'err': exc})
            return 0
        LOG.info('Released %(n)d claims of %(host)s',
                 {'n': released, 'host': self.host})
        return released

    def stop(self, release=True):
        """Stop reporting and release every claim (graceful stop).

        Call it once the consumer has stopped reporting nodes. Never
        raises: claims that cannot be released expire after the lease.

        :param release: False keeps the claims in the database: this
            service, started again under the same host name before they
            expire, takes them back with the same epochs; otherwise they
            expire after ``lease_time`` as a crashed service's would.
        :returns: the number of claims released.
        """
        self.timer.stop()
        with self._lock:
            self._held = frozenset()
            self._epochs = types.MappingProxyType({})
            self._valid_until = None
            self._last_reported = frozenset()
            self._last_desired = frozenset()
        if release:
            released = self._release_all()
        else:
            released = 0
            LOG.info('Stopped reporting; keeping the claims of %(host)s for '
                     'a restart (they expire after %(lease)s s)',
                     {'host': self.host, 'lease': self.lease_time})
        if self.owns_identity:
            self.identity.release(leave=release)
        if self._owns_store:
            try:
                self.store.dispose()
            except Exception:
                LOG.debug('Ignoring an error while closing the claims '
                          'database connections', exc_info=True)
        return released
