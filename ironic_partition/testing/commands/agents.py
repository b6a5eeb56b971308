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

"""A set of ``ironic-partition serve`` agents as real processes.

Shared by the fault-injection tests (``test_faults``) and the soak
benchmark (``benchmarks/soak_bench.py``). Each agent is a harness
:class:`~ironic_partition.testing.Service` (its own
process group) started with the CLI engineer's helpers
(:func:`~ironic_partition.testing.commands.cli.agent_conf`,
:func:`~ironic_partition.testing.commands.cli.cli_argv`), with a report
file, an optional TCP proxy of its own in front of the membership
database (a test cuts it to cut the agent off), and an optional wall-clock
offset (libfaketime). Every start, signal and stop is told to an
:class:`~ironic_partition.testing.lanes.observer.Observer` when one is
given, with the instant it happened.
"""

import collections
import json
import logging
import os
import signal
import sys
import time

import fixtures
from sqlalchemy.engine import url as sa_url

from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import proxy as db_proxy

LOG = logging.getLogger(__name__)

#: Where libfaketime may be found; the environment variable wins.
FAKETIME_LIB_ENV = 'IRONIC_PARTITION_TEST_FAKETIME_LIB'
FAKETIME_LIBS = (
    '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
    '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
    '/usr/lib/faketime/libfaketime.so.1',
    '/usr/local/lib/faketime/libfaketime.so.1',
)


class Timings(collections.namedtuple(
        'Timings', ['refresh_interval', 'heartbeat_interval',
                    'service_down_time', 'lease_time', 'fencing_margin'])):
    """The agents' timing options, in seconds.

    ``fencing_margin`` None means the automatic value (a tenth of the
    lease), as :func:`ironic_partition.settings.claims.resolve`
    computes it.
    """

    __slots__ = ()

    @property
    def margin(self):
        """The fencing margin in force."""
        if self.fencing_margin is None:
            return self.lease_time / 10.0
        return self.fencing_margin

    @property
    def i2_bound(self):
        """I2: ``service_down_time`` + 2 refresh intervals."""
        return self.service_down_time + 2 * self.refresh_interval

    def options(self):
        """The ``[ironic_partition]`` options, for a configuration file.

        :returns: a dict.
        """
        options = {'refresh_interval': self.refresh_interval,
                   'heartbeat_interval': self.heartbeat_interval,
                   'service_down_time': self.service_down_time,
                   'lease_time': self.lease_time}
        if self.fencing_margin is not None:
            options['fencing_margin'] = self.fencing_margin
        return options


#: Fast timings for the functional tests: refresh and heartbeat every
#: second, dead after 4 s, lease 4 s (the automatic value), margin 0.4 s.
FAST = Timings(refresh_interval=1, heartbeat_interval=1,
               service_down_time=4, lease_time=4, fencing_margin=None)


def faketime_library():
    """Locate libfaketime.

    :returns: the path of ``libfaketime.so.1``, or None.
    """
    candidates = [os.environ.get(FAKETIME_LIB_ENV)] + list(FAKETIME_LIBS)
    for path in candidates:
        if path and os.path.exists(path):
            return path
    return None


def clock_offset_env(seconds):
    """The environment that shifts a process's wall clock only.

    libfaketime is preloaded with a relative offset; its monotonic clock
    is left alone (``FAKETIME_DONT_FAKE_MONOTONIC=1``), so
    ``time.monotonic()`` (the fence) and the report's ``monotonic`` stay
    comparable with every other process, while ``time.time()``,
    ``datetime.now()`` and every C library's wall-clock read are off.
    Run the command with :func:`skewed_argv`.

    :param seconds: the offset, e.g. ``420`` or ``-300``.
    :returns: a dict of environment variables.
    :raises HarnessError: when libfaketime is not installed.
    """
    library = faketime_library()
    if library is None:
        raise harness.HarnessError(
            'libfaketime is needed to run an agent with its wall clock '
            'off: install the Debian package "faketime" (tools/'
            'test-setup.sh does) or set %s to its libfaketime.so.1'
            % FAKETIME_LIB_ENV)
    return {'LD_PRELOAD': library,
            'FAKETIME': '%+d' % int(seconds),
            'FAKETIME_DONT_FAKE_MONOTONIC': '1'}


