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

"""Queries on the membership database.

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

Claims (``ironic_partition_claims``, see :mod:`ironic_partition.claims`)
are handled in bulk, a few statements per claim round whatever the number
of nodes (node UUIDs travel in chunks of :data:`CHUNK_SIZE`):

* every write is a conditional ``UPDATE`` (or an ``INSERT`` that ignores
  conflicts) whose condition is evaluated by the server on the latest
  committed row, under the row lock: on PostgreSQL at READ COMMITTED an
  ``UPDATE`` that waited re-checks its ``WHERE`` on the new row version,
  on MariaDB/MySQL at READ COMMITTED it reads the latest committed version
  and locks what matches, and SQLite serialises writers. Two services can
  therefore never both take the same claim;
* a claim is taken with a compare-and-swap on ``epoch`` (the value read
  just before) *and* only while the row is free (no owner, or a lease
  expired by the server's clock); taking it increments ``epoch``;
* lease expiry is evaluated by the server's clock in SQL
  (``models.utcnow``, ``models.utc_after``).
"""

import collections
import datetime
import os
import threading

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as sa_mysql
from sqlalchemy.dialects import postgresql as sa_postgresql
from sqlalchemy.dialects import sqlite as sa_sqlite
from sqlalchemy.engine import url as sa_url

from ironic_partition.db import migration
from ironic_partition.db import models
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: How often a heartbeat retries after a deadlock or a lost insert race.
MAX_RETRIES = 10

#: Every write retries deadlocks (and Galera certification failures, which
#: are reported as deadlocks) the same way.
_retry = oslo_db_api.wrap_db_retry(max_retries=MAX_RETRIES,
                                   retry_interval=0.05, max_retry_interval=1,
                                   inc_retry_interval=True,
                                   retry_on_deadlock=True)

#: One row of the services table, with liveness evaluated on the server.
#: ``incarnation`` is None once the process gave the host name up;
#: ``started_at`` (server clock), ``origin`` and ``shard`` may be None.
ServiceRecord = collections.namedtuple(
    'ServiceRecord',
    ['host', 'role', 'partition_key', 'version', 'created_at', 'last_seen',
     'down', 'alive', 'incarnation', 'started_at', 'origin', 'shard'],
    defaults=(None, None, None, None))

#: What :meth:`Connection.register_service` did: ``adoptable`` is the
#: previous incarnation whose claims the new one may adopt (provably
#: gone), or None; ``replaced`` is the live holder's :data:`ServiceRecord`
#: a takeover replaced, or None.
Registration = collections.namedtuple('Registration',
                                      ['adoptable', 'replaced'])

#: The services of one role and the server's clock when they were read.
Snapshot = collections.namedtuple('Snapshot', ['as_of', 'services'])

#: One row of the claims table; ``valid`` (owner set and lease not expired)
#: is evaluated by the server's clock.
ClaimRecord = collections.namedtuple(
    'ClaimRecord',
    ['node_id', 'owner', 'epoch', 'partition_key', 'claimed_at',
     'expires_at', 'updated_at', 'valid', 'incarnation', 'shard'],
    defaults=(None, None))

#: Claims read at once and the server's clock when they were read.
ClaimSnapshot = collections.namedtuple('ClaimSnapshot', ['as_of', 'claims'])

#: An own claim as seen by :meth:`Connection.owned_claims`.
OwnedClaim = collections.namedtuple('OwnedClaim', ['epoch', 'valid'])

#: How many node UUIDs one claim statement carries at most. SQLite allows
#: 32,766 bound parameters; a compare-and-swap chunk uses three per node.
CHUNK_SIZE = 2000


def _chunks(items, size=CHUNK_SIZE):
    """Split node UUIDs into sorted chunks.

    Sorting makes every writer lock rows in the same (primary key) order,
    which keeps bulk updates of overlapping node sets from deadlocking.

    :param items: an iterable of strings.
    :param size: the largest chunk.
    :returns: an iterator of lists.
    """
    ordered = sorted(set(items))
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def _microseconds(seconds):
    return int(round(seconds * 1000000))


