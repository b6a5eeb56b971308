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

"""What the CLI prints: tables, fields, JSON, and progress on a terminal.

Nothing here decides anything: the subcommands compute a document, then
render it with these helpers as aligned text (:func:`format_table`,
:func:`format_fields`) or JSON (:func:`emit_json`). :class:`Progress`
shows what a long run is doing on stderr, only when it is a terminal.
"""

import contextlib
import json
import sys
import threading
import time

from ironic_partition._i18n import _


def emit_json(data, out=None):
    """Print a document as indented, key-sorted JSON.

    :param data: a JSON-serialisable object.
    :param out: the stream; ``sys.stdout`` by default.
    :returns: None
    """
    out = out if out is not None else sys.stdout
    json.dump(data, out, indent=2, sort_keys=True, default=str)
    out.write('\n')


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_table(headers, rows, indent=''):
    """Lay out rows as an aligned text table.

    Numbers are right-aligned, everything else left-aligned; ``None`` is
    shown as ``-``.

    :param headers: the column titles.
    :param rows: a list of sequences, one value per column.
    :param indent: a prefix for every line.
    :returns: a list of lines.
    """
    cells = [[('-' if v is None else str(v)) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, value in enumerate(row):
            widths[index] = max(widths[index], len(value))
    lines = [indent + '  '.join(h.ljust(w) for h, w in
                                zip(headers, widths)).rstrip(),
             indent + '  '.join('-' * w for w in widths)]
    for raw, row in zip(rows, cells):
        parts = []
        for value, text, width in zip(raw, row, widths):
            parts.append(text.rjust(width) if _is_number(value)
                         else text.ljust(width))
        lines.append(indent + '  '.join(parts).rstrip())
    return lines


def format_fields(pairs, indent=''):
    """Lay out ``(name, value)`` pairs as two aligned columns.

    :param pairs: a sequence of ``(name, value)``.
    :param indent: a prefix for every line.
    :returns: a list of lines.
    """
    width = max((len(name) for name, _value in pairs), default=0)
    return ['%s%s  %s' % (indent, name.ljust(width),
                          '-' if value is None else value)
            for name, value in pairs]


def write_lines(lines, out=None):
    """Print lines.

    :param lines: an iterable of strings without newlines.
    :param out: the stream; ``sys.stdout`` by default.
    :returns: None
    """
    out = out if out is not None else sys.stdout
    for line in lines:
        out.write(line + '\n')


def show_key(key):
    """Show a partition key for people: ``""`` is the default group.

    :param key: None, ``""`` or a group name.
    :returns: a string.
    """
    if key is None:
        return _('(unset: partitioning off)')
    if key == '':
        return _('"" (the default group)')
    return key


def show_shard(shard):
    """Show a shard for people.

    :param shard: None or a shard name.
    :returns: a string.
    """
    if shard is None:
        return _('(unset: every shard)')
    return shard


def percent(part, whole):
    """A percentage, 0 when ``whole`` is 0.

    :param part: a number.
    :param whole: a number.
    :returns: a float rounded to 0.1.
    """
    return round(100.0 * part / whole, 1) if whole else 0.0


class Progress(object):
    """Progress messages on a terminal; nothing when output is piped.

    Messages overwrite each other on one line of ``stream`` (stderr by
    default) and are erased when the work is done, so they never mix with
    the command's output.

    :param stream: where to write; ``sys.stderr`` by default.
    :param enabled: force on or off; by default on when ``stream`` is a
        terminal.
    :param interval: seconds between two updates of a running task.
    """

    def __init__(self, stream=None, enabled=None, interval=0.2):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, 'isatty', None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.interval = interval
        self._shown = False
        self._lock = threading.Lock()

    def show(self, text):
        """Replace the progress line with ``text``.

        :param text: one line.
        :returns: None
        """
        if not self.enabled:
            return
        with self._lock:
            self.stream.write('\r\x1b[K' + text)
            self.stream.flush()
            self._shown = True

    def clear(self):
        """Erase the progress line.

        :returns: None
        """
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                self.stream.write('\r\x1b[K')
                self.stream.flush()
                self._shown = False

    @contextlib.contextmanager
    def task(self, text, detail=None):
        """Show ``text`` with the elapsed time while the block runs.

        :param text: what is being done.
        :param detail: an optional callable returning a short status
            (e.g. pages read so far), polled at each update.
        :returns: a context manager.
        """
        if not self.enabled:
            yield
            return
        stop = threading.Event()
        start = time.monotonic()

        def update():
            extra = ''
            if detail is not None:
                try:
                    extra = detail() or ''
                except Exception:
                    extra = ''
            self.show('%s%s (%.1f s)' % (
                text, ': ' + extra if extra else '',
                time.monotonic() - start))

        def run():
            while not stop.wait(self.interval):
                update()

        update()
        thread = threading.Thread(target=run, name='progress', daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.clear()


def pages_detail(client):
    """A progress detail reading how many pages a client has fetched.

    :param client: an :class:`~ironic_partition.baremetal.IronicClient`.
    :returns: a callable for :meth:`Progress.task`.
    """
    def detail():
        calls = client.last_calls
        if not calls:
            return ''
        return _('%(pages)d pages, up to %(nodes)d nodes') % {
            'pages': calls, 'nodes': calls * client.page_size}
    return detail
