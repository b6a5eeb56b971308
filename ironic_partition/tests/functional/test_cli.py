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

"""``ironic-partition`` as a real process against a real Ironic.

One Ironic (``rack1`` and ``rack2``, on PostgreSQL) serves the whole
class; two ``ironic-partition serve`` agents (``a1``, ``a2``) keep
``rack1``'s membership alive on an SQLite membership database, and
``a3`` is in their peer list but never runs. Every subcommand is run as a
subprocess and checked against Ironic, the agents' report files and the
ring; every bad input must give one line on stderr, the documented exit
code and no traceback.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

from oslotest import base

from ironic_partition.cmd import _errors
from ironic_partition.cmd import simulate
from ironic_partition.ring import hash_ring
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.services import db as harness_db
from ironic_partition.tests.functional import _deployers

DB_BACKEND = 'postgresql'
GROUPS = ['rack1', 'rack2']
NODES = 40
TIMEOUT = 60

#: The install guide's nova.conf, as printed in the docs.
INSTALL_GUIDE_CONF = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'doc',
    'source', 'install', 'nova-compute.conf')

#: Where the class's work directory goes: chosen at import, outside the
#: per-test temporary directory that oslotest removes after each test.
WORK_PARENT = harness_db.default_workdir()

#: Fast agent timings (see :mod:`ironic_partition.testing.commands.cli`).
AGENT_OPTIONS = harness_cli.AGENT_OPTIONS
agent_conf = harness_cli.agent_conf
cli_argv = harness_cli.cli_argv
cli_env = harness_cli.cli_env
findings = harness_cli.findings
read_json = harness_cli.read_json
run_cli = harness_cli.run_cli
write_conf = harness_cli.write_conf


def unused_port():
    """A TCP port nothing listens on.

    :returns: a port number.
    """
    return harness.process.free_port()


class OneLineErrors(object):
    """Assertions on the CLI's error output."""

    def assert_one_line_error(self, proc, code, *needles):
        """Exactly one stderr line, the exit code, no traceback.

        :param proc: a ``CompletedProcess``.
        :param code: the expected exit code.
        :param needles: strings the line must contain.
        :returns: the line.
        """
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        self.assertEqual(code, proc.returncode, proc.stderr)
        self.assertEqual(1, len(lines), proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertEqual('', proc.stdout)
        for needle in needles:
            self.assertIn(needle, lines[0])
        return lines[0]


class SharedIronic(object):
    """One real Ironic per test class, torn down with the class.

    The first test calls :meth:`start_shared_ironic` (starting Ironic
    costs ~15 s); ``tearDownClass`` stops it and removes its workdir,
    also after a start that failed half-way.
    """

    ironic = None
    workdir = None

    @classmethod
    def tearDownClass(cls):
        if cls.ironic is not None:
            cls.ironic.cleanUp()
            cls.ironic = None
        if cls.workdir:
            shutil.rmtree(cls.workdir, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def start_shared_ironic(cls, prefix, groups, nodes, db_backend=DB_BACKEND,
                            **enroll):
        """Start the class's Ironic and enroll nodes in bulk.

        :param prefix: the workdir's name prefix.
        :param groups: the conductor groups.
        :param nodes: how many nodes to enroll.
        :param db_backend: Ironic's database server.
        :param enroll: more arguments of ``harness.bulk_enroll``.
        :returns: the enrolled nodes.
        """
        cls.workdir = tempfile.mkdtemp(prefix=prefix, dir=WORK_PARENT)
        cls.ironic = harness.IronicFixture(db_backend=db_backend,
                                           conductor_groups=groups,
                                           workdir=cls.workdir)
        cls.ironic.setUp()
        return harness.bulk_enroll(cls.ironic.config_file, nodes, groups,
                                   **enroll)


class CLITestCase(_deployers.DeployersScenario, OneLineErrors, SharedIronic,
                  base.BaseTestCase):

    agents = ()

    @classmethod
    def tearDownClass(cls):
        for agent in cls.agents:
            agent.stop()
        super().tearDownClass()

    @classmethod
    def _start(cls):
        cls.nodes = cls.start_shared_ironic('ironic-partition-cli-', GROUPS,
                                            NODES)
        conn = harness.connect(cls.ironic.endpoint)
        rack1 = [n for n in cls.nodes if n['conductor_group'] == 'rack1']
        cls.instances = {}
        for node, owner in ((rack1[0], 'a1'), (rack1[1], 'a3')):
            instance = str(uuid.uuid4())
            harness.set_instance_uuid(conn, node, instance)
            cls.instances[node['uuid']] = (instance, owner)
        cls.instance_hosts = os.path.join(cls.workdir, 'instances.json')
        with open(cls.instance_hosts, 'w') as stream:
            json.dump({i: h for i, h in cls.instances.values()}, stream)
        cls.state = os.path.join(cls.workdir, 'state')
        cls.agents = []
        for host in ('a1', 'a2'):
            path = agent_conf(os.path.join(cls.workdir, host + '.conf'),
                              cls.ironic.endpoint, host, 'rack1',
                              ['a1', 'a2', 'a3'], cls.state)
            service = harness.Service(
                'agent-' + host,
                cli_argv() + ['--config-file', path, 'serve',
                              '--report-file',
                              os.path.join(cls.workdir, host + '.json')],
                os.path.join(cls.workdir, 'agent-%s.log' % host),
                env=cli_env())
            cls.agents.append(service)
            service.start()
        harness.wait_for(
            lambda: all((read_json(os.path.join(cls.workdir, h + '.json'))
                         or {}).get('ready') for h in ('a1', 'a2')),
            TIMEOUT, 'the agents to be ready')

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, DB_BACKEND)
        if type(self).ironic is None:
            type(self)._start()
        for agent in self.agents:
            self.assertTrue(agent.running(), agent.log_path)

    def conf(self, name='a1.conf', **overrides):
        """A configuration file for host a1 of rack1, with overrides.

        :param name: the file name.
        :param overrides: ``key``, ``peers``, ``host``, ``endpoint`` or
            ``[ironic_partition]`` options.
        :returns: the path.
        """
        return agent_conf(
            os.path.join(self.workdir, name),
            overrides.pop('endpoint', self.ironic.endpoint),
            overrides.pop('host', 'a1'), overrides.pop('key', 'rack1'),
            overrides.pop('peers', ['a1', 'a2', 'a3']), self.state,
            **overrides)

    def group_nodes(self, group):
        return {n['uuid'] for n in self.nodes
                if n['conductor_group'] == group}

    def free_nodes(self, group):
        return self.group_nodes(group) - set(self.instances)

    def test_status(self):
        proc = run_cli('--config-file', self.conf(), 'status', '--role',
                       'agent', '--instance-hosts', self.instance_hosts,
                       '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(['a1', 'a2'], doc['peers']['live'])
        self.assertEqual(['a3'], doc['peers']['never_seen'])
        self.assertEqual(len(self.group_nodes('rack1')), doc['listed'])
        ring = hash_ring.HashRing(['a1', 'a2'])
        mine = {u for u in self.free_nodes('rack1')
                if ring.get_node(u) == 'a1'}
        own_instance = [u for u, (_i, h) in self.instances.items()
                        if h == 'a1']
        self.assertEqual(mine | set(own_instance),
                         {n['uuid'] for n in doc['managed']})
        # a3 never ran: its instance's node is stranded.
        stranded = [u for u, (_i, h) in self.instances.items() if h == 'a3']
        self.assertEqual(stranded, [s['node'] for s in doc['stranded']])
        self.assertEqual('a3', doc['stranded'][0]['owner'])
        self.assertEqual(ring.get_node(stranded[0]),
                         doc['stranded'][0]['suggested_host'])
        # The running agent a1 reports the same ring share (it has no
        # --instance-hosts, so not the instance node).
        harness.wait_for(
            lambda: set((read_json(os.path.join(self.workdir, 'a1.json'))
                         or {}).get('managed', ())) == mine,
            TIMEOUT, "a1's report to match status")
        # The claims behind that report, as the database holds them.
        proc = run_cli('--config-file', self.conf(), 'status', '--role',
                       'agent', '-f', 'json', '-c', 'claims')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(['claims'], list(json.loads(proc.stdout)))
        claims = json.loads(proc.stdout)['claims']
        self.assertTrue(claims['enabled'])
        self.assertEqual(len(mine), claims['held'])
        self.assertEqual(len(mine), claims['by_owner']['a1'])
        self.assertGreater(claims['expires_in'], 0)
        table = run_cli('--config-file', self.conf(), 'status', '--role',
                        'agent', '--instance-hosts', self.instance_hosts)
        self.assertEqual(0, table.returncode, table.stderr)
        self.assertRegex(table.stdout, r'\| claims +\| enabled=True, ')
        self.assertIn('a3: never seen', table.stdout)
        self.assertIn('nova-manage db ironic_compute_node_move',
                      table.stdout)
        self.assertEqual('', table.stderr)
        # One value, for a script: -f value -c COLUMN.
        value = run_cli('--config-file', self.conf(), 'status', '--role',
                        'agent', '-f', 'value', '-c', 'managed_count')
        self.assertEqual((0, '%d\n' % len(mine)),
                         (value.returncode, value.stdout), value.stderr)
        # List and mapping columns as a script splits them, not Python's
        # reprs (csv, for the list commands, in test_ring).
        value = run_cli('--config-file', self.conf(), 'status', '--role',
                        'agent', '-f', 'value', '-c', 'peer_list', '-c',
                        'peers')
        self.assertEqual(0, value.returncode, value.stderr)
        self.assertNotIn('[', value.stdout)
        self.assertNotIn("'", value.stdout)
        self.assertIn('a1,a2,a3', value.stdout)
        self.assertIn('live=a1,a2', value.stdout)
        shell = run_cli('--config-file', self.conf(), 'status', '--role',
                        'agent', '-f', 'shell', '-c', 'peer_list')
        self.assertEqual((0, 'peer_list="a1,a2,a3"\n'),
                         (shell.returncode, shell.stdout), shell.stderr)

    def test_ring(self):
        proc = run_cli('--config-file', self.conf(), 'ring', '--role',
                       'agent', '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        rows = json.loads(proc.stdout)
        ring = hash_ring.HashRing(['a1', 'a2'])
        free = self.free_nodes('rack1')
        expected = {m: sum(1 for u in free if ring.get_node(u) == m)
                    for m in ('a1', 'a2')}
        self.assertEqual(dict(expected, a3=0),
                         {r['member']: r['ring_nodes'] for r in rows})
        self.assertEqual({'a1': 'live', 'a2': 'live', 'a3': 'never seen'},
                         {r['member']: r['state'] for r in rows})
        fair = sum(expected.values()) / 2
        self.assertEqual(
            '%+.1f%%' % (100.0 * (expected['a1'] - fair) / fair),
            [r['vs_fair'] for r in rows if r['member'] == 'a1'][0])
        # cliff's own options: sorted, one column, CSV.
        proc = run_cli('--config-file', self.conf(), 'ring', '--role',
                       'agent', '-f', 'csv', '-c', 'member', '-c',
                       'ring_nodes', '--sort-column', 'ring_nodes',
                       '--sort-ascending')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(
            ['"member","ring_nodes"'] + ['"%s",%d' % item for item in
                                         sorted(dict(expected, a3=0).items(),
                                                key=lambda i: i[1])],
            proc.stdout.splitlines())

        proc = run_cli('--config-file', self.conf(), 'ring', '--conductors',
                       '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        rows = json.loads(proc.stdout)
        for group in GROUPS:
            conductor = self.ironic.conductors_in(group)[0]
            self.assertEqual(
                [{'conductor_group': group,
                  'conductor': conductor.hostname, 'state': 'alive',
                  'nodes': len(self.group_nodes(group)),
                  'share_percent': 100.0}],
                [r for r in rows if r['conductor_group'] == group])
        self.assertEqual(NODES, sum(r['nodes'] for r in rows))
        table = run_cli('--config-file', self.conf(), 'ring',
                        '--conductors', '--group', 'rack2')
        self.assertEqual(0, table.returncode, table.stderr)
        self.assertIn('| rack2 ', table.stdout)
        self.assertNotIn('rack1', table.stdout)

    def check(self, path, *args):
        """``check -f value`` as (result, message) lines, and its code."""
        proc = run_cli('--config-file', path, 'check', '-f', 'value', '-c',
                       'result', '-c', 'message', *args)
        found = [tuple(line.split(' ', 1)) for line in
                 proc.stdout.splitlines()
                 if line.split(' ', 1)[0] in ('problem', 'warning')]
        return proc.returncode, found, proc

    def test_check(self):
        code, found, proc = self.check(self.conf(), '--role', 'agent')
        self.assertEqual(_errors.EXIT_PROBLEMS, code, proc.stderr)
        self.assertEqual(
            [('problem', "Peer 'a3' in [ironic] peer_list has never "
              "heartbeated in the membership database: it is not running, "
              "runs with another membership database or role, or registers "
              "under another name (check its [ironic_partition] host).")],
            found)
        good = self.conf('good.conf', peers=['a1', 'a2'])
        proc = run_cli('--config-file', good, 'check', '--role', 'agent',
                       '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stdout)
        doc = findings(json.loads(proc.stdout))
        self.assertEqual([], doc['problems'])
        self.assertEqual(['config', 'database', 'privileges', 'duplicates',
                          'schema', 'ironic', 'group', 'case', 'peers',
                          'shards'],
                         doc['passed'])
        case = self.conf('case.conf', key='RACK1', peers=['A1', 'a2'])
        code, found, proc = self.check(case, '--role', 'agent')
        self.assertEqual(_errors.EXIT_PROBLEMS, code)
        self.assertEqual(2, len(found), found)
        self.assertIn("partition_key 'RACK1' differs in case from Ironic's "
                      "conductor group 'rack1'", found[0][1])
        self.assertIn("peer_list entry 'A1' differs in case", found[1][1])

    def upgrade_check(self, path, *args):
        proc = subprocess.run(
            [sys.executable, '-m', 'ironic_partition.cmd.upgrade_check',
             '--config-file', path] + list(args) +
            ['upgrade', 'check', '--json'],
            capture_output=True, text=True, timeout=120, env=cli_env())
        doc = json.loads(proc.stdout)
        return proc.returncode, {c['check']: c for c in doc['checks']}

    def test_upgrade_check(self):
        # oslo.upgradecheck's codes: 0 success, 1 warning, 2 failure.
        good = self.conf('good.conf', peers=['a1', 'a2'])
        code, checks = self.upgrade_check(good, '--role', 'agent')
        served = 'Conductor groups and shards served'
        self.assertEqual(
            ['Configuration', 'Claim timing',
             'Membership and claims database',
             'Ironic and the conductor group', served, 'Shards',
             'Change feed'], list(checks))
        # The agents a1 and a2 serve rack1; no agent lists rack2's nodes.
        self.assertEqual(dict({name: 0 for name in checks}, **{served: 1}),
                         {n: c['result'] for n, c in checks.items()},
                         checks)
        self.assertEqual(1, code)
        self.assertIn("%d nodes in conductor group 'rack2' are listed by "
                      "no live agent service" % len(
                          self.group_nodes('rack2')),
                      checks[served]['details'])
        self.assertNotIn("'rack1'", checks[served]['details'])
        self.assertIn('[ironic_partition] refresh_interval is',
                      checks['Claim timing']['details'])
        # A peer that never heartbeated, and a fencing margin shorter
        # than what nova may go on doing after a check (10 s on its
        # default cadence): two failures, exit 2.
        bad = self.conf('bad-upgrade.conf', peers=['a1', 'a3'],
                        fencing_margin=5)
        code, checks = self.upgrade_check(bad)
        self.assertEqual(2, code)
        self.assertEqual(2, checks['Configuration']['result'])
        self.assertIn("Peer 'a3' in [ironic] peer_list has never "
                      "heartbeated", checks['Configuration']['details'])
        self.assertEqual(2, checks['Claim timing']['result'])
        self.assertIn('fencing_margin', checks['Claim timing']['details'])
        self.assertIn('[DEFAULT] update_resources_interval (60)',
                      checks['Claim timing']['details'])
        self.assertEqual(0, checks['Ironic and the conductor group']
                         ['result'])
        # As a nova-compute, the SQLite file the agents heartbeat in is
        # what nova-compute refuses at start: a failure, not Success.
        database = checks['Membership and claims database']
        self.assertEqual(2, database['result'], database)
        self.assertIn('[ironic_partition_database] connection',
                      database['details'])
        self.assertIn('peer_list names other hosts (a3)',
                      database['details'])
        # Ironic down: its rows fail, the configuration's do not.
        endpoint = 'http://127.0.0.1:%d' % unused_port()
        code, checks = self.upgrade_check(
            self.conf('noironic-upgrade.conf', endpoint=endpoint,
                      peers=['a1', 'a2']), '--role', 'agent')
        self.assertEqual(2, code)
        self.assertEqual(0, checks['Configuration']['result'])
        self.assertEqual(2, checks['Ironic and the conductor group']
                         ['result'])
        self.assertIn('Ironic at %s is unavailable' % endpoint,
                      checks['Ironic and the conductor group']['details'])

    # Bad inputs: one line, the documented exit code, no traceback.

    def test_unknown_group(self):
        path = self.conf('unknown.conf', key='rack9')
        for command in ('status', 'ring'):
            self.assert_one_line_error(
                run_cli('--config-file', path, command),
                _errors.EXIT_CONFIG,
                "[ironic] partition_key 'rack9' is not a conductor group",
                "Known groups: 'rack1', 'rack2'")
        code, found, proc = self.check(path)
        self.assertEqual(_errors.EXIT_PROBLEMS, code)
        self.assertIn("partition_key 'rack9' is not a conductor group",
                      proc.stdout)

    def test_unreachable_ironic(self):
        endpoint = 'http://127.0.0.1:%d' % unused_port()
        path = self.conf('noironic.conf', endpoint=endpoint)
        for command in ('status', 'ring'):
            self.assert_one_line_error(
                run_cli('--config-file', path, command, '--role', 'agent'),
                _errors.EXIT_IRONIC, 'Ironic at %s is unavailable'
                % endpoint)
        code, found, proc = self.check(path, '--role', 'agent')
        self.assertEqual(_errors.EXIT_PROBLEMS, code)
        self.assertIn('problem Ironic at %s is unavailable' % endpoint,
                      proc.stdout)

    def test_unreachable_database(self):
        url = ('postgresql+psycopg2://u:secret@127.0.0.1:%d/membership'
               % unused_port())
        path = self.conf('nodb.conf', database=url)
        for command in ('status', 'ring'):
            line = self.assert_one_line_error(
                run_cli('--config-file', path, command, '--role', 'agent'),
                _errors.EXIT_DATABASE,
                'Cannot connect to the membership database',
                '[ironic_partition_database] connection')
            self.assertNotIn('secret', line)
        code, found, proc = self.check(path, '--role', 'agent')
        self.assertEqual(_errors.EXIT_PROBLEMS, code)
        self.assertIn('problem Cannot connect to the membership database',
                      proc.stdout)
        # The upgrade check: the database row fails, and the row that
        # needs the services list says it was not checked, not Success.
        code, checks = self.upgrade_check(path, '--role', 'agent')
        self.assertEqual(2, code)
        self.assertEqual(2, checks['Membership and claims database']
                         ['result'])
        served = checks['Conductor groups and shards served']
        self.assertEqual(1, served['result'], served)
        self.assertIn('Not checked whether a live agent service lists each '
                      'conductor group', served['details'])

    def test_unmigrated_database_on_both_servers(self):
        # A database created but never synced: the database row fails
        # naming dbsync, and nothing that needs the services list says
        # Success.
        for backend in ('postgresql', 'mysql'):
            db = self.useFixture(harness_db.DatabaseFixture(backend))
            path = self.conf('unmigrated-%s.conf' % backend,
                             database=db.url)
            code, checks = self.upgrade_check(path, '--role', 'agent')
            self.assertEqual(2, code, (backend, checks))
            database = checks['Membership and claims database']
            self.assertEqual(2, database['result'], (backend, database))
            self.assertIn('ironic-partition-dbsync', database['details'])
            served = checks['Conductor groups and shards served']
            self.assertEqual(1, served['result'], (backend, served))
            self.assertIn('Not checked whether a live agent service lists '
                          'each conductor group', served['details'])

    def test_console_scripts_file_errors(self):
        # A file that is missing or does not parse, a bad --role: one line
        # and the documented code, for each console script.
        missing = os.path.join(self.workdir, 'missing.conf')
        bad = write_conf(os.path.join(self.workdir, 'unparsable.conf'), {})
        with open(bad, 'a') as stream:
            stream.write('not an assignment\n')
        scripts = {
            'ironic-partition-status': (['upgrade', 'check'], 255),
            'ironic-partition-dbsync': (['upgrade'], 1),
            'ironic-partition': (['status'], _errors.EXIT_CONFIG),
        }
        for script, (command, code) in scripts.items():
            for args in (['--config-file', missing],
                         ['--config-file', bad]):
                proc = subprocess.run(
                    [harness.process.bin_path(script)] + args + command,
                    capture_output=True, text=True, timeout=120,
                    env=cli_env(), stdin=subprocess.DEVNULL)
                self.assertEqual(code, proc.returncode,
                                 (script, args, proc.stderr))
                self.assertEqual(1, len(proc.stderr.splitlines()),
                                 (script, args, proc.stderr))
                self.assertIn(args[1], proc.stderr)
                self.assertNotIn('Traceback', proc.stderr)
        proc = subprocess.run(
            [harness.process.bin_path('ironic-partition-status'), '--role',
             'foo', 'upgrade', 'check'], capture_output=True, text=True,
            timeout=120, env=cli_env(), stdin=subprocess.DEVNULL)
        self.assertEqual(255, proc.returncode, proc.stderr)
        self.assertIn('argument --role', proc.stderr)

    def test_malformed_config(self):
        path = os.path.join(self.workdir, 'malformed.conf')
        with open(path, 'w') as stream:
            stream.write('[ironic\npartition_key = rack1\n')
        for command in ('status', 'ring', 'check', 'serve'):
            self.assert_one_line_error(
                run_cli('--config-file', path, command),
                _errors.EXIT_CONFIG, 'Failed to parse %s' % path)
        bad_value = self.conf('badvalue.conf', key='rack 1')
        for command in ('status', 'ring'):
            self.assert_one_line_error(
                run_cli('--config-file', bad_value, command),
                _errors.EXIT_CONFIG, '[ironic] partition_key',
                "'rack 1' contains ' '")

    def osc(self, cloud, *args):
        """``openstack --os-cloud CLOUD baremetal partition ...``."""
        if harness_cli.osc_argv() is None:
            self.fail('the OpenStack client is not installed next to %s'
                      % sys.executable)
        endpoint = ('http://127.0.0.1:%d' % unused_port() if cloud == 'down'
                    else self.ironic.endpoint)
        clouds = harness_cli.write_clouds_yaml(
            os.path.join(self.workdir, 'clouds-%s.yaml' % cloud),
            {cloud: {'auth_type': 'none', 'auth': {'endpoint': endpoint},
                     'baremetal_api_version': '1.82'}})
        return harness_cli.run_osc(clouds, '--os-cloud', cloud, 'baremetal',
                                   'partition', *args), endpoint

    def test_openstack_client(self):
        # The same commands through the OpenStack client: osc-lib
        # authenticates from clouds.yaml; the partition settings still
        # come from the service's configuration file.
        mine = run_cli('--config-file', self.conf(), 'status', '--role',
                       'agent', '-f', 'json', '-c', 'managed')
        self.assertEqual(0, mine.returncode, mine.stderr)
        proc, _e = self.osc('ironic', 'status', '--config-file', self.conf(),
                            '--role', 'agent', '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(json.loads(mine.stdout)['managed'], doc['managed'])
        self.assertEqual(['a1', 'a2'], doc['peers']['live'])
        self.assertEqual(len(self.group_nodes('rack1')), doc['listed'])
        proc, _e = self.osc('ironic', 'status', '--config-file', self.conf(),
                            '--role', 'agent', '-f', 'value', '-c', 'host',
                            '-c', 'partition_key')
        self.assertEqual((0, ['a1', 'rack1']),
                         (proc.returncode, proc.stdout.splitlines()),
                         proc.stderr)
        # Ironic's conductor rings need no configuration file at all.
        proc, _e = self.osc('ironic', 'ring', '--conductors', '-f', 'value',
                            '-c', 'conductor_group', '-c', 'nodes')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(sorted('%s %d' % (g, len(self.group_nodes(g)))
                                for g in GROUPS),
                         sorted(proc.stdout.splitlines()))
        proc, _e = self.osc('ironic', 'check', '--config-file', self.conf(),
                            '--role', 'agent', '-f', 'json')
        self.assertEqual(_errors.EXIT_PROBLEMS, proc.returncode, proc.stderr)
        self.assertEqual(['peers'], [p['check'] for p in findings(
            json.loads(proc.stdout))['problems']])
        # simulate asks no service: no cloud needed to authenticate.
        proc, _e = self.osc('ironic', 'simulate', '--nodes', '1000',
                            '--leave', '1', '-f', 'value', '-c', 'moved')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertGreater(int(proc.stdout), 0)
        # An unreachable Ironic: one line, the documented code.
        proc, endpoint = self.osc('down', 'ring', '--conductors')
        self.assert_one_line_error(proc, _errors.EXIT_IRONIC,
                                   'Ironic at %s' % endpoint,
                                   'is unavailable')
        # serve runs a service: the OpenStack client does not offer it.
        proc, _e = self.osc('ironic', 'serve')
        self.assertEqual(_errors.EXIT_USAGE, proc.returncode)
        self.assertIn("'baremetal partition serve' is not an openstack "
                      "command", proc.stdout)

    def test_host_missing_from_peer_list(self):
        path = self.conf('nohost.conf', peers=['a2', 'a3'])
        for command in ('status', 'ring'):
            self.assert_one_line_error(
                run_cli('--config-file', path, command, '--role', 'agent'),
                _errors.EXIT_CONFIG,
                "[ironic] peer_list ['a2', 'a3'] must contain this "
                "service's own host 'a1'")
        code, found, proc = self.check(path, '--role', 'agent')
        self.assertEqual(_errors.EXIT_PROBLEMS, code)
        self.assertEqual('problem', found[0][0])
        self.assertIn("must contain this service's own host 'a1'",
                      found[0][1])

    def _guide_override(self, name, database, **nova_default):
        """A site file beside the install guide's nova.conf.

        The guide's file is read verbatim; this second file only points it
        at this class's Ironic and a real claims database, as an
        operator's site file would.
        """
        sections = {'ironic': {'auth_type': 'none',
                               'endpoint_override': self.ironic.endpoint},
                    'ironic_partition_database': {'connection': database},
                    'ironic_partition': {'state_path': self.state}}
        if nova_default:
            sections['DEFAULT'] = nova_default
        return write_conf(os.path.join(self.workdir, name), sections)

    def test_install_guide_files_as_printed(self):
        # The install guide's nova-compute.conf names the service with
        # [DEFAULT] host = compute-1; every tool must describe compute-1,
        # never the machine it runs on.
        self.assertTrue(os.path.exists(INSTALL_GUIDE_CONF), INSTALL_GUIDE_CONF)
        # NOTE(ironic-partition): quoted, as the messages name hosts; the
        # machine's name may be as short as "vm".
        machine = "'%s'" % socket.gethostname().lower()
        # The schema with the owner's URL, then compute-1's status with
        # the service user's (the guide's two users), on either server.
        for backend in ('mysql', DB_BACKEND):
            db = self.useFixture(harness_db.DatabaseFixture(backend))
            owner = self._guide_override('owner-%s.conf' % backend, db.url)
            files = ('--config-file', INSTALL_GUIDE_CONF, '--config-file',
                     owner)
            proc = subprocess.run(
                [harness.process.bin_path('ironic-partition-dbsync')] +
                list(files) + ['upgrade'], capture_output=True, text=True,
                timeout=120, env=cli_env(), stdin=subprocess.DEVNULL)
            self.assertEqual(0, proc.returncode, proc.stderr)
            # A compute given the owner's credentials: the upgrade check
            # warns, naming the rights, never the password.
            code, checks = self.upgrade_check(INSTALL_GUIDE_CONF,
                                              '--config-file', owner,
                                              '--new-deployment')
            database = checks['Membership and claims database']
            self.assertEqual(1, database['result'], database)
            self.assertIn('has more rights than a running service needs',
                          database['details'])
            self.assertIn('ironic-partition-dbsync grants --user USER',
                          database['details'])
            user = self.useFixture(harness_db.ServiceUserFixture(db))
            self.assertNotIn(user.PASSWORD, database['details'])
            site = self._guide_override('guide-%s.conf' % backend,
                                        user.url)
            files = ('--config-file', INSTALL_GUIDE_CONF, '--config-file',
                     site)
            proc = run_cli(*(files + ('status', '-f', 'value', '-c',
                                      'host')))
            self.assertEqual((0, 'compute-1\n'),
                             (proc.returncode, proc.stdout), proc.stderr)
        for command in (('status', '-f', 'json'), ('ring', '-f', 'json')):
            proc = run_cli(*(files + command))
            self.assertNotIn(machine, proc.stderr)
            self.assertEqual(0, proc.returncode, proc.stderr)
        proc = run_cli(*(files + ('status', '-f', 'json')))
        doc = json.loads(proc.stdout)
        self.assertEqual('compute-1', doc['host'])
        self.assertEqual('rack1', doc['partition_key'])
        proc = run_cli(*(files + ('check', '-f', 'value', '-c', 'result',
                                  '-c', 'message')))
        self.assertNotIn("must contain this service's own host", proc.stdout)
        self.assertNotIn(machine, proc.stdout)
        code, checks = self.upgrade_check(INSTALL_GUIDE_CONF,
                                          '--config-file', site)
        details = checks['Configuration']['details']
        self.assertNotIn("must contain this service's own host", details)
        self.assertNotIn(machine, details)
        # In the guide's order (schema first, computes after) no peer has
        # heartbeated yet: a failure, unless checked as a new deployment,
        # which then passes every row.
        self.assertEqual(2, code)
        self.assertIn("Peer 'compute-2' in [ironic] peer_list has never "
                      "heartbeated", details)
        code, checks = self.upgrade_check(INSTALL_GUIDE_CONF,
                                          '--config-file', site,
                                          '--new-deployment')
        self.assertEqual(
            (0, {name: 0 for name in checks}),
            (code, {name: c['result'] for name, c in checks.items()}),
            checks)
        # A kolla-style name, <group>-<shard>-ironic, in [DEFAULT] host.
        kolla = self._guide_override('kolla.conf', db.url,
                                     host='rack1-sharda-ironic')
        peers = 'rack1-sharda-ironic,rack1-shardb-ironic'
        path = write_conf(os.path.join(self.workdir, 'kolla-peers.conf'),
                          {'ironic': {'peer_list': peers}})
        proc = run_cli('--config-file', INSTALL_GUIDE_CONF, '--config-file',
                       kolla, '--config-file', path, 'status', '-f', 'value',
                       '-c', 'host')
        self.assertEqual((0, 'rack1-sharda-ironic\n'),
                         (proc.returncode, proc.stdout), proc.stderr)
        # An agent keeps its own identity: [DEFAULT] host is nova's.
        proc = run_cli('--config-file', INSTALL_GUIDE_CONF, '--config-file',
                       kolla, '--config-file', path, 'status', '--role',
                       'agent', '-f', 'value', '-c', 'host')
        self.assertEqual(_errors.EXIT_CONFIG, proc.returncode, proc.stdout)
        self.assertIn("must contain this service's own host %s" % machine,
                      proc.stderr)


class SimulateTestCase(base.BaseTestCase):
    """``simulate`` needs no service."""

    def test_simulate_offline(self):
        # NOTE(ironic-partition): what it computes, not how fast: a time
        # limit here measured the other jobs on the machine (5.3 CPU
        # seconds against a 5 s limit beside the nova lanes). The rings'
        # speed is benchmarks/ring_bench.py's, as ratios to tooz.
        proc = run_cli('simulate', '--nodes', '100000', '--members', '100',
                       '--leave', 'compute-42', '-f', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        [run] = json.loads(proc.stdout)
        self.assertGreaterEqual(run['seconds'], 0)
        nodes = simulate.node_uuids(100000)
        members = ['compute-%d' % i for i in range(1, 101)]
        moved = hash_ring.diff(
            nodes, hash_ring.HashRing(members),
            hash_ring.HashRing([m for m in members if m != 'compute-42']))
        self.assertEqual(len(moved), run['moved'])
