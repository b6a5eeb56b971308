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

"""Queries on the services table: heartbeats and the holder of a host name.

Every statement runs in its own short transaction and takes no read
locks, which keeps heartbeats deadlock-free on MariaDB (Galera included):

* a heartbeat is an ``UPDATE`` of its own row by its unique key; only when
  no row matched does it ``INSERT`` in a *separate* transaction, and if
  another writer inserted the same row first (``DBDuplicateEntry``) it
  goes back to the ``UPDATE``. No ``SELECT ... FOR UPDATE``, so no gap
  locks are held between statements;
* deadlocks reported by the server anyway (Galera certification failures
  are reported as deadlocks) are retried by oslo.db's ``wrap_db_retry``.

All times come from the database server's clock (``models.utcnow``), and
liveness is decided in SQL on the server, so clocks of the hosts play no
part.
"""

import collections
import json

from oslo_db import exception as db_exc
import sqlalchemy as sa

from ironic_partition.db import _common
from ironic_partition.db import models
from ironic_partition import exception

#: One row of the services table, with liveness evaluated on the server.
#: ``incarnation`` is None once the process gave the host name up;
#: ``started_at`` (server clock), ``origin`` and ``shard`` may be None;
#: ``database_node`` is the database node that took the last heartbeat
#: (``host:port``; None where the database cannot tell);
#: ``outside_peers`` the peers the service last said it counts from
#: nova's service group (a tuple, empty when none);
#: ``claims_database_node`` the database node of its last claim round,
#: and ``database_clocks`` what it measured of the database nodes' clocks
#: (``{node: seconds}``; None when nothing).
ServiceRecord = collections.namedtuple(
    'ServiceRecord',
    ['host', 'role', 'partition_key', 'version', 'created_at', 'last_seen',
     'down', 'alive', 'incarnation', 'started_at', 'origin', 'shard',
     'database_node', 'outside_peers', 'claims_database_node',
     'database_clocks'],
    defaults=(None, None, None, None, None, (), None, None))

#: What :meth:`ServicesAPI.register_service` did: ``adoptable`` is the
#: previous incarnation whose claims the new one may adopt (provably
#: gone), or None; ``replaced`` is the live holder's :data:`ServiceRecord`
#: a takeover replaced, or None; ``database_clocks`` what the previous
#: processes of the host name measured of the database nodes' clocks, or
#: None.
Registration = collections.namedtuple(
    'Registration', ['adoptable', 'replaced', 'database_clocks'],
    defaults=(None,))

#: The services of one role and the server's clock when they were read.
Snapshot = collections.namedtuple('Snapshot', ['as_of', 'services'])


def join_peers(peers):
    """The ``outside_peers`` column's value for some host names.

    :param peers: an iterable of host names, or None.
    :returns: the sorted names, comma-separated; None when there are none.
    """
    return ','.join(sorted(peers)) if peers else None


def split_peers(value):
    """The host names of an ``outside_peers`` value.

    :param value: the column's value, or None.
    :returns: a tuple of names.
    """
    return tuple(p for p in (value or '').split(',') if p)


def join_clocks(levels):
    """The ``database_clocks`` column's value for some clock levels.

    :param levels: ``{node: seconds}``, or None.
    :returns: a JSON string; None when there are none.
    """
    if not levels:
        return None
    return json.dumps({str(n): round(float(v), 3)
                       for n, v in sorted(levels.items())},
                      sort_keys=True)


def split_clocks(value):
    """The clock levels of a ``database_clocks`` value.

    :param value: the column's value, or None.
    :returns: ``{node: seconds}``, or None when there are none or the
        value is not what :func:`join_clocks` writes.
    """
    if not value:
        return None
    try:
        levels = json.loads(value)
        return {str(n): float(v) for n, v in levels.items()} or None
    except (ValueError, TypeError, AttributeError):
        return None


def key(host, role):
    """SQL: the services row of a host and role.

    :param host: the host name (compared lower-cased).
    :param role: the service role.
    :returns: a SQL condition.
    """
    table = models.Service.__table__
    return sa.and_(table.c.host == host.lower(), table.c.role == role)


