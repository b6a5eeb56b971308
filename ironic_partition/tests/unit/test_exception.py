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

"""The messages of the errors operators read."""

from ironic_partition import exception
from ironic_partition.tests import base


class TestDatabaseConnectionFailed(base.TestCase):

    def test_a_sqlite_file_may_be_the_default(self):
        e = exception.DatabaseConnectionFailed(
            connection='sqlite:////var/lib/ironic-partition/x.sqlite',
            reason='gone')
        self.assertIn('([ironic_partition_database] connection, or its '
                      'default: a SQLite file under [ironic_partition] '
                      'state_path): gone', str(e))

    def test_a_server_database_was_set(self):
        e = exception.DatabaseConnectionFailed(
            connection='mysql+pymysql://u:***@db/ip', reason='refused')
        self.assertIn('(set by [ironic_partition_database] connection): '
                      'refused', str(e))

    def test_a_driver_not_installed_names_the_url_forms(self):
        e = exception.DatabaseConnectionFailed.from_error(
            'postgresql://u:***@db/ip',
            ModuleNotFoundError("No module named 'psycopg'"))
        self.assertIn("No module named 'psycopg'. The URL's database driver "
                      "is not installed: use mysql+pymysql://", str(e))
        self.assertIn('postgresql+psycopg2://', str(e))

    def test_the_hint_is_only_for_a_missing_driver(self):
        self.assertIsNone(exception.missing_driver_hint(
            RuntimeError('refused')))
        self.assertIn('postgresql+psycopg2://', exception.missing_driver_hint(
            ImportError("No module named 'psycopg'")))
