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
import signal
import sys

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


class TestStopTogether(base.TestCase):
    """One teardown for the fixtures' processes, paused ones included."""

    def _service(self, name, argv):
        tmp = self.useFixture(fixtures.TempDir()).path
        service = process.Service(name, argv, os.path.join(tmp, 'x.log'))
        service.start()
        self.addCleanup(service.kill)
        return service

    def test_running_paused_and_stubborn_services_are_all_stopped(self):
        polite = self._service('polite', ['sleep', '60'])
        paused = self._service('paused', ['sleep', '60'])
        paused.signal(signal.SIGSTOP)
        stubborn = self._service('stubborn', [
            sys.executable, '-c',
            'import signal, time\n'
            'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
            'print("ready", flush=True)\n'
            'time.sleep(60)\n'])
        process.wait_for(lambda: 'ready' in open(stubborn.log_path).read(),
                         10, 'the stubborn process to ignore SIGTERM')
        failed = process.stop_together([polite, paused], [stubborn],
                                       timeout=1)
        self.assertEqual([], failed)
        for service in (polite, paused, stubborn):
            self.assertEqual([], service.group_pids(), service.name)