def skewed_argv():
    """``ironic-partition`` for a process run with :func:`clock_offset_env`.

    :returns: a list; see :mod:`ironic_partition.testing.commands.skewed_cli`
        for why ``time.sleep`` needs replacing.
    """
    return [sys.executable, '-m',
            'ironic_partition.testing.commands.skewed_cli']


def via_proxy(url, port):
    """The same database URL, through a local proxy port.

    :param url: a SQLAlchemy URL string.
    :param port: the proxy's port on 127.0.0.1.
    :returns: the URL string, password kept.
    """
    return sa_url.make_url(url).set(host='127.0.0.1', port=port) \
        .render_as_string(hide_password=False)


class Agent(object):
    """One agent: its settings, files, process and proxy.

    :param host: its host name.
    :param peers: its peer list.
    :param service: the harness ``Service``.
    :param conf_path: its configuration file.
    :param report_path: its report file.
    :param proxy: its
        :class:`~ironic_partition.testing.services.proxy.TCPProxy`, or None.
    :param clock_offset: its wall-clock offset in seconds, or None.
    """

    def __init__(self, host, peers, service, conf_path, report_path,
                 proxy=None, clock_offset=None, endpoint=None):
        self.host = host
        #: Its own Ironic endpoint (e.g. a slow proxy), or None for the
        #: set's.
        self.endpoint = endpoint
        self.peers = list(peers)
        self.service = service
        self.conf_path = conf_path
        self.report_path = report_path
        self.proxy = proxy
        self.clock_offset = clock_offset
        self.paused = False
        #: The command line after the ``ironic-partition`` command.
        self.serve_args = []

    def report(self):
        """The agent's report file, ``{}`` when absent.

        :returns: a dict.
        """
        return harness_cli.read_json(self.report_path) or {}

    def log(self):
        """The agent's log so far.

        :returns: a string.
        """
        try:
            with open(self.service.log_path) as stream:
                return stream.read()
        except OSError:
            return ''


