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

"""How the commands show values for people, and progress on a terminal.

Tables, JSON, YAML, CSV and values are cliff's formatters; what is left
here: how a partition key and a shard read (:func:`show_key`,
:func:`show_shard`), percentages, and :class:`Progress`, which shows what
a long run is doing on stderr, only when it is a terminal.
"""

import contextlib
import sys
import threading
import time

from ironic_partition._i18n import _


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

    :param client: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
    :returns: a callable for :meth:`Progress.task`.
    """
    def detail():
        calls = client.last_calls
        if not calls:
            return ''
        return _('%(pages)d pages, up to %(nodes)d nodes') % {
            'pages': calls, 'nodes': calls * client.page_size}
    return detail
