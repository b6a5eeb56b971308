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

"""Least privilege: what a running service may do to the database.

Two database users (see the install guide's "Database users"):

* the **schema owner**, for ``ironic-partition-dbsync`` only: it creates
  and alters the tables;
* the **service user**, for every nova-compute, agent and inspection
  hook: it reads and writes the rows of the two tables, reads the schema
  revision and the schema's contract, and nothing else.
  :func:`service_grants` writes its ``GRANT`` statements;
  ``ironic-partition-dbsync grants`` prints them.

:func:`schema_rights` tells, from a connection, which rights beyond the
service user's its user has, for the checks that flag a service running
with the owner's credential.
"""

import re

import sqlalchemy as sa

from ironic_partition._i18n import _
from ironic_partition.db import migration
from ironic_partition.db import models
from ironic_partition import exception

#: The tables whose rows a running service reads and writes.
ROW_TABLES = (models.Service.__tablename__, models.Claim.__tablename__)
#: The tables a running service only reads (the schema revision, and the
#: schema's contract with the code).
READ_TABLES = (migration.VERSION_TABLE, migration.CONTRACT_TABLE)
#: PostgreSQL's sequence behind the services table's id.
PG_SEQUENCES = ('%s_id_seq' % models.Service.__tablename__,)

#: What a running service may do to a row table.
ROW_RIGHTS = 'SELECT, INSERT, UPDATE, DELETE'

#: Rights that change the schema, in MariaDB/MySQL's ``SHOW GRANTS``.
_MYSQL_SCHEMA_RIGHTS = ('ALL PRIVILEGES', 'CREATE', 'DROP', 'ALTER',
                        'INDEX', 'REFERENCES', 'GRANT OPTION')

_NAME = re.compile(r'^[A-Za-z0-9_]+$')
_HOST = re.compile(r'^[A-Za-z0-9_.%:-]+$')


def _check(option, value, pattern):
    if not pattern.match(value or ''):
        raise exception.InvalidCommandInput(
            option=option, value=value,
            reason=_('letters, digits and "_" only (for the host, also '
                     '".", "-", ":" and "%")'))
    return value


def tables_present(db):
    """The tables of this project a database has (its schema's age).

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :returns: a set of table names.
    """
    with db.engine.connect() as conn:
        return set(sa.inspect(conn).get_table_names()) & set(
            ROW_TABLES + READ_TABLES)


def service_grants(dialect, database, user, host='%', present=None):
    """The statements giving a database user the service role.

    :param dialect: ``postgresql``, ``mysql`` or ``mariadb``.
    :param database: the database name.
    :param user: the service user (it must exist).
    :param host: MariaDB/MySQL only: the user's host part.
    :param present: the tables the schema has (:func:`tables_present`),
        or None for every table of this code's schema: a table that a
        schema older than this code lacks gets its grant after its
        upgrade (a GRANT on a missing table fails).
    :returns: a list of SQL statements.
    :raises InvalidCommandInput: an unusable name, or SQLite (whose file
        permissions are its only access control).
    """
    _check('--user', user, _NAME)
    _check('[ironic_partition_database] connection (database)', database,
           _NAME)
    row_tables = [t for t in ROW_TABLES if present is None or t in present]
    read_tables = [t for t in READ_TABLES
                   if present is None or t in present]
    if dialect == 'postgresql':
        return ([
            'GRANT CONNECT ON DATABASE "%s" TO "%s";' % (database, user),
            'GRANT USAGE ON SCHEMA public TO "%s";' % user,
            'GRANT %s ON TABLE %s TO "%s";' % (
                ROW_RIGHTS, ', '.join(row_tables), user),
            'GRANT SELECT ON TABLE %s TO "%s";' % (
                ', '.join(read_tables), user),
            'GRANT USAGE, SELECT ON SEQUENCE %s TO "%s";' % (
                ', '.join(PG_SEQUENCES), user)])
    if dialect in ('mysql', 'mariadb'):
        _check('--host', host, _HOST)
        who = "'%s'@'%s'" % (user, host)
        rows = ['GRANT %s ON `%s`.`%s` TO %s;' % (ROW_RIGHTS, database, t, who)
                for t in row_tables]
        reads = ['GRANT SELECT ON `%s`.`%s` TO %s;' % (database, t, who)
                 for t in read_tables]
        return rows + reads
    raise exception.InvalidCommandInput(
        option='[ironic_partition_database] connection', value=dialect,
        reason=_('an SQLite database has no users: its file\'s '
                 'permissions are its access control'))


def _pg_rights(conn):
    row = conn.execute(sa.text(
        "SELECT r.rolsuper, "
        "has_schema_privilege(current_user, 'public', 'CREATE'), "
        "EXISTS (SELECT 1 FROM pg_tables WHERE tablename = :table "
        "        AND tableowner = current_user), current_user "
        "FROM pg_roles r WHERE r.rolname = current_user"),
        {'table': ROW_TABLES[1]}).first()
    if row is None:
        return []
    rights = []
    if row[0]:
        rights.append(_('superuser'))
    if row[2]:
        rights.append(_('owner of the tables'))
    if row[1]:
        rights.append(_('CREATE on schema public'))
    return rights