#: ``expires_at`` and ``updated_at`` of a placeholder row: a node that was
#: never claimed. Any time in the past would do.
_NEVER = datetime.datetime(1970, 1, 1)


def mask_url(connection):
    """Return a connection URL with its password hidden.

    :param connection: a SQLAlchemy URL string.
    :returns: the URL with the password replaced by ``***``.
    """
    try:
        return sa_url.make_url(connection).render_as_string(
            hide_password=True)
    except Exception:
        return '<unparsable connection URL>'


def _engine_kwargs(group):
    """Map the oslo.db options of a group to ``create_engine`` arguments.

    :param group: the ``[ironic_partition_database]`` option group.
    :returns: a dict of keyword arguments.
    """
    return {
        'mysql_sql_mode': group.mysql_sql_mode,
        'mysql_wsrep_sync_wait': group.mysql_wsrep_sync_wait,
        'connection_recycle_time': group.connection_recycle_time,
        'connection_debug': group.connection_debug,
        'max_pool_size': group.max_pool_size,
        'max_overflow': group.max_overflow,
        'pool_timeout': group.pool_timeout,
        'sqlite_synchronous': group.sqlite_synchronous,
        'connection_trace': group.connection_trace,
        'connection_parameters': group.connection_parameters,
        # NOTE(ironic-partition): the connection is tested by Connection.
        # check() instead, which gives our own error naming the option.
        'max_retries': 0,
        'retry_interval': group.retry_interval,
    }


def _ensure_sqlite_directory(url):
    if url.get_backend_name() != 'sqlite':
        return
    path = url.database
    if not path or path == ':memory:' or path.startswith('file:'):
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        LOG.info('Creating directory %s for the membership database',
                 directory)
        os.makedirs(directory, mode=0o750, exist_ok=True)


