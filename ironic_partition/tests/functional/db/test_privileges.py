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

"""Least privilege on PostgreSQL and MariaDB: the service user's grants.

The schema is created by the administrator (the schema owner); a user
gets exactly what ``ironic-partition-dbsync grants`` prints. With it,
every statement a running service makes works, and none that changes the
schema does.
"""

import os
import subprocess

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa
import testscenarios
import testtools

from ironic_partition.db import api as db_api
from ironic_partition.db import grants
from ironic_partition.db import migration
from ironic_partition import exception
from ironic_partition.membership import database
from ironic_partition import settings as settings_mod
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.services import db as harness_db
from ironic_partition.tests.functional.db import base

ROLE = 'nova-compute'
NODES = ['00000000-0000-4000-8000-%012d' % i for i in range(1, 6)]

#: What each server says when a statement is not granted (PostgreSQL:
#: only a table's owner may drop or alter it).
DENIED = {'postgresql': '(permission denied|must be owner)',
          'mysql': 'command denied'}


class TestServiceUser(testscenarios.WithScenarios, testtools.TestCase):

    scenarios = [('postgresql', {'backend': 'postgresql'}),
                 ('mysql', {'backend': 'mysql'})]

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, self.backend)
        self.database = self.useFixture(
            harness_db.DatabaseFixture(self.backend))
        owner = db_api.Connection(self.database.url)
        self.addCleanup(owner.dispose)
        self.owner = owner

    def service(self, revision='head'):
        self.owner.upgrade(revision)
        user = self.useFixture(harness_db.ServiceUserFixture(self.database))
        db = db_api.Connection(user.url)
        self.addCleanup(db.dispose)
        return user, db

    def test_a_service_works_with_the_grants_only(self):
        user, db = self.service()
        self.assertEqual(migration.head_revision(), db.ensure_schema(
            upgrade=False))
        services = db.services
        services.register_service('cn1', ROLE, 'i1', origin='t',
                                  liveness_token=None, partition_key='r1')
        self.assertTrue(services.beat('cn1', ROLE, 'i1', partition_key='r1',
                                      outside_peers=['cn9']))
        services.register_service('cn2', ROLE, 'i2', origin='t',
                                  liveness_token=None, partition_key='r1')
        claims = db.claims
        claims.acquire_claims(ROLE, 'cn1', NODES, 60, incarnation='i1')
        self.assertEqual(set(NODES), set(claims.held_claims(
            ROLE, 'cn1', incarnation='i1')))
        claims.renew_claims(ROLE, 'cn1', 60, incarnation='i1')
        self.assertIsNotNone(claims.claim_left(ROLE, 'cn1', NODES[0], 'i1'))
        self.assertEqual(2, claims.release_claims(ROLE, 'cn1', NODES[:2],
                                                  incarnation='i1'))
        # A takeover, a graceful stop, the garbage collector, recover's
        # fence: each runs as the service user.
        replaced = services.register_service(
            'cn2', ROLE, 'i3', origin='t', liveness_token=None,
            takeover=True).replaced
        self.assertEqual('i2', replaced.incarnation)
        self.assertTrue(services.release_service('cn2', ROLE, 'i3'))
        claims.collect_garbage(ROLE, 0)
        self.assertEqual('i1', services.holder('cn1', ROLE))
        self.assertEqual([], grants.schema_rights(db))
        self.assertNotEqual([], grants.schema_rights(self.owner))

    def test_the_schema_cannot_be_changed(self):
        user, db = self.service()
        for statement in (
                'CREATE TABLE ipart_intruder (id INTEGER)',
                'DROP TABLE ironic_partition_claims',
                'ALTER TABLE ironic_partition_services ADD COLUMN x '
                'INTEGER',
                'DELETE FROM ironic_partition_alembic_version'):
            # NOTE(ironic-partition): oslo.db wraps PostgreSQL's error,
            # not MariaDB's.
            try:
                with db.engine.begin() as conn:
                    conn.execute(sa.text(statement))
            except (db_exc.DBError, sa.exc.DBAPIError) as e:
                self.assertRegex(str(e), '(?is)%s' % DENIED[self.backend])
            else:
                self.fail('%r was allowed' % statement)
        self.assertEqual(migration.head_revision(), db.schema_revision())

    def test_dbsync_as_the_service_user_is_refused_clearly(self):
        # NOTE(ironic-partition): a schema before the contract's table,
        # for the grants below; not the head, for the refused upgrade.
        old = '0005_outside_peers'
        self.assertIn(old, migration.known_revisions())
        self.assertNotEqual(migration.head_revision(), old)
        user, db = self.service(revision=old)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'svc.conf')
        harness_cli.write_conf(path, {'ironic_partition_database': {
            'connection': user.url}})
        proc = subprocess.run(
            [harness.process.bin_path('ironic-partition-dbsync'),
             '--config-file', path, 'upgrade'], capture_output=True,
            text=True, timeout=120, env=harness_cli.cli_env(),
            stdin=subprocess.DEVNULL)
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('may not change the schema: ironic-partition-dbsync '
                      "needs the schema owner's connection", proc.stderr)
        self.assertNotIn(harness_db.ServiceUserFixture.PASSWORD,
                         proc.stderr)
        self.assertEqual(old, db.schema_revision())
        # The grants the services need, as dbsync prints them.
        proc = subprocess.run(
            [harness.process.bin_path('ironic-partition-dbsync'),
             '--config-file', path, 'grants', '--user', 'svc'],
            capture_output=True, text=True, timeout=120,
            env=harness_cli.cli_env(), stdin=subprocess.DEVNULL)
        self.assertEqual(0, proc.returncode, proc.stderr)
        # Only the tables this schema has: it lacks the schema's contract
        # table, granted after its upgrade.
        statements = proc.stdout.splitlines()
        self.assertEqual(grants.service_grants(
            self.backend, self.database.name, 'svc',
            present=grants.tables_present(db)), statements)
        self.assertNotIn('ironic_partition_schema', '\n'.join(statements))

    def revoke(self, user, rights, table):
        if self.backend == 'postgresql':
            statements = ['REVOKE %s ON %s FROM %s' % (rights, table,
                                                       user.user)]
        else:
            statements = ["REVOKE %s ON `%s`.`%s` FROM '%s'@'%s'" % (
                rights, self.database.name, table, user.user, host)
                for host in ('%', 'localhost')]
        user._run(statements, self.database.name)

    def test_a_missing_grant_is_named(self):
        user, db = self.service()
        self.assertEqual([], grants.missing_rights(db))
        self.revoke(user, 'DELETE', 'ironic_partition_claims')
        self.assertEqual(['DELETE on ironic_partition_claims'],
                         grants.missing_rights(db))
        # A service that cannot register says which grant it lacks, not
        # that the database does not answer.
        self.revoke(user, 'INSERT, UPDATE', 'ironic_partition_services')
        conf = base.make_conf(self)
        backend = database.DatabaseMembership(
            settings_mod.for_tests('cn1', conf=conf), ROLE, version='1.0',
            connection=db_api.Connection(user.url))
        self.addCleanup(backend.stop, timeout=5)
        e = self.assertRaises(exception.ConfigurationError, backend.start)
        self.assertIn('its user lacks INSERT on ironic_partition_services, '
                      'UPDATE on ironic_partition_services, DELETE on '
                      'ironic_partition_claims', str(e))
        self.assertIn('ironic-partition-dbsync grants --user %s'
                      % user.user, str(e))
        self.assertNotIn(user.PASSWORD, str(e))