def _mysql_grants(conn):
    """``SHOW GRANTS`` parsed.

    :returns: ``(grants, via_role)``: a list of ``(scope, rights, with
        grant option)``, scope without quotes (``db.*``, ``db.table``,
        ``*.*``), rights upper-cased; ``via_role`` when a role is granted
        (its rights are not listed).
    """
    found = []
    via_role = False
    for (grant,) in conn.execute(sa.text('SHOW GRANTS')).all():
        match = re.match(r'^GRANT (.+?) ON (\S+) TO ', grant)
        if match is None:
            via_role = via_role or bool(re.match(r'^GRANT \S+ TO ', grant))
            continue
        found.append((match.group(2).replace('`', ''),
                      {r.strip().upper() for r in match.group(1).split(',')},
                      grant.upper().rstrip().endswith('WITH GRANT OPTION')))
    return found, via_role


def _mysql_rights(conn, database):
    rights = set()
    for scope, what, grant_option in _mysql_grants(conn)[0]:
        if scope not in ('*.*', '%s.*' % database):
            continue
        for right in _MYSQL_SCHEMA_RIGHTS:
            if any(w.startswith(right) for w in what):
                rights.add('%s ON %s' % (right, scope))
        if grant_option:
            rights.add('GRANT OPTION ON %s' % scope)
    return sorted(rights)


def _needed():
    """``(right, table)`` pairs a running service needs."""
    rights = ROW_RIGHTS.split(', ')
    return ([(right, table) for table in ROW_TABLES for right in rights] +
            [('SELECT', table) for table in READ_TABLES])


def _pg_missing(conn):
    needed = _needed()
    checks = ['has_table_privilege(current_user, :t%d, :r%d)' % (i, i)
              for i in range(len(needed))]
    checks += ['has_sequence_privilege(current_user, :s%d, \'USAGE\')' % i
               for i in range(len(PG_SEQUENCES))]
    params = {}
    for i, (right, table) in enumerate(needed):
        params['t%d' % i] = table
        params['r%d' % i] = right
    for i, sequence in enumerate(PG_SEQUENCES):
        params['s%d' % i] = sequence
    row = conn.execute(sa.text('SELECT ' + ', '.join(checks)),
                       params).first()
    wanted = ['%s on %s' % pair for pair in needed] + [
        'USAGE on %s' % sequence for sequence in PG_SEQUENCES]
    return [what for what, ok in zip(wanted, row) if not ok]


def _like(pattern, name):
    """MariaDB's database-name pattern of a grant matches ``name``."""
    regex = ''
    escaped = False
    for char in pattern:
        if escaped:
            regex += re.escape(char)
            escaped = False
        elif char == '\\':
            escaped = True
        elif char == '%':
            regex += '.*'
        elif char == '_':
            regex += '.'
        else:
            regex += re.escape(char)
    return re.fullmatch(regex, name) is not None


def _mysql_missing(conn, database):
    """What ``SHOW GRANTS`` proves missing.

    Nothing when it cannot tell (rights through a role).
    """
    granted, via_role = _mysql_grants(conn)
    if via_role:
        return []

    def has(right, table):
        for scope, rights, _option in granted:
            if right not in rights and 'ALL PRIVILEGES' not in rights:
                continue
            db_part, _dot, table_part = scope.partition('.')
            if db_part == '*' or (_like(db_part, database) and
                                  table_part in ('*', table)):
                return True
        return False
    return ['%s on %s' % (right, table) for right, table in _needed()
            if not has(right, table)]


def missing_rights(db):
    """Which rights a running service needs that the user lacks.

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :returns: a list such as ``['DELETE on ironic_partition_claims']``;
        always empty on SQLite.
    """
    return _ask(db, _pg_missing, _mysql_missing)


def permission_denied(exc):
    """Whether a database error is the server refusing a right.

    :param exc: an exception.
    :returns: a bool.
    """
    text = str(getattr(exc, 'orig', None) or exc).lower()
    return ('permission denied' in text or 'command denied' in text or
            'must be owner' in text)


def denied_error(db, exc):
    """The error a service gives when its user lacks a grant.

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :param exc: the server's refusal.
    :returns: a ``ConfigurationError`` naming the missing rights (as far
        as :func:`missing_rights` can tell) and the command that prints
        the grants.
    """
    try:
        missing = ', '.join(missing_rights(db)) or _('a grant')
    except Exception:
        missing = _('a grant')
    return exception.ConfigurationError(
        group='ironic_partition_database', option='connection',
        value=db.masked_connection, reason=_(
            'its user lacks %(missing)s, which every service needs (the '
            'server said: %(err)s). Run the statements '
            '"ironic-partition-dbsync grants --user %(user)s" prints, as '
            'an administrator') % {
                'missing': missing,
                'err': ' '.join(str(getattr(exc, 'orig', None) or
                                    exc).split())[:200],
                'user': db.engine.url.username or 'USER'})


def schema_rights(db):
    """Which rights beyond the service role the connection's user has.

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :returns: a list of rights, for people (empty: the service role or
        less; always empty on SQLite).
    """
    return _ask(db, _pg_rights, _mysql_rights)


def _ask(db, postgresql, mysql):
    """Run the server's own question; SQLite has no users (empty)."""
    if db.dialect == 'sqlite':
        return []
    with db.reader() as conn:
        if db.dialect == 'postgresql':
            return postgresql(conn)
        return mysql(conn, db.engine.url.database)
