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

"""Processes, ports and files of the harness's services.

Every service (Ironic's, nova's, placement, glance, neutron, our agents)
runs as a child process in its own process group, so that a signal
reaches the service and the workers it forks; :class:`Service` starts,
signals and stops one, and :func:`pids_alive` tells what is left. Ports
come from :func:`free_port`, locked for the life of the test process.
"""

import fcntl
import logging
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

from testtools import content
from testtools import content_type

LOG = logging.getLogger(__name__)

#: A worker that exited with an error, in a service's log.
_CHILD_CRASH_RE = re.compile(r'Child \d+ exited with status [1-9]')
#: Worker crashes after which a service counts as failed.
MAX_WORKER_CRASHES = 2


class HarnessError(Exception):
    """The harness could not bring Ironic to the requested state."""


#: Prefix of the lines the harness writes into a service's log.
MARKER = '--- harness: '


# Ports handed out by free_port(), with the lock file that reserves each
# one for the life of this process.
_RESERVED_PORTS = {}
_PORT_LOCK_DIR = os.path.join(tempfile.gettempdir(),
                              'ironic-partition-test-ports')
_PORT_FLOOR = 20000


def _ephemeral_range():
    """The kernel's range for outgoing connections' local ports."""
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as stream:
            low, high = (int(x) for x in stream.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _port_candidates():
    """Ports outside the ephemeral range, in a per-process random order."""
    low, high = _ephemeral_range()
    if low - _PORT_FLOOR >= 1000:
        ports = list(range(_PORT_FLOOR, low))
    else:
        ports = list(range(high + 1, 65536))
    random.Random(os.getpid() ^ time.monotonic_ns()).shuffle(ports)
    return ports


def free_port(host='127.0.0.1'):
    """Return a TCP port reserved for this process that nothing listens on.

    ``bind(0)`` then ``close()`` is racy: the port comes from the kernel's
    ephemeral range, so any outgoing connection (to the database, to
    RabbitMQ) may take it as its local port before the conductor binds it,
    and the conductor then fails with ``EADDRINUSE``. So the port is taken
    from below the ephemeral range, which the kernel never hands out on
    its own, and reserved against other test processes (stestr workers,
    benchmarks) by an exclusive lock on a file named after it, held until
    this process exits.

    :param host: the address to probe.
    :returns: the port number.
    :raises: HarnessError when no port could be reserved.
    """
    os.makedirs(_PORT_LOCK_DIR, exist_ok=True)
    for port in _port_candidates():
        if port in _RESERVED_PORTS:
            continue
        path = os.path.join(_PORT_LOCK_DIR, '%d.lock' % port)
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
        except OSError:
            os.close(fd)
            continue
        _RESERVED_PORTS[port] = fd
        return port
    raise HarnessError('no free TCP port to reserve on %s' % host)


def bin_path(name, bin_dir=None):
    """Locate a console script of the running virtualenv.

    :param name: the script name, e.g. ``ironic-conductor``.
    :param bin_dir: the directory; next to ``sys.executable`` by default.
    :returns: the absolute path.
    :raises: HarnessError when the script is missing.
    """
    bin_dir = bin_dir or os.path.dirname(os.path.abspath(sys.executable))
    path = os.path.join(bin_dir, name)
    if not os.access(path, os.X_OK):
        raise HarnessError('%s not found in %s; is ironic installed in this '
                           'environment?' % (name, bin_dir))
    return path


#: The environment variable that runs the long lanes, which the README's
#: test command leaves out (``tox -e functional-long`` sets it).
LONG_ENV = 'IRONIC_PARTITION_TEST_LONG'


def skip_unless_long(test):
    """Skip a long lane unless ``IRONIC_PARTITION_TEST_LONG`` is set.

    :param test: the running test case.
    :returns: None
    """
    if not os.environ.get(LONG_ENV):
        test.skipTest('a long lane: run with %s=1 (tox -e functional-long)'
                      % LONG_ENV)


def wait_for(predicate, timeout, what, interval=0.25, check=None):
    """Poll ``predicate`` until it returns a true value or time runs out.

    :param predicate: a callable without arguments.
    :param timeout: seconds to wait at most.
    :param what: a description for the error message.
    :param interval: seconds between polls.
    :param check: an optional callable run on every poll; it raises to
        abort early (e.g. when a service died).
    :returns: the first true value returned by ``predicate``.
    :raises: HarnessError on timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise HarnessError('Timed out after %ss waiting for %s'
                               % (timeout, what))
        time.sleep(interval)


def group_members(pgid):
    """Return the live (non-zombie) pids of a process group.

    :param pgid: the process group id.
    :returns: a sorted list of pids.
    """
    members = []
    try:
        entries = os.listdir('/proc')
    except OSError:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        # NOTE(harness): after the command name: state, ppid, pgrp.
        if int(fields[2]) == pgid and fields[0] not in ('Z', 'X'):
            members.append(int(entry))
    return sorted(members)


def pids_alive(pids):
    """Return those of ``pids`` that still run (zombies count as gone).

    :param pids: an iterable of pids.
    :returns: a sorted list of the live ones.
    """
    alive = []
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as stat:
                state = stat.read().rsplit(')', 1)[1].split()[0]
        except FileNotFoundError:
            continue
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            state = 'R'
        if state not in ('Z', 'X'):
            alive.append(pid)
    return sorted(alive)


class Service(object):
    """One Ironic service process, leader of its own process group.

    :param name: a short name, used for the log file (``<name>.log``).
    :param argv: the command line.
    :param log_path: where stdout and stderr go (appended).
    :param env: the environment; the current one by default.
    """

    def __init__(self, name, argv, log_path, env=None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.process = None
        self.seen_pids = set()
        self.log_offset = 0

    def __repr__(self):
        return '<%s %s pid=%s>' % (type(self).__name__, self.name, self.pid)

    @property
    def pid(self):
        """The pid of the group leader, or None before the first start."""
        return self.process.pid if self.process is not None else None

    def start(self):
        """Start the process (again) with the same command line.

        :returns: None
        :raises: HarnessError when it is already running.
        """
        if self.running():
            raise HarnessError('%s is already running' % self.name)
        with open(self.log_path, 'ab') as log:
            self.log_offset = log.tell()
            log.write(('%sstarting %s: %s\n'
                       % (MARKER, self.name, ' '.join(self.argv))).encode())
            log.flush()
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=self.env,
                start_new_session=True, close_fds=True)
        self.seen_pids.add(self.process.pid)
        LOG.info('Started %s as pid %s', self.name, self.process.pid)

    def running(self):
        """Tell whether the group leader has not exited yet.

        :returns: True while it runs (also while it is stopped by SIGSTOP).
        """
        return self.process is not None and self.process.poll() is None

    def crashed_workers(self):
        """Count worker processes that died since the last start.

        The service launcher respawns a crashing worker forever, so the
        parent stays up; its log is the only sign.

        :returns: the number of ``Child N exited with status M`` lines
            with a non-zero M.
        """
        try:
            with open(self.log_path, 'rb') as log:
                log.seek(self.log_offset)
                text = log.read().decode('utf-8', 'replace')
        except OSError:
            return 0
        return len(_CHILD_CRASH_RE.findall(text))

    def group_pids(self):
        """List the live processes of this service's process group.

        :returns: a sorted list of pids (empty when nothing is left).
        """
        if self.process is None:
            return []
        members = group_members(self.process.pid)
        self.seen_pids.update(members)
        return members

    def signal(self, signum):
        """Send a signal to the whole process group.

        :param signum: the signal number, e.g. ``signal.SIGKILL``.
        :returns: None
        """
        if self.process is None:
            return
        self.group_pids()
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            LOG.debug('%s: process group already gone', self.name)
            return
        LOG.debug('Sent %s to %s (pgid %s)', signal.Signals(signum).name,
                  self.name, self.process.pid)

    def kill(self, timeout=30):
        """SIGKILL the group and wait until nothing of it is left.

        :param timeout: seconds to wait for the processes to vanish.
        :returns: the exit code of the group leader, None if never started.
        """
        if self.process is None:
            return None
        self.signal(signal.SIGKILL)
        return self._reap(timeout)

    def stop(self, timeout=30):
        """SIGTERM the group; SIGKILL whatever is left after ``timeout``.

        A stopped (SIGSTOP) group is continued first so it can exit.

        :param timeout: seconds to allow for a graceful exit.
        :returns: the exit code of the group leader, None if never started.
        """
        if self.process is None:
            return None
        if self.group_pids():
            self.signal(signal.SIGTERM)
            self.signal(signal.SIGCONT)
            try:
                wait_for(lambda: not self.group_pids(), timeout,
                         '%s to exit' % self.name)
            except HarnessError:
                LOG.warning('%s did not exit on SIGTERM within %ss, '
                            'killing it', self.name, timeout)
                self.signal(signal.SIGKILL)
        return self._reap(timeout)

    def pause(self):
        """SIGSTOP the group (it stops heartbeating and answering).

        :returns: None
        """
        self.signal(signal.SIGSTOP)

    def resume(self):
        """SIGCONT the group.

        :returns: None
        """
        self.signal(signal.SIGCONT)

    def _reap(self, timeout):
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HarnessError('%s (pid %s) did not exit'
                               % (self.name, self.process.pid))
        wait_for(lambda: not self.group_pids(), timeout,
                 'the process group of %s to vanish' % self.name)
        return code


def stop_together(*batches, timeout=30):
    """Stop services at once: SIGTERM to all, one wait, SIGKILL the rest.

    The one teardown of the fixtures that run several processes. A paused
    service is continued too, so that it can exit. Each batch is stopped
    in turn (nova's computes before the control plane they report to).

    :param batches: lists of :class:`Service` objects, stopped in turn.
    :param timeout: seconds allowed for the graceful exit of a batch, and
        for each SIGKILL.
    :returns: the names of the services that could not be stopped.
    """
    failed = []
    for batch in batches:
        live = [s for s in batch if s.group_pids()]
        for service in live:
            service.signal(signal.SIGTERM)
            service.signal(signal.SIGCONT)
        try:
            wait_for(lambda: not any(s.group_pids() for s in live),
                     timeout, 'the services to exit')
        except HarnessError:
            LOG.warning('Still running after SIGTERM: %s',
                        [s.name for s in live if s.group_pids()])
        for service in batch:
            try:
                # NOTE(ironic-partition): the base kill: a subclass's may
                # mark a fault in its log (a compute's "kill").
                Service.kill(service, timeout)
            except Exception:
                LOG.exception('Could not stop %s', service.name)
                failed.append(service.name)
    return failed


def write_config(path, sections, join_lists=False):
    """Write an INI file for oslo.config.

    A ``None`` value is left out. A list or tuple value is written as one
    line per item (the repeated keys of a ``MultiStrOpt``; configparser
    cannot write those), or as one comma-separated value with
    ``join_lists`` (a ``ListOpt``).

    :param path: the file.
    :param sections: ``{section: {option: value}}``.
    :param join_lists: write lists comma-separated.
    :returns: None
    """
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for key, value in options.items():
            if value is None:
                continue
            if isinstance(value, (list, tuple)) and join_lists:
                value = ','.join(value)
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, bool):
                    item = 'true' if item else 'false'
                lines.append('%s = %s' % (key, str(item).replace('\n',
                                                                 '\n\t')))
        lines.append('')
    with open(path, 'w') as stream:
        stream.write('\n'.join(lines))


def run_logged(argv, log_path, env=None, timeout=600):
    """Run a command to completion, its output appended to a log.

    :param argv: the command line.
    :param log_path: the log file.
    :param env: the environment; the current one by default.
    :param timeout: seconds allowed.
    :returns: None
    :raises: HarnessError when it fails.
    """
    with open(log_path, 'ab') as log:
        log.write(('%s%s\n' % (MARKER, ' '.join(argv))).encode())
        log.flush()
        code = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, env=env,
                               timeout=timeout)
    if code:
        raise HarnessError('%s failed (%s): %s' % (
            ' '.join(argv[:3]), code, tail(log_path)))


def merge_config(base, extra):
    for section, options in (extra or {}).items():
        base.setdefault(section, {}).update(options)
    return base


#: The most of a log a test carries as a detail: its end. subunit caps a
#: packet at 4 MiB, and stestr writes each detail back as one packet.
LOG_DETAIL_BYTES = 1024 * 1024


def log_content(path, limit=LOG_DETAIL_BYTES):
    """A log file as a test detail: its last ``limit`` bytes, read late.

    The file is read when testtools gathers the detail, so the detail
    holds what the service wrote until then; a longer log is cut at the
    front, with a first line saying how much was left out.

    :param path: the log file's path.
    :param limit: the most bytes carried.
    :returns: a ``testtools.content.Content``.
    """
    def read():
        try:
            with open(path, 'rb') as stream:
                stream.seek(0, os.SEEK_END)
                size = stream.tell()
                stream.seek(max(0, size - limit))
                data = stream.read(limit)
        except OSError as exc:
            return [('<no log: %s>' % exc).encode('utf-8')]
        if size <= limit:
            return [data]
        head = ('<the first %d bytes of %s are left out>\n'
                % (size - limit, path)).encode('utf-8')
        return [head, data]
    return content.Content(content_type.UTF8_TEXT, read)


def tail(path, lines=40):
    try:
        with open(path, 'rb') as stream:
            data = stream.read().decode('utf-8', 'replace')
    except OSError as exc:
        return '<no log: %s>' % exc
    return '\n'.join(data.splitlines()[-lines:])
