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

import logging
import os
import re
import tempfile
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


def create_database(backend, name):
    """Create an empty database.

    :param backend: ``postgresql`` or ``mysql``.
    :param name: the database name; lower case, digits and underscores.
    :returns: None
    """
    _check_name(name)
    engine = _engine(backend)
    try:
        with engine.connect() as conn:
            if backend == 'postgresql':
                conn.execute(sqlalchemy.text('CREATE DATABASE %s' % name))
            else:
                conn.execute(sqlalchemy.text(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4 '
                    'COLLATE utf8mb4_general_ci' % name))
    finally:
        engine.dispose()
    LOG.info('Created %s database %s', backend, name)


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
    """

    def __init__(self, backend='postgresql', name=None, workdir=None):
        super().__init__()
        if backend not in BACKENDS:
            raise ValueError('Unknown database backend %r; expected one of '
                             '%s' % (backend, ', '.join(BACKENDS)))
        self.backend = backend
        self.name = name or unique_name()
        self.workdir = workdir
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
        create_database(self.backend, self.name)
        self.addCleanup(drop_database, self.backend, self.name)
        self.url = self.url_for(self.name)

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
