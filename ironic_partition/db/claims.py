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

"""Queries on the claims table: leases with a fencing epoch.

Claims (``ironic_partition_claims``, see
:mod:`ironic_partition.claims.manager`) are handled in bulk, a few statements
per claim round whatever the number of nodes (node UUIDs travel in chunks of
:data:`~ironic_partition.db._common.CHUNK_SIZE`):

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
* every write of an incarnation is conditioned, in the statement itself,
  on the services row still naming that incarnation;
* lease expiry is evaluated by the server's clock in SQL
  (``models.utcnow``, ``models.utc_after``).
"""

import collections

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as sa_mysql
from sqlalchemy.dialects import postgresql as sa_postgresql
from sqlalchemy.dialects import sqlite as sa_sqlite

from ironic_partition._i18n import _
from ironic_partition.conf import database as database_conf
from ironic_partition.db import _common
from ironic_partition.db import models
from ironic_partition.db import services as services_db
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: One row of the claims table; ``valid`` (owner set and lease not expired)
#: is evaluated by the server's clock.
ClaimRecord = collections.namedtuple(
    'ClaimRecord',
    ['node_id', 'owner', 'epoch', 'partition_key', 'claimed_at',
     'expires_at', 'updated_at', 'valid', 'incarnation', 'shard'],
    defaults=(None, None))

#: Claims read at once and the server's clock when they were read.
ClaimSnapshot = collections.namedtuple('ClaimSnapshot', ['as_of', 'claims'])

#: An own claim as seen by :meth:`ClaimsAPI.owned_claims`.
OwnedClaim = collections.namedtuple('OwnedClaim', ['epoch', 'valid'])

#: The server's time as :meth:`ClaimsAPI.owned_claims` read it: ``time``
#: (an aware ``datetime``), ``node`` (the database node that answered, or
#: None where the database cannot tell), ``before`` and ``after`` (the
#: caller's clock just before and just after that statement).
ServerTime = collections.namedtuple('ServerTime',
                                    ['time', 'node', 'before', 'after'])


