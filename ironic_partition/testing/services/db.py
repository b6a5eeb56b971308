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

"""A uniquely named database per harness run, on PostgreSQL or MariaDB.

The administrative URLs default to the services a developer (and CI) runs
on loopback; override them with ``IRONIC_PARTITION_TEST_PG_URL`` and
``IRONIC_PARTITION_TEST_MYSQL_URL``.
"""

import atexit
import logging
import os
import re
import tempfile
import threading
import uuid

import fixtures
import sqlalchemy
from sqlalchemy.engine import url as sa_url

from ironic_partition import _urls
from ironic_partition.db import api as db_api
from ironic_partition.db import grants

LOG = logging.getLogger(__name__)

BACKENDS = ('postgresql', 'mysql', 'sqlite')

DEFAULT_ADMIN_URLS = {
    'postgresql': 'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres',
    'mysql': 'mysql+pymysql://root@127.0.0.1:3306/',
}

ADMIN_URL_ENV = {
    'postgresql': 'IRONIC_PARTITION_TEST_PG_URL',
    'mysql': 'IRONIC_PARTITION_TEST_MYSQL_URL',
}

NAME_PREFIX = 'ipart_func_'
#: The prefix of the schema templates (see :func:`template_of`): never
#: :data:`NAME_PREFIX`, so that they do not count as a run's leftovers.
TEMPLATE_PREFIX = 'ipart_tpl_'
_NAME_RE = re.compile(r'^[a-z0-9_]+$')


def admin_url(backend):
    """Return the administrative SQLAlchemy URL of a server backend.

    :param backend: ``postgresql`` or ``mysql``.
    :returns: the URL string (from the environment, or the default).
    """
    if backend not in ADMIN_URL_ENV:
        raise ValueError('No database server for backend %r' % backend)
    return os.environ.get(ADMIN_URL_ENV[backend],
                          DEFAULT_ADMIN_URLS[backend])


#: Set to 1 (tox's functional env does) to fail, not skip, when a server
#: does not answer: CI must never skip silently.
REQUIRE_DB_ENV = 'IRONIC_PARTITION_TEST_REQUIRE_DB'

_UNAVAILABLE = {}


def unavailable_reason(backend):
    """Tell why a database server cannot be used, once per process.

    :param backend: ``sqlite``, ``postgresql`` or ``mysql``.
    :returns: None when usable, else a reason (password masked).
    """
    if backend == 'sqlite':
        return None
    if backend not in _UNAVAILABLE:
        engine = _engine(backend)
        try:
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text('SELECT 1'))
            _UNAVAILABLE[backend] = None
        except sqlalchemy.exc.DBAPIError as exc:
            _UNAVAILABLE[backend] = '%s not reachable at %s: %s' % (
                backend, _urls.mask(admin_url(backend)), exc)
        finally:
            engine.dispose()
    return _UNAVAILABLE[backend]


def require_server(test, backend):
    """Skip ``test`` when the server is missing, or fail it under CI.

    :param test: the running test case.
    :param backend: ``sqlite``, ``postgresql`` or ``mysql``.
    :returns: None
    """
    reason = unavailable_reason(backend)
    if reason:
        if os.environ.get(REQUIRE_DB_ENV) == '1':
            test.fail(reason)
        test.skipTest(reason)


def unique_name():
    """Return a fresh database name, recognisable as ours.

    :returns: a lower-case name such as ``ipart_func_1234_0123456789ab``.
    """
    return '%s%d_%s' % (NAME_PREFIX, os.getpid(), uuid.uuid4().hex[:12])


def _engine(backend):
    return sqlalchemy.create_engine(admin_url(backend),
                                    isolation_level='AUTOCOMMIT',
                                    poolclass=sqlalchemy.pool.NullPool)


def _check_name(name):
    if not _NAME_RE.match(name):
        raise ValueError('Refusing unsafe database name %r' % name)


