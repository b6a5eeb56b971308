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

"""The schema's contract with the code, on SQLite.

A rolling upgrade runs code of two versions against one schema: every
migration must only add, and code that meets a newer schema runs when the
schema's contract names a revision it knows. The same rules on PostgreSQL
and MariaDB are shown by the functional rolling-upgrade test.
"""

import io
import os

import fixtures
from oslo_config import cfg
from oslotest import base as test_base
import sqlalchemy as sa

from ironic_partition import __version__
from ironic_partition.cmd import checks
from ironic_partition.cmd import dbsync
from ironic_partition.db import api as db_api
from ironic_partition.db import migration
from ironic_partition.db import models
from ironic_partition.db import services as services_db
from ironic_partition import exception

FUTURE = '0099_future'


class TestExpandOnly(test_base.BaseTestCase):
    """Every migration declares its kind; an expand only adds."""

    def test_every_migration_declares_its_compatibility(self):
        kinds = {r.revision: getattr(r.module, 'compatibility', None)
                 for r in migration.revisions()}
        self.assertEqual(
            {}, {rev: kind for rev, kind in kinds.items()
                 if kind not in migration.COMPATIBILITIES})

    def test_contract_names_a_known_revision(self):
        ids = [r.revision for r in migration.revisions()]
        self.assertEqual('0001_services', ids[0])
        self.assertEqual(migration.head_revision(), ids[-1])
        path = self.useFixture(fixtures.TempDir()).join('m.sqlite')
        db = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(db.dispose)
        db.upgrade()
        contract = migration.read_contract(db.engine)
        self.assertIn(contract.oldest_code_revision, ids)
        self.assertEqual(__version__, contract.upgraded_by)
        self.assertIsNotNone(contract.updated_at)

    def _schema(self, engine):
        inspector = sa.inspect(engine)
        return {t: {c['name']: c for c in inspector.get_columns(t)}
                for t in inspector.get_table_names()
                if t != migration.VERSION_TABLE}

    def test_each_expand_only_adds(self):
        path = self.useFixture(fixtures.TempDir()).join('m.sqlite')
        db = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(db.dispose)
        before = {}
        for script in migration.revisions():
            db.upgrade(script.revision)
            after = self._schema(db.engine)
            if script.module.compatibility != 'expand':
                before = after
                continue
            for table, columns in before.items():
                self.assertIn(table, after, script.revision)
                for name, column in columns.items():
                    self.assertIn(name, after[table],
                                  '%s drops %s.%s' % (script.revision,
                                                      table, name))
                    self.assertEqual(str(column['type']),
                                     str(after[table][name]['type']),
                                     '%s alters %s.%s' % (
                                         script.revision, table, name))
                # NOTE(ironic-partition): a column the previous code does
                # not know must take its INSERTs without a value.
                for name in set(after[table]) - set(columns):
                    added = after[table][name]
                    self.assertTrue(
                        added['nullable'] or added['default'] is not None,
                        '%s adds %s.%s NOT NULL without a default' % (
                            script.revision, table, name))
            before = after


class _AtHead(test_base.BaseTestCase):
    """A SQLite database at this code's head."""

    def setUp(self):
        super().setUp()
        self.path = self.useFixture(fixtures.TempDir()).join('m.sqlite')
        self.db = db_api.Connection('sqlite:///%s' % self.path)
        self.addCleanup(self.db.dispose)
        self.db.upgrade()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='ironic_partition.db.api'))

    def _future(self, oldest, upgraded_by='9.0.0'):
        """What a later dbsync leaves: a revision this code does not know."""
        contract = models.SchemaContract.__table__
        with self.db.engine.begin() as conn:
            conn.execute(sa.text(
                'UPDATE %s SET version_num = :rev' % migration.VERSION_TABLE),
                {'rev': FUTURE})
            conn.execute(contract.update().values(
                oldest_code_revision=oldest, upgraded_by=upgraded_by))