class ClaimsAPI(object):
    """The claims rows of one membership database.

    :param db: the :class:`~ironic_partition.db.api.Connection` whose
        transactions the queries run in.
    """

    def __init__(self, db):
        self._db = db

    def _count(self, statements=1):
        self._db.stats['claim_statements'] += statements

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
            services_db.key(host, role))).first()
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

    @_common.retry
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
        with self._db.writer() as conn:
            count = conn.execute(
                sa.update(table).where(
                    table.c.role == role, table.c.owner == host.lower(),
                    which, self._holds_name(role, host, incarnation),
                ).values(incarnation=incarnation)).rowcount
        self._count()
        return count

    def _insert_placeholders(self, conn, table, role, node_ids):
        """Insert free rows (no owner, epoch 0) for nodes that have none.

        Rows that exist already are left alone. A placeholder is stamped
        with the server's time, not "long ago", so that a garbage
        collection between its insert and the claim that follows (by any
        service) does not take it for a row unheld for ``gc_age``: it
        expires at once, so it is free to claim. Two statements: the
        server's time, read once and sent as a plain constant (which keeps
        the rows batchable); then on
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
        stamp = conn.execute(sa.select(models.utcnow())).scalar()
        if self._db.dialect == 'postgresql':
            ids = sa.bindparam('ids', list(node_ids),
                               type_=sa_postgresql.ARRAY(sa.String))
            rows = sa.select(
                sa.literal(role, sa.String), sa.func.unnest(ids),
                sa.cast(sa.null(), sa.String), sa.cast(sa.null(), sa.String),
                sa.literal(0, sa.BigInteger), sa.cast(sa.null(), sa.DateTime),
                sa.literal(stamp, sa.DateTime),
                sa.literal(stamp, sa.DateTime))
            conn.execute(sa_postgresql.insert(table).from_select(
                ['role', 'node_id', 'owner', 'partition_key', 'epoch',
                 'claimed_at', 'expires_at', 'updated_at'],
                rows).on_conflict_do_nothing())
            return
        conn.execute(
            self._insert_ignoring_conflicts(table),
            [{'role': role, 'node_id': node, 'owner': None,
              'partition_key': None, 'epoch': 0, 'claimed_at': None,
              'expires_at': stamp, 'updated_at': stamp}
             for node in node_ids])

    def _insert_ignoring_conflicts(self, table):
        """Build an INSERT that skips rows whose key exists already.

        :param table: the table.
        :returns: an insert statement for this connection's dialect.
        """
        name = self._db.dialect
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

    @_common.retry
    def owned_claims(self, role, host, incarnation=None, clock=None):
        """Read every claim row owned by a host, valid or expired.

        :param role: the service role.
        :param host: the owner's host name.
        :param incarnation: only the claims of this incarnation of the
            host; None for all of them.
        :param clock: a local clock (a callable returning seconds): also
            read the server's time and which database node answered
            (:class:`~ironic_partition.db.models.server_node`), first, on
            the same connection, and ``clock()`` just before and just
            after that one statement (not around the connection's
            checkout or the claims read, whose waits would blur the
            pairing of the two clocks).
        :returns: a dict of node UUID to :data:`OwnedClaim`; with
            ``clock``, ``(claims, ServerTime)``.
        """
        table = models.Claim.__table__
        query = sa.select(
            table.c.node_id, table.c.epoch,
            sa.case((self._claim_valid(table), sa.literal(1)),
                    else_=sa.literal(0)),
        ).where(*self._mine(table, role, host, incarnation))
        server = None
        with self._db.reader() as conn:
            if clock is not None:
                before = clock()
                now, node = conn.execute(sa.select(
                    models.utcnow(), models.server_node())).first()
                server = ServerTime(_common.utc(now), node, before, clock())
            rows = conn.execute(query).all()
        self._count(1 if clock is None else 2)
        claims = {row[0]: OwnedClaim(int(row[1]), bool(row[2]))
                  for row in rows}
        return claims if clock is None else (claims, server)

    def claim_left(self, role, host, node_id, incarnation):
        """Read how long one claim of an incarnation has left.

        One statement, decided by the server's clock: the claim row of
        ``node_id`` owned by this incarnation, while its services row
        still names it, and the server's time. Not retried: a caller
        that proves a claim before a write must not spend its budget on
        retries.

        :param role: the service role.
        :param host: the owner's host name.
        :param node_id: the node UUID.
        :param incarnation: the incarnation that must hold the claim, and
            the host name; None: any of the host's.
        :returns: ``(epoch, seconds left)``, the seconds 0 or less once
            the lease ran out; None when this incarnation holds no claim
            row on the node, or no longer holds the host name.
        """
        table = models.Claim.__table__
        where = self._mine(table, role, host, incarnation)
        where.append(table.c.node_id == node_id)
        if incarnation is not None:
            where.append(self._holds_name(role, host, incarnation))
        query = sa.select(table.c.epoch, table.c.expires_at,
                          models.utcnow()).where(*where)
        with self._db.reader() as conn:
            row = conn.execute(query).first()
        self._count()
        if row is None:
            return None
        left = _common.utc(row[1]) - _common.utc(row[2])
        return int(row[0]), left.total_seconds()

    @_common.retry
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
        with self._db.reader() as conn:
            rows = conn.execute(query).all()
        self._count()
        return {row[0]: int(row[1]) for row in rows}

    def renew_claims(self, role, host, lease_seconds, incarnation=None,
                     node_ids=None):
        """Extend the valid claims of a host by a lease, chunk by chunk.

        Only claims that have not expired by the server's clock are
        renewed: an expired claim may have been taken by another service
        already, and is taken back (with a new epoch) only through
        :meth:`acquire_claims`. The epoch does not change. One ``UPDATE``
        per chunk of nodes, as acquisitions are chunked.

        :param role: the service role.
        :param host: the owner's host name.
        :param lease_seconds: the new lease, from the server's now.
        :param incarnation: renew only this incarnation's claims, and only
            while it holds the host name; None renews every claim of the
            host unconditionally.
        :param node_ids: the nodes to renew, among the host's claims; None
            reads the host's valid claims first (one more ``SELECT``).
        :raises IdentityLost: the incarnation no longer holds the host
            name (nothing is renewed).
        :returns: the number of claims renewed.
        """
        if incarnation is not None:
            with self._db.reader() as conn:
                self._check_holder(conn, role, host, incarnation)
        if node_ids is None:
            node_ids = self.held_claims(role, host, incarnation)
        micro = _common.microseconds(lease_seconds)
        count = 0
        for chunk in _common.chunks(node_ids):
            count += self._renew_chunk(role, host, chunk, micro, incarnation)
        return count

    @_common.retry
    def _renew_chunk(self, role, host, chunk, micro, incarnation):
        table = models.Claim.__table__
        where = self._mine(table, role, host, incarnation)
        if incarnation is not None:
            # NOTE(ironic-partition): checked again in the UPDATE itself,
            # which sees a takeover committed since.
            where.append(self._holds_name(role, host, incarnation))
        with self._db.writer() as conn:
            count = conn.execute(
                sa.update(table).where(
                    *where, table.c.node_id.in_(chunk),
                    table.c.expires_at > models.utcnow(),
                ).values(
                    expires_at=models.utc_after(
                        sa.literal(micro, sa.BigInteger)),
                    updated_at=models.utcnow())).rowcount
        self._count()
        return count

    def collect_garbage(self, role, older_than, max_chunks=10):
        """Delete the claim rows nobody has held for a long time.

        A row is garbage when its lease ran out (or it was released, or
        never taken) more than ``older_than`` seconds ago by the server's
        clock. Rows are read and deleted in chunks, in node order; each
        ``DELETE`` checks the condition again, so a row claimed in between
        stays. A deleted node gets a new row, with a new epoch counting
        from 1, the next time it is claimed: ``older_than`` must be far
        longer than any lease, so that no process can still act on the
        old epoch.

        :param role: the service role.
        :param older_than: seconds since the lease ran out.
        :param max_chunks: the most chunks deleted in one call.
        :returns: the number of rows deleted.
        """
        table = models.Claim.__table__
        deleted = 0
        for _i in range(max_chunks):
            size = _common.CHUNK_SIZE
            with self._db.reader() as conn:
                chunk = [row[0] for row in conn.execute(
                    sa.select(table.c.node_id).where(
                        table.c.role == role,
                        self._garbage(table, older_than),
                    ).order_by(table.c.node_id).limit(size)).all()]
            self._count()
            if chunk:
                deleted += self._delete_chunk(role, chunk, older_than)
            if len(chunk) < size:
                break
        if deleted:
            LOG.info('Deleted %(n)d claim rows of role %(role)s unheld for '
                     'more than %(age)d s',
                     {'n': deleted, 'role': role, 'age': older_than})
        return deleted

    @staticmethod
    def _garbage(table, older_than):
        return table.c.expires_at <= models.utc_ago(
            sa.literal(int(older_than), sa.Integer))

    @_common.retry
    def _delete_chunk(self, role, chunk, older_than):
        table = models.Claim.__table__
        with self._db.writer() as conn:
            count = conn.execute(sa.delete(table).where(
                table.c.role == role, table.c.node_id.in_(chunk),
                self._garbage(table, older_than))).rowcount
        self._count()
        return count

    def check_supported(self):
        """Refuse an SQLite library too old for the claim statements.

        A claim statement binds up to three parameters per node, for
        chunks of :data:`~ironic_partition.db._common.CHUNK_SIZE` nodes:
        SQLite must allow 32,766 (``SQLITE_MAX_VARIABLE_NUMBER``, the
        default since 3.32.0; 999 before).

        :raises ConfigurationError: on an older SQLite, naming the version
            found and the one required.
        :returns: None
        """
        if self._db.dialect != 'sqlite':
            return
        dbapi = self._db.engine.dialect.dbapi
        found = tuple(getattr(dbapi, 'sqlite_version_info', ()))
        if found and found < _common.SQLITE_MIN_VERSION:
            raise exception.ConfigurationError(
                group=database_conf.GROUP, option='connection',
                value=self._db.masked_connection,
                reason=_('it is an SQLite database, and this Python uses '
                         'SQLite %(found)s; ownership claims need SQLite '
                         '%(required)s or newer (SQLITE_MAX_VARIABLE_NUMBER '
                         '32766) for their statements of up to %(chunk)d '
                         'nodes. Upgrade SQLite, or use a MariaDB/MySQL or '
                         'PostgreSQL database') % {
                    'found': '.'.join(str(p) for p in found),
                    'required': '.'.join(
                        str(p) for p in _common.SQLITE_MIN_VERSION),
                    'chunk': _common.CHUNK_SIZE})

    @_common.retry
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
            chunks = list(_common.chunks(node_ids))
        count = 0
        for chunk in chunks:
            clause = list(where)
            if chunk is not None:
                clause.append(table.c.node_id.in_(chunk))
            with self._db.writer() as conn:
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

        When every node was free and every chunk's ``UPDATE`` changed
        every row it was sent, what was won is known without reading it
        back: each node, at the epoch read plus one. Otherwise (a node
        held by another service, a lost compare-and-swap, a chunk retried
        after a fault, whose rows may then read as held already) this
        method does not say, and :meth:`held_claims` reads it back.

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
        :returns: a dict of node UUID to the new epoch of every node
            claimed, when all of ``node_ids`` were won as above; None when
            what was won must be read back.
        """
        micro = _common.microseconds(lease_seconds)
        if shard is not None:
            # NOTE(ironic-partition): shard (issue 15): Ironic matches
            # shards lower-cased; store them so.
            shard = shard.lower()
        if incarnation is not None:
            with self._db.reader() as conn:
                self._check_holder(conn, role, host, incarnation)
        won = {}
        for chunk in _common.chunks(node_ids):
            taken = self._acquire_chunk(role, host.lower(), chunk, micro,
                                        partition_key, incarnation, shard)
            if won is not None and taken is not None:
                won.update(taken)
            else:
                won = None
        return won

    @_common.retry
    def _acquire_chunk(self, role, host, chunk, micro, partition_key,
                       incarnation=None, shard=None):
        table = models.Claim.__table__
        query = sa.select(
            table.c.node_id, table.c.epoch,
            sa.case((self._claim_free(table), sa.literal(1)),
                    else_=sa.literal(0)),
        ).where(table.c.role == role, table.c.node_id.in_(chunk))
        with self._db.reader() as conn:
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
            with self._db.writer() as conn:
                self._insert_placeholders(conn, table, role, missing)
            self._count(2)
            free.extend((node, 0) for node in missing)
        free.sort()
        taken = 0
        if free:
            guard = ([] if incarnation is None else
                     [self._holds_name(role, host, incarnation)])
            with self._db.writer() as conn:
                taken = conn.execute(
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
                        updated_at=models.utcnow())).rowcount
            self._count()
        if len(free) != len(chunk) or taken != len(free):
            return None
        # NOTE(ironic-partition): one row per node, each matched at the
        # epoch read: every row was free and is now ours at epoch + 1.
        return {node: epoch + 1 for node, epoch in free}

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
        chunks = [None] if node_ids is None else list(_common.chunks(node_ids))
        records = []
        with self._db.reader() as conn:
            now = conn.execute(sa.select(models.utcnow())).scalar()
            for chunk in chunks:
                clause = list(where)
                if chunk is not None:
                    clause.append(table.c.node_id.in_(chunk))
                records.extend(conn.execute(
                    sa.select(*columns).where(*clause)).all())
        records.sort(key=lambda row: row[0])
        return ClaimSnapshot(as_of=_common.utc(now), claims=tuple(
            ClaimRecord(node_id=row[0], owner=row[1], epoch=int(row[2]),
                        partition_key=row[3], claimed_at=_common.utc(row[4]),
                        expires_at=_common.utc(row[5]),
                        updated_at=_common.utc(row[6]),
                        valid=bool(row[7]), incarnation=row[8],
                        shard=row[9])
            for row in records))