def database_exists(backend, name):
    """Tell whether a database exists on the server of ``backend``.

    :param backend: ``postgresql``, ``mysql`` or ``sqlite``; for ``sqlite``
        ``name`` is the path of the database file.
    :param name: the database name (or file path).
    :returns: True when it exists.
    """
    if backend == 'sqlite':
        return os.path.exists(name)
    engine = _engine(backend)
    try:
        with engine.connect() as conn:
            if backend == 'postgresql':
                query = sqlalchemy.text(
                    'SELECT 1 FROM pg_database WHERE datname = :name')
            else:
                query = sqlalchemy.text(
                    'SELECT 1 FROM information_schema.schemata '
                    'WHERE schema_name = :name')
            return conn.execute(query, {'name': name}).first() is not None
    finally:
        engine.dispose()


def create_database(backend, name, template=None):
    """Create an empty database, or a copy of a template.

    :param backend: ``postgresql`` or ``mysql``.
    :param name: the database name; lower case, digits and underscores.
    :param template: a database to copy, tables and rows, which nobody
        may be writing to (see :func:`save_template`).
    :returns: None
    """
    _check_name(name)
    if template is not None:
        _check_name(template)
    engine = _engine(backend)
    try:
        with engine.connect() as conn:
            if backend == 'postgresql':
                conn.execute(sqlalchemy.text(
                    'CREATE DATABASE %s' % name if template is None else
                    'CREATE DATABASE %s TEMPLATE %s' % (name, template)))
            else:
                conn.execute(sqlalchemy.text(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4 '
                    'COLLATE utf8mb4_general_ci' % name))
                if template is not None:
                    try:
                        _copy_mysql_tables(conn, template, name)
                    except Exception:
                        conn.exec_driver_sql('DROP DATABASE `%s`' % name)
                        raise
    finally:
        engine.dispose()
    LOG.info('Created %s database %s%s', backend, name,
             '' if template is None else ' from %s' % template)


def _copy_mysql_tables(conn, source, target):
    # NOTE(harness): MariaDB has no CREATE DATABASE ... TEMPLATE: each
    # table is created as SHOW CREATE TABLE prints it (its keys, foreign
    # keys and options; the references are to the same database), in any
    # order without the foreign key checks, then its rows are copied.
    if not conn.execute(sqlalchemy.text(
            'SELECT 1 FROM information_schema.schemata WHERE '
            'schema_name = :schema'), {'schema': source}).first():
        raise ValueError('No database %s to copy' % source)
    conn.exec_driver_sql('USE `%s`' % target)
    conn.exec_driver_sql('SET SESSION foreign_key_checks = 0')
    try:
        for table in _mysql_tables(conn, source):
            ddl = conn.exec_driver_sql(
                'SHOW CREATE TABLE `%s`.`%s`' % (source, table)).first()[1]
            conn.execution_options(no_parameters=True).exec_driver_sql(ddl)
            conn.exec_driver_sql('INSERT INTO `%s` SELECT * FROM `%s`.`%s`'
                                 % (table, source, table))
    finally:
        conn.exec_driver_sql('SET SESSION foreign_key_checks = 1')


def _mysql_tables(conn, schema):
    return [row[0] for row in conn.execute(sqlalchemy.text(
        "SELECT table_name FROM information_schema.tables WHERE "
        "table_schema = :schema AND table_type = 'BASE TABLE' "
        "ORDER BY table_name"), {'schema': schema})]


def _mysql_copyable(conn, schema):
    """Tell whether tables and rows are all there is to a schema."""
    for query in (
            'SELECT COUNT(*) FROM information_schema.tables WHERE '
            "table_schema = :schema AND table_type != 'BASE TABLE'",
            'SELECT COUNT(*) FROM information_schema.triggers WHERE '
            'trigger_schema = :schema',
            'SELECT COUNT(*) FROM information_schema.routines WHERE '
            'routine_schema = :schema',
            'SELECT COUNT(*) FROM information_schema.events WHERE '
            'event_schema = :schema'):
        if conn.execute(sqlalchemy.text(query), {'schema': schema}).scalar():
            return False
    return True


