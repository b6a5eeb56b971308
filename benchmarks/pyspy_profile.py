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

"""py-spy profiles of a service, grouped by where the time goes.

:class:`Profilers` samples one process twice (every thread, for wall
time; threads on a CPU only) with ``py-spy record`` (``pip install
py-spy``; it needs ptrace); :func:`summarise_profile` groups the samples:
placement, conductor RPC, Ironic API, AMQP threads, claims database,
logging, our driver, nova's Ironic driver, resource tracker; threads
waiting for the resource tracker's lock (nova's
``COMPUTE_RESOURCE_SEMAPHORE``), and other waiting threads outside these,
apart; and lists the top frames. Used by :mod:`nova_scale_bench`.
"""

import collections
import linecache
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from ironic_partition import testing as harness

#: py-spy sample groups, first match wins: (name, substrings of a frame's
#: file that put a sample in the group). The claims database's group also
#: needs an ironic_partition frame in the stack.
PROFILE_GROUPS = [
    ('placement calls', ('nova/scheduler/client/report.py',)),
    ('nova DB via conductor (RPC)', ('oslo_messaging/rpc/client.py',)),
    ('Ironic API calls', ('openstack/', 'keystoneauth1/', 'requests/',
                          'urllib3/')),
    ('AMQP connection threads (oslo.messaging)', ('oslo_messaging/',
                                                  'kombu/', 'amqp/')),
    ('claims/membership DB (our driver)', ('sqlalchemy/', 'pymysql/',
                                           'psycopg2/')),
    ('logging', ('logging/__init__.py', 'oslo_log/')),
    ('our driver (ironic_partition)', ('ironic_partition/',)),
    ("nova's Ironic driver", ('nova/virt/ironic/',)),
    ('resource tracker / compute manager', ('nova/compute/',
                                            'nova/objects/')),
]
#: Leaf functions of a thread that waits (for work, a lock, a future, a
#: timer); outside the call groups such a sample is "waiting".
_PARKED = ('wait', 'sleep', 'select', 'poll', 'epoll', 'get', 'accept',
           'acquire', '_wait_for_tstate_lock', 'readinto', 'recv_into',
           'recv', 'result', '_read')
#: A leaf line that blocks in C (no Python frame below it).
_BLOCKING_RE = re.compile(r'\.(get|wait|acquire|result|join|recv\w*|'
                          r'read\w*|select|poll|accept)\(|sleep\(')
#: The groups whose waiting samples are I/O time (kept in the group).
_IO_GROUPS = ('placement calls', 'nova DB via conductor (RPC)',
              'Ironic API calls', 'claims/membership DB (our driver)')
#: A waiting thread with these frames waits for a lock of oslo.concurrency
#: that nova's resource tracker takes (COMPUTE_RESOURCE_SEMAPHORE: one per
#: nova-compute, held for the whole of each node's update).
_LOCK_FILES = ('oslo_concurrency/lockutils.py', 'fasteners/')
_RT_FILE = 'nova/compute/resource_tracker.py'
RT_LOCK = "waiting for the resource tracker's lock"
WAITING = 'waiting (locks, futures, sleeps)'


def top(counter, count=8):
    return ['%d %s' % (n, key) for key, n in counter.most_common(count)]