class ServicesAPI(object):
    """The services rows of one membership database.

    :param db: the :class:`~ironic_partition.db.api.Connection` whose
        transactions the queries run in.
    """

    def __init__(self, db):
        self._db = db

    def _update(self, host, role, values):
        table = models.Service.__table__
        with self._db.writer() as conn:
            result = conn.execute(
                sa.update(table).where(key(host, role)).values(
                    **values))
            return result.rowcount

    @_common.retry
    def _heartbeat(self, host, role, partition_key, version):
        values = {'partition_key': partition_key, 'version': version,
                  'down': False, 'last_seen': models.utcnow(),
                  'database_node': models.server_node()}
        if self._update(host, role, values):
            return False
        table = models.Service.__table__
        try:
            with self._db.writer() as conn:
                conn.execute(sa.insert(table).values(
                    host=host.lower(), role=role,
                    created_at=models.utcnow(), **values))
            return True
        except db_exc.DBDuplicateEntry:
            # NOTE(ironic-partition): another writer (a restarted copy of
            # this service, or a concurrent thread) inserted the row
            # between our UPDATE and INSERT; update it instead.
            self._db.stats['duplicate_retries'] += 1
            if self._update(host, role, values):
                return False
            raise db_exc.RetryRequest(
                db_exc.DBError('Service row %s/%s vanished during the '
                               'heartbeat' % (host, role)))

    def heartbeat(self, host, role, partition_key=None, version=None):
        """Record that a service is alive, by the server's clock.

        :param host: the service's host name (stored lower-cased).
        :param role: one of :data:`models.ROLES`.
        :param partition_key: the service's partition key; None (unset) and
            ``''`` (the default group) are stored as different values.
        :param version: the service's version string, or None.
        :returns: True when the row was created, False when it existed.
        """
        if partition_key is not None:
            partition_key = partition_key.lower()
        created = self._heartbeat(host, role, partition_key, version)
        self._db.stats['heartbeats'] += 1
        return created

    def _holder_query(self, host, role):
        table = models.Service.__table__
        alive = sa.and_(
            table.c.last_seen >= models.utc_ago(
                sa.bindparam('down_time', type_=sa.Integer)),
            table.c.down == sa.false())
        return sa.select(
            table.c.incarnation, table.c.started_at, table.c.origin,
            table.c.liveness_token, table.c.last_seen, table.c.down,
            sa.case((alive, sa.literal(1)), else_=sa.literal(0)),
            models.utcnow(), table.c.partition_key, table.c.version,
            table.c.created_at, table.c.shard, table.c.database_clocks,
        ).where(key(host, role))

    @_common.retry
    def register_service(self, host, role, incarnation, origin,
                         liveness_token, partition_key=None, shard=None,
                         version=None, service_down_time=60, takeover=False,
                         gone=None):
        """Make an incarnation the one holder of a host name.

        In one transaction, with the row locked: when another incarnation
        holds the name and is alive (not marked down, a heartbeat within
        ``service_down_time`` by the server's clock, and not ``gone``),
        refuse, or with ``takeover`` replace it; otherwise take the name.
        A refused registration writes nothing.

        :param host: the host name (stored lower-cased).
        :param role: the service role.
        :param incarnation: the new process's incarnation UUID.
        :param origin: where it runs, for people.
        :param liveness_token: what tells on its machine whether it runs.
        :param partition_key: recorded in the row.
        :param shard: recorded in the row.
        :param version: recorded in the row.
        :param service_down_time: seconds of silence after which a holder
            is dead.
        :param takeover: replace a live holder.
        :param gone: a callable telling from a liveness token whether that
            process is certainly gone (:func:`ironic_partition.db.identity.
            provably_gone`); None means never.
        :raises DuplicateService: a live holder exists and no takeover.
        :raises NothingToTakeOver: a takeover and no live holder.
        :returns: a :data:`Registration`.
        """
        host = host.lower()
        if partition_key is not None:
            partition_key = partition_key.lower()
        table = models.Service.__table__
        values = {'partition_key': partition_key, 'shard': shard,
                  'version': version, 'down': False,
                  'last_seen': models.utcnow(), 'incarnation': incarnation,
                  'started_at': models.utcnow(), 'origin': origin,
                  'liveness_token': liveness_token}
        with self._db.writer() as conn:
            row = conn.execute(
                self._holder_query(host, role).with_for_update(),
                {'down_time': int(service_down_time)}).first()
            adoptable = replaced = None
            holder = row is not None and row[0] is not None
            alive = holder and bool(row[6]) and not (
                gone is not None and gone(row[3]))
            if alive and row[0] != incarnation:
                record = ServiceRecord(
                    host=host, role=role, partition_key=row[8],
                    version=row[9], created_at=_common.utc(row[10]),
                    last_seen=_common.utc(row[4]), down=bool(row[5]),
                    alive=True,
                    incarnation=row[0], started_at=_common.utc(row[1]),
                    origin=row[2], shard=row[11])
                if not takeover:
                    age = (_common.utc(row[7])
                           - _common.utc(row[4])).total_seconds()
                    raise exception.DuplicateService(
                        host=host, role=role,
                        started_at=(record.started_at.isoformat()
                                    if record.started_at else '?'),
                        origin=row[2] or '?', age=age)
                replaced = record
            elif takeover:
                raise exception.NothingToTakeOver(
                    host=host, role=role,
                    reason=('no service row' if row is None else
                            'its last holder gave it up' if not holder else
                            'its last holder is dead'))
            elif holder and row[0] != incarnation and gone is not None \
                    and gone(row[3]):
                adoptable = row[0]
            if row is None:
                conn.execute(sa.insert(table).values(
                    host=host, role=role, created_at=models.utcnow(),
                    **values))
            else:
                conn.execute(sa.update(table).where(
                    key(host, role)).values(**values))
        self._db.stats['registrations'] += 1
        return Registration(
            adoptable=adoptable, replaced=replaced,
            database_clocks=split_clocks(row[12]) if row is not None
            else None)

    @_common.retry
    def fence_dead(self, host, role, fence, origin, service_down_time):
        """Fence a dead host name for good, proving it dead first.

        In one transaction, with the services row locked: refuse, writing
        nothing, while the name's last heartbeat is within
        ``service_down_time`` by the server's clock (marked down or not:
        a graceful stop may be a restart) or while any claim of the host
        is still valid. Otherwise the row names ``fence`` (an incarnation
        no process runs as: a process of the old incarnation that comes
        back loses the name at its next heartbeat or claim) and is marked
        down, and the host's claims, all expired, are freed for the hosts
        that take its nodes.

        :param host: the host name.
        :param role: the service role.
        :param fence: a new incarnation UUID that no process holds.
        :param origin: who fenced it, recorded in the row.
        :param service_down_time: seconds of silence after which a holder
            is dead.
        :raises RecoveryRefused: no such row, a recent heartbeat, or a
            valid claim; nothing was written.
        :returns: the :data:`ServiceRecord` of the row before the fence.
        """
        host = host.lower()
        table = models.Service.__table__
        claims = models.Claim.__table__
        with self._db.writer() as conn:
            row = conn.execute(
                self._holder_query(host, role).with_for_update(),
                {'down_time': int(service_down_time)}).first()
            if row is None:
                raise exception.RecoveryRefused(
                    host=host, reason='no service of role %s ever ran under '
                    'that name in the membership database' % role)
            now = _common.utc(row[7])
            age = (now - _common.utc(row[4])).total_seconds()
            if age < service_down_time:
                raise exception.RecoveryRefused(
                    host=host, reason='its last heartbeat was %.1f s ago '
                    '(database clock), within service_down_time (%d s)%s; '
                    'a live or restarting process may hold it' % (
                        age, service_down_time,
                        ', incarnation %s on %s' % (row[0], row[2] or '?')
                        if row[0] else ''))
            valid = conn.execute(
                sa.select(sa.func.count(), sa.func.max(
                    claims.c.expires_at)).where(
                    claims.c.role == role, claims.c.owner == host,
                    claims.c.expires_at > models.utcnow())).first()
            if valid[0]:
                left = (_common.utc(valid[1]) - now).total_seconds()
                raise exception.RecoveryRefused(
                    host=host, reason='%d of its claims are still valid, '
                    'for up to %.1f s (database clock): its nodes may '
                    'still be reported' % (valid[0], max(left, 0.0)))
            conn.execute(sa.update(table).where(key(host, role)).values(
                incarnation=fence, origin=origin, down=True,
                liveness_token=None))
            conn.execute(sa.update(claims).where(
                claims.c.role == role, claims.c.owner == host).values(
                owner=None, claimed_at=None, incarnation=None,
                updated_at=models.utcnow()))
        return ServiceRecord(
            host=host, role=role, partition_key=row[8], version=row[9],
            created_at=_common.utc(row[10]), last_seen=_common.utc(row[4]),
            down=bool(row[5]), alive=False, incarnation=row[0],
            started_at=_common.utc(row[1]), origin=row[2], shard=row[11])

    @_common.retry
    def beat(self, host, role, incarnation, partition_key=None,
             version=None, shard=None, outside_peers=None,
             claims_node=None, database_clocks=None):
        """Heartbeat for an incarnation, only while it holds the host name.

        :param host: the host name.
        :param role: the service role.
        :param incarnation: the incarnation heartbeating.
        :param partition_key: recorded in the row.
        :param version: recorded in the row.
        :param shard: recorded in the row.
        :param outside_peers: the peers this service counts from nova's
            service group, recorded in the row (none: NULL).
        :param claims_node: the database node of the service's last claim
            round, recorded in the row (None: NULL).
        :param database_clocks: what the service measured of the database
            nodes' clocks (``{node: seconds}``), recorded in the row; None
            leaves the recorded value as it is.
        :returns: True when recorded; False when the row names another
            incarnation (or none): this one lost the host name.
        """
        if partition_key is not None:
            partition_key = partition_key.lower()
        with self._db.writer() as conn:
            matched = self._update_holder(
                conn, host, role, incarnation, partition_key=partition_key,
                version=version, shard=shard, down=False,
                last_seen=models.utcnow(),
                database_node=models.server_node(),
                outside_peers=join_peers(outside_peers),
                claims_database_node=claims_node,
                **({'database_clocks': join_clocks(database_clocks)}
                   if database_clocks else {}))
        self._db.stats['heartbeats'] += 1
        return bool(matched)

    def _update_holder(self, conn, host, role, holder, **values):
        """Update a services row only while it names ``holder``."""
        table = models.Service.__table__
        return conn.execute(
            sa.update(table).where(
                key(host, role), table.c.incarnation == holder,
            ).values(**values)).rowcount

    def holder(self, host, role):
        """The incarnation holding a host name now.

        :param host: the host name.
        :param role: the service role.
        :returns: the incarnation, or None (no row, or the name given up).
        """
        table = models.Service.__table__
        with self._db.reader() as conn:
            row = conn.execute(sa.select(table.c.incarnation).where(
                key(host, role))).first()
        return row[0] if row is not None else None

    def describe_holder(self, host, role):
        """Say who holds a host name now, for error messages.

        :param host: the host name.
        :param role: the service role.
        :returns: a one-line description.
        """
        try:
            with self._db.reader() as conn:
                row = conn.execute(self._holder_query(host, role),
                                   {'down_time': 0}).first()
        except Exception as exc:
            return 'the holder cannot be read: %s' % exc
        if row is None:
            return 'its service row was deleted'
        if row[0] is None:
            return 'the host name was given up'
        return 'incarnation %s on %s, started at %s, holds it now' % (
            row[0], row[2] or '?', row[1])

    @_common.retry
    def release_service(self, host, role, incarnation, down=True):
        """Give a host name up (graceful stop) for an incarnation.

        The row keeps its last heartbeat. Claims of that incarnation are
        detached (their incarnation becomes NULL), so that the next
        incarnation of the host adopts them, with the same epochs.

        :param host: the host name.
        :param role: the service role.
        :param incarnation: the incarnation giving the name up.
        :param down: also mark the service down at once (peers rebalance
            at their next refresh); False keeps it alive until
            ``service_down_time``.
        :returns: True when this incarnation held the name.
        """
        claims = models.Claim.__table__
        with self._db.writer() as conn:
            held = self._update_holder(conn, host, role, incarnation,
                                       incarnation=None, down=bool(down))
            conn.execute(
                sa.update(claims).where(
                    claims.c.role == role, claims.c.owner == host.lower(),
                    claims.c.incarnation == incarnation,
                ).values(incarnation=None))
        return bool(held)

    def services(self, role, service_down_time):
        """Read every service of a role, with liveness decided in SQL.

        A service is alive when it is not marked down and its last
        heartbeat is no older than ``service_down_time`` seconds by the
        server's clock.

        :param role: the role to read.
        :param service_down_time: seconds after which a silent service is
            dead.
        :returns: a :class:`Snapshot`.
        """
        table = models.Service.__table__
        alive = sa.and_(
            table.c.last_seen >= models.utc_ago(
                sa.literal(int(service_down_time), sa.Integer)),
            table.c.down == sa.false())
        query = sa.select(
            table.c.host, table.c.role, table.c.partition_key,
            table.c.version, table.c.created_at, table.c.last_seen,
            table.c.down,
            sa.case((alive, sa.literal(1)), else_=sa.literal(0)),
            table.c.incarnation, table.c.started_at, table.c.origin,
            table.c.shard, table.c.database_node, table.c.outside_peers,
            table.c.claims_database_node, table.c.database_clocks,
            models.utcnow(),
        ).where(table.c.role == role).order_by(table.c.host)
        with self._db.reader() as conn:
            rows = conn.execute(query).all()
            if not rows:
                now = conn.execute(sa.select(models.utcnow())).scalar()
            else:
                now = rows[0][-1]
        services = tuple(
            ServiceRecord(host=row[0], role=row[1], partition_key=row[2],
                          version=row[3], created_at=_common.utc(row[4]),
                          last_seen=_common.utc(row[5]), down=bool(row[6]),
                          alive=bool(row[7]), incarnation=row[8],
                          started_at=_common.utc(row[9]), origin=row[10],
                          shard=row[11], database_node=row[12],
                          outside_peers=split_peers(row[13]),
                          claims_database_node=row[14],
                          database_clocks=split_clocks(row[15]))
            for row in rows)
        return Snapshot(as_of=_common.utc(now), services=services)
