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

"""Checking and reading the membership without joining it."""

import os

import fixtures

from ironic_partition.db import api as db_api
from ironic_partition import exception
from ironic_partition.partition import readonly
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base


class TestDatabase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_missing_sqlite_file_is_not_created(self):
        path = os.path.join(self.tmp, 'sub', 'm.sqlite')
        db = db_api.Connection('sqlite:///' + path)
        err = self.assertRaises(exception.DatabaseConnectionFailed,
                                readonly.check_database, db)
        self.assertIn('does not exist', str(err))
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_unmigrated_and_migrated(self):
        path = os.path.join(self.tmp, 'm.sqlite')
        open(path, 'w').close()
        db = db_api.Connection('sqlite:///' + path)
        self.addCleanup(db.dispose)
        err = self.assertRaises(exception.DatabaseNotMigrated,
                                readonly.check_database, db)
        self.assertIn('ironic-partition-dbsync upgrade', str(err))
        head = db.upgrade()
        self.assertEqual(head, readonly.check_database(db))

    def test_open_membership_never_heartbeats(self):
        path = os.path.join(self.tmp, 'm.sqlite')
        db = db_api.Connection('sqlite:///' + path)
        self.addCleanup(db.dispose)
        db.upgrade()
        self.config(group='ironic_partition_database',
                    connection='sqlite:///' + path)
        self.config(group='ironic_partition', host='a1')
        backend = readonly.open_membership(
            settings_mod.from_conf(self.conf), 'agent')
        try:
            membership = backend.members(None, None)
        finally:
            readonly.close_membership(backend)
        self.assertEqual(frozenset(['a1']), membership.live)
        self.assertEqual((), db.services.services('agent', 60).services)

    def test_unreachable_server(self):
        db = db_api.Connection(
            'postgresql+psycopg2://u:secret@127.0.0.1:1/x')
        err = self.assertRaises(exception.DatabaseConnectionFailed,
                                readonly.check_database, db)
        self.assertNotIn('secret', str(err))
        self.assertNotIn('\n', str(err))
