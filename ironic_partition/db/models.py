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

"""SQLAlchemy models of the membership database.

All timestamps are naive UTC values written by the database server itself
(see :class:`utcnow` and :class:`utc_ago`): no host clock is ever stored or
compared, so clock skew between hosts cannot make a peer look alive or
dead.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.ext import compiler as sa_compiler
from sqlalchemy import orm
from sqlalchemy.sql import expression

#: Service roles that may heartbeat.
ROLE_NOVA_COMPUTE = 'nova-compute'
ROLE_CONDUCTOR = 'conductor'
ROLE_AGENT = 'agent'
ROLES = (ROLE_NOVA_COMPUTE, ROLE_CONDUCTOR, ROLE_AGENT)

HOST_LENGTH = 255
ROLE_LENGTH = 32
PARTITION_KEY_LENGTH = 255
VERSION_LENGTH = 64
REVISION_LENGTH = 64
NODE_ID_LENGTH = 36
INCARNATION_LENGTH = 36
ORIGIN_LENGTH = 255
SHARD_LENGTH = 255
DATABASE_NODE_LENGTH = 255

_NAMING_CONVENTION = {
    'pk': 'pk_%(table_name)s',
}


def timestamp_type():
    """Return the column type of the server-written timestamps.

    MariaDB/MySQL ``DATETIME`` keeps whole seconds unless told otherwise;
    microseconds are asked for there. PostgreSQL ``timestamp`` already
    keeps microseconds, SQLite stores text.

    :returns: a SQLAlchemy type.
    """
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


class utcnow(expression.FunctionElement):
    """The database server's current time, as naive UTC.

    The host running the query plays no part, whatever its clock says.
    """

    type = sa.DateTime()
    inherit_cache = True
    name = 'utcnow'


class utc_ago(expression.FunctionElement):
    """The database server's current time minus some seconds, naive UTC.

    Use as ``utc_ago(seconds)`` where ``seconds`` is an integer.
    """

    type = sa.DateTime()
    inherit_cache = True
    name = 'utc_ago'


def _seconds(element, compiler, **kw):
    (seconds,) = list(element.clauses)
    return compiler.process(seconds, **kw)


@sa_compiler.compiles(utcnow)
def _utcnow_default(element, compiler, **kw):
    return 'CURRENT_TIMESTAMP'


@sa_compiler.compiles(utcnow, 'postgresql')
def _utcnow_pg(element, compiler, **kw):
    # NOTE(ironic-partition): statement_timestamp() is a timestamptz;
    # converting it explicitly to UTC makes the stored value independent of
    # the session's TimeZone setting.
    return "(statement_timestamp() AT TIME ZONE 'UTC')"


@sa_compiler.compiles(utcnow, 'mysql')
@sa_compiler.compiles(utcnow, 'mariadb')
def _utcnow_mysql(element, compiler, **kw):
    return 'UTC_TIMESTAMP(6)'


@sa_compiler.compiles(utcnow, 'sqlite')
def _utcnow_sqlite(element, compiler, **kw):
    # NOTE(ironic-partition): 'now' is UTC in SQLite; %f gives milliseconds.
    # The format sorts as text, which is how SQLite compares it.
    return "STRFTIME('%Y-%m-%d %H:%M:%f', 'now')"


@sa_compiler.compiles(utc_ago)
def _utc_ago_default(element, compiler, **kw):
    return '(CURRENT_TIMESTAMP - %s)' % _seconds(element, compiler, **kw)


@sa_compiler.compiles(utc_ago, 'postgresql')
def _utc_ago_pg(element, compiler, **kw):
    return ("((statement_timestamp() AT TIME ZONE 'UTC') - "
            "make_interval(secs => %s))" % _seconds(element, compiler, **kw))


@sa_compiler.compiles(utc_ago, 'mysql')
@sa_compiler.compiles(utc_ago, 'mariadb')
def _utc_ago_mysql(element, compiler, **kw):
    return ('(UTC_TIMESTAMP(6) - INTERVAL %s SECOND)'
            % _seconds(element, compiler, **kw))


@sa_compiler.compiles(utc_ago, 'sqlite')
def _utc_ago_sqlite(element, compiler, **kw):
    return ("STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now', "
            "(-(%s)) || ' seconds')" % _seconds(element, compiler, **kw))


class utc_after(expression.FunctionElement):
    """The database server's current time plus some microseconds, naive UTC.

    Use as ``utc_after(microseconds)`` where ``microseconds`` is an
    integer; whole microseconds keep lease arithmetic exact on every
    backend.
    """

    type = sa.DateTime()
    inherit_cache = True
    name = 'utc_after'


@sa_compiler.compiles(utc_after)
def _utc_after_default(element, compiler, **kw):
    return ('(CURRENT_TIMESTAMP + %s / 1000000.0)'
            % _seconds(element, compiler, **kw))


@sa_compiler.compiles(utc_after, 'postgresql')
def _utc_after_pg(element, compiler, **kw):
    return ("((statement_timestamp() AT TIME ZONE 'UTC') + "
            "make_interval(secs => (%s) / 1000000.0))"
            % _seconds(element, compiler, **kw))


@sa_compiler.compiles(utc_after, 'mysql')
@sa_compiler.compiles(utc_after, 'mariadb')
def _utc_after_mysql(element, compiler, **kw):
    return ('(UTC_TIMESTAMP(6) + INTERVAL %s MICROSECOND)'
            % _seconds(element, compiler, **kw))


@sa_compiler.compiles(utc_after, 'sqlite')
def _utc_after_sqlite(element, compiler, **kw):
    return ("STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'now', "
            "((%s) / 1000000.0) || ' seconds')"
            % _seconds(element, compiler, **kw))


class server_node(expression.FunctionElement):
    """The database node that runs the statement: ``host:port``.

    On MariaDB and MySQL, the server's ``@@hostname`` and ``@@port``: on a
    Galera cluster behind HAProxy, the node taking this service's writes.
    NULL on PostgreSQL and SQLite, where only one server takes writes.
    """

    type = sa.String()
    inherit_cache = True
    name = 'server_node'


@sa_compiler.compiles(server_node)
def _server_node_default(element, compiler, **kw):
    return 'NULL'


@sa_compiler.compiles(server_node, 'mysql')
@sa_compiler.compiles(server_node, 'mariadb')
def _server_node_mysql(element, compiler, **kw):
    return "CONCAT(@@hostname, ':', @@port)"


class Base(orm.DeclarativeBase):
    """Declarative base of the membership models."""

    metadata = sa.MetaData(naming_convention=_NAMING_CONVENTION)


class Service(Base):
    """One service (host and role) that heartbeats.

    ``partition_key`` is NULL when the service has no partition key set;
    the empty string is the default group and is a different value.
    ``down`` is set by a graceful stop, and cleared by the next heartbeat.
    ``incarnation`` is the identity of the one process that holds this
    host name (NULL once it stopped and gave the name up); ``started_at``
    (database clock), ``origin`` (machine and PID) and ``liveness_token``
    (what tells, on that machine, whether the process still runs) describe
    it. ``shard`` is the Ironic shard of the service's partition, NULL
    when it has none. ``database_node`` is the database node that took
    the last heartbeat (:class:`server_node`), NULL where the database
    cannot tell. ``outside_peers`` lists, comma-separated, the peers a
    nova-compute counts in its ring from nova's service group while they
    do not heartbeat this database (NULL when none): for ``status`` and
    ``check``, which cannot read nova's service group.
    ``database_clocks`` is what the service measured of the database
    nodes' clocks (JSON, see :mod:`ironic_partition.claims.db_clock`),
    read back when it starts again; ``claims_database_node`` the node
    that answered its last claim round (NULL when none lately).
    """

    __tablename__ = 'ironic_partition_services'
    __table_args__ = (
        sa.UniqueConstraint('host', 'role',
                            name='uniq_ironic_partition_services0host0role'),
        sa.Index('ix_ironic_partition_services_role_last_seen',
                 'role', 'last_seen'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, primary_key=True, autoincrement=True)
    host: orm.Mapped[str] = orm.mapped_column(
        sa.String(HOST_LENGTH), nullable=False)
    role: orm.Mapped[str] = orm.mapped_column(
        sa.String(ROLE_LENGTH), nullable=False)
    partition_key: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(PARTITION_KEY_LENGTH), nullable=True)
    version: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(VERSION_LENGTH), nullable=True)
    down: orm.Mapped[bool] = orm.mapped_column(
        sa.Boolean(create_constraint=False), nullable=False)
    created_at = orm.mapped_column(timestamp_type(), nullable=False)
    last_seen = orm.mapped_column(timestamp_type(), nullable=False)
    incarnation: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(INCARNATION_LENGTH), nullable=True)
    started_at = orm.mapped_column(timestamp_type(), nullable=True)
    origin: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(ORIGIN_LENGTH), nullable=True)
    liveness_token: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(ORIGIN_LENGTH), nullable=True)
    shard: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(SHARD_LENGTH), nullable=True)
    database_node: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(DATABASE_NODE_LENGTH), nullable=True)
    outside_peers: orm.Mapped[str | None] = orm.mapped_column(
        sa.Text, nullable=True)
    database_clocks: orm.Mapped[str | None] = orm.mapped_column(
        sa.Text, nullable=True)
    claims_database_node: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(DATABASE_NODE_LENGTH), nullable=True)


class Claim(Base):
    """A service's claim on one node: a lease with a fencing epoch.

    One row per ``(role, node_id)``; rows are not deleted by a release
    (``owner`` becomes NULL), so ``epoch`` only ever grows for a node and
    can serve as a fencing token. A row is deleted only a day (and ten
    leases) after its lease ran out, when no process can still act on its
    epoch (see :meth:`ironic_partition.claims.manager.ClaimManager.
    collect_garbage`). ``epoch`` is incremented whenever a
    service takes the claim. ``expires_at``, ``claimed_at`` and
    ``updated_at`` are written by the database server's clock; a claim is
    valid while ``owner`` is set and ``expires_at`` is in the future by
    that same clock. ``partition_key`` records the conductor group the
    owner claimed the node in, for status reports only. On PostgreSQL the
    table has ``fillfactor = 50`` (set by the migration), so that the
    renewal of every claim at every refresh stays a HOT update.
    """

    __tablename__ = 'ironic_partition_claims'
    __table_args__ = (
        sa.Index('ix_ironic_partition_claims_role_owner', 'role', 'owner'),
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    role: orm.Mapped[str] = orm.mapped_column(
        sa.String(ROLE_LENGTH), primary_key=True)
    node_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(NODE_ID_LENGTH), primary_key=True)
    owner: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(HOST_LENGTH), nullable=True)
    partition_key: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(PARTITION_KEY_LENGTH), nullable=True)
    epoch: orm.Mapped[int] = orm.mapped_column(
        sa.BigInteger, nullable=False)
    claimed_at = orm.mapped_column(timestamp_type(), nullable=True)
    expires_at = orm.mapped_column(timestamp_type(), nullable=False)
    updated_at = orm.mapped_column(timestamp_type(), nullable=False)
    incarnation: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(INCARNATION_LENGTH), nullable=True)
    shard: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(SHARD_LENGTH), nullable=True)


class SchemaContract(Base):
    """The schema's contract with the code: one row, ``id`` 1.

    ``oldest_code_revision`` is the oldest code revision (the newest
    migration that code knows) that may run against this schema; code that
    meets a schema revision it does not know runs when it knows this one
    (see :doc:`/admin/upgrading`). An expand migration leaves it; a
    contract migration, which removes what older code still uses, raises
    it. ``upgraded_by`` is the version of ``ironic-partition-dbsync`` that
    last changed the schema, ``updated_at`` when (database clock).
    """

    __tablename__ = 'ironic_partition_schema'
    __table_args__ = (
        {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, primary_key=True, autoincrement=False)
    oldest_code_revision: orm.Mapped[str] = orm.mapped_column(
        sa.String(REVISION_LENGTH), nullable=False)
    upgraded_by: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(VERSION_LENGTH), nullable=True)
    updated_at = orm.mapped_column(timestamp_type(), nullable=True)
