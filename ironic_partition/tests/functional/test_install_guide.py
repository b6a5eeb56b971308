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
the database and its user with a few SQL statements, to write
``[ironic_partition_database] connection`` in one of two URL forms, and
to create the schema with ``ironic-partition-dbsync``. This test reads
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

from ironic_partition.testing import cli as harness_cli
from ironic_partition.testing import db as harness_db
from ironic_partition.testing import process as harness_process

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                   '..', 'doc', 'source', 'install')
GUIDE = os.path.join(DOC, 'index.rst')
GUIDE_CONF = os.path.join(DOC, 'nova-compute.conf')

#: The paragraph that introduces each server's SQL block.
SQL_INTRO = {'mysql': 'On MariaDB or MySQL', 'postgresql': 'On PostgreSQL'}
#: The URL bullet of each server's extra.
URL_EXTRA = {'mysql': '(extra ``mysql``)',
             'postgresql': '(extra ``postgresql``)'}
#: What the guide creates, dropped again after the test.
DATABASE = 'ironic_partition'
USER = 'ipart'

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

    def _url(self):
        """The guide's URL for this server, at the local server."""
        match = re.search(r'\* ``([^`]+)``\s*\n\s*%s' % re.escape(
            URL_EXTRA[self.backend]), self.page)
        self.assertIsNotNone(match, URL_EXTRA[self.backend])
        admin = sqlalchemy.engine.make_url(
            harness_db.admin_url(self.backend))
        return match.group(1).replace(
            'db.example.com', '%s:%d' % (admin.host, admin.port))

    def _drop(self):
        engine = sqlalchemy.create_engine(
            harness_db.admin_url(self.backend), isolation_level='AUTOCOMMIT',
            poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect() as conn:
                if self.backend == 'postgresql':
                    conn.execute(sqlalchemy.text(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DATABASE))
                    conn.execute(sqlalchemy.text(
                        'DROP USER IF EXISTS %s' % USER))
                else:
                    conn.execute(sqlalchemy.text(
                        'DROP DATABASE IF EXISTS %s' % DATABASE))
                    conn.execute(sqlalchemy.text(
                        "DROP USER IF EXISTS '%s'@'%%'" % USER))
        finally:
            engine.dispose()

    def _run_sql(self, block):
        engine = sqlalchemy.create_engine(
            harness_db.admin_url(self.backend), isolation_level='AUTOCOMMIT',
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

    def _nova_conf(self, url):
        """The guide's nova-compute.conf, pointed at the local server."""
        with open(GUIDE_CONF) as stream:
            text = stream.read()
        printed = re.search(r'^connection = (.*)$', text, re.M).group(1)
        path = os.path.join(self.workdir, 'nova.conf')
        with open(path, 'w') as stream:
            stream.write(text.replace(printed, url))
        return path

    def _dbsync(self, path):
        """The guide's dbsync command, with nova.conf at ``path``."""
        [line] = [ln for ln in self._block(
            'before the first nova-compute starts').splitlines()
            if ln.strip()]
        argv = line.replace('/etc/nova/nova.conf', path).split()
        argv[0] = harness_process.bin_path(argv[0])
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=120, env=harness_cli.cli_env(),
                              stdin=subprocess.DEVNULL)

    def test_from_an_empty_server_to_a_schema(self):
        self._drop()
        self.addCleanup(self._drop)
        self._run_sql(self._block(SQL_INTRO[self.backend]))
        url = self._url()
        if self.backend == 'postgresql':
            # The guide warns that a bare postgresql:// means psycopg 3,
            # which the extra does not install: one line naming both forms.
            bare = url.replace('postgresql+psycopg2://', 'postgresql://')
            proc = self._dbsync(self._nova_conf(bare))
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
        proc = self._dbsync(self._nova_conf(url))
        self.assertEqual(0, proc.returncode, proc.stderr)
        # The schema is there, readable by the guide's user over the
        # guide's URL.
        engine = sqlalchemy.create_engine(
            url, poolclass=sqlalchemy.pool.NullPool)
        try:
            tables = set(sqlalchemy.inspect(engine).get_table_names())
        finally:
            engine.dispose()
        self.assertIn('ironic_partition_services', tables)
        self.assertIn('ironic_partition_claims', tables)
