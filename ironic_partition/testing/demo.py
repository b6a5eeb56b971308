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

"""The end-to-end demo that ``tox -e demo`` runs, on real parts.

Usage::

    python -m ironic_partition.testing.demo [--nodes N] [--db-backend BACKEND]
                                        [--keep-workdir]

It needs the functional test environment (Ironic installed, PostgreSQL or
MariaDB reachable: ``tools/test-setup.sh``). It:

1. starts a real Ironic from the functional harness (one ``ironic-api``,
   one ``ironic-conductor`` in conductor group ``rack1`` and one in
   ``rack2``) and enrolls nodes in both groups, a few with instances;
2. starts four ``ironic-partition serve`` agents as separate processes:
   ``a1``, ``a2``, ``a3`` share ``rack1``, ``b1`` has ``rack2``, all on
   the embedded SQLite membership database (one file, shared);
3. shows the partition table and checks it against the ring;
4. SIGKILLs ``a2`` and measures how long ``a1`` and ``a3`` take to cover
   its nodes, against the documented bound
   ``max(service_down_time, lease_time) + refresh_interval``;
5. moves ``a3`` from ``rack1`` to ``rack2``: edits the configuration
   files, sends SIGHUP, and checks the new split;
6. tears everything down (also on Ctrl-C, SIGTERM and errors) and prints
   a summary. The exit status is 0 when every check passed, 1 otherwise.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import prettytable

from ironic_partition.cmd import _errors
from ironic_partition import exception
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.lanes import split as harness_split
from ironic_partition.testing import narrator as harness_narrator

#: Agent timings: small so that the demo is quick.
HEARTBEAT_INTERVAL = 1
SERVICE_DOWN_TIME = 4
REFRESH_INTERVAL = 1
#: The claims' lease (the default would be the same:
#: max(2 * refresh_interval, service_down_time)).
LEASE_TIME = 4
#: The failover bound the admin guide documents.
FAILOVER_BOUND = max(SERVICE_DOWN_TIME, LEASE_TIME) + REFRESH_INTERVAL
#: Added to the bound for the time a refresh and a report write take.
SLACK = 2.0

GROUPS = ('rack1', 'rack2')
#: Agent name -> (partition key, peer list) at the start.
AGENTS = collections.OrderedDict([
    ('a1', ('rack1', ['a1', 'a2', 'a3'])),
    ('a2', ('rack1', ['a1', 'a2', 'a3'])),
    ('a3', ('rack1', ['a1', 'a2', 'a3'])),
    ('b1', ('rack2', ['b1'])),
])
#: Which agent owns the instance of how many nodes of which group.
INSTANCES = (('a1', 'rack1', 1), ('a2', 'rack1', 2), ('b1', 'rack2', 1))

DEFAULT_NODES = 60
STEP_TIMEOUT = 60


class Interrupted(Exception):
    """The demo received SIGINT, SIGTERM or SIGHUP."""


class Demo(object):
    """The demo's state and steps.

    :param narrator: a :class:`~ironic_partition.testing.narrator.
        Narrator`.
    :param nodes: how many nodes to enroll.
    :param db_backend: Ironic's database, ``postgresql`` or ``mysql``.
    :param keep_workdir: keep the configuration, reports and logs.
    """

    def __init__(self, narrator, nodes=DEFAULT_NODES,
                 db_backend='postgresql', keep_workdir=False):
        self.n = narrator
        self.node_count = nodes
        self.db_backend = db_backend
        self.keep_workdir = keep_workdir
        self.workdir = None
        self.ironic = None
        self.agents = collections.OrderedDict()
        self.settings = collections.OrderedDict(
            (name, (key, list(peers))) for name, (key, peers)
            in AGENTS.items())
        self.nodes = []
        self.instance_owner = {}
        self.results = []
        self.failover_seconds = None

    # Set-up and teardown.

    def path(self, *parts):
        """A path in the work directory.

        :param parts: path components.
        :returns: a path.
        """
        return os.path.join(self.workdir, *parts)

    def start_ironic(self):
        """Start Ironic and enroll the nodes.

        :returns: None
        """
        self.workdir = tempfile.mkdtemp(prefix='ironic-partition-demo-')
        self.n.say('Starting a real Ironic: ironic-api and one '
                   'ironic-conductor in each of %s, on %s'
                   % (', '.join(GROUPS), self.db_backend))
        self.ironic = harness.IronicFixture(
            db_backend=self.db_backend, conductor_groups=list(GROUPS),
            workdir=self.workdir, keep_workdir=self.keep_workdir)
        self.ironic.setUp()
        self.n.say('Ironic is up at %s (conductors %s)' % (
            self.ironic.endpoint,
            ', '.join('%s in %s' % (c.hostname, c.group)
                      for c in self.ironic.conductors)))
        enrolled = harness.bulk_enroll(
            self.ironic.config_file, self.node_count, list(GROUPS),
            provision_state='available', name_prefix='demo')
        conn = harness.connect(self.ironic.endpoint)
        by_group = collections.defaultdict(list)
        for node in enrolled:
            by_group[node['conductor_group']].append(node)
        instances = {}
        for owner, group, count in INSTANCES:
            for _index in range(count):
                node = by_group[group].pop()
                instance = str(uuid.uuid4())
                harness.set_instance_uuid(conn, node, instance)
                instances[node['uuid']] = instance
                self.instance_owner[instance] = owner
        self.nodes = [{'uuid': n['uuid'], 'name': n['name'],
                       'conductor_group': n['conductor_group'],
                       'instance': instances.get(n['uuid'])}
                      for n in enrolled]
        with open(self.path('instances.json'), 'w') as stream:
            json.dump(self.instance_owner, stream, indent=2)
        counts = collections.Counter(n['conductor_group']
                                     for n in self.nodes)
        self.n.say('Enrolled %d nodes (%s), available; %d have an instance '
                   '(owners: %s), listed in instances.json' % (
                       len(self.nodes),
                       ', '.join('%d in %s' % (counts[g], g)
                                 for g in GROUPS),
                       len(instances),
                       ', '.join('%s owns %d' % (o, c)
                                 for o, _g, c in INSTANCES)))

    def write_config(self, name):
        """Write an agent's configuration file from its settings.

        :param name: the agent.
        :returns: the path.
        """
        key, peers = self.settings[name]
        path = self.path('%s.conf' % name)
        harness_cli.write_conf(path, {
            'ironic': {'auth_type': 'none',
                       'endpoint_override': self.ironic.endpoint,
                       'partition_key': key,
                       'peer_list': ','.join(peers)},
            'ironic_partition': {'host': name,
                                 'state_path': self.path('state'),
                                 'heartbeat_interval': HEARTBEAT_INTERVAL,
                                 'service_down_time': SERVICE_DOWN_TIME,
                                 'refresh_interval': REFRESH_INTERVAL,
                                 'lease_time': LEASE_TIME},
        })
        return path

    def start_agents(self):
        """Start every agent as its own process.

        :returns: None
        """
        for name in self.settings:
            argv = harness_cli.cli_argv() + [
                '--config-file', self.write_config(name), 'serve',
                '--role', 'agent',
                '--report-file', self.path('%s.json' % name),
                '--instance-hosts', self.path('instances.json')]
            service = harness.Service('agent-%s' % name, argv,
                                      self.path('agent-%s.log' % name))
            self.agents[name] = service
            service.start()
        self.n.say('Started %d "ironic-partition serve" agents: %s. They '
                   'share the embedded SQLite membership database %s; '
                   'heartbeat %ds, dead after %ds, refresh %ds, lease %ds'
                   % (len(self.agents), ', '.join(
                       '%s (%s)' % (a, self.settings[a][0])
                       for a in self.agents),
                      self.path('state', 'ironic_partition.sqlite'),
                      HEARTBEAT_INTERVAL, SERVICE_DOWN_TIME,
                      REFRESH_INTERVAL, LEASE_TIME))

    def teardown(self):
        """Stop the agents and Ironic; never raises.

        :returns: a list of problems met while stopping.
        """
        problems = []
        running = {name: service.running()
                   for name, service in self.agents.items()}
        # NOTE(ironic-partition): all at once; each exits on its own.
        for name, service in self.agents.items():
            if running[name]:
                service.signal(signal.SIGTERM)
        for name, service in self.agents.items():
            try:
                was_running = running[name]
                code = service.stop(timeout=30)
                if was_running and code != 0:
                    problems.append('agent %s exited with %s on SIGTERM'
                                    % (name, code))
            except Exception as e:
                problems.append('stopping agent %s: %s' % (name, e))
        if self.agents:
            self.n.say('Agents stopped%s' % (
                '' if problems else ', each with exit status 0'))
        if self.ironic is not None:
            try:
                self.ironic.cleanUp()
                self.n.say('Ironic stopped, its database dropped')
            except Exception as e:
                problems.append('stopping Ironic: %s' % e)
        if self.workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return problems

    # Observing.

    def reports(self):
        """Read every agent's report file.

        :returns: agent -> document (agents without a readable file are
            left out).
        """
        result = {}
        for name in self.agents:
            try:
                with open(self.path('%s.json' % name)) as stream:
                    result[name] = json.load(stream)
            except (OSError, ValueError):
                continue
        return result

    def live_members(self, dead=()):
        """Group -> the live agents that list each other in it.

        :param dead: agents that are not running.
        :returns: a dict.
        """
        result = {group: [] for group in GROUPS}
        for name, (key, _peers) in self.settings.items():
            if name not in dead:
                result[key].append(name)
        return result

    def wait_split(self, members, since_counter=None, what='the split'):
        """Wait until the reports match the expected split.

        :param members: group -> live agents.
        :param since_counter: agent -> a refresh counter every report must
            have passed.
        :param what: for the timeout message.
        :returns: the list of problems of the last look (empty on
            success).
        """
        last = []

        def done():
            reports = self.reports()
            if since_counter:
                for agent, counter in since_counter.items():
                    if reports.get(agent, {}).get('refresh_counter',
                                                  -1) <= counter:
                        last[:] = ['%s has not refreshed yet' % agent]
                        return False
            last[:] = harness_split.check_split(
                reports, self.nodes, members, self.instance_owner)
            return not last

        try:
            harness.wait_for(done, STEP_TIMEOUT, what, interval=0.1,
                             check=self._check_agents)
        except harness.HarnessError:
            return last or ['timed out waiting for %s' % what]
        return []

    def _check_agents(self):
        for name, service in self.agents.items():
            if service.process is not None and not service.running() \
                    and name not in self._expected_dead:
                raise harness.HarnessError(
                    'agent %s exited with %s; see %s' % (
                        name, service.process.returncode, service.log_path))

    _expected_dead = ()

    def table(self):
        """The partition table, from the report files.

        :returns: a list of lines.
        """
        reports = self.reports()
        rows = []
        for name in self.agents:
            report = reports.get(name)
            if report is None or report.get('state') == 'stopped' or (
                    not self.agents[name].running()):
                rows.append((name, self.settings[name][0], '-', 'dead', None,
                             None, None))
                continue
            managed = report['managed_count']
            inst = len(report['by_instance'])
            rows.append((name, report['partition_key'],
                         ','.join(report['peer_list']),
                         'yes' if report['ready'] else 'NO', managed,
                         managed - inst, inst))
        table = prettytable.PrettyTable(
            ('AGENT', 'GROUP', 'PEER LIST', 'READY', 'MANAGED', 'BY RING',
             'BY INSTANCE'))
        table.align = 'l'
        table.add_rows([['-' if v is None else v for v in row]
                        for row in rows])
        return table.get_string().splitlines()

    def cli(self, agent, *args):
        """Run ``ironic-partition`` with an agent's configuration; show it.

        :param agent: whose configuration file to use.
        :param args: the command and its options.
        :returns: the exit code.
        """
        argv = harness_cli.cli_argv() + ['--config-file',
                                         self.path('%s.conf' % agent)]
        argv += list(args)
        shown = ['ironic-partition', '--config-file', '%s.conf' % agent]
        shown += [os.path.basename(a) if a.startswith(self.workdir) else a
                  for a in args]
        self.n.block(['$ ' + ' '.join(shown)], indent='  ')
        # NOTE(ironic-partition): cliff wraps a table wider than this.
        env = dict(harness_cli.cli_env(), CLIFF_MAX_TERM_WIDTH='100')
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, env=env)
        self.n.block((proc.stdout + proc.stderr).rstrip('\n').split('\n'))
        return proc.returncode

    def record(self, step, ok, detail):
        """Remember a step's outcome and say it.

        :param step: the step's name.
        :param ok: whether its check passed.
        :param detail: a one-line explanation.
        :returns: None
        """
        self.results.append((step, ok, detail))
        self.n.say('%s: %s: %s' % ('PASS' if ok else 'FAIL', step, detail))

    # The steps.

    def step_table(self):
        """Step 1: the partition table, checked against the ring.

        :returns: None
        """
        self.n.title('Step 1: the partition table')
        self.n.say('Waiting for every agent to join and split its group')
        problems = self.wait_split(self.live_members(),
                                   what='the initial split')
        self.n.block(self.table())
        code = self.cli('a1', 'ring', '--role', 'agent', '--instance-hosts',
                        self.path('instances.json'))
        if code:
            problems.append('"ironic-partition ring" exited with %d' % code)
        self.record('partition table', not problems,
                    '; '.join(problems[:3]) or
                    'each node of rack1 and rack2 is managed by exactly '
                    'the agent the tooz ring (or its instance) gives it')

    def step_kill(self):
        """Step 2: SIGKILL a2; a1 and a3 take over within the bound.

        :returns: None
        """
        self.n.title('Step 2: an agent dies')
        counters = {a: r['refresh_counter'] for a, r in
                    self.reports().items() if a in ('a1', 'a3')}
        self._expected_dead = ('a2',)
        self.n.say('SIGKILL a2 (pid %s): no goodbye, its heartbeats and '
                   'claims just stop' % self.agents['a2'].pid)
        start = time.monotonic()
        self.agents['a2'].kill()
        problems = self.wait_split(self.live_members(dead=('a2',)),
                                   since_counter=counters,
                                   what='a1 and a3 to take over')
        took = time.monotonic() - start
        self.n.block(self.table())
        within = took <= FAILOVER_BOUND + SLACK
        if not problems and not within:
            problems.append('took %.1f s, more than the bound' % took)
        self.n.say('a2\'s nodes were taken over %.1f s after the kill; the '
                   'documented bound is max(service_down_time, lease_time) '
                   '+ refresh_interval = %d s (plus %.0f s for the refresh '
                   'itself)' % (took, FAILOVER_BOUND, SLACK))
        self.n.say('a2\'s instance nodes are stranded: nobody may manage '
                   'them while a2 is dead. status says what to do:')
        code = self.cli('a1', 'status', '--role', 'agent',
                        '--instance-hosts', self.path('instances.json'),
                        '-c', 'peers', '-c', 'managed_count', '-c',
                        'stranded', '-c', 'advice')
        if code:
            problems.append('"ironic-partition status" exited with %d'
                            % code)
        self.record('failover', not problems,
                    '; '.join(problems[:3]) or
                    'a1 and a3 cover a2\'s nodes after %.1f s (bound %d s)'
                    % (took, FAILOVER_BOUND))
        self.failover_seconds = took

    def step_move(self):
        """Step 3: move a3 from rack1 to rack2 with SIGHUP.

        :returns: None
        """
        self.n.title('Step 3: an agent changes partition on SIGHUP')
        self.settings['a3'] = ('rack2', ['b1', 'a3'])
        self.settings['a1'] = ('rack1', ['a1', 'a2'])
        self.settings['b1'] = ('rack2', ['b1', 'a3'])
        counters = {a: r['refresh_counter'] for a, r in
                    self.reports().items() if a in ('a1', 'a3', 'b1')}
        for name in ('a3', 'a1', 'b1'):
            self.write_config(name)
        self.n.say('Edited a3.conf: partition_key rack1 -> rack2, '
                   'peer_list b1,a3; a1.conf: peer_list a1,a2 (a3 left); '
                   'b1.conf: peer_list b1,a3 (a3 joined)')
        start = time.monotonic()
        for name in ('a3', 'a1', 'b1'):
            self.agents[name].signal(signal.SIGHUP)
        self.n.say('Sent SIGHUP to a3, a1 and b1')
        problems = self.wait_split(self.live_members(dead=('a2',)),
                                   since_counter=counters,
                                   what='a3 to switch to rack2')
        took = time.monotonic() - start
        reports = self.reports()
        a3 = reports.get('a3', {})
        if a3.get('partition_key') != 'rack2':
            problems.append('a3 reports partition_key %r'
                            % a3.get('partition_key'))
        self.n.block(self.table())
        self.n.say('a3 switched %.1f s after SIGHUP (settings generation '
                   '%s); its log says:' % (took,
                                           a3.get('settings_generation')))
        self.n.block(self._log_lines('a3', 'Partition settings changed',
                                     'Refresh: managing'))
        code = self.cli('b1', 'ring', '--role', 'agent', '--instance-hosts',
                        self.path('instances.json'))
        if code:
            problems.append('"ironic-partition ring" exited with %d' % code)
        self.record('SIGHUP switch', not problems,
                    '; '.join(problems[:3]) or
                    'a3 left rack1 (now a1 alone) and shares rack2 with b1, '
                    '%.1f s after SIGHUP' % took)

    def _log_lines(self, agent, *needles):
        """The last log line of an agent containing each needle.

        :param agent: the agent.
        :param needles: strings.
        :returns: a list of lines (message part only), in needle order.
        """
        found = {}
        try:
            with open(self.agents[agent].log_path) as stream:
                for line in stream:
                    for needle in needles:
                        if needle in line:
                            found[needle] = line.rstrip('\n').split(
                                ' [-] ', 1)[-1]
        except OSError:
            pass
        return [found[n] for n in needles if n in found]

    def step_simulate(self):
        """Step 4: the offline what-if, at scale.

        :returns: None
        """
        self.n.title('Step 4: what if? (offline, no service needed)')
        code = self.cli('a1', 'simulate', '--nodes', '100000', '--members',
                        '100', '--leave', '1', '--compare', '-c', 'mode',
                        '-c', 'max_over_fair_after', '-c', 'moved', '-c',
                        'moved_percent', '-c', 'seconds')
        self.record('simulate', code == 0,
                    'exit code %d' % code)

    def run(self):
        """Run every step.

        :returns: None
        """
        self.start_ironic()
        self.start_agents()
        self.step_table()
        self.step_kill()
        self.step_move()
        self.step_simulate()


def _interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def _ignore(signum, frame):
    sys.stderr.write('Still tearing down, please wait...\n')


def main(argv=None):
    """Run the demo.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :returns: 0 when every step passed, 1 otherwise, 130 when interrupted.
    """
    parser = argparse.ArgumentParser(
        prog='python -m ironic_partition.testing.demo',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', type=int, default=DEFAULT_NODES,
                        help='Nodes to enroll (default: %(default)s).')
    parser.add_argument('--db-backend', choices=('postgresql', 'mysql'),
                        default='postgresql',
                        help='Ironic\'s database (default: %(default)s).')
    parser.add_argument('--keep-workdir', action='store_true',
                        help='Keep the configuration, reports and logs.')
    args = parser.parse_args(argv)
    narrator = harness_narrator.Narrator()
    narrator.out.write('ironic-partition demo: a real Ironic, four '
                       'partition agents, and what they do when one dies '
                       'and one moves.\n')
    demo = Demo(narrator, nodes=args.nodes, db_backend=args.db_backend,
                keep_workdir=args.keep_workdir)
    interrupted = None
    error = None
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        demo.run()
    except Interrupted as e:
        interrupted = str(e)
    except Exception as e:
        error = '%s: %s' % (type(e).__name__, exception.one_line(e))
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _ignore)
        narrator.title('Teardown')
        narrator.say('Stopping the agents (SIGTERM) and Ironic, dropping '
                     'its database%s' % (
                         '' if not args.keep_workdir
                         else '; keeping %s' % demo.workdir))
        teardown = demo.teardown()
        narrator.say('Everything stopped' if not teardown
                     else 'Teardown problems: %s' % '; '.join(teardown))
    narrator.summary(demo.results, error, interrupted, teardown)
    ok = (demo.results and all(r[1] for r in demo.results) and not error
          and not interrupted and not teardown and len(demo.results) == 4)
    narrator.say('Demo %s in %.0f s' % ('passed' if ok else 'FAILED',
                                        narrator.elapsed()))
    if interrupted:
        return _errors.EXIT_INTERRUPTED
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
