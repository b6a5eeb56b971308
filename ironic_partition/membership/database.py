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

"""The ``database`` membership backend (the default).

Each service upserts its row in ``ironic_partition_services`` every
``[ironic_partition] heartbeat_interval`` seconds from a plain thread; the
row's ``last_seen`` is written by the database server's clock, and a peer
is alive when ``last_seen`` is at most ``[ironic_partition]
service_down_time`` seconds old by that same clock, evaluated in SQL.

Faults:

* database unreachable at :meth:`DatabaseMembership.start`: raises
  ``DatabaseConnectionFailed`` naming the connection (password masked);
* schema missing or old: SQLite is upgraded automatically (single host,
  nothing to coordinate); PostgreSQL and MariaDB/MySQL raise
  ``DatabaseNotMigrated`` asking to run ``ironic-partition-dbsync
  upgrade``;
* database lost while running: heartbeats are retried with an exponential
  back-off capped at the heartbeat interval, :meth:`members` returns the
  last known membership with ``stale=True``, and :meth:`status` tells; the
  heartbeat thread survives every exception;
* database back after an outage: peers that were alive before it and
  whose heartbeats stopped during it are kept alive until
  ``service_down_time`` after this service last saw the database fail
  (:meth:`members`), so that every live peer has heartbeated again before
  any is judged dead: an outage of the database is not the death of its
  clients;
* live services writing through several database nodes (a Galera cluster
  behind a load balancer that spreads connections): the service closes
  its pooled connections, and :meth:`members` raises
  ``SeveralDatabaseWriters`` if it lasts (see
  :mod:`ironic_partition.claims.db_writers`).
"""

import random
import threading
import time

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.claims import db_writers
from ironic_partition.common import periodic
from ironic_partition import conf as ip_conf
from ironic_partition.db import grants
from ironic_partition.db import health
from ironic_partition.db import identity as identity_mod
from ironic_partition.db import store as store_mod
from ironic_partition import exception
from ironic_partition.membership import base

LOG = logging.getLogger(__name__)

#: The first retry delay, in seconds, after a failed heartbeat.
INITIAL_BACKOFF = 1.0


