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

"""Exit codes and one-line errors of the CLI."""

import os

import fixtures
from oslo_config import cfg

from ironic_partition.cmd import _errors
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.tests import base


class TestExitCodes(base.TestCase):

    def test_mapping(self):
        cases = [
            (exception.InvalidPeerList(peer_list=['a'], host='b',
                                       partition_key='r'),
             _errors.EXIT_CONFIG),
            (exception.UnknownConductorGroup(group='x', endpoint='e',
                                             known='y'),
             _errors.EXIT_CONFIG),
            (cfg.ConfigFileParseError('f', 'bad'), _errors.EXIT_CONFIG),
            (exception.InvalidCommandInput(option='--x', value=1,
                                           reason='r'),
             _errors.EXIT_CONFIG),
            (exception.BackendNotSupported(backend='nova', reason='r'),
             _errors.EXIT_CONFIG),
            (exception.IronicUnavailable(endpoint='e', reason='r'),
             _errors.EXIT_IRONIC),
            (exception.PartitionNotReady(
                reason=exception.IronicUnavailable(endpoint='e',
                                                   reason='r')),
             _errors.EXIT_IRONIC),
            (exception.PartitionNotReady(reason='membership stale'),
             _errors.EXIT_NOT_READY),
            (exception.DatabaseConnectionFailed(connection='c', reason='r'),
             _errors.EXIT_DATABASE),
            (exception.DatabaseNotMigrated(connection='c', current='x',
                                           expected='y'),
             _errors.EXIT_DATABASE),
            (exception.MembershipUnavailable(role='agent', reason='r'),
             _errors.EXIT_DATABASE),
            (KeyError('boom'), _errors.EXIT_INTERNAL),
        ]
        for exc, code in cases:
            self.assertEqual(code, _errors.exit_code_for(exc), repr(exc))

    def test_every_code_is_documented_once(self):
        codes = [code for code, _text in _errors.EXIT_CODES]
        self.assertEqual(len(codes), len(set(codes)))
        self.assertIn('70 unexpected', _errors.exit_codes_epilog())

    def test_value_error_names_group_and_file(self):
        path = self.create_tempfiles_conf(
            '[ironic]\npartition_key = rack 1\n')
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf(['--config-file', path], project='ironic-partition')
        err = self.assertRaises(cfg.ConfigFileValueError,
                                lambda: conf.ironic.partition_key)
        text = _errors.describe_error(err, conf)
        self.assertIn('[ironic] partition_key', text)
        self.assertIn('in %s' % path, text)
        self.assertNotIn('LocationInfo', text)
        self.assertNotIn('\n', text)

    def test_internal_error_mentions_debug(self):
        text = _errors.describe_error(KeyError('x'))
        self.assertIn('KeyError', text)
        self.assertIn('--debug', text)

    def create_tempfiles_conf(self, text):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'x.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        return path

    def test_one_line(self):
        self.assertEqual('a b c', exception.one_line('a\n  b\n\tc\n'))
