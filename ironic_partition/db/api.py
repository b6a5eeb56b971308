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

"""One membership database: its engine, transactions and schema.

A :class:`Connection` opens the ``[ironic_partition_database]`` URL through
a transaction context of its own (oslo.db's ``enginefacade``), not the
global one: nova-compute's ``[database]`` belongs to nova, and tests open
several databases in one process. Its two query APIs share that engine:

* :attr:`Connection.services`: the services rows (heartbeats, the holder
  of a host name), see :mod:`ironic_partition.db.services`;
* :attr:`Connection.claims`: the claims rows, see
  :mod:`ironic_partition.db.claims`.

Writes run at READ COMMITTED on MariaDB/MySQL (an ``UPDATE`` that matches
no row then takes no gap lock, so racing first heartbeats cannot deadlock
with each other's ``INSERT``), and every SQLite transaction begins
``IMMEDIATE`` (see :func:`_begin_immediately`).
"""

import collections
import os
import threading
import types

from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition import _urls
from ironic_partition.conf import database as database_conf
from ironic_partition.db import _common
from ironic_partition.db import claims
from ironic_partition.db import migration
from ironic_partition.db import models
from ironic_partition.db import services
from ironic_partition import exception

LOG = logging.getLogger(__name__)


def engine_kwargs(group):
    """Map the oslo.db options of a group to ``enginefacade`` arguments.

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


def _engine_defaults():
    """The engine arguments of the options' defaults.

    :returns: a dict of keyword arguments.
    """
    return engine_kwargs(types.SimpleNamespace(
        **{opt.dest: opt.default for opt in database_conf.opts}))


#: What a transaction context is configured with besides the URL and the
#: engine options: every setting it would otherwise read from the global
#: ``cfg.CONF`` ``[database]`` group (nova's, inside nova-compute).
_FIXED_SETTINGS = {
    'slave_connection': None,
    'sqlite_fk': False,
    'thread_checkin': True,
    'json_serializer': None,
    'json_deserializer': None,
    'logging_name': None,
    'expire_on_commit': False,
    'synchronous_reader': True,
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


def _read_committed(engine):
    """Run every MariaDB/MySQL transaction at READ COMMITTED.

    :param engine: a MariaDB/MySQL engine made by oslo.db.
    :returns: None
    """
    @sa.event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        engine.dialect.set_isolation_level(dbapi_connection,
                                           'READ COMMITTED')


#: Seconds a transaction of ours may sit idle between its statements (or
#: before its commit) before the server ends the session. Each of our
#: transactions is one statement or a few, issued back to back: only a
#: process that stopped in the middle of one (SIGSTOP, a frozen VM, a
#: paused container) waits that long, and its row locks would otherwise
#: block every peer's claim on those rows until it resumed, stalling the
#: takeover the lease exists for. Well under the automatic leases (60 s
#: and more on the defaults); with a shorter lease, a stopped holder's
#: locks outlast it by at most the difference. What the session had not
#: committed is rolled back, and the process fails that round (fail
#: closed).
IDLE_IN_TRANSACTION_SECONDS = 5

#: MariaDB's variable; MySQL has none (error 1193, unknown variable).
_MYSQL_UNKNOWN_VARIABLE = 1193


def _end_idle_transactions(engine):
    """Have the server end our sessions left idle inside a transaction.

    PostgreSQL's ``idle_in_transaction_session_timeout``, MariaDB's
    ``idle_transaction_timeout``; on MySQL, which has no such limit, a
    stopped holder's locks last until it resumes (a documented limit).

    :param engine: a PostgreSQL or MariaDB/MySQL engine made by oslo.db.
    :returns: None
    """
    name = engine.dialect.name

    @sa.event.listens_for(engine, 'connect')
    def _connect(dbapi_connection, record):
        cursor = dbapi_connection.cursor()
        try:
            if name == 'postgresql':
                cursor.execute('SET idle_in_transaction_session_timeout = %d'
                               % (IDLE_IN_TRANSACTION_SECONDS * 1000))
            else:
                try:
                    cursor.execute('SET SESSION idle_transaction_timeout = %d'
                                   % IDLE_IN_TRANSACTION_SECONDS)
                except Exception as e:
                    if e.args[:1] != (_MYSQL_UNKNOWN_VARIABLE,):
                        raise
        finally:
            cursor.close()
        if name == 'postgresql':
            # NOTE(ironic-partition): a SET runs in a transaction of its
            # own under psycopg2; end it before the pool hands it out.
            dbapi_connection.commit()


def _on_engine_create(engine):
    name = engine.dialect.name
    if name == 'sqlite':
        _begin_immediately(engine)
    elif name in ('mysql', 'mariadb'):
        # NOTE(ironic-partition): reads too: each of them is one
        # statement, or only needs each statement to see the latest
        # committed rows; the server's clock decides validity anyway.
        _read_committed(engine)
    if name in ('postgresql', 'mysql', 'mariadb'):
        _end_idle_transactions(engine)


@enginefacade.transaction_context_provider
class _Context(object):
    """The transaction context of one call: no request context here."""


class Connection(object):
    """Access to one membership database.

    :param connection: the SQLAlchemy URL.
    :param engine_kwargs: more ``enginefacade`` (``create_engine``)
        arguments; those not given take the defaults of the
        ``[ironic_partition_database]`` options.
    """

    def __init__(self, connection, **engine_kwargs):
        self.connection = connection
        self.masked_connection = _urls.mask(connection)
        self._engine_kwargs = dict(_engine_defaults(), **engine_kwargs)
        self._context = None
        self._lock = threading.Lock()
        #: Counters useful to tests and benchmarks.
        self.stats = collections.Counter()
        #: The services rows: a :class:`~ironic_partition.db.services.
        #: ServicesAPI`.
        self.services = services.ServicesAPI(self)
        #: The claims rows: a :class:`~ironic_partition.db.claims.
        #: ClaimsAPI`.
        self.claims = claims.ClaimsAPI(self)

    def _transaction_context(self):
        with self._lock:
            if self._context is None:
                _ensure_sqlite_directory(sa_url.make_url(self.connection))
                context = enginefacade.transaction_context()
                # NOTE(ironic-partition): every setting is given, so that
                # nothing is read from the global [database] group; the
                # factory still registers oslo.db's options there when it
                # starts, as it does for nova and Ironic.
                context.configure(connection=self.connection,
                                  **_FIXED_SETTINGS, **self._engine_kwargs)
                context.append_on_engine_create(_on_engine_create)
                self._context = context
            return self._context

    def writer(self):
        """Open a short write transaction.

        Committed when the block ends, rolled back when it raises.

        :returns: a context manager yielding a SQLAlchemy connection.
        """
        return self._transaction_context().writer.connection.using(
            _Context())

    def reader(self):
        """Open a short read transaction.

        :returns: a context manager yielding a SQLAlchemy connection.
        """
        return self._transaction_context().reader.connection.using(
            _Context())

    @property
    def engine(self):
        """The SQLAlchemy engine, created on first use.

        :returns: a ``sqlalchemy.engine.Engine``.
        """
        return self._transaction_context().writer.get_engine()

    @property
    def dialect(self):
        """The name of the database dialect, e.g. ``postgresql``.

        :returns: a string.
        """
        return sa_url.make_url(self.connection).get_backend_name()

    def dispose(self):
        """Close every pooled connection; the next use opens new ones.

        :returns: None
        """
        with self._lock:
            context, self._context = self._context, None
        if context is not None and context.is_started:
            context.writer.get_engine().dispose()

    def check(self):
        """Check that the server answers.

        :raises: oslo_db.exception.DBError (DBConnectionError usually) when
            it does not.
        :returns: the server's current time, an aware UTC ``datetime``.
        """
        with self.reader() as conn:
            return _common.utc(
                conn.execute(sa.select(models.utcnow())).scalar())

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

    def upgrade_from(self, revision='head'):
        """Upgrade the schema (idempotent), saying from which revision.

        :param revision: the target revision.
        :returns: ``(before, after)``, read under the upgrade lock.
        """
        return migration.upgrade_from(self.engine, revision)

    def ensure_schema(self, upgrade=True):
        """Check the schema, upgrading an embedded SQLite database.

        SQLite serves one host, with nothing to coordinate, and is
        upgraded at once; a server database must be upgraded by
        ``ironic-partition-dbsync upgrade``. A schema newer than this code
        is used when its contract lets this code run (later migrations
        that only add), with a WARNING.

        :param upgrade: False only checks (read-only callers, the CLI).
        :raises DatabaseTooNew: the schema is newer than this code may
            run against.
        :raises DatabaseNotMigrated: the schema is missing or old and
            cannot be upgraded here.
        :returns: the schema revision.
        """
        head = migration.head_revision()
        current = self.schema_revision()
        if current == head:
            return current
        known = migration.known_revisions()
        if current is not None and current not in known:
            return self._newer_schema(current, head, known)
        if upgrade and self.dialect == 'sqlite':
            LOG.info('Upgrading the embedded SQLite membership database '
                     '%(conn)s from schema %(cur)s to %(head)s',
                     {'conn': self.masked_connection, 'cur': current,
                      'head': head})
            return self.upgrade()
        raise exception.DatabaseNotMigrated(
            connection=self.masked_connection,
            current=current or _('(none)'), expected=head,
            pending=', '.join(migration.pending(current)))

    def newer_schema_error(self, current, contract=None):
        """The error for a schema revision this code does not know.

        :param current: the schema revision.
        :param contract: the schema's :data:`~ironic_partition.db.
            migration.Contract`, read when not given.
        :returns: a :class:`~ironic_partition.exception.DatabaseTooNew`
            naming the code the schema needs and who upgraded it.
        """
        if contract is None:
            contract = migration.read_contract(self.engine)
        return exception.DatabaseTooNew(
            connection=self.masked_connection, current=current,
            expected=migration.head_revision(),
            needs=contract and contract.oldest_code_revision,
            upgraded_by=contract and contract.upgraded_by)

    def _newer_schema(self, current, head, known):
        contract = migration.read_contract(self.engine)
        if contract is None or contract.oldest_code_revision not in known:
            raise self.newer_schema_error(current, contract)
        LOG.warning('The membership database %(conn)s is at schema '
                    'revision %(cur)s (upgraded by ironic-partition '
                    '%(by)s), newer than this code (ironic-partition '
                    '%(version)s, revisions up to %(head)s); its later '
                    'migrations only add, so this code runs against it. '
                    'Upgrade ironic-partition on this host.',
                    {'conn': self.masked_connection, 'cur': current,
                     'by': contract.upgraded_by or _('an unknown version'),
                     'version': __version__, 'head': head})
        return current
