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

"""``ironic-partition``'s entry point: parsing, output, errors."""

import io
import json
import os
from unittest import mock

import fixtures
from oslo_config import cfg
from oslotest import base

from ironic_partition.cmd import _errors
from ironic_partition.cmd import cli
from ironic_partition.cmd import status


class TestMain(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.out))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.err))
        # NOTE: oslo.log's setup would add handlers to this process's root
        # logger for good.
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.cmd.cli._setup_logging', lambda conf: None))
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def conf_file(self, text):
        path = os.path.join(self.tmp, 'test.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        return path

    def main(self, *argv):
        return cli.main(list(argv), conf=cfg.ConfigOpts())

    def assert_one_error_line(self, code, expected_code, *needles):
        self.assertEqual(expected_code, code)
        lines = self.err.getvalue().splitlines()
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith('ironic-partition'), lines[0])
        for needle in needles:
            self.assertIn(needle, lines[0])
        self.assertNotIn('Traceback', self.err.getvalue())
        self.assertEqual('', self.out.getvalue())

    def test_simulate_json(self):
        code = self.main('simulate', '--nodes', '200', '--members', '3',
                         '--leave', '1', '--format', 'json')
        self.assertEqual(0, code)
        doc = json.loads(self.out.getvalue())
        self.assertEqual(200, doc['nodes'])
        self.assertEqual(['compute-3'], doc['event']['leaving'])
        self.assertEqual('', self.err.getvalue())

    def test_simulate_mode_from_config(self):
        path = self.conf_file('[ironic_partition]\nring_mode = balanced\n'
                              'partition_exponent = 4\n')
        code = self.main('--config-file', path, 'simulate', '--nodes',
                         '100', '--format', 'json')
        self.assertEqual(0, code)
        doc = json.loads(self.out.getvalue())
        self.assertEqual(['balanced'], [r['mode'] for r in doc['runs']])
        self.assertEqual(16, doc['partitions_per_member'])

    def test_missing_config_file(self):
        code = self.main('--config-file', '/nonexistent.conf', 'status')
        self.assert_one_error_line(code, _errors.EXIT_CONFIG,
                                   '/nonexistent.conf')

    def test_malformed_config_file(self):
        path = self.conf_file('[ironic\npartition_key = rack1\n')
        code = self.main('--config-file', path, 'check')
        self.assert_one_error_line(code, _errors.EXIT_CONFIG,
                                   'Failed to parse', path)

    def test_invalid_value(self):
        path = self.conf_file('[ironic]\npartition_key = rack 1\n')
        code = self.main('--config-file', path, 'status')
        self.assert_one_error_line(code, _errors.EXIT_CONFIG,
                                   'ironic-partition status: error:',
                                   '[ironic] partition_key', "'rack 1'")

    def test_host_missing_from_peer_list(self):
        path = self.conf_file('[ironic]\npartition_key = rack1\n'
                              'peer_list = a2,a3\n'
                              '[ironic_partition]\nhost = a1\n')
        code = self.main('--config-file', path, 'ring')
        self.assert_one_error_line(code, _errors.EXIT_CONFIG,
                                   "must contain this service's own host "
                                   "'a1'")

    def test_bad_simulate_input(self):
        code = self.main('simulate', '--leave', 'compute-9')
        self.assert_one_error_line(code, _errors.EXIT_CONFIG, '--leave',
                                   'compute-9')

    def test_usage_error_is_argparse_2(self):
        err = self.assertRaises(SystemExit, self.main, 'no-such-command')
        self.assertEqual(2, err.code)

    def test_unexpected_error_is_one_line_70(self):
        with mock.patch.object(status, 'gather', autospec=True,
                               side_effect=KeyError('boom')):
            code = self.main('status')
        self.assert_one_error_line(code, _errors.EXIT_INTERNAL, 'KeyError',
                                   '--debug')

    def test_interrupted(self):
        with mock.patch.object(status, 'gather', autospec=True,
                               side_effect=KeyboardInterrupt):
            code = self.main('status')
        self.assertEqual(_errors.EXIT_INTERRUPTED, code)
        self.assertIn('interrupted', self.err.getvalue())

    def test_every_command_is_wired(self):
        for command in ('status', 'ring', 'simulate', 'check', 'serve'):
            err = self.assertRaises(SystemExit, self.main, command, '--help')
            self.assertEqual(0, err.code)
            self.assertIn('exit codes:', self.out.getvalue())
