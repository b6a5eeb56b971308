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
claim decides which service *may* report it. A service reports an
instance-less node only while it holds a valid claim on it, so two services
never report the same instance-less node, even while they disagree about
the membership (see ``doc/source/admin/safety.rst`` for the invariants and
the timing argument).

One claim round (:meth:`ClaimManager.round`, run by every refresh):

1. read this service's claim rows (one ``SELECT``);
2. release the claims it neither wants any more nor reported at the
   previous refresh (a release is *deferred* by one refresh: a node leaves
   the reported set first, and its claim is given up only at the next
   round, once the consumer has adopted the smaller set);
3. renew every valid claim it holds (one ``UPDATE``);
4. take the wanted nodes it does not hold, where unclaimed or expired by
   the database clock (compare-and-swap on the epoch);
5. read back which claims it holds now (one ``SELECT``).

The local monotonic time at which the last successful round *started* is
remembered. Every claim renewed or taken by that round expires in the
database no earlier than ``lease_time`` after that instant, so the service
may report those nodes until ``start + lease_time - fencing_margin`` by its
own monotonic clock. Past that instant without another successful round it
reports none of them: it is *fenced*. This covers a database that cannot be
reached, a network cut, and a process that was paused (SIGSTOP, a long GC
pause) and resumes believing it still owns its nodes.

