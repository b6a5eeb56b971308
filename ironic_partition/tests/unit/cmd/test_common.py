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

"""Formatting, parsing, progress and error mapping of the CLI."""

import io
import json
import os

import fixtures
from oslo_config import cfg

from ironic_partition.cmd import _common
from ironic_partition import conf as ip_conf
from ironic_partition.db import api as db_api
from ironic_partition import exception
from ironic_partition.tests import base


class TestFormatting(base.TestCase):

    def test_table_aligns_numbers_right_and_text_left(self):
        lines = _common.format_table(
            ('NAME', 'NODES'), [('a1', 5), ('compute-10', 1234), ('x', None)])
        self.assertEqual(['NAME        NODES',
                          '----------  -----',
                          'a1              5',
                          'compute-10   1234',
                          'x           -'], lines)

    def test_table_indent_and_bool_is_text(self):
        lines = _common.format_table(('A', 'B'), [(True, 1.5)], '  ')
        self.assertEqual('  True  1.5', lines[2])

    def test_fields(self):
        self.assertEqual(['Host           a1', 'Partition key  -'],
                         _common.format_fields([('Host', 'a1'),
                                                ('Partition key', None)]))

    def test_one_line(self):
        self.assertEqual('a b c', _common.one_line('a\n  b\n\tc\n'))

    def test_show_key(self):
        self.assertIn('unset', _common.show_key(None))
        self.assertIn('default group', _common.show_key(''))
        self.assertEqual('rack1', _common.show_key('rack1'))

    def test_percent(self):
        self.assertEqual(33.3, _common.percent(1, 3))
        self.assertEqual(0.0, _common.percent(1, 0))

    def test_json_is_sorted_and_indented(self):
        out = io.StringIO()
        _common.emit_json({'b': 1, 'a': [1]}, out)
        self.assertEqual('{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n',
                         out.getvalue())


class TestExitCodes(base.TestCase):

    def test_mapping(self):
        cases = [
            (exception.InvalidPeerList(peer_list=['a'], host='b',
                                       partition_key='r'),
             _common.EXIT_CONFIG),
            (exception.UnknownConductorGroup(group='x', endpoint='e',
                                             known='y'),
             _common.EXIT_CONFIG),
            (cfg.ConfigFileParseError('f', 'bad'), _common.EXIT_CONFIG),
            (exception.InvalidCommandInput(option='--x', value=1,
                                           reason='r'),
             _common.EXIT_CONFIG),
            (exception.BackendNotSupported(backend='nova', reason='r'),
             _common.EXIT_CONFIG),
            (exception.IronicUnavailable(endpoint='e', reason='r'),
             _common.EXIT_IRONIC),
            (exception.PartitionNotReady(
                reason=exception.IronicUnavailable(endpoint='e',
                                                   reason='r')),
             _common.EXIT_IRONIC),
            (exception.PartitionNotReady(reason='membership stale'),
             _common.EXIT_NOT_READY),
            (exception.DatabaseConnectionFailed(connection='c', reason='r'),
             _common.EXIT_DATABASE),
            (exception.DatabaseNotMigrated(connection='c', current='x',
                                           expected='y'),
             _common.EXIT_DATABASE),
            (exception.MembershipUnavailable(role='agent', reason='r'),
             _common.EXIT_DATABASE),
            (KeyError('boom'), _common.EXIT_INTERNAL),
        ]
        for exc, code in cases:
            self.assertEqual(code, _common.exit_code_for(exc), repr(exc))

    def test_every_code_is_documented_once(self):
        codes = [code for code, _text in _common.EXIT_CODES]
        self.assertEqual(len(codes), len(set(codes)))
        self.assertIn('70 unexpected', _common.exit_codes_epilog())

    def test_value_error_names_group_and_file(self):
        path = self.create_tempfiles_conf(
            '[ironic]\npartition_key = rack 1\n')
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf(['--config-file', path], project='ironic-partition')
        err = self.assertRaises(cfg.ConfigFileValueError,
                                lambda: conf.ironic.partition_key)
        text = _common.describe_error(err, conf)
        self.assertIn('[ironic] partition_key', text)
        self.assertIn('in %s' % path, text)
        self.assertNotIn('LocationInfo', text)
        self.assertNotIn('\n', text)

    def test_internal_error_mentions_debug(self):
        text = _common.describe_error(KeyError('x'))
        self.assertIn('KeyError', text)
        self.assertIn('--debug', text)

    def create_tempfiles_conf(self, text):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'x.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        return path


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class TestProgress(base.TestCase):

    def test_quiet_when_piped(self):
        stream = io.StringIO()
        progress = _common.Progress(stream)
        self.assertFalse(progress.enabled)
        with progress.task('Listing', detail=lambda: '3 pages'):
            progress.show('x')
        self.assertEqual('', stream.getvalue())

    def test_shown_and_erased_on_a_terminal(self):
        stream = FakeTTY()
        progress = _common.Progress(stream, interval=0.01)
        self.assertTrue(progress.enabled)
        with progress.task('Listing nodes', detail=lambda: '3 pages'):
            pass
        text = stream.getvalue()
        self.assertIn('Listing nodes: 3 pages (', text)
        self.assertTrue(text.endswith('\r\x1b[K'))

    def test_detail_errors_do_not_break_the_task(self):
        stream = FakeTTY()
        progress = _common.Progress(stream)

        def broken():
            raise RuntimeError('x')
        with progress.task('Work', detail=broken):
            pass
        self.assertIn('Work (', stream.getvalue())

    def test_pages_detail(self):
        class Client(object):
            last_calls = 0
            page_size = 1000
        client = Client()
        detail = _common.pages_detail(client)
        self.assertEqual('', detail())
        client.last_calls = 3
        self.assertEqual('3 pages, up to 3000 nodes', detail())


