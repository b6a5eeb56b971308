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

"""Reading which host owns each instance."""

import json
import os

import fixtures

from ironic_partition import exception
from ironic_partition.partition import instance_owners
from ironic_partition.tests import base


class TestInstanceOwners(base.TestCase):

    def _file(self, data):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'i.json')
        with open(path, 'w') as stream:
            stream.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def test_none(self):
        self.assertIsNone(instance_owners.load(None))

    def test_mapping_lower_cases_hosts(self):
        path = self._file({'i1': 'Compute-1', 'i2': 'c2'})
        self.assertEqual({'i1': 'compute-1', 'i2': 'c2'},
                         instance_owners.load(path))

    def test_openstack_server_list(self):
        path = self._file([{'ID': 'i1', 'Host': 'c1'},
                           {'ID': 'i2', 'Host': None}])
        self.assertEqual({'i1': 'c1'}, instance_owners.load(path))

    def test_errors_name_the_option_and_file(self):
        for data in ('not json', [1, 2], 7, {'': 'c1'}):
            path = self._file(data)
            err = self.assertRaises(exception.InvalidCommandInput,
                                    instance_owners.load, path)
            self.assertIn('--instance-hosts', str(err))
            self.assertIn(path, str(err))
        err = self.assertRaises(exception.InvalidCommandInput,
                                instance_owners.load, '/nonexistent')
        self.assertIn('No such file', str(err))

    def test_my_instances(self):
        self.assertEqual(frozenset({'i1'}), instance_owners.owned_by(
            {'i1': 'a1', 'i2': 'a2'}, 'a1'))
        self.assertEqual(frozenset(), instance_owners.owned_by(None, 'a1'))