def drop_database(backend, name):
    """Drop a database, disconnecting whoever still uses it.

    :param backend: ``postgresql`` or ``mysql``.
    :param name: the database name.
    :returns: None
    """
    _check_name(name)
    engine = _engine(backend)
    try:
        with engine.connect() as conn:
            if backend == 'postgresql':
                # NOTE(harness): WITH (FORCE) (PostgreSQL 13+) terminates
                # sessions left by killed or stopped services.
                conn.execute(sqlalchemy.text(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name))
            else:
                _kill_mysql_sessions(conn, name)
                conn.execute(sqlalchemy.text(
                    'DROP DATABASE IF EXISTS %s' % name))
    finally:
        engine.dispose()
    LOG.info('Dropped %s database %s', backend, name)


#: ``{(backend, key): template name}`` of this process (see
#: :func:`template_of`).
_TEMPLATES = {}
_TEMPLATES_LOCK = threading.Lock()


def template_of(backend, key):
    """The schema template a fixture of ``key`` may copy, if any.

    A service's migrations take seconds (neutron's eleven, nova's and
    Ironic's three to five) and give every database of one installed
    release the same schema. So the first fixture of a process migrates
    its database as usual and keeps a copy (:func:`save_template`); the
    next ones copy it in a fraction of a second: PostgreSQL's ``CREATE
    DATABASE ... TEMPLATE``, or on MariaDB each table as ``SHOW CREATE
    TABLE`` prints it, with its rows.

    :param backend: the fixture's backend.
    :param key: what the schema is, e.g. ``ironic`` (lower case).
    :returns: the template's name, or None.
    """
    with _TEMPLATES_LOCK:
        return _TEMPLATES.get((backend, key))


def save_template(backend, key, source):
    """Keep a copy of ``source``'s schema for the next fixtures of ``key``.

    Call it right after the migrations, before any service connects or
    writes a row: the copy is taken as the database is. Nothing is kept
    when a template of ``key`` exists already, on MariaDB when the schema
    has more than tables (views, triggers, routines, events), or when the
    copy fails (logged): the next fixtures of ``key`` then migrate, as
    this one did. The templates are dropped when the process exits.

    :param backend: the backend of ``source``, ``postgresql`` or
        ``mysql``.
    :param key: what the schema is (see :func:`template_of`).
    :param source: the migrated database's name.
    :returns: None
    """
    _check_name(key)
    with _TEMPLATES_LOCK:
        if (backend, key) in _TEMPLATES:
            return
        if backend == 'mysql':
            engine = _engine(backend)
            try:
                with engine.connect() as conn:
                    if not _mysql_copyable(conn, source):
                        LOG.info('No template of %s: more than tables', key)
                        return
            finally:
                engine.dispose()
        name = '%s%d_%s' % (TEMPLATE_PREFIX, os.getpid(), key)
        try:
            # NOTE(harness): a process of the same pid that was killed
            # may have left one behind.
            drop_database(backend, name)
            create_database(backend, name, template=source)
        except Exception:
            # NOTE(harness): a template saves time, nothing more: without
            # one the next fixtures migrate, as this one did.
            LOG.warning('No template of %s kept from %s', key, source,
                        exc_info=True)
            return
        if not _TEMPLATES:
            atexit.register(_drop_templates)
        _TEMPLATES[(backend, key)] = name


def drop_template(backend, key):
    """Drop the template of ``key``, if this process has one.

    :param backend: ``postgresql`` or ``mysql``.
    :param key: what the schema is (see :func:`template_of`).
    :returns: None
    """
    with _TEMPLATES_LOCK:
        name = _TEMPLATES.pop((backend, key), None)
    if name is not None:
        drop_database(backend, name)