class TestInstanceHosts(base.TestCase):

    def _file(self, data):
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'i.json')
        with open(path, 'w') as stream:
            stream.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def test_none(self):
        self.assertIsNone(_common.load_instance_hosts(None))

    def test_mapping_lower_cases_hosts(self):
        path = self._file({'i1': 'Compute-1', 'i2': 'c2'})
        self.assertEqual({'i1': 'compute-1', 'i2': 'c2'},
                         _common.load_instance_hosts(path))

    def test_openstack_server_list(self):
        path = self._file([{'ID': 'i1', 'Host': 'c1'},
                           {'ID': 'i2', 'Host': None}])
        self.assertEqual({'i1': 'c1'}, _common.load_instance_hosts(path))

    def test_errors_name_the_option_and_file(self):
        for data in ('not json', [1, 2], 7, {'': 'c1'}):
            path = self._file(data)
            err = self.assertRaises(exception.InvalidCommandInput,
                                    _common.load_instance_hosts, path)
            self.assertIn('--instance-hosts', str(err))
            self.assertIn(path, str(err))
        err = self.assertRaises(exception.InvalidCommandInput,
                                _common.load_instance_hosts, '/nonexistent')
        self.assertIn('No such file', str(err))

    def test_my_instances(self):
        self.assertEqual(frozenset({'i1'}), _common.my_instances(
            {'i1': 'a1', 'i2': 'a2'}, 'a1'))
        self.assertEqual(frozenset(), _common.my_instances(None, 'a1'))


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
            _common.conductor_groups(self.CONDUCTORS))

    def test_known_group(self):
        client = FakeClient(self.CONDUCTORS)
        self.assertEqual(self.CONDUCTORS,
                         _common.check_group(client, 'rack2'))
        self.assertEqual(self.CONDUCTORS, _common.check_group(client, ''))
        self.assertEqual(self.CONDUCTORS, _common.check_group(client, None))

    def test_unknown_group(self):
        err = self.assertRaises(exception.UnknownConductorGroup,
                                _common.check_group,
                                FakeClient(self.CONDUCTORS), 'rack9')
        self.assertIn("partition_key 'rack9'", str(err))
        self.assertIn('"", \'rack1\', \'rack2\'', str(err))

    def test_no_conductor_at_all(self):
        err = self.assertRaises(exception.UnknownConductorGroup,
                                _common.check_group, FakeClient([]), 'r')
        self.assertIn('no conductor is registered', str(err))


class TestDatabase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_missing_sqlite_file_is_not_created(self):
        path = os.path.join(self.tmp, 'sub', 'm.sqlite')
        db = db_api.Connection('sqlite:///' + path)
        err = self.assertRaises(exception.DatabaseConnectionFailed,
                                _common.check_database, db)
        self.assertIn('does not exist', str(err))
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_unmigrated_and_migrated(self):
        path = os.path.join(self.tmp, 'm.sqlite')
        open(path, 'w').close()
        db = db_api.Connection('sqlite:///' + path)
        self.addCleanup(db.dispose)
        err = self.assertRaises(exception.DatabaseNotMigrated,
                                _common.check_database, db)
        self.assertIn('ironic-partition-dbsync upgrade', str(err))
        head = db.upgrade()
        self.assertEqual(head, _common.check_database(db))

    def test_open_membership_never_heartbeats(self):
        path = os.path.join(self.tmp, 'm.sqlite')
        db = db_api.Connection('sqlite:///' + path)
        self.addCleanup(db.dispose)
        db.upgrade()
        self.config(group='ironic_partition_database',
                    connection='sqlite:///' + path)
        self.config(group='ironic_partition', host='a1')
        settings = ip_conf.get_settings(self.conf)
        backend = _common.open_membership(self.conf, settings, 'agent')
        try:
            membership = backend.members(None, None)
        finally:
            _common.close_membership(backend)
        self.assertEqual(frozenset(['a1']), membership.live)
        self.assertEqual((), db.services.services('agent', 60).services)

    def test_unreachable_server(self):
        db = db_api.Connection(
            'postgresql+psycopg2://u:secret@127.0.0.1:1/x')
        err = self.assertRaises(exception.DatabaseConnectionFailed,
                                _common.check_database, db)
        self.assertNotIn('secret', str(err))
        self.assertNotIn('\n', str(err))
