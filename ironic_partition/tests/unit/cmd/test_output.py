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

"""Tables, fields, JSON and progress of the CLI."""

import io
import json
from unittest import mock

from ironic_partition.cmd import _output
from ironic_partition.cmd import base as base_cmd
from ironic_partition.tests import base


class TestFormatting(base.TestCase):

    def test_show_key(self):
        self.assertIn('unset', _output.show_key(None))
        self.assertIn('default group', _output.show_key(''))
        self.assertEqual('rack1', _output.show_key('rack1'))

    def test_percent(self):
        self.assertEqual(33.3, _output.percent(1, 3))
        self.assertEqual(0.0, _output.percent(1, 0))


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class TestProgress(base.TestCase):

    def test_quiet_when_piped(self):
        stream = io.StringIO()
        progress = _output.Progress(stream)
        self.assertFalse(progress.enabled)
        with progress.task('Listing', detail=lambda: '3 pages'):
            progress.show('x')
        self.assertEqual('', stream.getvalue())

    def test_shown_and_erased_on_a_terminal(self):
        stream = FakeTTY()
        progress = _output.Progress(stream, interval=0.01)
        self.assertTrue(progress.enabled)
        with progress.task('Listing nodes', detail=lambda: '3 pages'):
            pass
        text = stream.getvalue()
        self.assertIn('Listing nodes: 3 pages (', text)
        self.assertTrue(text.endswith('\r\x1b[K'))

    def test_detail_errors_do_not_break_the_task(self):
        stream = FakeTTY()
        progress = _output.Progress(stream)

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
        detail = _output.pages_detail(client)
        self.assertEqual('', detail())
        client.last_calls = 3
        self.assertEqual('3 pages, up to 3000 nodes', detail())


class _Record(base_cmd.ShowOne):

    DOC = {'host': 'cn1', 'count': 3, 'passed': None,
           'peer_list': ['cn1', 'cn2'],
           'peers': {'live': ['cn1'], 'dead': [], 'stale': False},
           'managed': [{'uuid': 'n1', 'name': None},
                       {'uuid': 'n2', 'name': 'b'}]}

    def take_action(self, parsed_args):
        return base_cmd.record(self.DOC)


class TestScriptOutput(base.TestCase):
    """-f value, shell and csv: flat values, never Python reprs."""

    def run_record(self, *argv):
        out = io.StringIO()
        app = mock.Mock(stdout=out, stderr=io.StringIO(), options=mock.Mock(
            debug=False))
        command = _Record(app, mock.Mock(debug=False))
        parsed = command.get_parser('test').parse_args(list(argv))
        command.run(parsed)
        return out.getvalue()

    def test_value(self):
        self.assertEqual(
            'cn1\n3\n\ncn1,cn2\nlive=cn1;dead=;stale=False\n'
            'uuid=n1;name= uuid=n2;name=b\n', self.run_record('-f', 'value'))
        self.assertEqual('cn1,cn2\n', self.run_record('-f', 'value', '-c',
                                                      'peer_list'))

    def test_shell(self):
        out = self.run_record('-f', 'shell', '-c', 'peer_list', '-c',
                              'peers')
        self.assertIn('peer_list="cn1,cn2"', out)
        self.assertIn('peers="live=cn1;dead=;stale=False"', out)
        self.assertNotIn('[', out)

    def test_json_keeps_the_structure(self):
        out = self.run_record('-f', 'json', '-c', 'peer_list')
        self.assertEqual({'peer_list': ['cn1', 'cn2']}, json.loads(out))
