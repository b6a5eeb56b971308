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

"""The install guide's commands, run as printed, on both SQL servers.

The guide (``doc/source/install/index.rst``) tells an operator to create
the database and its two users (the schema owner, the service user) with
a few SQL statements, to write the owner's URL in dbsync's own file, to
create the schema with ``ironic-partition-dbsync``, to grant the service
user its rights, and to write ``[ironic_partition_database] connection``
of the services in one of two URL forms. This test reads
those blocks out of the page itself and runs them against the real
MariaDB and PostgreSQL servers: only the server's address
(``db.example.com``) and the path of nova.conf change. The ``pip
install`` lines are run by the ``testing`` extra's lane
(``tox -e functional-long``).
"""

import os
import re
import subprocess

import fixtures
from oslotest import base
import sqlalchemy
import testscenarios

from ironic_partition.db import api as db_api
from ironic_partition.db import grants
from ironic_partition.db import migration
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                   '..', 'doc', 'source', 'install')
GUIDE = os.path.join(DOC, 'index.rst')

#: The paragraph that introduces each server's SQL block.
SQL_INTRO = {'mysql': 'On MariaDB or MySQL (Galera included), as an '
                      'administrator',
             'postgresql': 'On PostgreSQL, as an administrator'}
#: The paragraph that introduces each server's grants.
GRANTS_INTRO = {'mysql': 'The grants on MariaDB or MySQL',
                'postgresql': 'The grants on PostgreSQL'}
#: The paragraph that introduces the schema owner's file.
OWNER_INTRO = 'read by ``ironic-partition-dbsync`` and by operators only'
OWNER_CONF = '/etc/ironic-partition/dbsync.conf'
#: Each server's URL scheme.
SCHEME = {'mysql': 'mysql+pymysql://', 'postgresql': 'postgresql+psycopg2://'}
#: The URL bullet of each server's extra.
URL_EXTRA = {'mysql': '(extra ``mysql``)',
             'postgresql': '(extra ``postgresql``)'}
#: What the guide creates, dropped again after the test.
DATABASE = 'ironic_partition'
USERS = ('ipart_owner', 'ironic_partition_service')

load_tests = testscenarios.load_tests_apply_scenarios


def literal_blocks(text):
    """Split a reStructuredText page into (preceding text, block) pairs.

    :param text: the page.
    :returns: a list of ``(paragraph before the '::', block text)``.
    """
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].rstrip().endswith('::'):
            start = index
            while start > 0 and lines[start - 1].strip():
                start -= 1
            intro = '\n'.join(lines[start:index + 1])
            index += 1
            body = []
            while index < len(lines) and (not lines[index].strip() or
                                          lines[index].startswith(' ')):
                body.append(lines[index])
                index += 1
            blocks.append((intro, '\n'.join(body).strip('\n')))
            continue
        index += 1
    return blocks


def _dedent(block):
    return '\n'.join(line[4:] if line.startswith('    ') else line
                     for line in block.splitlines())


