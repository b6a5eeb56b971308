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

from ironic_partition.cmd import _output
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