def _drop_templates():
    with _TEMPLATES_LOCK:
        templates = sorted(_TEMPLATES.items())
        _TEMPLATES.clear()
    for (backend, _key), name in templates:
        try:
            drop_database(backend, name)
        except Exception:
            LOG.exception('Could not drop the template database %s', name)


def _kill_mysql_sessions(conn, name):
    rows = conn.execute(sqlalchemy.text(
        'SELECT id FROM information_schema.processlist WHERE db = :name'),
        {'name': name}).fetchall()
    for (session_id,) in rows:
        try:
            conn.execute(sqlalchemy.text('KILL %d' % int(session_id)))
        except sqlalchemy.exc.DBAPIError:
            # NOTE(harness): the session may have ended in between.
            LOG.debug('Session %s already gone', session_id)


def list_leftover_databases(backend):
    """List databases that carry the harness prefix.

    :param backend: ``postgresql`` or ``mysql``.
    :returns: a sorted list of names.
    """
    engine = _engine(backend)
    try:
        with engine.connect() as conn:
            if backend == 'postgresql':
                query = 'SELECT datname FROM pg_database'
            else:
                query = ('SELECT schema_name FROM '
                         'information_schema.schemata')
            names = [row[0] for row in conn.execute(sqlalchemy.text(query))]
    finally:
        engine.dispose()
    return sorted(n for n in names if n.startswith(NAME_PREFIX))


class DatabaseFixture(fixtures.Fixture):
    """A database created at setUp and dropped at cleanup.

    :param backend: ``postgresql``, ``mysql`` or ``sqlite``.
    :param name: an explicit name; a unique one is generated by default.
    :param workdir: the directory for the ``sqlite`` file; a temporary
        directory by default.
    :param schema: what its schema will be (a :func:`template_of` key):
        where this process has a template of it, the database is a copy
        of that template (:attr:`copied`) and needs no migration; else
        it is empty (see :meth:`ensure_schema`).
    """

    def __init__(self, backend='postgresql', name=None, workdir=None,
                 schema=None):
        super().__init__()
        if backend not in BACKENDS:
            raise ValueError('Unknown database backend %r; expected one of '
                             '%s' % (backend, ', '.join(BACKENDS)))
        self.backend = backend
        self.name = name or unique_name()
        self.workdir = workdir
        self.schema = schema
        #: True when the database was copied with its schema.
        self.copied = False
        self.url = None
        self.path = None

    def _setUp(self):
        if self.backend == 'sqlite':
            workdir = self.workdir or self.useFixture(
                fixtures.TempDir()).path
            self.path = os.path.join(workdir, self.name + '.sqlite')
            self.url = 'sqlite:///%s' % self.path
            self.addCleanup(self._remove_file)
            return
        template = (None if self.schema is None else
                    template_of(self.backend, self.schema))
        create_database(self.backend, self.name, template=template)
        self.addCleanup(drop_database, self.backend, self.name)
        self.copied = template is not None
        self.url = self.url_for(self.name)

    def ensure_schema(self, migrate):
        """Give the database its schema: a copy has it, else migrate it.

        After ``migrate()`` the schema is kept for the next fixtures of
        the same key (:meth:`save_template`).

        :param migrate: a callable without arguments that runs the
            service's migrations on this database.
        :returns: None
        """
        if not self.copied:
            migrate()
            self.save_template()

    def save_template(self):
        """Keep this migrated database's schema for the next fixtures.

        See :func:`save_template`; nothing happens without a ``schema``
        or when the database is itself a copy.

        :returns: None
        """
        if (self.schema is not None and not self.copied and
                self.backend != 'sqlite'):
            save_template(self.backend, self.schema, self.name)

    def _remove_file(self):
        for suffix in ('', '-journal', '-wal', '-shm'):
            try:
                os.unlink(self.path + suffix)
            except FileNotFoundError:
                pass

    def url_for(self, name):
        """Build the SQLAlchemy URL of a database on this backend's server.

        :param name: the database name.
        :returns: the URL as a string, with password if any.
        """
        url = sa_url.make_url(admin_url(self.backend)).set(database=name)
        if self.backend == 'mysql':
            url = url.update_query_dict({'charset': 'utf8mb4'})
        return url.render_as_string(hide_password=False)

    def exists(self):
        """Tell whether the database (or SQLite file) still exists.

        :returns: True when it exists.
        """
        if self.backend == 'sqlite':
            return bool(self.path) and os.path.exists(self.path)
        return database_exists(self.backend, self.name)