Nodes whose instance this service owns (rule 1) are claimed too, so that
a node whose instance is deleted cannot be taken by another service before
this one stops reporting it; but they are reported whatever happens to
their claims. Nodes whose instance belongs to another service are never
claimed: a node whose instance's owner is dead stays stranded.
"""

import collections
import dataclasses
import threading
import time
import types

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import api as db_api
from ironic_partition.db import migration
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: The values of ``[ironic_partition] claims``.
MODE_AUTO = 'auto'
MODE_DATABASE = 'database'
MODE_OFF = 'off'

#: The role claims are kept under when the membership backend has none.
DEFAULT_ROLE = 'nova-compute'

#: Log a still-failing claim round at ERROR level every this many failures.
WARN_EVERY = 10

#: The claim options, validated, with the automatic values resolved.
#:
#: ``mode`` is the ``claims`` option; ``lease_time`` and
#: ``fencing_margin`` are seconds (floats).
ClaimSettings = collections.namedtuple(
    'ClaimSettings', ['mode', 'lease_time', 'fencing_margin'])


def _config_error(option, value, reason):
    return exception.ConfigurationError(
        group=partition_conf.GROUP, option=option, value=value,
        reason=reason)


def get_settings(conf):
    """Read and validate the claim options.

    ``lease_time`` defaults to the larger of twice ``refresh_interval`` and
    ``service_down_time``; ``fencing_margin`` to a tenth of the lease.

    :param conf: a ``ConfigOpts`` with ``[ironic_partition]`` registered.
    :returns: a :data:`ClaimSettings`.
    :raises ConfigurationError: when ``lease_time`` is shorter than two
        refresh intervals, or ``fencing_margin`` leaves less than one
        refresh interval of the lease; the message names the options.
    """
    group = conf[partition_conf.GROUP]
    refresh = group.refresh_interval
    lease = group.lease_time
    if lease is None:
        lease = max(2 * refresh, group.service_down_time)
    elif lease < 2 * refresh:
        raise _config_error(
            'lease_time', lease,
            _('it must be at least twice [ironic_partition] '
              'refresh_interval (%(refresh)d), i.e. at least %(min)d: '
              'claims are renewed once per refresh, and one late refresh '
              'must not make a healthy service fence itself')
            % {'refresh': refresh, 'min': 2 * refresh})
    margin = group.fencing_margin
    if margin is None:
        margin = lease / 10.0
    elif margin >= lease - refresh:
        raise _config_error(
            'fencing_margin', margin,
            _('it must be smaller than [ironic_partition] lease_time '
              '(%(lease)d) minus refresh_interval (%(refresh)d), i.e. '
              'smaller than %(max)d, or a healthy service would fence '
              'itself between two refreshes')
            % {'lease': lease, 'refresh': refresh,
               'max': lease - refresh})
    if lease >= group.service_down_time + refresh:
        LOG.warning('[ironic_partition] lease_time (%(lease)d) is not '
                    'shorter than service_down_time (%(down)d) plus '
                    'refresh_interval (%(refresh)d): the nodes of a dead '
                    'service are reported again only after up to '
                    '%(bound)d s plus one refresh instead of '
                    'service_down_time + 2 refresh intervals (%(i2)d s); '
                    'keep refresh_interval at most half of '
                    'service_down_time',
                    {'lease': lease, 'down': group.service_down_time,
                     'refresh': refresh, 'bound': lease + refresh,
                     'i2': group.service_down_time + 2 * refresh})
    return ClaimSettings(group.claims, float(lease), float(margin))


def wanted(conf, membership):
    """Tell whether claims are on for this configuration and backend.

    :param conf: a ``ConfigOpts`` with ``[ironic_partition]`` registered.
    :param membership: the membership backend in use.
    :returns: True when claims are on: ``claims = database``, or
        ``claims = auto`` with the ``database`` membership backend.
    """
    mode = conf[partition_conf.GROUP].claims
    if mode == MODE_OFF:
        return False
    if mode == MODE_DATABASE:
        return True
    return getattr(membership, 'name', None) == 'database'


def from_conf(conf, membership, host, clock=time.monotonic):
    """Build the claim manager a configuration asks for.

    With the ``database`` membership backend the claims use its
    connection; otherwise (``claims = database`` with the ``nova`` or
    ``static`` backend) a connection is made from
    ``[ironic_partition_database]``.

    :param conf: a ``ConfigOpts`` with ``[ironic_partition]`` registered.
    :param membership: the membership backend in use.
    :param host: this service's host name.
    :param clock: a monotonic clock.
    :returns: a :class:`ClaimManager`, or None when claims are off.
    :raises ConfigurationError: for invalid claim options.
    """
    if not wanted(conf, membership):
        if conf[partition_conf.GROUP].claims == MODE_AUTO:
            LOG.info('Ownership claims are off: membership backend %r '
                     'has no shared database; set [ironic_partition] '
                     'claims = database (with a shared '
                     '[ironic_partition_database] connection) to make '
                     'rebalancing safe', getattr(membership, 'name', None))
        return None
    settings = get_settings(conf)
    connection = None
    owns_connection = False
    if getattr(membership, 'name', None) == 'database':
        connection = getattr(membership, 'db', None)
    if connection is None:
        if database_conf.GROUP not in conf:
            database_conf.register_opts(conf)
        connection = db_api.Connection.from_conf(conf)
        owns_connection = True
        if connection.dialect == 'sqlite':
            LOG.warning('Ownership claims are kept in the SQLite database '
                        '%s, which only this host can reach: claims '
                        'protect nothing across hosts unless every '
                        'service shares a server database in '
                        '[ironic_partition_database] connection',
                        connection.masked_connection)
    role = getattr(membership, 'role', None) or DEFAULT_ROLE
    return ClaimManager(connection, host, role,
                        lease_time=settings.lease_time,
                        fencing_margin=settings.fencing_margin,
                        clock=clock, owns_connection=owns_connection)


@dataclasses.dataclass(frozen=True)
class ClaimOutcome:
    """What one claim round found.

    :param reported: every node the service may report now: its instance
        nodes and the ring nodes it holds a valid claim on.
    :param ring_reported: the ring (instance-less) nodes among them.
    :param held: nodes with a valid claim as of the last successful round
        (including nodes kept one more round before their release).
    :param claimed: nodes taken in this round.
    :param released: nodes released in this round.
    :param fenced: ring nodes withheld because no valid claim can be
        proven: the database could not be reached, or the lease ran out
        by the local clock.
    :param waiting: ring nodes withheld because another service holds a
        valid claim on them (it releases them at its next refresh, or its
        lease runs out).
    :param ok: whether this round reached the database.
    :param error: what went wrong when it did not, else None.
    :param valid_until: the local monotonic instant until which the ring
        nodes in ``reported`` may be reported, or None when none may.
    :param epochs: node UUID to claim epoch, for the held nodes.
    :param seconds: how long the round took.
    :param statements: SQL statements the round issued.
    """

    reported: frozenset
    ring_reported: frozenset
    held: frozenset
    claimed: frozenset
    released: frozenset
    fenced: frozenset
    waiting: frozenset
    ok: bool
    error: str
    valid_until: float
    epochs: types.MappingProxyType
    seconds: float
    statements: int


class ClaimManager(object):
    """Holds this service's claims and decides what it may report.

    :param connection: an :class:`ironic_partition.db.api.Connection`.
    :param host: this service's host name (the claim owner).
    :param role: this service's role; claims of different roles are
        separate.
    :param lease_time: seconds a claim lasts after each renewal, by the
        database clock.
    :param fencing_margin: seconds before the lease runs out (by the local
        monotonic clock) at which unrenewed claims stop being reported.
    :param clock: a monotonic clock.
    :param owns_connection: whether :meth:`stop` disposes ``connection``.
    """

    def __init__(self, connection, host, role, lease_time, fencing_margin,
                 clock=time.monotonic, owns_connection=False):
        if fencing_margin >= lease_time:
            raise _config_error(
                'fencing_margin', fencing_margin,
                _('it must be smaller than [ironic_partition] lease_time '
                  '(%s)') % lease_time)
        self.db = connection
        self.host = host.lower()
        self.role = role
        self.lease_time = float(lease_time)
        self.fencing_margin = float(fencing_margin)
        self._clock = clock
        self._owns_connection = owns_connection
        self._lock = threading.Lock()
        self._schema_checked = False
        self._held = frozenset()
        self._epochs = types.MappingProxyType({})
        self._valid_until = None
        self._last_desired = frozenset()
        self._last_reported = frozenset()
        self._was_fenced = False
        self._failures = 0
        self._last_error = None
        self._last_ok = None
        self._last_seconds = None
        self._last_statements = None

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

        :param node_ids: instance-less node UUIDs.
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
                'connection': self.db.masked_connection,
                'lease_time': self.lease_time,
                'fencing_margin': self.fencing_margin,
                'held': len(self._held),
                'fenced': until is None or now >= until,
                'valid_for': (None if until is None
                              else round(max(0.0, until - now), 3)),
                'consecutive_failures': self._failures,
                'last_error': self._last_error,
                'seconds_since_last_round': (
                    None if self._last_ok is None
                    else round(now - self._last_ok, 3)),
                'last_round_seconds': self._last_seconds,
                'last_round_statements': self._last_statements,
            }

    # Rounds.

    def _ensure_schema(self):
        if self._schema_checked:
            return
        head = migration.head_revision()
        current = self.db.schema_revision()
        if current != head:
            if (current is not None
                    and current not in migration.known_revisions()):
                raise exception.DatabaseTooNew(
                    connection=self.db.masked_connection, current=current,
                    expected=head)
            if self.db.dialect != 'sqlite':
                raise exception.DatabaseNotMigrated(
                    connection=self.db.masked_connection,
                    current=current or _('(none)'), expected=head)
            self.db.upgrade()
        self._schema_checked = True

    def round(self, ring_nodes, instance_nodes=(), partition_key=None,
              shard=None):
        """Run one claim round and decide what may be reported.

        Never raises for a database fault: the round then fails closed
        (see :class:`ClaimOutcome` ``fenced``) and is retried at the next
        refresh.

        :param ring_nodes: instance-less node UUIDs the ring gives this
            service.
        :param instance_nodes: node UUIDs whose instance this service owns;
            always reported.
        :param partition_key: recorded with new claims.
        :param shard: the shard, recorded with new claims.
        :returns: a :class:`ClaimOutcome`.
        """
        ring_nodes = frozenset(ring_nodes)
        instance_nodes = frozenset(instance_nodes)
        desired = ring_nodes | instance_nodes
        start = self._clock()
        statements = self.db.stats['claim_statements']
        released = frozenset()
        claimed = frozenset()
        error = None
        try:
            self._ensure_schema()
            owned = self.db.owned_claims(self.role, self.host)
            with self._lock:
                keep = self._last_reported
            to_release = frozenset(owned) - desired - keep
            if to_release:
                # NOTE(ironic-partition): forget them locally before the
                # database may hand them to another service, even if the
                # release fails half-way.
                with self._lock:
                    self._held = self._held - to_release
                self.db.release_claims(self.role, self.host, to_release)
                released = to_release
            self.db.renew_claims(self.role, self.host, self.lease_time)
            valid = frozenset(n for n, c in owned.items() if c.valid)
            to_claim = desired - valid
            if to_claim:
                extra = {'shard': shard} if shard is not None else {}
                self.db.acquire_claims(self.role, self.host, to_claim,
                                       self.lease_time, partition_key,
                                       **extra)
            held = self.db.held_claims(self.role, self.host)
        except Exception as exc:
            error = '%s: %s' % (type(exc).__name__, exc)
        else:
            claimed = frozenset(held) - valid
        return self._conclude(start, statements, ring_nodes, instance_nodes,
                              desired, released, claimed, error,
                              None if error else held)

    def _conclude(self, start, statements, ring_nodes, instance_nodes,
                  desired, released, claimed, error, held):
        with self._lock:
            if held is not None:
                self._held = frozenset(held)
                self._epochs = types.MappingProxyType(dict(held))
                self._valid_until = (start + self.lease_time
                                     - self.fencing_margin)
                failures, self._failures = self._failures, 0
                self._last_error = None
                self._last_ok = start
            else:
                self._failures += 1
                failures = self._failures
                self._last_error = error
            now = self._clock()
            until = self._valid_until
            expired = until is None or now >= until
            mine = self._held
            if expired:
                ring_reported = frozenset()
            else:
                ring_reported = ring_nodes & mine
            if held is not None:
                waiting = ring_nodes - mine
                fenced = ring_nodes & mine if expired else frozenset()
            else:
                waiting = frozenset()
                fenced = ring_nodes - ring_reported
            reported = instance_nodes | ring_reported
            self._last_reported = reported
            self._last_desired = desired
            # NOTE(ironic-partition): fenced means a lease was held once
            # and ran out; never having held one is not news.
            now_fenced = expired and until is not None
            was_fenced, self._was_fenced = self._was_fenced, now_fenced
            seconds = self._clock() - start
            self._last_seconds = round(seconds, 6)
            self._last_statements = (self.db.stats['claim_statements']
                                     - statements)
            outcome = ClaimOutcome(
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
            if failures == 1 or failures % WARN_EVERY == 0:
                if outcome.valid_until is not None:
                    state = (_('still reporting %(n)d claimed nodes for '
                               '%(left).1f s') %
                             {'n': len(outcome.ring_reported),
                              'left': outcome.valid_until - now})
                else:
                    state = _('reporting none of the %d nodes the ring '
                              'gives this service (fenced)') % len(
                                  outcome.fenced)
                LOG.error('Claim round of %(host)s in %(conn)s failed '
                          '(%(n)d in a row); %(state)s: %(err)s',
                          {'host': self.host,
                           'conn': self.db.masked_connection,
                           'n': failures, 'state': state,
                           'err': outcome.error})
        elif failures:
            LOG.info('Claim round of %(host)s succeeded again after '
                     '%(n)d failures', {'host': self.host, 'n': failures})
        if now_fenced and not was_fenced:
            LOG.warning('Fenced: the claims of %(host)s were not renewed '
                        'within lease_time (%(lease)s s) minus '
                        'fencing_margin (%(margin)s s); not reporting '
                        '%(n)d instance-less nodes',
                        {'host': self.host, 'lease': self.lease_time,
                         'margin': self.fencing_margin,
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
        try:
            self._ensure_schema()
            self.db.renew_claims(self.role, self.host, self.lease_time)
            held = self.db.held_claims(self.role, self.host)
        except Exception as exc:
            with self._lock:
                self._failures += 1
                self._last_error = '%s: %s' % (type(exc).__name__, exc)
            LOG.debug('Claim keep-alive failed: %s', exc)
            return False
        with self._lock:
            # NOTE(ironic-partition): only claims held before may stay:
            # anything else in the database is not reported and will be
            # sorted out by the next full round.
            mine = self._held & frozenset(held)
            self._held = mine
            self._epochs = types.MappingProxyType(
                {n: held[n] for n in mine})
            self._valid_until = start + self.lease_time - self.fencing_margin
            self._failures = 0
            self._last_error = None
            self._last_ok = start
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
        try:
            owned = self.db.owned_claims(self.role, self.host)
            to_release = frozenset(owned) - keep
            if not to_release:
                return 0
            with self._lock:
                self._held = self._held - to_release
            return self.db.release_claims(self.role, self.host, to_release)
        except Exception as exc:
            LOG.warning('Could not release the unreported claims of '
                        '%(host)s: %(err)s', {'host': self.host, 'err': exc})
            return 0

    def _release_all(self):
        try:
            released = self.db.release_claims(self.role, self.host)
        except Exception as exc:
            LOG.warning('Could not release the claims of %(host)s in '
                        '%(conn)s; they expire after %(lease)s s: %(err)s',
                        {'host': self.host,
                         'conn': self.db.masked_connection,
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
        if self._owns_connection:
            try:
                self.db.dispose()
            except Exception:
                LOG.debug('Ignoring an error while closing the claims '
                          'database connections', exc_info=True)
        return released
