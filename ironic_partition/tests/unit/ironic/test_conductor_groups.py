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

"""Ironic's conductor groups and the partition key check."""

from ironic_partition import exception
from ironic_partition.ironic import conductor_groups
from ironic_partition.tests import base


class FakeClient(object):
    endpoint = 'http://ironic'

    def __init__(self, conductors):
        self.conductors = conductors

    def list_conductors(self):
        return self.conductors


class TestGroups(base.TestCase):

    CONDUCTORS = [
        {'hostname': 'c2', 'conductor_group': 'rack1', 'alive': True},
        {'hostname': 'c1', 'conductor_group': 'rack1', 'alive': True},
        {'hostname': 'c3', 'conductor_group': 'rack2', 'alive': False},
        {'hostname': 'c4', 'conductor_group': '', 'alive': True},
    ]

    def test_conductor_groups(self):
        self.assertEqual(
            {'rack1': {'alive': ['c1', 'c2'], 'dead': []},
             'rack2': {'alive': [], 'dead': ['c3']},
             '': {'alive': ['c4'], 'dead': []}},
            conductor_groups.by_group(self.CONDUCTORS))

    def test_known_group(self):
        client = FakeClient(self.CONDUCTORS)
        self.assertEqual(self.CONDUCTORS,
                         conductor_groups.check(client, 'rack2'))
        self.assertEqual(self.CONDUCTORS, conductor_groups.check(client, ''))
        self.assertEqual(self.CONDUCTORS, conductor_groups.check(client, None))

    def test_unknown_group(self):
        err = self.assertRaises(exception.UnknownConductorGroup,
                                conductor_groups.check,
                                FakeClient(self.CONDUCTORS), 'rack9')
        self.assertIn("partition_key 'rack9'", str(err))
        self.assertIn('"", \'rack1\', \'rack2\'', str(err))

    def test_no_conductor_at_all(self):
        err = self.assertRaises(exception.UnknownConductorGroup,
                                conductor_groups.check, FakeClient([]), 'r')
        self.assertIn('no conductor is registered', str(err))
