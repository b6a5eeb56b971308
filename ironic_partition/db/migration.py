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

"""Schema migrations of the membership database, driven by alembic.

The alembic scripts live in the package (``db/migrations``) and are found
relative to it, so no alembic.ini is needed and the current directory does
not matter. Upgrades are idempotent and serialised by a server-side lock on
PostgreSQL and MariaDB/MySQL, so ``ironic-partition-dbsync upgrade`` can be
run on several hosts at once and while services heartbeat.

Every migration is an *expand*: it only adds (a table, a nullable column,
an index), so that the services still running the previous code keep
running while the schema is upgraded under them. A migration that removes
what older code uses is a *contract*: it declares ``compatibility =
'contract'``, raises ``oldest_code_revision`` in ``ironic_partition_schema``
to the first code revision that no longer uses what it removes, and ships
a release after that code. The schema keeps that revision in
``ironic_partition_schema`` (:func:`read_contract`): code that meets a
schema revision it does not know runs when it knows that one. See
:doc:`/admin/upgrading`.
"""

import collections
import contextlib
import fcntl
import os
import threading

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from oslo_log import log as logging
import sqlalchemy as sa

from ironic_partition import __version__
from ironic_partition.db import models

LOG = logging.getLogger(__name__)

VERSION_TABLE = 'ironic_partition_alembic_version'
#: The schema's contract with the code (from ``0006_schema_contract``).
CONTRACT_TABLE = models.SchemaContract.__tablename__
#: The values a migration's ``compatibility`` may take.
COMPATIBILITIES = ('expand', 'contract')
_LOCK_NAME = 'ironic_partition_dbsync'
# NOTE(ironic-partition): any constant will do for pg_advisory_lock; this
# one spells "ipdbsync" in ASCII.
_PG_LOCK_KEY = 0x6970646273796e63
_MYSQL_LOCK_TIMEOUT = 300
# NOTE(ironic-partition): alembic's command API works through module-level
# proxies (alembic.context, alembic.op) and is not thread-safe.
_ALEMBIC_LOCK = threading.Lock()


def _script_location():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'migrations')


def _alembic_config(connection=None):
    config = alembic_config.Config()
    config.set_main_option('script_location', _script_location())
    if connection is not None:
        config.attributes['connection'] = connection
    return config


def head_revision():
    """Return the newest revision known to this code.

    :returns: the revision id of the single head.
    """
    script = alembic_script.ScriptDirectory.from_config(_alembic_config())
    return script.get_current_head()


def known_revisions():
    """Return every revision known to this code.

    :returns: a set of revision ids.
    """
    return {rev.revision for rev in revisions()}


def revisions():
    """Return the revisions known to this code, oldest first.

    :returns: a list of alembic ``Script`` objects (``revision``,
        ``module``).
    """
    script = alembic_script.ScriptDirectory.from_config(_alembic_config())
    return list(reversed(list(script.walk_revisions())))


def pending(current):
    """Return the revisions an upgrade from ``current`` would apply.

    :param current: a revision this code knows, or None for no schema.
    :returns: their ids, oldest first.
    """
    ids = [r.revision for r in revisions()]
    if current is None:
        return ids
    return ids[ids.index(current) + 1:]


#: What ``ironic_partition_schema`` says (None fields where not recorded).
Contract = collections.namedtuple(
    'Contract', ['oldest_code_revision', 'upgraded_by', 'updated_at'])


def read_contract(engine):
    """Read the schema's contract with the code.

    :param engine: a SQLAlchemy engine.
    :returns: a :data:`Contract`, or None when the schema has none (older
        than ``0006_schema_contract``, or not this project's).
    """
    table = models.SchemaContract.__table__
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(CONTRACT_TABLE):
            return None
        row = conn.execute(sa.select(
            table.c.oldest_code_revision, table.c.upgraded_by,
            table.c.updated_at).where(table.c.id == 1)).first()
    if row is None:
        return None
    return Contract(*row)


def _record_upgrade(conn):
    if not sa.inspect(conn).has_table(CONTRACT_TABLE):
        return
    table = models.SchemaContract.__table__
    conn.execute(table.update().where(table.c.id == 1).values(
        upgraded_by=__version__[:models.VERSION_LENGTH],
        updated_at=models.utcnow()))


def current_revision(engine):
    """Return the schema revision stored in a database.

    :param engine: a SQLAlchemy engine.
    :returns: the revision id, or None when the schema was never created.
    """
    with engine.connect() as conn:
        ctx = alembic_migration.MigrationContext.configure(
            conn, opts={'version_table': VERSION_TABLE})
        return ctx.get_current_revision()


@contextlib.contextmanager
def _upgrade_lock(conn):
    dialect = conn.dialect.name
    if dialect == 'postgresql':
        conn.execute(sa.text('SELECT pg_advisory_lock(:key)'),
                     {'key': _PG_LOCK_KEY})
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(sa.text('SELECT pg_advisory_unlock(:key)'),
                         {'key': _PG_LOCK_KEY})
            conn.commit()
    elif dialect in ('mysql', 'mariadb'):
        got = conn.execute(sa.text('SELECT GET_LOCK(:name, :timeout)'),
                           {'name': _LOCK_NAME,
                            'timeout': _MYSQL_LOCK_TIMEOUT}).scalar()
        conn.commit()
        if got != 1:
            raise RuntimeError('Timed out waiting for lock %s held by '
                               'another ironic-partition-dbsync'
                               % _LOCK_NAME)
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(sa.text('SELECT RELEASE_LOCK(:name)'),
                         {'name': _LOCK_NAME})
            conn.commit()
    elif dialect == 'sqlite' and conn.engine.url.database not in (
            None, '', ':memory:'):
        # NOTE(ironic-partition): a file lock next to the database keeps
        # two processes from creating the same tables at once.
        path = os.path.abspath(conn.engine.url.database) + '.lock'
        with open(path, 'a') as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)
    else:
        yield


def upgrade(engine, revision='head'):
    """Upgrade the schema of a database; a no-op when it is current.

    :param engine: a SQLAlchemy engine.
    :param revision: the target revision, ``head`` by default.
    :returns: the revision the database is at afterwards.
    """
    return upgrade_from(engine, revision)[1]


def upgrade_from(engine, revision='head'):
    """Upgrade the schema, and say from which revision, read under the lock.

    Two hosts upgrading at once are serialised: the second reads the
    revision the first left, so only one says it upgraded.

    :param engine: a SQLAlchemy engine.
    :param revision: the target revision, ``head`` by default.
    :returns: ``(before, after)``: the revisions before (None for an empty
        database) and after.
    """
    with _ALEMBIC_LOCK, engine.connect() as conn:
        with _upgrade_lock(conn):
            conn.commit()
            before = alembic_migration.MigrationContext.configure(
                conn, opts={'version_table': VERSION_TABLE}
            ).get_current_revision()
            conn.commit()
            alembic_command.upgrade(_alembic_config(conn), revision)
            conn.commit()
            after = alembic_migration.MigrationContext.configure(
                conn, opts={'version_table': VERSION_TABLE}
            ).get_current_revision()
            if before != after:
                _record_upgrade(conn)
            conn.commit()
    if before != after:
        LOG.info('Upgraded the membership database schema from %(before)s '
                 'to %(after)s', {'before': before, 'after': after})
    else:
        LOG.debug('Membership database schema already at %s', after)
    return before, after


def metadata():
    """Return the metadata the migrations must produce.

    :returns: the ``sqlalchemy.MetaData`` of :mod:`models`.
    """
    return models.Base.metadata