def _utc(value):
    """Attach UTC to a naive timestamp read back from the database.

    :param value: a naive ``datetime`` (UTC by construction) or None.
    :returns: an aware ``datetime`` or None.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def _begin_immediately(engine):
    """Make every SQLite transaction take the write lock when it begins.

    A SQLite transaction that reads and then writes (the identity checks
    read the services row, then write) must upgrade its lock, and when
    another process is writing SQLite answers "database is locked" at once
    rather than waiting. Several services sharing one SQLite file (the
    agents of one machine) then fail their claim rounds. ``BEGIN
    IMMEDIATE`` takes the lock up front and waits for it (pysqlite's busy
    timeout) instead.

    oslo.db already turns pysqlite's own transaction handling off and
    emits a plain ``BEGIN`` from a ``begin`` listener unless
    ``conn.info['in_transaction']`` is set (SQLAlchemy's recipe for
    pysqlite), and clears that marker at commit and rollback. Its
    listener is replaced by one that begins immediately; should oslo.db
    rename it, both run, oslo.db's first, and transactions simply begin
    as before.

    :param engine: a SQLite engine made by oslo.db.
    :returns: None
    """
    for listener in list(engine.dispatch.begin):
        if getattr(listener, '__name__', None) == '_sqlite_emit_begin':
            sa.event.remove(engine, 'begin', listener)

    @sa.event.listens_for(engine, 'begin')
    def _begin(conn):
        if 'in_transaction' not in conn.info:
            conn.exec_driver_sql('BEGIN IMMEDIATE')
            conn.info['in_transaction'] = True


class Connection:
    """Access to one membership database.

    :param connection: the SQLAlchemy URL.
    :param engine_kwargs: extra ``oslo_db.sqlalchemy.engines.create_engine``
        arguments.
    """

    def __init__(self, connection, **engine_kwargs):
        self.connection = connection
        self.masked_connection = mask_url(connection)
        engine_kwargs.setdefault('mysql_sql_mode', 'TRADITIONAL')
        self._engine_kwargs = engine_kwargs
        self._engine = None
        self._lock = threading.Lock()
        #: Counters useful to tests and benchmarks.
        self.stats = collections.Counter()

    @classmethod
    def from_conf(cls, conf, group='ironic_partition_database'):
        """Build a connection from the ``[ironic_partition_database]`` opts.

        :param conf: an ``oslo_config.cfg.ConfigOpts`` with the group
            registered.
        :param group: the option group name.
        :returns: a :class:`Connection`.
        """
        opts = conf[group]
        return cls(opts.connection, **_engine_kwargs(opts))

    @property
    def engine(self):
        """The SQLAlchemy engine, created on first use.

        :returns: a ``sqlalchemy.engine.Engine``.
        """
        with self._lock:
            if self._engine is None:
                url = sa_url.make_url(self.connection)
                _ensure_sqlite_directory(url)
                self._engine = engines.create_engine(
                    self.connection, **self._engine_kwargs)
                if url.get_backend_name() == 'sqlite':
                    _begin_immediately(self._engine)
            return self._engine

    @property
    def dialect(self):
        """The name of the database dialect, e.g. ``postgresql``.

        :returns: a string.
        """
        return sa_url.make_url(self.connection).get_backend_name()

    def dispose(self):
        """Close every pooled connection.

        :returns: None
        """
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None

    def check(self):
        """Check that the server answers.

        :raises: oslo_db.exception.DBError (DBConnectionError usually) when
            it does not.
        :returns: the server's current time, an aware UTC ``datetime``.
        """
        with self.engine.connect() as conn:
            return _utc(conn.execute(sa.select(models.utcnow())).scalar())

    def schema_revision(self):
        """Return the schema revision of the database.

        :returns: a revision id, or None when there is no schema.
        """
        return migration.current_revision(self.engine)

    def upgrade(self, revision='head'):
        """Upgrade the schema (idempotent).

        :param revision: the target revision.
        :returns: the revision the database is at afterwards.
        """
        return migration.upgrade(self.engine, revision)

    def _write(self):
        """Open a short write transaction.

        On MariaDB/MySQL it runs at READ COMMITTED: an UPDATE that matches
        no row then takes no gap lock, so racing first heartbeats cannot
        deadlock with each other's INSERT.

        :returns: a context manager yielding a connection.
        """
        engine = self.engine
        if engine.dialect.name in ('mysql', 'mariadb'):
            engine = engine.execution_options(
                isolation_level='READ COMMITTED')
        return engine.begin()

    def _key(self, host, role):
        table = models.Service.__table__
        return sa.and_(table.c.host == host.lower(), table.c.role == role)

    def _update(self, host, role, values):
        table = models.Service.__table__
        with self._write() as conn:
            result = conn.execute(
                sa.update(table).where(self._key(host, role)).values(
                    **values))
            return result.rowcount

    @_retry
    def _heartbeat(self, host, role, partition_key, version):
        values = {'partition_key': partition_key, 'version': version,
                  'down': False, 'last_seen': models.utcnow()}
        if self._update(host, role, values):
            return False
        table = models.Service.__table__
        try:
            with self._write() as conn:
                conn.execute(sa.insert(table).values(
                    host=host.lower(), role=role,
                    created_at=models.utcnow(), **values))
            return True
        except db_exc.DBDuplicateEntry:
            # NOTE(ironic-partition): another writer (a restarted copy of
            # this service, or a concurrent thread) inserted the row
            # between our UPDATE and INSERT; update it instead.
            self.stats['duplicate_retries'] += 1
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
        self.stats['heartbeats'] += 1
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
            table.c.created_at, table.c.shard,
        ).where(self._key(host, role))

    @_retry
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
            process is certainly gone (:func:`ironic_partition.identity.
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
        with self._write() as conn:
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
                    version=row[9], created_at=_utc(row[10]),
                    last_seen=_utc(row[4]), down=bool(row[5]), alive=True,
                    incarnation=row[0], started_at=_utc(row[1]),
                    origin=row[2], shard=row[11])
                if not takeover:
                    age = (_utc(row[7]) - _utc(row[4])).total_seconds()
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
                    self._key(host, role)).values(**values))
        self.stats['registrations'] += 1
        return Registration(adoptable=adoptable, replaced=replaced)

    @_retry
    def beat(self, host, role, incarnation, partition_key=None,
             version=None, shard=None):
        """Heartbeat for an incarnation, only while it holds the host name.

        :param host: the host name.
        :param role: the service role.
        :param incarnation: the incarnation heartbeating.
        :param partition_key: recorded in the row.
        :param version: recorded in the row.
        :param shard: recorded in the row.
        :returns: True when recorded; False when the row names another
            incarnation (or none): this one lost the host name.
        """
        if partition_key is not None:
            partition_key = partition_key.lower()
        with self._write() as conn:
            matched = self._update_holder(
                conn, host, role, incarnation, partition_key=partition_key,
                version=version, shard=shard, down=False,
                last_seen=models.utcnow())
        self.stats['heartbeats'] += 1
        return bool(matched)

    def _update_holder(self, conn, host, role, holder, **values):
        """Update a services row only while it names ``holder``."""
        table = models.Service.__table__
        return conn.execute(
            sa.update(table).where(
                self._key(host, role), table.c.incarnation == holder,
            ).values(**values)).rowcount

    def describe_holder(self, host, role):
        """Say who holds a host name now, for error messages.

        :param host: the host name.
        :param role: the service role.
        :returns: a one-line description.
        """
        try:
            with self.engine.connect() as conn:
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

    @_retry
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
        with self._write() as conn:
            held = self._update_holder(conn, host, role, incarnation,
                                       incarnation=None, down=bool(down))
            conn.execute(
                sa.update(claims).where(
                    claims.c.role == role, claims.c.owner == host.lower(),
                    claims.c.incarnation == incarnation,
                ).values(incarnation=None))
        return bool(held)

    @_retry
    def mark_down(self, host, role):
        """Mark a service as down at once (graceful stop).

        :param host: the service's host name.
        :param role: the service's role.
        :returns: True when a row was marked.
        """
        return bool(self._update(host, role, {'down': True}))

    @_retry
    def delete(self, host, role):
        """Forget a service.

        :param host: the service's host name.
        :param role: the service's role.
        :returns: True when a row was deleted.
        """
        table = models.Service.__table__
        with self.engine.begin() as conn:
            return bool(conn.execute(
                sa.delete(table).where(self._key(host, role))).rowcount)

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
            table.c.shard, models.utcnow(),
        ).where(table.c.role == role).order_by(table.c.host)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            if not rows:
                now = conn.execute(sa.select(models.utcnow())).scalar()
            else:
                now = rows[0][-1]
        services = tuple(
            ServiceRecord(host=row[0], role=row[1], partition_key=row[2],
                          version=row[3], created_at=_utc(row[4]),
                          last_seen=_utc(row[5]), down=bool(row[6]),
                          alive=bool(row[7]), incarnation=row[8],
                          started_at=_utc(row[9]), origin=row[10],
                          shard=row[11])
            for row in rows)
        return Snapshot(as_of=_utc(now), services=services)

    # Claims.

    def _count(self, statements=1):
        self.stats['claim_statements'] += statements

    @staticmethod
    def _claim_valid(table):
        return sa.and_(table.c.owner.is_not(None),
                       table.c.expires_at > models.utcnow())

    @staticmethod
    def _claim_free(table):
        return sa.or_(table.c.owner.is_(None),
                      table.c.expires_at <= models.utcnow())

    def _holds_name(self, role, host, incarnation):
        """SQL: the services row of host and role names this incarnation."""
        services = models.Service.__table__
        return sa.exists().where(
            services.c.host == host.lower(), services.c.role == role,
            services.c.incarnation == incarnation)

    def _check_holder(self, conn, role, host, incarnation):
        """Raise IdentityLost unless the incarnation holds the host name."""
        services = models.Service.__table__
        holder = conn.execute(sa.select(services.c.incarnation).where(
            self._key(host, role))).first()
        self._count()
        if holder is None or holder[0] != incarnation:
            raise exception.IdentityLost(
                incarnation=incarnation, host=host.lower(), role=role,
                reason=('its service row was deleted' if holder is None
                        else 'the host name was given up'
                        if holder[0] is None else
                        'incarnation %s holds the host name now'
                        % holder[0]))

    @staticmethod
    def _mine(table, role, host, incarnation):
        where = [table.c.role == role, table.c.owner == host.lower()]
        if incarnation is not None:
            where.append(table.c.incarnation == incarnation)
        return where

    @_retry
    def adopt_claims(self, role, host, incarnation, previous=None):
        """Adopt the claims a host's previous incarnation left.

        Detached claims (incarnation NULL: the previous process stopped
        gracefully and kept them) are adopted, and those of ``previous``
        when it is given (it is provably gone). Epochs and leases do not
        change. Only while ``incarnation`` holds the host name.

        :param role: the service role.
        :param host: the owner's host name.
        :param incarnation: the adopting incarnation.
        :param previous: the gone incarnation whose claims to adopt too.
        :returns: the number of claims adopted.
        """
        table = models.Claim.__table__
        which = table.c.incarnation.is_(None)
        if previous is not None:
            which = sa.or_(which, table.c.incarnation == previous)
        with self._write() as conn:
            count = conn.execute(
                sa.update(table).where(
                    table.c.role == role, table.c.owner == host.lower(),
                    which, self._holds_name(role, host, incarnation),
                ).values(incarnation=incarnation)).rowcount
        self._count()
        return count

    def _insert_placeholders(self, conn, table, role, node_ids):
        """Insert free rows (no owner, epoch 0) for nodes that have none.

        Rows that exist already are left alone. One statement: on
        PostgreSQL an ``INSERT ... SELECT unnest(:ids) ON CONFLICT DO
        NOTHING`` with a single array parameter; elsewhere an
        ``executemany`` that the driver batches (PyMySQL sends multi-row
        INSERTs, SQLite reuses one prepared statement).

        :param conn: an open connection in a transaction.
        :param table: the claims table.
        :param role: the service role.
        :param node_ids: node UUIDs.
        :returns: None
        """
        if self.engine.dialect.name == 'postgresql':
            ids = sa.bindparam('ids', list(node_ids),
                               type_=sa_postgresql.ARRAY(sa.String))
            rows = sa.select(
                sa.literal(role, sa.String), sa.func.unnest(ids),
                sa.cast(sa.null(), sa.String), sa.cast(sa.null(), sa.String),
                sa.literal(0, sa.BigInteger), sa.cast(sa.null(), sa.DateTime),
                sa.literal(_NEVER, sa.DateTime),
                sa.literal(_NEVER, sa.DateTime))
            conn.execute(sa_postgresql.insert(table).from_select(
                ['role', 'node_id', 'owner', 'partition_key', 'epoch',
                 'claimed_at', 'expires_at', 'updated_at'],
                rows).on_conflict_do_nothing())
            return
        conn.execute(
            self._insert_ignoring_conflicts(table),
            [{'role': role, 'node_id': node, 'owner': None,
              'partition_key': None, 'epoch': 0, 'claimed_at': None,
              'expires_at': _NEVER, 'updated_at': _NEVER}
             for node in node_ids])

    def _insert_ignoring_conflicts(self, table):
        """Build an INSERT that skips rows whose key exists already.

        :param table: the table.
        :returns: an insert statement for this connection's dialect.
        """
        name = self.engine.dialect.name
        if name == 'postgresql':
            return sa_postgresql.insert(table).on_conflict_do_nothing()
        if name in ('mysql', 'mariadb'):
            # NOTE(ironic-partition): a no-op ON DUPLICATE KEY UPDATE rather
            # than INSERT IGNORE, which would also turn data errors into
            # warnings.
            return sa_mysql.insert(table).on_duplicate_key_update(
                epoch=table.c.epoch)
        if name == 'sqlite':
            return sa_sqlite.insert(table).on_conflict_do_nothing()
        raise NotImplementedError('Claims are not supported on %s' % name)

    @_retry
    def owned_claims(self, role, host, incarnation=None):
        """Read every claim row owned by a host, valid or expired.

        :param role: the service role.
        :param host: the owner's host name.
        :param incarnation: only the claims of this incarnation of the
            host; None for all of them.
        :returns: a dict of node UUID to :data:`OwnedClaim`.
        """
        table = models.Claim.__table__
        query = sa.select(
            table.c.node_id, table.c.epoch,
            sa.case((self._claim_valid(table), sa.literal(1)),
                    else_=sa.literal(0)),
        ).where(*self._mine(table, role, host, incarnation))
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        self._count()
        return {row[0]: OwnedClaim(int(row[1]), bool(row[2]))
                for row in rows}

    @_retry
    def held_claims(self, role, host, incarnation=None):
        """Read the valid claims of a host, by the server's clock.

        :param role: the service role.
        :param host: the owner's host name.
        :param incarnation: only the claims of this incarnation; None for
            all of the host's.
        :returns: a dict of node UUID to epoch.
        """
        table = models.Claim.__table__
        query = sa.select(table.c.node_id, table.c.epoch).where(
            *self._mine(table, role, host, incarnation),
            table.c.expires_at > models.utcnow())
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        self._count()
        return {row[0]: int(row[1]) for row in rows}

    @_retry
    def renew_claims(self, role, host, lease_seconds, incarnation=None):
        """Extend every valid claim of a host by a lease, in one statement.

        Only claims that have not expired by the server's clock are
        renewed: an expired claim may have been taken by another service
        already, and is taken back (with a new epoch) only through
        :meth:`acquire_claims`. The epoch does not change.

        :param role: the service role.
        :param host: the owner's host name.
        :param lease_seconds: the new lease, from the server's now.
        :param incarnation: renew only this incarnation's claims, and only
            while it holds the host name; None renews every claim of the
            host unconditionally.
        :raises IdentityLost: the incarnation no longer holds the host
            name (nothing is renewed).
        :returns: the number of claims renewed.
        """
        table = models.Claim.__table__
        where = self._mine(table, role, host, incarnation)
        with self._write() as conn:
            if incarnation is not None:
                self._check_holder(conn, role, host, incarnation)
                # NOTE(ironic-partition): checked again in the UPDATE
                # itself, which sees a takeover committed since.
                where.append(self._holds_name(role, host, incarnation))
            result = conn.execute(
                sa.update(table).where(
                    *where, table.c.expires_at > models.utcnow(),
                ).values(
                    expires_at=models.utc_after(
                        sa.literal(_microseconds(lease_seconds),
                                   sa.BigInteger)),
                    updated_at=models.utcnow()))
            count = result.rowcount
        self._count()
        return count

    @_retry
    def release_claims(self, role, host, node_ids=None, incarnation=None):
        """Give up claims of a host; the rows stay, with their epoch.

        :param role: the service role.
        :param host: the owner's host name.
        :param node_ids: the node UUIDs to release; None releases all.
        :param incarnation: release only this incarnation's claims; None
            releases the host's whatever their incarnation.
        :returns: the number of claims released.
        """
        table = models.Claim.__table__
        values = {'owner': None, 'claimed_at': None, 'incarnation': None,
                  'expires_at': models.utcnow(),
                  'updated_at': models.utcnow()}
        where = self._mine(table, role, host, incarnation)
        if node_ids is None:
            chunks = [None]
        else:
            chunks = list(_chunks(node_ids))
        count = 0
        for chunk in chunks:
            clause = list(where)
            if chunk is not None:
                clause.append(table.c.node_id.in_(chunk))
            with self._write() as conn:
                count += conn.execute(
                    sa.update(table).where(*clause).values(
                        **values)).rowcount
            self._count()
        return count

    def acquire_claims(self, role, host, node_ids, lease_seconds,
                       partition_key=None, incarnation=None, shard=None):
        """Take the claims on nodes that are unclaimed or expired.

        Per chunk of nodes: one ``SELECT`` of the current rows, one
        ``INSERT`` (ignoring conflicts) of a free placeholder row (no
        owner, epoch 0) for each node that has none yet, and one
        compare-and-swap ``UPDATE`` of the free rows, which only succeeds
        for a row whose epoch is still the one read and which is still free
        by the server's clock; it sets the owner, the lease and epoch + 1.
        Whether a claim was won is read back with :meth:`held_claims`; this
        method does not say.

        :param role: the service role.
        :param host: the new owner's host name.
        :param node_ids: node UUIDs to claim.
        :param lease_seconds: the lease, from the server's now.
        :param partition_key: recorded with the claim, for status reports.
        :param incarnation: the claiming incarnation, recorded with the
            claim; claims are taken only while it holds the host name.
        :param shard: recorded (lower-cased) with the claim, for status
            reports.
        :raises IdentityLost: the incarnation no longer holds the host
            name (nothing is taken).
        :returns: None
        """
        micro = _microseconds(lease_seconds)
        if shard is not None:
            # NOTE(ironic-partition): shard (issue 15): Ironic matches
            # shards lower-cased; store them so.
            shard = shard.lower()
        if incarnation is not None:
            with self.engine.connect() as conn:
                self._check_holder(conn, role, host, incarnation)
        for chunk in _chunks(node_ids):
            self._acquire_chunk(role, host.lower(), chunk, micro,
                                partition_key, incarnation, shard)

    @_retry
    def _acquire_chunk(self, role, host, chunk, micro, partition_key,
                       incarnation=None, shard=None):
        table = models.Claim.__table__
        query = sa.select(
            table.c.node_id, table.c.epoch,
            sa.case((self._claim_free(table), sa.literal(1)),
                    else_=sa.literal(0)),
        ).where(table.c.role == role, table.c.node_id.in_(chunk))
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        self._count()
        found = {row[0] for row in rows}
        free = [(row[0], int(row[1])) for row in rows if row[2]]
        missing = [node for node in chunk if node not in found]
        if missing:
            # NOTE(ironic-partition): plain constants only, so that the
            # driver can batch the rows; the claim itself (and every
            # timestamp by the server's clock) is the UPDATE below, racing
            # fairly with other claimers of the same placeholder.
            with self._write() as conn:
                self._insert_placeholders(conn, table, role, missing)
            self._count()
            free.extend((node, 0) for node in missing)
        free.sort()
        if free:
            guard = ([] if incarnation is None else
                     [self._holds_name(role, host, incarnation)])
            with self._write() as conn:
                conn.execute(
                    sa.update(table).where(
                        table.c.role == role,
                        table.c.node_id.in_([node for node, _e in free]),
                        sa.tuple_(table.c.node_id, table.c.epoch).in_(free),
                        self._claim_free(table), *guard,
                    ).values(
                        owner=host, partition_key=partition_key,
                        incarnation=incarnation, shard=shard,
                        epoch=table.c.epoch + 1,
                        claimed_at=models.utcnow(),
                        expires_at=models.utc_after(
                            sa.literal(micro, sa.BigInteger)),
                        updated_at=models.utcnow()))
            self._count()

    def read_claims(self, role, node_ids=None, owner=None):
        """Read claims, with validity decided by the server's clock.

        :param role: the service role.
        :param node_ids: only these nodes; None for all.
        :param owner: only the claims of this host; None for all.
        :returns: a :data:`ClaimSnapshot`, claims sorted by node UUID.
        """
        table = models.Claim.__table__
        columns = (
            table.c.node_id, table.c.owner, table.c.epoch,
            table.c.partition_key, table.c.claimed_at, table.c.expires_at,
            table.c.updated_at,
            sa.case((self._claim_valid(table), sa.literal(1)),
                    else_=sa.literal(0)),
            table.c.incarnation, table.c.shard,
        )
        where = [table.c.role == role]
        if owner is not None:
            where.append(table.c.owner == owner.lower())
        chunks = [None] if node_ids is None else list(_chunks(node_ids))
        records = []
        with self.engine.connect() as conn:
            now = conn.execute(sa.select(models.utcnow())).scalar()
            for chunk in chunks:
                clause = list(where)
                if chunk is not None:
                    clause.append(table.c.node_id.in_(chunk))
                records.extend(conn.execute(
                    sa.select(*columns).where(*clause)).all())
        records.sort(key=lambda row: row[0])
        return ClaimSnapshot(as_of=_utc(now), claims=tuple(
            ClaimRecord(node_id=row[0], owner=row[1], epoch=int(row[2]),
                        partition_key=row[3], claimed_at=_utc(row[4]),
                        expires_at=_utc(row[5]), updated_at=_utc(row[6]),
                        valid=bool(row[7]), incarnation=row[8],
                        shard=row[9])
            for row in records))
