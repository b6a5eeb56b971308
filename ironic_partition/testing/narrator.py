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

"""Prints what a scripted run does, with the time since it started."""

import sys
import time


class Narrator(object):
    """Prints what the demo does, with the time since it started.

    :param out: the stream.
    """

    def __init__(self, out=None):
        self.out = out if out is not None else sys.stdout
        self.start = time.monotonic()

    def elapsed(self):
        """Seconds since the start.

        :returns: a float.
        """
        return time.monotonic() - self.start

    def say(self, text):
        """Print one line with the elapsed time.

        :param text: the line.
        :returns: None
        """
        self.out.write('[%6.1fs] %s\n' % (self.elapsed(), text))
        self.out.flush()

    def title(self, text):
        """Print a step title.

        :param text: the title.
        :returns: None
        """
        self.out.write('\n== %s ==\n' % text)
        self.out.flush()

    def block(self, lines, indent='    '):
        """Print lines, indented.

        :param lines: an iterable of strings.
        :param indent: the prefix.
        :returns: None
        """
        for line in lines:
            self.out.write(indent + line + '\n')
        self.out.flush()

    def summary(self, results, error=None, interrupted=None, teardown=()):
        """Print the summary: one line per step, then what went wrong.

        :param results: ``[(step, ok, detail)]``.
        :param error: an unexpected error, one line, or None.
        :param interrupted: the signal that interrupted the run, or None.
        :param teardown: the problems of the teardown.
        :returns: None
        """
        self.title('Summary')
        lines = ['%s  %-15s %s' % ('PASS' if ok else 'FAIL', step, detail)
                 for step, ok, detail in results]
        if error:
            lines.append('ERROR %s' % error)
        if interrupted:
            lines.append('Interrupted by %s' % interrupted)
        lines.extend('FAIL  teardown        %s' % p for p in teardown)
        self.block(lines, indent='  ')