class Profiler(object):
    """py-spy record on one process, stopped with SIGINT.

    :param pid: the process.
    :param path: the raw (collapsed stacks) output file.
    :param rate: samples per second.
    :param idle: also sample waiting threads (wall time); otherwise only
        threads on a CPU.
    """

    def __init__(self, pid, path, rate=40, idle=True):
        self.pid = pid
        self.path = path
        self.rate = rate
        self.idle = idle
        self.proc = None
        self.error = None
        self.started = None
        self.stopped = None

    def _attachable(self):
        return subprocess.run(
            ['py-spy', 'dump', '--nonblocking', '--pid', str(self.pid)],
            capture_output=True, timeout=30).returncode == 0

    def start(self, timeout=60):
        """Start sampling once py-spy can read the process.

        :param timeout: seconds allowed for the process to be readable.
        :returns: None (``error`` says why nothing is sampled).
        """
        if shutil.which('py-spy') is None:
            self.error = 'py-spy is not installed'
            return
        try:
            harness.wait_for(self._attachable, timeout,
                             'py-spy to attach to %s' % self.pid,
                             interval=0.2)
        except (harness.HarnessError, subprocess.SubprocessError) as exc:
            self.error = str(exc)
            return
        self.proc = subprocess.Popen(
            ['py-spy', 'record', '--pid', str(self.pid), '--rate',
             str(self.rate), '--format', 'raw', '--nonblocking',
             '--full-filenames', '-o', self.path] +
            (['--idle'] if self.idle else []), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        self.started = time.time()

    def stop(self):
        """Stop sampling and write the file.

        :returns: None
        """
        if self.proc is None:
            return
        self.stopped = time.time()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _out, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _out, err = self.proc.communicate()
        if not os.path.exists(self.path):
            self.error = (err or b'').decode('utf-8', 'replace')[-500:]
        self.proc = None

    def summary(self):
        """Group the samples.

        :returns: a dict (``seconds`` sampled, ``groups`` in
            thread-seconds, ``top_self`` and ``top_ours`` frames).
        """
        if self.error or not os.path.exists(self.path):
            return {'error': self.error or 'no samples'}
        return dict(summarise_profile(self.path, self.rate, self.idle),
                    seconds=(self.stopped or time.time()) - self.started)


class Profilers(object):
    """Two py-spy recorders on one process: wall time and CPU time.

    :param pid: the process.
    :param prefix: the output files' prefix (``-wall.txt``, ``-cpu.txt``).
    """

    def __init__(self, pid, prefix):
        self.wall = Profiler(pid, prefix + '-wall.txt', idle=True)
        self.cpu = Profiler(pid, prefix + '-cpu.txt', idle=False)

    @property
    def stopped(self):
        return self.wall.stopped

    def start(self):
        self.wall.start()
        self.cpu.start()

    def stop(self):
        self.wall.stop()
        self.cpu.stop()

    def summary(self):
        return {'wall': self.wall.summary(), 'cpu': self.cpu.summary()}


def print_summary(title, prof, out=sys.stdout):
    """Print one profile's summary: its groups and top frames.

    :param title: what was sampled.
    :param prof: a dict of :meth:`Profiler.summary`.
    :param out: the stream.
    :returns: None
    """
    out.write('\n%s: ' % title)
    if 'error' in prof:
        out.write('no profile: %s\n' % prof['error'])
        return
    out.write('%.1f s sampled (thread-seconds by group)\n' % prof['seconds'])
    for name, secs in sorted(prof['groups'].items(), key=lambda kv: -kv[1]):
        out.write('  %8.1f  %s\n' % (secs, name))
    out.write('  top frames (self):\n')
    for line in prof['top_self']:
        out.write('    %s\n' % line)
    out.write('  top nova/ironic_partition frames (inclusive):\n')
    for line in prof['top_ours']:
        out.write('    %s\n' % line)


def _frame_file(frame):
    match = re.search(r'\(([^()]*):\d+\)$', frame)
    return match.group(1) if match else frame


def _waits(frame):
    name = frame.split(' (')[0].split('.')[-1]
    if name in _PARKED:
        return True
    match = re.search(r'\(([^()]*):(\d+)\)$', frame)
    if not match:
        return False
    line = linecache.getline(match.group(1), int(match.group(2)))
    return bool(_BLOCKING_RE.search(line))


def _short(frame):
    for marker in ('site-packages/', 'python3.11/', '/work/main/'):
        if marker in frame:
            head, _sep, tail = frame.partition(marker)
            return head[:head.rfind('(') + 1] + tail
    return frame


def summarise_profile(path, rate, idle=True):
    """Group py-spy's collapsed stacks.

    :param path: a ``py-spy record --format raw`` file.
    :param rate: its sampling rate.
    :param idle: the file has waiting threads too (``--idle``): put their
        samples outside the call groups apart; without it every sample
        was on a CPU.
    :returns: ``{'groups': {name: thread-seconds}, 'top_self': [...],
        'top_ours': [...]}``; waiting threads outside the call groups are
        counted apart.
    """
    groups = collections.Counter()
    leaf = collections.Counter()
    ours = collections.Counter()
    with open(path) as stream:
        for line in stream:
            stack, _sep, count = line.rstrip('\n').rpartition(' ')
            try:
                count = int(count)
            except ValueError:
                continue
            frames = stack.split(';')
            files = [_frame_file(f) for f in frames]
            group = None
            for name, markers in PROFILE_GROUPS:
                if name == 'claims/membership DB (our driver)' and not any(
                        'ironic_partition/' in f for f in files):
                    continue
                if any(m in f for f in files for m in markers):
                    group = name
                    break
            if idle and group not in _IO_GROUPS and _waits(frames[-1]):
                locked = any(_RT_FILE in f for f in files) and any(
                    m in f for f in files for m in _LOCK_FILES)
                group = RT_LOCK if locked else WAITING
            groups[group or 'other'] += count
            if group in (RT_LOCK, WAITING):
                continue
            leaf[_short(frames[-1])] += count
            seen = set()
            for frame in frames:
                if ('ironic_partition/' in frame or 'nova/' in frame) and (
                        frame not in seen):
                    seen.add(frame)
                    ours[_short(frame)] += count
    return {'groups': {k: v / float(rate) for k, v in groups.items()},
            'top_self': top(leaf, 12), 'top_ours': top(ours, 20)}
