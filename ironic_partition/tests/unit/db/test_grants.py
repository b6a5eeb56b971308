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

"""The service user's grants, and the rights beyond them."""

import os
import types

from ironic_partition.db import grants
from ironic_partition import exception
from ironic_partition.tests import base

GUIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                     '..', '..', 'doc', 'source', 'install', 'index.rst')


class TestServiceGrants(base.TestCase):

    def test_postgresql(self):
        statements = grants.service_grants('postgresql', 'ipart', 'svc')
        self.assertIn('GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE '
                      'ironic_partition_services, ironic_partition_claims '
                      'TO "svc";', statements)
        self.assertIn('GRANT SELECT ON TABLE '
                      'ironic_partition_alembic_version, '
                      'ironic_partition_schema TO "svc";', statements)
        self.assertIn('GRANT USAGE, SELECT ON SEQUENCE '
                      'ironic_partition_services_id_seq TO "svc";',
                      statements)
        self.assertFalse([s for s in statements if 'ALL' in s or
                          'CREATE' in s])

    def test_mysql(self):
        statements = grants.service_grants('mysql', 'ipart', 'svc', '10.%')
        self.assertEqual(
            ["GRANT SELECT, INSERT, UPDATE, DELETE ON "
             "`ipart`.`ironic_partition_services` TO 'svc'@'10.%';",
             "GRANT SELECT, INSERT, UPDATE, DELETE ON "
             "`ipart`.`ironic_partition_claims` TO 'svc'@'10.%';",
             "GRANT SELECT ON `ipart`.`ironic_partition_alembic_version` "
             "TO 'svc'@'10.%';",
             "GRANT SELECT ON `ipart`.`ironic_partition_schema` "
             "TO 'svc'@'10.%';"], statements)

    def test_bad_names_and_sqlite(self):
        e = self.assertRaises(exception.InvalidCommandInput,
                              grants.service_grants, 'mysql', 'ipart',
                              "svc'; DROP")
        self.assertIn('--user', str(e))
        self.assertRaises(exception.InvalidCommandInput,
                          grants.service_grants, 'mysql', 'ipart', 'svc',
                          "x' OR")
        e = self.assertRaises(exception.InvalidCommandInput,
                              grants.service_grants, 'sqlite', 'f', 'svc')
        self.assertIn('file\'s permissions', str(e))

    def test_the_install_guide_prints_them(self):
        with open(GUIDE) as stream:
            guide = stream.read()
        for dialect, database in (('mysql', 'ironic_partition'),
                                  ('postgresql', 'ironic_partition')):
            for statement in grants.service_grants(
                    dialect, database, 'ironic_partition_service'):
                self.assertIn(statement, guide)


class FakeConn(object):

    def __init__(self, rows):
        self.rows = rows

    def execute(self, statement):
        return types.SimpleNamespace(all=lambda: self.rows)


class TestSchemaRights(base.TestCase):

    def test_mysql_service_user_has_none(self):
        rows = [("GRANT USAGE ON *.* TO `svc`@`%`",),
                ("GRANT SELECT, INSERT, UPDATE, DELETE ON "
                 "`ipart`.`ironic_partition_claims` TO `svc`@`%`",)]
        self.assertEqual([], grants._mysql_rights(FakeConn(rows), 'ipart'))

    def test_mysql_owner_and_root(self):
        rows = [("GRANT ALL PRIVILEGES ON `ipart`.* TO `own`@`%`",),
                ("GRANT CREATE, DROP ON `other`.* TO `own`@`%`",)]
        self.assertEqual(['ALL PRIVILEGES ON ipart.*'],
                         grants._mysql_rights(FakeConn(rows), 'ipart'))
        rows = [("GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH "
                 "GRANT OPTION",)]
        self.assertEqual(['ALL PRIVILEGES ON *.*', 'GRANT OPTION ON *.*'],
                         grants._mysql_rights(FakeConn(rows), 'ipart'))

    def test_sqlite_has_no_users(self):
        self.assertEqual([], grants.schema_rights(
            types.SimpleNamespace(dialect='sqlite')))


class TestMissingRights(base.TestCase):

    def _missing(self, rows, database='ipart'):
        return grants._mysql_missing(FakeConn(rows), database)

    def test_the_printed_grants_leave_nothing_missing(self):
        rows = [("GRANT USAGE ON *.* TO `svc`@`%`",)] + [
            (s.rstrip(';').replace("'svc'@'%'", '`svc`@`%`'),)
            for s in grants.service_grants('mysql', 'ipart', 'svc')]
        self.assertEqual([], self._missing(rows))

    def test_a_revoked_right_is_named(self):
        rows = [("GRANT SELECT, INSERT, UPDATE ON "
                 "`ipart`.`ironic_partition_claims` TO `svc`@`%`",),
                ("GRANT ALL PRIVILEGES ON `ipart`.`ironic_partition_services`"
                 " TO `svc`@`%`",),
                ("GRANT SELECT ON `ipart`.`ironic_partition_alembic_version` "
                 "TO `svc`@`%`",)]
        self.assertEqual(['DELETE on ironic_partition_claims',
                          'SELECT on ironic_partition_schema'],
                         self._missing(rows))

    def test_database_patterns_and_global_grants(self):
        rows = [("GRANT SELECT, INSERT, UPDATE, DELETE ON `ip\\_%`.* TO "
                 "`svc`@`%`",)]
        self.assertEqual([], self._missing(rows, 'ip_art'))
        self.assertNotEqual([], self._missing(rows, 'ipXart'))
        self.assertEqual([], self._missing(
            [("GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost`",)]))

    def test_rights_through_a_role_cannot_be_told(self):
        self.assertEqual([], self._missing(
            [("GRANT USAGE ON *.* TO `svc`@`%`",),
             ("GRANT `ipart_service` TO `svc`@`%`",)]))

    def test_permission_denied(self):
        for text in ('(1142, "INSERT command denied to user")',
                     'permission denied for table ironic_partition_claims',
                     'must be owner of table ironic_partition_services'):
            self.assertTrue(grants.permission_denied(Exception(text)))
        self.assertFalse(grants.permission_denied(
            Exception('(1045, "Access denied for user (using password)")')))