class TestEnsureSchema(_AtHead):

    def test_newer_schema_that_keeps_this_code_runs_with_a_warning(self):
        self._future('0004_database_node')
        self.assertEqual(FUTURE, self.db.ensure_schema(upgrade=False))
        self.assertEqual(FUTURE, self.db.ensure_schema())
        self.assertIn('at schema revision %s (upgraded by ironic-partition '
                      '9.0.0), newer than this code (ironic-partition %s, '
                      'revisions up to %s)' % (FUTURE, __version__,
                                               migration.head_revision()),
                      self.log.output)

    def test_newer_schema_that_needs_newer_code_is_refused(self):
        self._future(FUTURE)
        e = self.assertRaises(exception.DatabaseTooNew,
                              self.db.ensure_schema)
        self.assertEqual(
            'The membership database sqlite:///%s is at schema revision '
            '%s (upgraded by ironic-partition 9.0.0), which needs code of '
            'revision %s or later; this code (ironic-partition %s) knows '
            'revisions up to %s. Install an ironic-partition that knows '
            '%s on this host.' % (self.path, FUTURE, FUTURE, __version__,
                                  migration.head_revision(), FUTURE),
            str(e))

    def test_newer_schema_without_a_contract_is_refused(self):
        with self.db.engine.begin() as conn:
            conn.execute(sa.text(
                'UPDATE %s SET version_num = :rev' % migration.VERSION_TABLE),
                {'rev': FUTURE})
            conn.execute(sa.text('DROP TABLE %s' % migration.CONTRACT_TABLE))
        e = self.assertRaises(exception.DatabaseTooNew,
                              self.db.ensure_schema)
        self.assertIn('upgraded by ironic-partition an unknown version), '
                      'which needs code of revision (unknown) or later',
                      str(e))

    def test_older_schema_names_both_revisions_and_this_version(self):
        path = self.useFixture(fixtures.TempDir()).join('old.sqlite')
        db = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(db.dispose)
        db.upgrade('0004_database_node')
        self.assertIsNone(migration.read_contract(db.engine))
        e = self.assertRaises(exception.DatabaseNotMigrated,
                              db.ensure_schema, upgrade=False)
        self.assertIn('at schema revision 0004_database_node but this code '
                      '(ironic-partition %s) needs %s (the upgrade applies '
                      '0005_outside_peers, 0006_schema_contract, '
                      '0007_database_clocks). Run '
                      '"ironic-partition-dbsync upgrade"'
                      % (__version__, migration.head_revision()), str(e))
        self.assertEqual(['0005_outside_peers', '0006_schema_contract'],
                         migration.pending('0004_database_node')[:2])


class TestDbsyncContract(test_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(tmp, 'ip.conf')
        with open(self.conf_file, 'w') as f:
            f.write('[ironic_partition]\nstate_path = %s\n' % tmp)
        self.url = 'sqlite:///%s' % os.path.join(tmp,
                                                 'ironic_partition.sqlite')

    def _dbsync(self, *argv):
        out = io.StringIO()
        err = self.useFixture(fixtures.StringStream('stderr')).stream
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        status = dbsync.main(['--config-file', self.conf_file] + list(argv),
                             conf=cfg.ConfigOpts(), out=out)
        err.seek(0)
        return status, out.getvalue(), err.read()

    def test_version_prints_the_contract(self):
        self.assertEqual(0, self._dbsync('upgrade')[0])
        status, out, _err = self._dbsync('version')
        head = migration.head_revision()
        self.assertEqual(
            'current: %s\nhead: %s\noldest code: 0004_database_node\n'
            'upgraded by: %s\n' % (head, head, __version__), out)

    def test_upgrade_refuses_a_newer_schema(self):
        self.assertEqual(0, self._dbsync('upgrade')[0])
        db = db_api.Connection(self.url)
        self.addCleanup(db.dispose)
        with db.engine.begin() as conn:
            conn.execute(sa.text(
                'UPDATE %s SET version_num = :rev' % migration.VERSION_TABLE),
                {'rev': FUTURE})
        status, out, err = self._dbsync('upgrade')
        self.assertEqual(1, status)
        self.assertEqual('', out)
        self.assertIn('ironic-partition-dbsync upgrade failed for', err)
        self.assertIn('the schema is at revision %s (upgraded by '
                      'ironic-partition %s), newer than this '
                      'ironic-partition-dbsync knows (ironic-partition %s, '
                      'revisions up to %s): there is nothing it can upgrade'
                      % (FUTURE, __version__, __version__,
                         migration.head_revision()), err)


class TestSchemaCheck(_AtHead):
    """The upgrade check's ``schema`` findings during a rolling upgrade."""

    def _check(self, services=()):
        report = checks._Report()
        checks._check_schema(self.db, list(services), report)
        return [(f.severity, f.message) for f in report.findings], \
            report.passed

    def _service(self, host, version, alive=True):
        return services_db.ServiceRecord(
            host=host, role='nova-compute', partition_key='g',
            version=version, created_at=None, last_seen=None, down=False,
            alive=alive)

    def test_one_version_at_head_passes(self):
        self.assertEqual(([], ['schema']), self._check(
            [self._service('cn1', '1.0'), self._service('cn2', '1.0'),
             self._service('gone', '0.9', alive=False)]))

    def test_mixed_versions_are_named_with_their_hosts(self):
        found, passed = self._check(
            [self._service('cn2', '1.0'), self._service('cn1', '0.9'),
             self._service('cn3', '1.0'), self._service('cn4', None)])
        self.assertEqual(
            [('warning', 'The live services run 3 versions of '
              'ironic-partition: (unknown) on cn4; 0.9 on cn1; 1.0 on cn2, '
              'cn3. A rolling upgrade is under way: finish it (every service '
              'on the new version) before the next "ironic-partition-dbsync '
              'upgrade"')], found)
        self.assertEqual([], passed)

    def test_a_newer_schema_this_code_runs_against_warns(self):
        self._future('0004_database_node')
        found, passed = self._check()
        self.assertEqual([], passed)
        self.assertEqual(
            [('warning', "The membership database is at schema revision "
              "%s (upgraded by ironic-partition 9.0.0), newer than this "
              "host's ironic-partition %s (revisions up to %s): its later "
              "migrations only add, so this version runs, but upgrade "
              "ironic-partition on this host" % (
                  FUTURE, __version__, migration.head_revision()))], found)