def default_workdir():
    """Return the parent directory for harness working directories.

    :returns: ``$IRONIC_PARTITION_TEST_HARNESS_DIR`` or the system temp dir.
    """
    return os.environ.get('IRONIC_PARTITION_TEST_HARNESS_DIR',
                          tempfile.gettempdir())


class ServiceUserFixture(fixtures.Fixture):
    """A database user with the service role only, dropped at cleanup.

    The user is created at setUp on the server of a
    :class:`DatabaseFixture`; once the schema exists, :meth:`grant` gives
    it exactly the statements ``ironic-partition-dbsync grants`` prints
    (:func:`ironic_partition.db.grants.service_grants`), run as the
    administrator. Create it before the processes that connect as it, so
    that it is dropped after they stop.

    :param database: the :class:`DatabaseFixture` (``postgresql`` or
        ``mysql``).
    :param grant: grant at setUp (the schema exists already).
    """

    PASSWORD = 'ipart-service-secret'

    def __init__(self, database, grant=True):
        super().__init__()
        self.database = database
        self.user = 'ipart_svc_%s' % uuid.uuid4().hex[:10]
        self._grant_at_setup = grant
        self.url = None

    def _admin(self, database=None):
        url = sa_url.make_url(admin_url(self.database.backend))
        if database is not None:
            url = url.set(database=database)
        return sqlalchemy.create_engine(url, isolation_level='AUTOCOMMIT',
                                        poolclass=sqlalchemy.pool.NullPool)

    def _run(self, statements, database=None):
        engine = self._admin(database)
        try:
            with engine.connect() as conn:
                for statement in statements:
                    conn.execute(sqlalchemy.text(statement))
        finally:
            engine.dispose()

    def _setUp(self):
        if self.database.backend == 'postgresql':
            create = ["CREATE ROLE %s LOGIN PASSWORD '%s'" % (
                self.user, self.PASSWORD)]
        else:
            create = ["CREATE USER '%s'@'%s' IDENTIFIED BY '%s'" % (
                self.user, host, self.PASSWORD) for host in ('%', 'localhost')]
        self._run(create)
        self.addCleanup(self._drop)
        url = sa_url.make_url(self.database.url).set(
            username=self.user, password=self.PASSWORD)
        self.url = url.render_as_string(hide_password=False)
        if self._grant_at_setup:
            self.grant()

    def grant(self):
        """Give the user the service role (the schema must exist).

        :returns: None
        """
        backend = self.database.backend
        connection = db_api.Connection(self.database.url)
        try:
            present = grants.tables_present(connection)
        finally:
            connection.dispose()
        statements = grants.service_grants(backend, self.database.name,
                                           self.user, present=present)
        if backend == 'mysql':
            statements += grants.service_grants(
                backend, self.database.name, self.user, 'localhost',
                present=present)
        self._run(statements, self.database.name)

    def _drop(self):
        if self.database.backend == 'postgresql':
            if database_exists('postgresql', self.database.name):
                self._run(['DROP OWNED BY %s' % self.user],
                          self.database.name)
            self._run(['DROP ROLE IF EXISTS %s' % self.user])
        else:
            self._run(["DROP USER IF EXISTS '%s'@'%s'" % (self.user, host)
                       for host in ('%', 'localhost')])
