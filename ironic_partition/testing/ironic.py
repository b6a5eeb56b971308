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

"""Run a real Ironic (one API, N conductors) for functional tests.

Every service runs as a child process in its own process group, so a
signal reaches the service and the workers it forks. The fixture's
cleanups stop every group and drop the database, whatever the test did.
"""

import collections
import fcntl
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import fixtures
from testtools import content

from ironic_partition.testing import db as harness_db

LOG = logging.getLogger(__name__)

DEFAULT_CONDUCTOR_GROUPS = ('rack1', 'rack1', 'rack2', '')
"""Four conductors: two in ``rack1``, one in ``rack2``, one ungrouped."""

CONDUCTORS_MICROVERSION = '1.49'
"""The first API version with ``/v1/conductors`` and ``node.conductor``."""

WORKDIR_PREFIX = 'ironic-harness-'

HEARTBEAT_INTERVAL = 1
HEARTBEAT_TIMEOUT = 6
HASH_RING_RESET_INTERVAL = 2

HARDWARE_TYPE = 'fake-hardware'

# NOTE(harness): the interface each node gets, and so the only ones the
# services enable. Real boot/deploy/vendor interfaces (ipxe, ipmitool...)
# need binaries and crash the conductor workers on this setup.
NODE_INTERFACES = collections.OrderedDict([
    ('bios', 'no-bios'),
    ('boot', 'fake'),
    ('console', 'no-console'),
    ('deploy', 'fake'),
    ('firmware', 'no-firmware'),
    ('inspect', 'no-inspect'),
    ('management', 'fake'),
    ('network', 'noop'),
    ('power', 'fake'),
    ('raid', 'no-raid'),
    ('rescue', 'no-rescue'),
    ('storage', 'noop'),
    ('vendor', 'no-vendor'),
])

_ENABLED_INTERFACES = {
    'bios': 'no-bios,fake',
    'boot': 'fake',
    'console': 'no-console,fake',
    'deploy': 'fake',
    'firmware': 'no-firmware,fake',
    'inspect': 'no-inspect,fake',
    'management': 'fake',
    'network': 'noop',
    'power': 'fake',
    'raid': 'no-raid,fake',
    'rescue': 'no-rescue,fake',
    'storage': 'noop,fake',
    'vendor': 'no-vendor,fake',
}


_CHILD_CRASH_RE = re.compile(r'Child \d+ exited with status [1-9]')
MAX_WORKER_CRASHES = 2


class HarnessError(Exception):
    """The harness could not bring Ironic to the requested state."""


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
            log.write(('--- harness: starting %s: %s\n'
                       % (self.name, ' '.join(self.argv))).encode())
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


class Conductor(Service):
    """An ``ironic-conductor`` with its group and JSON-RPC port.

    :param index: the position in the fixture's conductor list.
    :param group: the ``[conductor] conductor_group``.
    :param port: the ``[json_rpc] port``.
    :param kwargs: passed to :class:`Service`.
    """

    def __init__(self, index, group, port, **kwargs):
        super().__init__(**kwargs)
        self.index = index
        self.group = group
        self.port = port

    @property
    def hostname(self):
        """The name the conductor registers: ``127.0.0.1:<port>``."""
        return '127.0.0.1:%d' % self.port


def _write_config(path, sections):
    """Write an INI file for oslo.config.

    A list or tuple value is written as one line per item (the repeated
    keys of a ``MultiStrOpt``); configparser cannot write those.
    """
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for key, value in options.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, bool):
                    item = 'true' if item else 'false'
                lines.append('%s = %s' % (key, str(item).replace('\n',
                                                                 '\n\t')))
        lines.append('')
    with open(path, 'w') as stream:
        stream.write('\n'.join(lines))


def _merge(base, extra):
    for section, options in (extra or {}).items():
        base.setdefault(section, {}).update(options)
    return base


