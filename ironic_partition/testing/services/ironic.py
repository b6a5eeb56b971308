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
import json
import logging
import os
import shutil
import signal
import tempfile
import time
import urllib.error
import urllib.request

import fixtures

from ironic_partition.testing import process
from ironic_partition.testing.services import db as harness_db

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


class Conductor(process.Service):
    """An ``ironic-conductor`` with its group and JSON-RPC port.

    :param index: the position in the fixture's conductor list.
    :param group: the ``[conductor] conductor_group``.
    :param port: the ``[json_rpc] port``.
    :param kwargs: passed to :class:`process.Service`.
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
        # NOTE(harness): one schema per installed Ironic: another one's
        # (bin_dir) is migrated every time.
        self.database = self.useFixture(harness_db.DatabaseFixture(
            self.db_backend, workdir=self.workdir,
            schema='ironic' if self.bin_dir is None else None))
        self.api_port = process.free_port()
        self.config_file = os.path.join(self.workdir, 'ironic.conf')
        process.write_config(self.config_file, self._base_config())
        self.database.ensure_schema(self._dbsync)
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
            self.addDetail('log-' + service.name,
                           process.log_content(service.log_path))
        # NOTE(harness): one cleanup stops everything, registered after the
        # database fixture so it runs before the database is dropped.
        self.addCleanup(self.stop_all)
        for service in self.services():
            service.start()
        self.wait_until_ready(self.start_timeout)
        LOG.info('Ironic is up at %s with conductors %s', self.endpoint,
                 [c['hostname'] for c in self.describe()['conductors']])

    def _new_conductor(self, index, group, extra_config=None):
        port = process.free_port()
        name = 'conductor-%s' % index
        conf = self._service_config(name, process.merge_config({
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
        return process.merge_config(config, self.extra_config)

    def _service_config(self, name, sections):
        path = os.path.join(self.workdir, 'service-%s.conf' % name)
        process.write_config(path, sections)
        return path

    def _argv(self, script, service_config):
        return [process.bin_path(script, self.bin_dir),
                '--config-file', self.config_file,
                '--config-file', service_config]

    def _make_service(self, name, script, service_config):
        return process.Service(name, self._argv(script, service_config),
                               os.path.join(self.workdir, name + '.log'))

    def _dbsync(self):
        log_path = os.path.join(self.workdir, 'dbsync.log')
        self.addDetail('log-dbsync', process.log_content(log_path))
        process.run_logged([process.bin_path('ironic-dbsync', self.bin_dir),
                            '--config-file', self.config_file,
                            'create_schema'], log_path)

    # -- state ------------------------------------------------------------

    @property
    def endpoint(self):
        """The API root URL, e.g. ``http://127.0.0.1:12345``."""
        return 'http://127.0.0.1:%d' % self.api_port

    def services(self):
        """Every service the fixture manages, API first.

        :returns: a list of :class:`process.Service`.
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
        :raises: process.HarnessError with the tail of the service's log.
        """
        for service in self.services() if services is None else services:
            if service.process is None:
                continue
            if not service.running():
                raise process.HarnessError('%s exited with %s: %s' % (
                    service.name, service.process.returncode,
                    process.tail(service.log_path)))
            if service.crashed_workers() >= process.MAX_WORKER_CRASHES:
                raise process.HarnessError(
                    '%s: its worker keeps crashing: %s' % (
                        service.name, process.tail(service.log_path)))

    def wait_for_api(self, timeout=None):
        """Wait until ``/v1`` answers.

        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        process.wait_for(self.api_ready, timeout or self.start_timeout,
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
            return process.wait_for(self._single_registered,
                                    timeout or self.start_timeout,
                                    'the conductor to register')
        if alive is None:
            alive = [c for c in self.conductors if c.running()]
        alive = [self.conductor(c) for c in alive]
        names = [c.hostname for c in alive]
        dead = [self.conductor(c).hostname for c in dead]
        return process.wait_for(
            lambda: self._conductors_match(names, dead),
            timeout or self.start_timeout,
            'conductors alive=%s dead=%s' % (names, dead),
            check=lambda: self.check_services(alive))

    def wait_until_ready(self, timeout=None):
        """Wait for the API and every conductor.

        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        deadline = time.monotonic() + (timeout or self.start_timeout)
        process.wait_for(self.api_ready, timeout or self.start_timeout,
                         'the API at %s' % self.endpoint,
                         check=self.check_services)
        remaining = max(1, deadline - time.monotonic())
        if self.mode == 'single':
            process.wait_for(self._single_registered, remaining,
                             'the conductor to register',
                             check=self.check_services)
            return
        expected = [c for c in self.conductors if c.running()]
        process.wait_for(lambda: self._conductors_match(
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
        :raises: process.HarnessError listing the services that would not die.
        """
        failed = process.stop_together(self.services(), timeout=timeout)
        if failed:
            raise process.HarnessError('Services left running: %s' % failed)