class InstallGuideTestCase(base.BaseTestCase):
    """The guide's SQL, URL and dbsync command, per server."""

    scenarios = [
        ('mysql', {'backend': 'mysql'}),
        ('postgresql', {'backend': 'postgresql'}),
    ]

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, self.backend)
        with open(GUIDE) as stream:
            self.page = stream.read()
        self.blocks = literal_blocks(self.page)
        self.workdir = self.useFixture(fixtures.TempDir()).path

    def _block(self, intro):
        found = [_dedent(body) for text, body in self.blocks
                 if intro in ' '.join(text.split())]
        self.assertEqual(1, len(found), 'one block after %r in %s'
                         % (intro, GUIDE))
        return found[0]

    def _url_printed(self):
        """The guide's service URL for this server."""
        match = re.search(r'\* ``([^`]+)``\s*\n\s*%s' % re.escape(
            URL_EXTRA[self.backend]), self.page)
        self.assertIsNotNone(match, URL_EXTRA[self.backend])
        return match.group(1)

    def _drop(self):
        engine = sqlalchemy.create_engine(
            harness_db.admin_url(self.backend), isolation_level='AUTOCOMMIT',
            poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect() as conn:
                if self.backend == 'postgresql':
                    conn.execute(sqlalchemy.text(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DATABASE))
                    for user in USERS:
                        conn.execute(sqlalchemy.text(
                            'DROP USER IF EXISTS %s' % user))
                else:
                    conn.execute(sqlalchemy.text(
                        'DROP DATABASE IF EXISTS %s' % DATABASE))
                    for user in USERS:
                        conn.execute(sqlalchemy.text(
                            "DROP USER IF EXISTS '%s'@'%%'" % user))
        finally:
            engine.dispose()

    def _run_sql(self, block, database=None):
        url = sqlalchemy.engine.make_url(harness_db.admin_url(self.backend))
        if database is not None:
            url = url.set(database=database)
        engine = sqlalchemy.create_engine(
            url, isolation_level='AUTOCOMMIT',
            poolclass=sqlalchemy.pool.NullPool)
        try:
            # NOTE(ironic-partition): through the driver's own cursor with
            # no parameters, so that pymysql leaves the '%' of
            # 'ipart'@'%' alone.
            raw = engine.raw_connection()
            try:
                cursor = raw.cursor()
                for statement in block.split(';'):
                    if statement.strip():
                        cursor.execute(statement.strip())
                cursor.close()
            finally:
                raw.close()
        finally:
            engine.dispose()

    def _local(self, url):
        admin = sqlalchemy.engine.make_url(
            harness_db.admin_url(self.backend))
        return url.replace('db.example.com',
                           '%s:%d' % (admin.host, admin.port))

    def _owner_conf(self, url=None):
        """The guide's schema owner's file, its URL for this server.

        :param url: another URL than the printed one.
        :returns: ``(path, the URL written)``.
        """
        lines = self._block(OWNER_INTRO).splitlines()
        [printed] = [ln.lstrip('# ') for ln in lines
                     if SCHEME[self.backend] in ln]
        printed = printed.split('=', 1)[1].strip()
        url = url or self._local(printed)
        text = '\n'.join(ln for ln in lines
                         if not ln.startswith('#') and 'connection' not in ln)
        path = os.path.join(self.workdir, 'dbsync.conf')
        with open(path, 'w') as stream:
            stream.write('%s\nconnection = %s\n' % (text, url))
        return path, url

    def _dbsync(self, path):
        """The guide's dbsync command, with nova.conf at ``path``."""
        [line] = [ln for ln in self._block(
            'before the first nova-compute starts').splitlines()
            if ln.strip()]
        argv = line.replace(OWNER_CONF, path).split()
        argv[0] = harness_process.bin_path(argv[0])
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=120, env=harness_cli.cli_env(),
                              stdin=subprocess.DEVNULL)

    def test_from_an_empty_server_to_a_schema(self):
        self._drop()
        self.addCleanup(self._drop)
        self._run_sql(self._block(SQL_INTRO[self.backend]))
        path, owner = self._owner_conf()
        if self.backend == 'postgresql':
            # The guide warns that a bare postgresql:// means psycopg 3,
            # which the extra does not install: one line naming both forms.
            bare = owner.replace('postgresql+psycopg2://', 'postgresql://')
            proc = self._dbsync(self._owner_conf(bare)[0])
            self.assertEqual(1, proc.returncode, proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
            # One error line (oslo.db's own WARNING about the URL may come
            # before it, as a log line).
            lines = [ln for ln in proc.stderr.splitlines()
                     if ln.startswith('ironic-partition-dbsync')]
            self.assertEqual(1, len(lines), proc.stderr)
            self.assertIn("No module named 'psycopg'", lines[0])
            self.assertIn('mysql+pymysql://', lines[0])
            self.assertIn('postgresql+psycopg2://', lines[0])
            path, owner = self._owner_conf()
        proc = self._dbsync(path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self._run_sql(self._block(GRANTS_INTRO[self.backend]),
                      database=DATABASE)
        # The services' URL, as printed: the schema readable, exactly the
        # service role's rights, no DDL.
        url = self._local(self._url_printed())
        db = db_api.Connection(url)
        self.addCleanup(db.dispose)
        self.assertEqual(migration.head_revision(), db.schema_revision())
        self.assertEqual([], grants.missing_rights(db))
        self.assertEqual([], grants.schema_rights(db))
        owner_db = db_api.Connection(owner)
        self.addCleanup(owner_db.dispose)
        self.assertNotEqual([], grants.schema_rights(owner_db))
        try:
            with db.engine.begin() as conn:
                conn.execute(sqlalchemy.text('CREATE TABLE intruder (i INT)'))
        except Exception as e:
            self.assertRegex(str(e), '(?i)(permission denied|command denied)')
        else:
            self.fail('the service user created a table')
