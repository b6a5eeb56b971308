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

"""``ironic-partition``, the cliff application: parsing, output, errors."""

import io
import json
import os
from unittest import mock

import fixtures
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
            'ironic_partition.cmd.cli.IronicPartitionApp.setup_logging',
            lambda app, conf, cmd: None))
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def conf_file(self, text):
        path = os.path.join(self.tmp, 'test.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        return path

    def main(self, *argv):
        app = cli.IronicPartitionApp(stdout=self.out, stderr=self.err)
        return app.run(list(argv))

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
                         '--leave', '1', '-f', 'json')
        self.assertEqual(0, code)
        rows = json.loads(self.out.getvalue())
        self.assertEqual(1, len(rows))
        self.assertEqual(200, rows[0]['nodes'])
        self.assertEqual((3, 2), (rows[0]['members_before'],
                                  rows[0]['members_after']))
        self.assertEqual('', self.err.getvalue())

    def test_simulate_moves_name_the_leaving_member(self):
        code = self.main('simulate', '--nodes', '200', '--members', '3',
                         '--leave', '1', '--show', 'moves', '-f', 'value',
                         '-c', 'from')
        self.assertEqual(0, code)
        self.assertEqual({'compute-3'}, set(self.out.getvalue().split()))

    def test_simulate_mode_from_config(self):
        path = self.conf_file('[ironic_partition]\nring_mode = balanced\n'
                              'partition_exponent = 4\n')
        # The command's own --config-file, as inside the OpenStack client.
        code = self.main('simulate', '--config-file', path, '--nodes',
                         '100', '--show', 'members', '-f', 'json')
        self.assertEqual(0, code)
        rows = json.loads(self.out.getvalue())
        self.assertEqual({'balanced'}, {r['mode'] for r in rows})
        # 16 points per member balance 100 nodes within the load factor.
        self.assertLessEqual(max(r['before'] for r in rows), 35)

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
        self.assertEqual(_errors.EXIT_USAGE, self.main('no-such-command'))
        err = self.assertRaises(SystemExit, self.main, 'status', '--bogus')
        self.assertEqual(_errors.EXIT_USAGE, err.code)
        err = self.assertRaises(SystemExit, self.main)
        self.assertEqual(_errors.EXIT_USAGE, err.code)
        self.assertIn('a command is required', self.err.getvalue())

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
        for command in ('status', 'ring', 'simulate', 'check', 'reserve',
                        'release', 'takeover', 'serve'):
            self.out.truncate(0)
            self.assertEqual(0, self.main(command, '--help'))
            self.assertIn('exit codes:', self.out.getvalue())
            self.assertIn('--config-file', self.out.getvalue())
