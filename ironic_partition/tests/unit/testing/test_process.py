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

"""The harness's log details: a service's log, cut to what subunit takes."""

import os

import fixtures

from ironic_partition.testing import process
from ironic_partition.tests import base


class TestLogContent(base.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'service.log')

    def _write(self, data):
        with open(self.path, 'wb') as stream:
            stream.write(data)

    def test_short_log_whole(self):
        self._write(b'one\ntwo\n')
        self.assertEqual(b'one\ntwo\n', b''.join(
            process.log_content(self.path, limit=64).iter_bytes()))

    def test_read_when_gathered(self):
        detail = process.log_content(self.path, limit=64)
        self._write(b'written after\n')
        self.assertEqual(b'written after\n', b''.join(detail.iter_bytes()))

    def test_long_log_keeps_its_end(self):
        self._write(b'a' * 100 + b'the end\n')
        text = b''.join(
            process.log_content(self.path, limit=8).iter_bytes())
        self.assertEqual(
            ('<the first 100 bytes of %s are left out>\nthe end\n'
             % self.path).encode('utf-8'), text)

    def test_default_under_subunit_packet(self):
        self.assertLess(process.LOG_DETAIL_BYTES, 4 * 1024 * 1024 - 4096)

    def test_missing_log_says_so(self):
        text = b''.join(process.log_content(self.path).iter_bytes())
        self.assertIn(b'<no log: ', text)