class AgentSet(fixtures.Fixture):
    """Partition agents of one conductor group, as real processes.

    :param workdir: where configuration, report and log files go.
    :param endpoint: Ironic's endpoint.
    :param db_url: the membership database URL (migrated already).
    :param key: the partition key (conductor group).
    :param timings: a :class:`Timings`.
    :param observer: an ``Observer`` to tell about processes, or None.
    :param instance_hosts: path of the ``--instance-hosts`` file, or None.
    :param proxies: put a TCP proxy of its own between each agent and the
        database.
    :param extra: more ``[ironic_partition]`` options for every agent.
    :param shard: ``[ironic] shard`` of every agent, or None.
    """

    def __init__(self, workdir, endpoint, db_url, key, timings=FAST,
                 observer=None, instance_hosts=None, proxies=False,
                 extra=None, shard=None):
        super().__init__()
        self.shard = shard
        self.workdir = workdir
        self.endpoint = endpoint
        self.db_url = db_url
        self.key = key
        self.timings = timings
        self.observer = observer
        self.instance_hosts = instance_hosts
        self.proxies = proxies
        self.extra = dict(extra or {})
        self.agents = collections.OrderedDict()
        self.state_path = os.path.join(workdir, 'state')

    def _setUp(self):
        self.addCleanup(self.stop_all)

    def __getitem__(self, host):
        return self.agents[host]

    def __iter__(self):
        return iter(self.agents)

    def _tell(self, host, kind, when):
        if self.observer is not None:
            self.observer.event(host, kind, when)

    def write_conf(self, host):
        """(Re)write an agent's configuration file from its settings.

        :param host: the agent.
        :returns: the path.
        """
        agent = self.agents[host]
        url = self.db_url
        if agent.proxy is not None:
            url = via_proxy(url, agent.proxy.port)
        options = dict(self.timings.options())
        options.update(self.extra)
        shard = getattr(agent, 'shard', self.shard)
        return harness_cli.agent_conf(agent.conf_path,
                                      agent.endpoint or self.endpoint, host,
                                      self.key, agent.peers, self.state_path,
                                      database=url, shard=shard, **options)

    def add(self, host, peers, clock_offset=None, start=True, args=(),
            endpoint=None, command=None):
        """Configure an agent, and start it.

        :param host: its host name.
        :param peers: its peer list.
        :param clock_offset: wall-clock offset in seconds (libfaketime).
        :param start: start it now.
        :param args: more ``serve`` arguments (e.g. ``--takeover``).
        :param endpoint: its own Ironic endpoint, or None for the set's.
        :param command: the ``ironic-partition`` command to run (another
            version's), or None for this one's.
        :returns: the :class:`Agent`.
        """
        env = harness_cli.cli_env()
        argv = list(command) if command else harness_cli.cli_argv()
        if clock_offset:
            env.update(clock_offset_env(clock_offset))
            argv = skewed_argv()
        base = len(argv)
        report_path = os.path.join(self.workdir, '%s.json' % host)
        conf_path = os.path.join(self.workdir, '%s.conf' % host)
        argv = argv + [
            '--config-file', conf_path, 'serve', '--report-file',
            report_path]
        if self.instance_hosts:
            argv += ['--instance-hosts', self.instance_hosts]
        argv += list(args)
        service = harness.Service(
            'agent-' + host, argv,
            os.path.join(self.workdir, 'agent-%s.log' % host), env=env)
        proxy = None
        if self.proxies:
            target = sa_url.make_url(self.db_url)
            proxy = db_proxy.TCPProxy(target.host or '127.0.0.1',
                                      target.port)
            proxy.setUp()
            self.addCleanup(proxy.cleanUp)
        agent = Agent(host, peers, service, conf_path, report_path,
                      proxy=proxy, clock_offset=clock_offset,
                      endpoint=endpoint)
        agent.serve_args = argv[base:]
        self.agents[host] = agent
        if self.observer is not None:
            self.observer.add_agent(host, report_path)
        self.write_conf(host)
        if start:
            self.start(host)
        return agent

    # Processes.

    def start(self, host):
        """Start an agent's process (again).

        :param host: the agent.
        :returns: None
        """
        agent = self.agents[host]
        agent.service.start()
        agent.paused = False
        self._tell(host, 'start', time.monotonic())

    def kill(self, host):
        """SIGKILL an agent and wait until its processes are gone.

        :param host: the agent.
        :returns: the exit code.
        """
        when = time.monotonic()
        code = self.agents[host].service.kill()
        self.agents[host].paused = False
        self._tell(host, 'kill', when)
        self._tell(host, 'exit', time.monotonic())
        return code

    def pause(self, host):
        """SIGSTOP an agent.

        :param host: the agent.
        :returns: None
        """
        when = time.monotonic()
        service = self.agents[host].service
        service.pause()
        self.agents[host].paused = True
        # NOTE(ironic-partition): SIGSTOP takes effect asynchronously; the
        # observer reads the last report once every thread has stopped.
        harness.wait_for(lambda: all(_stopped(pid) for pid in
                                     service.group_pids()),
                         10, '%s to stop' % service.name, interval=0.01)
        self._tell(host, 'pause', when)

    def resume(self, host):
        """SIGCONT an agent.

        :param host: the agent.
        :returns: None
        """
        self.agents[host].service.resume()
        self.agents[host].paused = False
        self._tell(host, 'resume', time.monotonic())

    def stop(self, host, timeout=30):
        """SIGTERM an agent (graceful stop) and wait for its exit.

        :param host: the agent.
        :param timeout: seconds before SIGKILL.
        :returns: the exit code.
        """
        self._tell(host, 'term', time.monotonic())
        code = self.agents[host].service.stop(timeout=timeout)
        self.agents[host].paused = False
        self._tell(host, 'exit', time.monotonic())
        return code

    def restart(self, host, graceful=True):
        """Stop (SIGTERM, or SIGKILL) and start an agent.

        :param host: the agent.
        :param graceful: SIGTERM rather than SIGKILL.
        :returns: the exit code of the stopped process.
        """
        code = self.stop(host) if graceful else self.kill(host)
        self.start(host)
        return code

    def replace(self, host, command=None):
        """Stop an agent gracefully and start another version in its place.

        The same host name, configuration and report file: an upgrade of
        the package on that host.

        :param host: the agent.
        :param command: the ``ironic-partition`` command of the version to
            start, or None for this one's.
        :returns: the exit code of the stopped process.
        """
        agent = self.agents[host]
        code = self.stop(host)
        agent.service.argv = ((list(command) if command
                               else harness_cli.cli_argv()) +
                              agent.serve_args)
        self.start(host)
        return code

    def sighup(self, host):
        """Send SIGHUP (reload the configuration files).

        :param host: the agent.
        :returns: None
        """
        self._tell(host, 'hup', time.monotonic())
        self.agents[host].service.signal(signal.SIGHUP)

    def set_peers(self, host, peers):
        """Rewrite an agent's peer list (applied on SIGHUP).

        :param host: the agent.
        :param peers: the new peer list.
        :returns: None
        """
        self.agents[host].peers = list(peers)
        self.write_conf(host)

    def set_shard(self, host, shard):
        """Rewrite an agent's ``[ironic] shard`` (refused on SIGHUP).

        :param host: the agent.
        :param shard: the new shard, or None.
        :returns: None
        """
        self.agents[host].shard = shard
        self.write_conf(host)

    def running(self, host):
        """Tell whether an agent's process runs (paused counts).

        :param host: the agent.
        :returns: a bool.
        """
        return self.agents[host].service.running()

    def live(self):
        """The agents running and not paused.

        :returns: a sorted list of host names.
        """
        return sorted(h for h, a in self.agents.items()
                      if a.service.running() and not a.paused)

    def check_alive(self, expected=None):
        """Raise when an agent that should run has exited.

        :param expected: the agents that should run; every agent that was
            started and not stopped by this set by default.
        :raises HarnessError: naming the agent and its log's tail.
        :returns: None
        """
        hosts = self.agents if expected is None else expected
        for host in hosts:
            agent = self.agents[host]
            process = agent.service.process
            if process is not None and process.poll() is not None and (
                    expected is not None or process.returncode not in (
                        0, -signal.SIGKILL)):
                raise harness.HarnessError(
                    'agent %s exited with %s: %s' % (
                        host, process.returncode, agent.log()[-3000:]))

    # Database faults.

    def cut(self, *hosts):
        """Cut agents off from the database (all when none is named).

        :param hosts: the agents.
        :returns: the instant of the cut (monotonic).
        """
        when = time.monotonic()
        for host in hosts or list(self.agents):
            self._tell(host, 'cut', when)
            self.agents[host].proxy.cut()
        return when

    def restore(self, *hosts):
        """Let agents reach the database again (all when none is named).

        :param hosts: the agents.
        :returns: the instant (monotonic).
        """
        for host in hosts or list(self.agents):
            self.agents[host].proxy.restore()
        when = time.monotonic()
        for host in hosts or list(self.agents):
            self._tell(host, 'restore', when)
        return when

    # Teardown.

    def stop_all(self, timeout=30):
        """Stop every agent: SIGTERM all at once, SIGKILL what is left.

        :param timeout: seconds allowed for the graceful exit.
        :returns: None
        """
        failed = harness_process.stop_together(
            [a.service for a in self.agents.values()], timeout=timeout)
        if failed:
            LOG.warning('Agents left running: %s', failed)


def _stopped(pid):
    """Tell whether every thread of a process is stopped (SIGSTOP)."""
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return True
    for task in tasks:
        try:
            with open('/proc/%d/task/%s/stat' % (pid, task)) as stream:
                state = stream.read().rsplit(')', 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ('T', 't', 'Z', 'X'):
            return False
    return True


def write_instance_hosts(path, owners):
    """Write an ``--instance-hosts`` file.

    :param path: where.
    :param owners: instance UUID -> host.
    :returns: the path.
    """
    with open(path, 'w') as stream:
        json.dump(owners, stream, indent=2, sort_keys=True)
    return path