class DatabaseMembership(base.MembershipBackend):
    """Heartbeats and liveness in the ``[ironic_partition_database]`` DB.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings`: host name, partition key and shard (stored in its
        row), database and timings.
    :param role: this service's role.
    :param version: this service's version, stored in its row.
    :param connection: a :class:`ironic_partition.db.api.Connection` to use
        instead of the configured one (tests, benchmarks).
    :param takeover: at start, replace a live process holding this host
        name instead of refusing to start.
    :param store: the :class:`~ironic_partition.db.store.Store` to use,
        with this process's identity; by default one is opened from
        ``connection`` or the settings' database. This backend
        registers and heartbeats the store's identity.
    """

    name = 'database'

    def __init__(self, settings, role, version=None, connection=None,
                 takeover=False, store=None):
        super().__init__(settings, role, version=version, takeover=takeover)
        service_down_time = settings.service_down_time
        if store is None:
            store = store_mod.Store.open(settings, role, takeover=takeover,
                                         connection=connection)
        #: The :class:`~ironic_partition.db.store.Store`, shared with the
        #: claims.
        self.store = store
        self.heartbeat_interval = settings.heartbeat_interval
        self.service_down_time = service_down_time
        if self.heartbeat_interval >= self.service_down_time:
            LOG.warning('[ironic_partition] heartbeat_interval (%(hb)s) is '
                        'not smaller than service_down_time (%(down)s): '
                        'live services will look dead between heartbeats',
                        {'hb': self.heartbeat_interval,
                         'down': self.service_down_time})
        self._lock = threading.Lock()
        self._heartbeats = periodic.Periodic('ironic-partition-heartbeat',
                                             self._beat, self._next_delay)
        self._snapshot = None
        self._members_stale = False
        self._health = health.Health()
        self._revision = None
        #: Whether the live services write through one database node;
        #: judged only once this service runs (not for the CLI's reads).
        self._writers = db_writers.WriterWatch(2 * service_down_time)
        self._watching = False
        #: The peers alive before the database last failed this service,
        #: kept alive for a while after it answers again; None without
        #: a recent failure.
        self._outage_peers = None
        self._outage_seen = None
        #: The peers this service counts from outside this database
        #: (:meth:`note_outside`), recorded with each heartbeat.
        self._outside = frozenset()
        #: Whether :meth:`members` also counts the peers that live
        #: services of the partition recorded as counted from outside:
        #: for the CLI, which cannot read nova's service group
        #: (:func:`~ironic_partition.partition.readonly.open_membership`).
        self.count_recorded_outside = False

    @property
    def identity(self):
        """This process's identity (:mod:`ironic_partition.claims`)."""
        return self.store.identity

    def _shard_kwargs(self):
        # NOTE(ironic-partition): shard (issue 15): only when set.
        return {'shard': self.shard} if self.shard is not None else {}

    # Start and stop.

    def _connection_failed(self, exc):
        return exception.DatabaseConnectionFailed.from_error(
            self.store.masked_connection, exc)

    def start(self):
        """Check the database, take the host name, start heartbeating.

        :raises: DatabaseConnectionFailed when the database cannot be
            reached; DatabaseNotMigrated when a server database needs
            ``ironic-partition-dbsync upgrade``; DatabaseTooNew;
            DuplicateService when another live process holds this host
            name (nothing is written); NothingToTakeOver.
        :returns: None
        """
        thread = self._heartbeats.thread
        if thread is not None and thread.is_alive():
            return
        try:
            self.store.db.check()
            self._revision = self.store.ensure_schema()
            self.identity.register(self.partition_key, self.version,
                                   **self._shard_kwargs())
        except exception.MembershipError:
            raise
        except Exception as exc:
            # NOTE(ironic-partition): a missing grant is a configuration
            # error, not a database that does not answer.
            if grants.permission_denied(exc):
                raise grants.denied_error(self.store.db, exc) from exc
            raise self._connection_failed(exc)
        self._health.succeeded()
        self._watching = True
        LOG.info('Joined the membership database %(conn)s as %(host)s '
                 '(%(role)s, partition key %(key)r, shard %(shard)r); '
                 'heartbeat every '
                 '%(hb)ss, dead after %(down)ss',
                 {'conn': self.store.masked_connection, 'host': self.host,
                  'role': self.role, 'key': self.partition_key,
                  'shard': self.shard, 'hb': self.heartbeat_interval,
                  'down': self.service_down_time})
        self._heartbeats.start()

    def stop(self, leave=True, timeout=None):
        """Stop heartbeating and, by default, mark this service down at once.

        Never raises: a database that cannot be reached only means that
        peers will notice after ``service_down_time``.

        :param leave: False only stops heartbeating: the row stays as the
            last heartbeat left it, so peers see this service dead after
            ``service_down_time`` unless it is back by then.
        :param timeout: seconds to wait for the heartbeat thread, by default
            the heartbeat interval.
        :returns: None
        """
        self._heartbeats.stop(self.heartbeat_interval if timeout is None
                              else timeout)
        self.identity.release(leave=leave)
        if not leave:
            LOG.info('Stopped heartbeating as %(host)s (%(role)s) without '
                     'leaving: peers see it dead after %(down)s s unless '
                     'it is back', {'host': self.host, 'role': self.role,
                                    'down': self.service_down_time})
        else:
            LOG.info('Left the membership database as %(host)s (%(role)s)',
                     {'host': self.host, 'role': self.role})
        try:
            self.store.dispose()
        except Exception:
            LOG.debug('Ignoring an error while closing the membership '
                      'database connections', exc_info=True)

    # Heartbeats.

    def _next_delay(self):
        failures = self._health.failures
        if not failures:
            return self.heartbeat_interval
        backoff = min(INITIAL_BACKOFF * 2 ** (failures - 1),
                      self.heartbeat_interval)
        # NOTE(ironic-partition): jitter keeps many services from hitting a
        # database that comes back all at the same instant.
        return backoff * random.uniform(0.5, 1.0)

    def _beat(self):
        if identity_mod.process_exiting():
            # NOTE(ironic-partition): a process whose main thread ended
            # (nova-compute after a failed SIGHUP restart, an interpreter
            # waiting on a stuck non-daemon thread) serves nothing: let
            # peers see it dead.
            LOG.warning('The main thread of this process ended: no more '
                        'heartbeats as %(host)s (%(role)s); peers see it '
                        'dead after service_down_time',
                        {'host': self.host, 'role': self.role})
            return False
        # NOTE(ironic-partition): heartbeat() catches everything already.
        self.heartbeat()

    def heartbeat(self):
        """Send one heartbeat now; never raises.

        :returns: True when it was recorded, False when it failed.
        """
        try:
            if not self.identity.registered:
                self.identity.register(self.partition_key, self.version,
                                       **self._shard_kwargs())
            self.identity.beat(self.partition_key, self.version,
                               outside_peers=self._outside,
                               **self._shard_kwargs())
        except exception.IdentityLost:
            # NOTE(ironic-partition): final: another incarnation holds the
            # host name; Identity.mark_lost logged it once.
            self._heartbeats.stop(0)
            return False
        except Exception as exc:
            failures = self._health.failed(exc)
            self._note_outage()
            if self._health.worth_logging(failures):
                LOG.error('Heartbeat of %(host)s (%(role)s) to the '
                          'membership database %(conn)s failed '
                          '(%(n)d in a row); retrying with back-off and '
                          'using the last known membership: %(err)s',
                          {'host': self.host, 'role': self.role,
                           'conn': self.store.masked_connection,
                           'n': failures, 'err': exc})
            else:
                LOG.debug('Heartbeat failed again (%(n)d): %(err)s',
                          {'n': failures, 'err': exc})
            return False
        failures = self._health.succeeded()
        if failures:
            LOG.info('Heartbeat of %(host)s (%(role)s) to the membership '
                     'database succeeded again after %(n)d failures',
                     {'host': self.host, 'role': self.role, 'n': failures})
        return True

    def note_outside(self, peers):
        """Record, from the next heartbeat on, the peers counted outside.

        The peers this service counts in its ring because nova's service
        group has them up while they do not heartbeat this database: the
        CLI reads them back (:attr:`count_recorded_outside`).

        :param peers: an iterable of host names.
        :returns: None
        """
        self._outside = frozenset(peers)

    # Queries.

    def members(self, partition_key=None, peer_list=None, shard=None):
        """Return the live services of this role.

        :param partition_key: the partition key, or None when unset.
        :param peer_list: host names allowed when ``partition_key`` or
            ``shard`` is set.
        :param shard: the shard, or None when unset.
        :raises: MembershipUnavailable when the database cannot be read and
            no membership was ever read; SeveralDatabaseWriters when the
            live services have written through several database nodes for
            longer than twice ``service_down_time``.
        :returns: a :class:`base.Membership`, ``stale`` when it is the last
            known one.
        """
        try:
            snapshot = self.store.services.services(self.role,
                                                    self.service_down_time)
        except Exception as exc:
            with self._lock:
                snapshot = self._snapshot
                first = not self._members_stale
                self._members_stale = True
            self._note_outage()
            if snapshot is None:
                raise exception.MembershipUnavailable(
                    role=self.role,
                    reason=_('the membership database %(conn)s cannot be '
                             'read: %(err)s') % {
                                 'conn': self.store.masked_connection,
                                 'err': exc})
            if first:
                LOG.warning('Cannot read the membership database %(conn)s; '
                            'using the membership known as of %(as_of)s: '
                            '%(err)s',
                            {'conn': self.store.masked_connection,
                             'as_of': snapshot.as_of, 'err': exc})
            return base.compute_membership(
                self.host, snapshot.services, partition_key, peer_list,
                snapshot.as_of, stale=True, shard=shard)
        with self._lock:
            was_stale, self._members_stale = self._members_stale, False
            self._snapshot = snapshot
        if was_stale:
            LOG.info('Reading the membership database works again')
        if self._watching:
            self._check_writers(snapshot.services)
        membership = base.compute_membership(
            self.host, self._after_outage(snapshot.services), partition_key,
            peer_list, snapshot.as_of, shard=shard)
        if self.count_recorded_outside:
            membership = base.with_recorded_outside(
                membership, snapshot.services, peer_list)
        return membership

    def _note_outage(self):
        """Remember that the database failed this service just now."""
        self._writers.reset()
        with self._lock:
            if self._outage_peers is None:
                snapshot = self._snapshot
                self._outage_peers = frozenset(
                    s.host for s in (snapshot.services if snapshot else ())
                    if s.alive)
            self._outage_seen = time.monotonic()

    def _after_outage(self, services):
        """Keep the peers an outage silenced alive for a while.

        The peers' heartbeats fail while the database is unreachable, as
        this service's do; when it answers again, the first service to
        read it would see peers whose heartbeat has not been retried yet
        as dead, and take their nodes (their claims ran out meanwhile)
        until their next heartbeat: a move and a move back in nova. Until
        ``service_down_time`` has passed since this service last saw the
        database fail, a peer that was alive before the outage and is not
        marked down counts as alive. A peer that really died during the
        outage is taken over that much later.

        :param services: the rows read.
        :returns: the rows, with those peers alive.
        """
        with self._lock:
            peers, seen = self._outage_peers, self._outage_seen
            if peers is None:
                return services
            left = seen + self.service_down_time - time.monotonic()
            if left <= 0:
                self._outage_peers = self._outage_seen = None
                return services
        # NOTE(ironic-partition): this service counts itself anyway; its
        # own row is not a peer to name.
        me = ip_conf.normalize_host(self.host)
        kept = sorted(s.host for s in services
                      if s.host in peers and not s.alive and not s.down
                      and ip_conf.normalize_host(s.host) != me)
        if not kept:
            return services
        LOG.info('Counting %(peers)s alive for %(left).1f s more: the '
                 'membership database failed this service %(ago).1f s '
                 'ago, and their heartbeats stopped during the outage, as '
                 'its own did',
                 {'peers': ', '.join(kept), 'left': left,
                  'ago': self.service_down_time - left})
        return tuple(s._replace(alive=True) if s.host in kept else s
                     for s in services)

    def _check_writers(self, services):
        watch = self._writers
        was = watch.since
        verdict = watch.observe(services, time.monotonic())
        if verdict.reconnect:
            LOG.warning('The live services write through several database '
                        'nodes: %(nodes)s; closing the database connections '
                        'of %(host)s so that its next ones go where the '
                        'load balancer sends new connections now',
                        {'nodes': db_writers.describe(watch.nodes),
                         'host': self.host})
            try:
                self.store.dispose()
            except Exception:
                LOG.debug('Ignoring an error while closing the membership '
                          'database connections', exc_info=True)
        elif was is not None and watch.since is None:
            LOG.info('The live services write through one database node '
                     'again: %s', db_writers.describe(watch.nodes))
        if verdict.problem:
            raise exception.SeveralDatabaseWriters(reason=verdict.problem)

    def status(self):
        """Describe the backend, its database and its heartbeats.

        :returns: a dict of plain values.
        """
        result = super().status()
        failures = self._health.failures
        with self._lock:
            result.update({
                'connection': self.store.masked_connection,
                'dialect': self.store.dialect,
                'schema_revision': self._revision,
                'running': bool(self._heartbeats.thread and
                                self._heartbeats.thread.is_alive()),
                'heartbeat_interval': self.heartbeat_interval,
                'service_down_time': self.service_down_time,
                'database_reachable': failures == 0,
                'consecutive_failures': failures,
                'last_error': self._health.last_error,
                'seconds_since_last_heartbeat': (
                    self._health.seconds_since_ok()),
                'membership_stale': self._members_stale,
                'database_nodes': dict(self._writers.nodes),
                'membership_as_of': (
                    self._snapshot.as_of.isoformat()
                    if self._snapshot is not None else None),
            })
        return result