class IronicFixture(fixtures.Fixture):
    """A running Ironic on a fresh database, torn down at cleanup.

    In ``multi`` mode: one ``ironic-api`` and one ``ironic-conductor`` per
    entry of ``conductor_groups``, talking JSON-RPC over loopback. In
    ``single`` mode: the all-in-one ``ironic`` command with
    ``rpc_transport = none`` (SQLite by default; default group only).

    :param db_backend: ``postgresql``, ``mysql`` or ``sqlite``; the default
        is ``postgresql`` in ``multi`` mode and ``sqlite`` in ``single``.
    :param conductor_groups: one group name per conductor (lower case;
        ``''`` is the default group). Ignored in ``single`` mode.
    :param mode: ``multi`` or ``single``.
    :param workdir: the parent for the run directory (config, logs,
        SQLite file); the system temp dir by default.
    :param extra_config: ``{section: {option: value}}`` merged into the
        shared configuration of every service.
    :param start_timeout: seconds allowed for the services to come up.
    :param bin_dir: where the Ironic console scripts live; next to
        ``sys.executable`` by default.
    :param keep_workdir: keep the run directory (logs) after cleanup.
    :param debug: run the services with ``debug = true``.
    """

    def __init__(self, db_backend=None, conductor_groups=None, mode='multi',
                 workdir=None, extra_config=None, start_timeout=180,
                 bin_dir=None, keep_workdir=False, debug=False):
        super().__init__()
        if mode not in ('multi', 'single'):
            raise ValueError('mode must be "multi" or "single", not %r'
                             % mode)
        if db_backend is None:
            db_backend = 'sqlite' if mode == 'single' else 'postgresql'
        if mode == 'multi' and db_backend == 'sqlite':
            raise ValueError('SQLite cannot serve several Ironic processes; '
                             'use postgresql or mysql, or mode="single"')
        if conductor_groups is None:
            conductor_groups = DEFAULT_CONDUCTOR_GROUPS
        groups = [''] if mode == 'single' else list(conductor_groups)
        for group in groups:
            if group != group.lower():
                raise ValueError('Conductor group %r must be lower case'
                                 % group)
        if not groups:
            raise ValueError('At least one conductor is needed')
        self.db_backend = db_backend
        self.conductor_groups = groups
        self.mode = mode
        self.parent_workdir = workdir
        self.extra_config = extra_config
        self.start_timeout = start_timeout
        self.bin_dir = bin_dir
        self.keep_workdir = keep_workdir
        self.debug = debug
        self.workdir = None
        self.database = None
        self.config_file = None
        self.api_port = None
        self.api = None
        self.conductors = []

    # -- set up -----------------------------------------------------------

    def _setUp(self):
        self.conductors = []
        parent = self.parent_workdir or harness_db.default_workdir()
        os.makedirs(parent, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent)
        if not self.keep_workdir:
            self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)
        self.database = self.useFixture(harness_db.DatabaseFixture(
            self.db_backend, workdir=self.workdir))
        self.api_port = free_port()
        self.config_file = os.path.join(self.workdir, 'ironic.conf')
        _write_config(self.config_file, self._base_config())
        self._dbsync()
        if self.mode == 'single':
            self.api = self._make_service(
                'ironic', 'ironic', self._service_config('ironic', {}))
        else:
            self.api = self._make_service(
                'ironic-api', 'ironic-api',
                self._service_config('ironic-api', {}))
            for index, group in enumerate(self.conductor_groups):
                self.conductors.append(self._new_conductor(index, group))
        for service in self.services():
            # NOTE(harness): the detail is read lazily, when testtools
            # gathers it; the file must exist even if nothing started.
            open(service.log_path, 'ab').close()
            self.addDetail('log-' + service.name, content.content_from_file(
                service.log_path, buffer_now=False))
        # NOTE(harness): one cleanup stops everything, registered after the
        # database fixture so it runs before the database is dropped.
        self.addCleanup(self.stop_all)
        for service in self.services():
            service.start()
        self.wait_until_ready(self.start_timeout)
        LOG.info('Ironic is up at %s with conductors %s', self.endpoint,
                 [c['hostname'] for c in self.describe()['conductors']])

    def _new_conductor(self, index, group, extra_config=None):
        port = free_port()
        name = 'conductor-%s' % index
        conf = self._service_config(name, _merge({
            'conductor': {'conductor_group': group},
            'json_rpc': {'port': port},
        }, extra_config))
        return Conductor(
            index, group, port, name=name,
            argv=self._argv('ironic-conductor', conf),
            log_path=os.path.join(self.workdir, name + '.log'))

    def make_conductor(self, name, group, extra_config=None):
        """Build one more ``ironic-conductor``, not started, not managed.

        For tests of a conductor that must not come up (a bad option): the
        fixture neither starts, waits for nor stops it; the caller starts
        it and stops it (register ``conductor.kill`` as a cleanup).

        :param name: a suffix for its name and log (``conductor-<name>``).
        :param group: its ``[conductor] conductor_group``.
        :param extra_config: ``{section: {option: value}}`` for this
            conductor only, over the shared configuration.
        :returns: a :class:`Conductor` (its ``index`` is ``name``).
        """
        return self._new_conductor(name, group, extra_config)

    def _base_config(self):
        default = {
            'host': '127.0.0.1',
            'auth_strategy': 'noauth',
            'rpc_transport': 'json-rpc' if self.mode == 'multi' else 'none',
            'enabled_hardware_types': HARDWARE_TYPE,
            'hash_ring_reset_interval': HASH_RING_RESET_INTERVAL,
            'use_stderr': True,
            'debug': self.debug,
            'state_path': self.workdir,
            'tempdir': self.workdir,
        }
        for iface, default_name in NODE_INTERFACES.items():
            default['enabled_%s_interfaces' % iface] = (
                _ENABLED_INTERFACES[iface])
            default['default_%s_interface' % iface] = default_name
        config = {
            'DEFAULT': default,
            'api': {
                'host_ip': '127.0.0.1',
                'port': self.api_port,
                'api_workers': 1,
            },
            'conductor': {
                'heartbeat_interval': HEARTBEAT_INTERVAL,
                'heartbeat_timeout': HEARTBEAT_TIMEOUT,
                'automated_clean': False,
                'sync_power_state_workers': 2,
            },
            'json_rpc': {
                'host_ip': '127.0.0.1',
                'auth_strategy': 'noauth',
            },
            'database': {'connection': self.database.url},
            'dhcp': {'dhcp_provider': 'none'},
            'oslo_concurrency': {
                'lock_path': os.path.join(self.workdir, 'locks'),
            },
        }
        return _merge(config, self.extra_config)

    def _service_config(self, name, sections):
        path = os.path.join(self.workdir, 'service-%s.conf' % name)
        _write_config(path, sections)
        return path

    def _argv(self, script, service_config):
        return [bin_path(script, self.bin_dir),
                '--config-file', self.config_file,
                '--config-file', service_config]

    def _make_service(self, name, script, service_config):
        return Service(name, self._argv(script, service_config),
                       os.path.join(self.workdir, name + '.log'))

    def _dbsync(self):
        log_path = os.path.join(self.workdir, 'dbsync.log')
        argv = [bin_path('ironic-dbsync', self.bin_dir),
                '--config-file', self.config_file, 'create_schema']
        with open(log_path, 'ab') as log:
            code = subprocess.call(argv, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
        if code:
            self.addDetail('log-dbsync', content.content_from_file(
                log_path, buffer_now=True))
            raise HarnessError('ironic-dbsync create_schema failed (%s): %s'
                               % (code, _tail(log_path)))

    # -- state ------------------------------------------------------------

    @property
    def endpoint(self):
        """The API root URL, e.g. ``http://127.0.0.1:12345``."""
        return 'http://127.0.0.1:%d' % self.api_port

    def services(self):
        """Every service the fixture manages, API first.

        :returns: a list of :class:`Service`.
        """
        return [s for s in [self.api] + self.conductors if s is not None]

    def all_pids(self):
        """Every pid any service of this fixture ever had (for checks).

        :returns: a sorted list.
        """
        pids = set()
        for service in self.services():
            service.group_pids()
            pids.update(service.seen_pids)
        return sorted(pids)

    def describe(self):
        """Describe the running setup, as the command prints it.

        :returns: a JSON-serialisable dict.
        """
        return {
            'mode': self.mode,
            'endpoint': self.endpoint,
            'conductors_microversion': CONDUCTORS_MICROVERSION,
            'workdir': self.workdir,
            'config_file': self.config_file,
            'database': {
                'backend': self.database.backend,
                'name': self.database.name,
                'url': self.database.url,
            },
            'api': {
                'name': self.api.name,
                'pid': self.api.pid,
                'port': self.api_port,
                'log_file': self.api.log_path,
            },
            'conductors': [{
                'index': c.index,
                'hostname': c.hostname,
                'conductor_group': c.group,
                'json_rpc_port': c.port,
                'pid': c.pid,
                'log_file': c.log_path,
                'config_files': c.argv[2::2],
            } for c in self.conductors] or [{
                # NOTE(harness): single mode, the conductor is the API.
                'index': 0,
                'hostname': '127.0.0.1',
                'conductor_group': '',
                'json_rpc_port': None,
                'pid': self.api.pid,
                'log_file': self.api.log_path,
                'config_files': self.api.argv[2::2],
            }],
            'harness_pid': os.getpid(),
        }

    def conductor(self, which):
        """Find a conductor by index, hostname or object.

        :param which: an int index, a ``host:port`` name or a Conductor.
        :returns: the :class:`Conductor`.
        """
        if isinstance(which, Conductor):
            return which
        for cond in self.conductors:
            if which in (cond.index, cond.hostname):
                return cond
        raise KeyError('No conductor %r' % (which,))

    def conductors_in(self, group):
        """List the conductors of one group.

        :param group: the group name (``''`` for the default group).
        :returns: a list of :class:`Conductor`.
        """
        return [c for c in self.conductors if c.group == group]

    # -- HTTP -------------------------------------------------------------

    def request(self, path, microversion=CONDUCTORS_MICROVERSION,
                timeout=10):
        """GET a path of the API and decode the JSON answer.

        :param path: e.g. ``/v1/conductors``.
        :param microversion: the ``X-OpenStack-Ironic-API-Version``.
        :param timeout: the socket timeout in seconds.
        :returns: the decoded body.
        :raises: urllib.error.URLError, OSError on failure.
        """
        req = urllib.request.Request(self.endpoint + path, headers={
            'X-OpenStack-Ironic-API-Version': microversion,
            'Accept': 'application/json',
        })
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode('utf-8'))

    def api_ready(self):
        """Tell whether ``/v1`` answers.

        :returns: True or False.
        """
        try:
            self.request('/v1', microversion='1.1', timeout=2)
        except (OSError, ValueError):
            return False
        return True

    def conductor_states(self):
        """Ask the API which conductors it knows and whether they live.

        :returns: ``{hostname: {'alive': bool, 'conductor_group': str}}``.
        """
        body = self.request('/v1/conductors?detail=true')
        return {c['hostname']: {'alive': c['alive'],
                                'conductor_group': c['conductor_group']}
                for c in body['conductors']}

    def _conductors_match(self, alive, dead):
        try:
            states = self.conductor_states()
        except (OSError, ValueError, KeyError):
            return False
        for name in alive:
            if not states.get(name, {}).get('alive'):
                return False
        for name in dead:
            if states.get(name, {}).get('alive'):
                return False
        return states

    def _single_registered(self):
        try:
            states = self.conductor_states()
        except (OSError, ValueError, KeyError):
            return False
        return states if '127.0.0.1' in states else False

    # -- waiting ----------------------------------------------------------

    def check_services(self, services=None):
        """Raise when a service that should run has exited or crashes.

        :param services: the services to check; all of them by default.
        :returns: None
        :raises: HarnessError with the tail of the service's log.
        """
        for service in self.services() if services is None else services:
            if service.process is None:
                continue
            if not service.running():
                raise HarnessError('%s exited with %s: %s' % (
                    service.name, service.process.returncode,
                    _tail(service.log_path)))
            if service.crashed_workers() >= MAX_WORKER_CRASHES:
                raise HarnessError('%s: its worker keeps crashing: %s' % (
                    service.name, _tail(service.log_path)))

    def wait_for_api(self, timeout=None):
        """Wait until ``/v1`` answers.

        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        wait_for(self.api_ready, timeout or self.start_timeout,
                 'the API at %s' % self.endpoint,
                 check=lambda: self.check_services([self.api]))

    def wait_for_conductors(self, alive=None, dead=(), timeout=None):
        """Wait until the API reports the conductors alive or dead.

        :param alive: conductors (index, hostname or object) that must be
            alive; every running conductor by default.
        :param dead: conductors that must be reported dead or absent.
        :param timeout: seconds; the fixture's start timeout by default.
        :returns: the last ``conductor_states()`` answer.
        """
        if self.mode == 'single':
            # NOTE(harness): on SQLite the all-in-one conductor never
            # updates its heartbeat, so it turns "dead" after
            # heartbeat_timeout; being registered is all we can wait for.
            return wait_for(self._single_registered,
                            timeout or self.start_timeout,
                            'the conductor to register')
        if alive is None:
            alive = [c for c in self.conductors if c.running()]
        alive = [self.conductor(c) for c in alive]
        names = [c.hostname for c in alive]
        dead = [self.conductor(c).hostname for c in dead]
        return wait_for(lambda: self._conductors_match(names, dead),
                        timeout or self.start_timeout,
                        'conductors alive=%s dead=%s' % (names, dead),
                        check=lambda: self.check_services(alive))

    def wait_until_ready(self, timeout=None):
        """Wait for the API and every conductor.

        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        deadline = time.monotonic() + (timeout or self.start_timeout)
        wait_for(self.api_ready, timeout or self.start_timeout,
                 'the API at %s' % self.endpoint, check=self.check_services)
        remaining = max(1, deadline - time.monotonic())
        if self.mode == 'single':
            wait_for(self._single_registered, remaining,
                     'the conductor to register', check=self.check_services)
            return
        expected = [c for c in self.conductors if c.running()]
        wait_for(lambda: self._conductors_match(
            [c.hostname for c in expected], []), remaining,
            'conductors %s to be alive' % [c.hostname for c in expected],
            check=self.check_services)

    # -- faults -----------------------------------------------------------

    def kill_conductor(self, which, signum=signal.SIGKILL, wait=True):
        """Signal a conductor's process group (SIGKILL by default).

        :param which: index, hostname or :class:`Conductor`.
        :param signum: the signal.
        :param wait: for SIGKILL/SIGTERM, wait until its processes are gone.
        :returns: the :class:`Conductor`.
        """
        cond = self.conductor(which)
        if signum == signal.SIGTERM and wait:
            cond.stop()
        elif signum == signal.SIGKILL and wait:
            cond.kill()
        else:
            cond.signal(signum)
        return cond

    def stop_conductor(self, which, timeout=30):
        """Stop a conductor gracefully (SIGTERM; it unregisters itself).

        :param which: index, hostname or :class:`Conductor`.
        :param timeout: seconds before falling back to SIGKILL.
        :returns: the :class:`Conductor`.
        """
        cond = self.conductor(which)
        cond.stop(timeout)
        return cond

    def pause_conductor(self, which):
        """SIGSTOP a conductor.

        :param which: index, hostname or :class:`Conductor`.
        :returns: the :class:`Conductor`.
        """
        cond = self.conductor(which)
        cond.pause()
        return cond

    def resume_conductor(self, which):
        """SIGCONT a conductor.

        :param which: index, hostname or :class:`Conductor`.
        :returns: the :class:`Conductor`.
        """
        cond = self.conductor(which)
        cond.resume()
        return cond

    def restart_conductor(self, which, wait=True, timeout=None):
        """Stop a conductor if it runs, start it again, wait until alive.

        :param which: index, hostname or :class:`Conductor`.
        :param wait: wait until the API reports it alive.
        :param timeout: seconds; the fixture's start timeout by default.
        :returns: the :class:`Conductor`.
        """
        cond = self.conductor(which)
        if cond.running():
            cond.stop()
        cond.start()
        if wait:
            self.wait_for_conductors(alive=[cond], timeout=timeout)
        return cond

    def stop_api(self, timeout=30):
        """Stop the API (SIGTERM, then SIGKILL).

        :param timeout: seconds before falling back to SIGKILL.
        :returns: None
        """
        self.api.stop(timeout)

    def start_api(self, wait=True, timeout=None):
        """Start the API again on the same port.

        :param wait: wait until ``/v1`` answers.
        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        self.api.start()
        if wait:
            self.wait_for_api(timeout)

    def restart_api(self, timeout=None):
        """Stop and start the API on the same port, wait until it answers.

        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        self.stop_api()
        self.start_api(timeout=timeout)

    # -- tear down --------------------------------------------------------

    def stop_all(self, timeout=30):
        """Stop every service at once: SIGTERM, then SIGKILL what is left.

        :param timeout: seconds allowed for the graceful exit.
        :returns: None
        :raises: HarnessError listing the services that would not die.
        """
        services = [s for s in self.services() if s.group_pids()]
        for service in services:
            service.signal(signal.SIGTERM)
            service.signal(signal.SIGCONT)
        try:
            wait_for(lambda: not any(s.group_pids() for s in services),
                     timeout, 'the services to exit')
        except HarnessError:
            LOG.warning('Services still running after SIGTERM: %s',
                        [s.name for s in services if s.group_pids()])
        failed = []
        for service in self.services():
            try:
                service.kill(timeout)
            except Exception:
                LOG.exception('Could not stop %s', service.name)
                failed.append(service.name)
        if failed:
            raise HarnessError('Services left running: %s' % failed)


def _tail(path, lines=40):
    try:
        with open(path, 'rb') as stream:
            data = stream.read().decode('utf-8', 'replace')
    except OSError as exc:
        return '<no log: %s>' % exc
    return '\n'.join(data.splitlines()[-lines:])
