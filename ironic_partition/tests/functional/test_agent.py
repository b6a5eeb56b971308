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

"""``ironic-partition serve`` as real processes, with real signals.

One Ironic (``rack1`` and ``rack2`` on PostgreSQL) serves the class. The
agents run as their own process groups (the harness's ``Service``) on an
SQLite membership database; they are observed through their report files
and logs only.
"""

import os
import signal
import subprocess
import tempfile
import time

from oslotest import base

from ironic_partition.cmd import _errors
from ironic_partition.db import api as db_api
from ironic_partition.ring import hash_ring
from ironic_partition import testing as harness
from ironic_partition.testing.services import db as harness_db
from ironic_partition.tests.functional import test_cli

NODES = 24
TIMEOUT = 60


class AgentTestCase(test_cli.OneLineErrors, test_cli.SharedIronic,
                    base.BaseTestCase):

    @classmethod
    def _start(cls):
        cls.nodes = cls.start_shared_ironic('ironic-partition-agent-',
                                            test_cli.GROUPS, NODES)

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, test_cli.DB_BACKEND)
        if type(self).ironic is None:
            type(self)._start()
        self.dir = tempfile.mkdtemp(prefix='test-', dir=self.workdir)
        self.state = os.path.join(self.dir, 'state')

    def group(self, name):
        return {n['uuid'] for n in self.nodes
                if n['conductor_group'] == name}

    def conf(self, host, key, peers, **extra):
        return test_cli.agent_conf(
            os.path.join(self.dir, host + '.conf'),
            extra.pop('endpoint', self.ironic.endpoint), host, key, peers,
            self.state, **extra)

    def report_path(self, host):
        return os.path.join(self.dir, host + '.json')

    def report(self, host):
        return test_cli.read_json(self.report_path(host)) or {}

    def start_agent(self, host, key, peers, **extra):
        """Start ``serve`` for a host; stopped at cleanup whatever happens.

        :returns: the harness ``Service``.
        """
        path = self.conf(host, key, peers, **extra)
        service = harness.Service(
            'agent-' + host,
            test_cli.cli_argv() + ['--config-file', path, 'serve',
                                   '--report-file', self.report_path(host)],
            os.path.join(self.dir, 'agent-%s.log' % host),
            env=test_cli.cli_env())
        self.addCleanup(self._stop, service)
        service.start()
        return service

    def _stop(self, service):
        service.stop(timeout=30)
        self.assertEqual([], service.group_pids())

    def log(self, service):
        with open(service.log_path) as stream:
            return stream.read()

    def wait_report(self, host, predicate, what, service=None):
        def check():
            if service is not None and not service.running():
                raise harness.HarnessError('%s exited: %s' % (
                    service.name, self.log(service)[-3000:]))
        return harness.wait_for(lambda: predicate(self.report(host)),
                                TIMEOUT, what, interval=0.1, check=check)

    def test_sighup_switches_partition_and_rejects_invalid_values(self):
        agent = self.start_agent('a1', 'rack1', ['a1'])
        self.wait_report('a1', lambda r: r.get('ready') and set(
            r['managed']) == self.group('rack1'), 'a1 to manage rack1',
            agent)
        first = self.report('a1')
        self.assertEqual(0, first['settings_generation'])

        # A valid change: rack1 -> rack2, applied on SIGHUP.
        self.conf('a1', 'rack2', ['a1'])
        agent.signal(signal.SIGHUP)
        report = self.wait_report(
            'a1', lambda r: r.get('partition_key') == 'rack2' and r.get(
                'ready') and set(r['managed']) == self.group('rack2') and r,
            'a1 to switch to rack2', agent)
        self.assertEqual(1, report['settings_generation'])
        self.assertEqual(first['pid'], report['pid'])
        self.assertEqual(first['started_at'], report['started_at'])
        self.assertIn("Partition settings changed: partition_key 'rack1' -> "
                      "'rack2'", self.log(agent))

        # An invalid value: one clear line, the old partition stays.
        self.conf('a1', 'rack 2!', ['a1'])
        counter = report['refresh_counter']
        agent.signal(signal.SIGHUP)
        harness.wait_for(
            lambda: 'Rejected the new partition settings, keeping '
            "partition_key='rack2'" in self.log(agent), TIMEOUT,
            'the rejection in the log')
        later = self.wait_report(
            'a1', lambda r: r.get('refresh_counter', 0) > counter + 1 and r,
            'more refreshes', agent)
        self.assertEqual('rack2', later['partition_key'])
        self.assertTrue(later['ready'])
        self.assertEqual(self.group('rack2'), set(later['managed']))
        self.assertEqual(1, later['settings_generation'])
        rejected = [line for line in self.log(agent).splitlines()
                    if 'Rejected the new partition settings' in line]
        self.assertEqual(1, len(rejected))
        self.assertIn("'rack 2!'", rejected[0])

        # A malformed file on SIGHUP: the agent keeps running.
        with open(os.path.join(self.dir, 'a1.conf'), 'w') as stream:
            stream.write('[ironic\n')
        agent.signal(signal.SIGHUP)
        harness.wait_for(
            lambda: 'SIGHUP: rejected the configuration files' in self.log(
                agent), TIMEOUT, 'the parse error in the log')
        counter = self.report('a1')['refresh_counter']
        self.wait_report('a1', lambda r: r.get('refresh_counter', 0) >
                         counter and r.get('partition_key') == 'rack2',
                         'a refresh after the bad SIGHUP', agent)

        # SIGTERM: a clean exit, the report and the database say so.
        self.assertEqual(0, agent.stop(timeout=30))
        final = self.report('a1')
        self.assertEqual('stopped', final['state'])
        self.assertEqual([], final['managed'])
        self.assertNotIn('Traceback', self.log(agent))
        db = db_api.Connection('sqlite:///' + os.path.join(
            self.state, 'ironic_partition.sqlite'))
        self.addCleanup(db.dispose)
        rows = db.services.services('agent', 60).services
        self.assertEqual([('a1', False)], [(r.host, r.alive) for r in rows])

    def _split_ok(self, hosts, group):
        ring = hash_ring.HashRing(hosts)
        want = {h: {u for u in self.group(group) if ring.get_node(u) == h}
                for h in hosts}

        def check(_report):
            return all(set(self.report(h).get('managed', ())) == want[h]
                       for h in hosts)
        return check

    def test_failover_on_kill_and_handover_on_sigterm(self):
        peers = ['a1', 'a2', 'a3']
        agents = {h: self.start_agent(h, 'rack1', peers) for h in peers}
        self.wait_report('a1', self._split_ok(peers, 'rack1'),
                         'the initial split')

        # SIGKILL: a2's share is covered within the documented bound.
        start = time.monotonic()
        agents['a2'].kill()
        self.wait_report('a1', self._split_ok(['a1', 'a3'], 'rack1'),
                         'a1 and a3 to take over')
        took = time.monotonic() - start
        options = test_cli.AGENT_OPTIONS
        lease = max(2 * options['refresh_interval'],
                    options['service_down_time'])
        bound = (max(options['service_down_time'], lease)
                 + options['refresh_interval'])
        self.assertLessEqual(took, bound + 3)

        # SIGTERM: a3 hands over at once (marks itself down, releases its
        # claims), well before service_down_time. A second SIGTERM while
        # it stops does not spoil its clean exit.
        start = time.monotonic()
        agents['a3'].signal(signal.SIGTERM)
        self.assertEqual(0, agents['a3'].stop(timeout=30))
        self.wait_report('a1', self._split_ok(['a1'], 'rack1'),
                         'a1 to take everything')
        self.assertLess(time.monotonic() - start,
                        options['service_down_time'])
        self.assertIn('Left the membership database as a3',
                      self.log(agents['a3']))

    # Bad inputs of serve: the last stderr line says it, with the exit
    # code; no traceback.

    def run_serve(self, path, *args):
        return subprocess.run(
            test_cli.cli_argv() + ['--config-file', path, 'serve'] +
            list(args), capture_output=True, text=True, timeout=120,
            env=test_cli.cli_env(), stdin=subprocess.DEVNULL)

    def assert_fails(self, proc, code, *needles):
        self.assertEqual(code, proc.returncode, proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        last = proc.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith('ironic-partition serve: error: '),
                        last)
        for needle in needles:
            self.assertIn(needle, last)

    def test_serve_bad_inputs(self):
        self.assert_fails(
            self.run_serve(self.conf('a1', 'rack9', ['a1'])),
            _errors.EXIT_CONFIG, "partition_key 'rack9' is not a conductor "
            "group")
        self.assert_fails(
            self.run_serve(self.conf('a1', 'rack1', ['a2'])),
            _errors.EXIT_CONFIG, "must contain this service's own host")
        url = ('postgresql+psycopg2://u:p@127.0.0.1:%d/x'
               % test_cli.unused_port())
        self.assert_fails(
            self.run_serve(self.conf('a1', 'rack1', ['a1'], database=url)),
            _errors.EXIT_DATABASE, 'Cannot connect to the membership '
            'database')
        self.assert_fails(
            self.run_serve(self.conf('a1', 'rack1', ['a1']),
                           '--report-file', '/nonexistent/dir/r.json'),
            _errors.EXIT_CONFIG, '--report-file', '/nonexistent/dir/r.json')

    def test_serve_without_ironic_reports_not_ready(self):
        endpoint = 'http://127.0.0.1:%d' % test_cli.unused_port()
        agent = self.start_agent('a1', 'rack1', ['a1'], endpoint=endpoint)
        report = self.wait_report(
            'a1', lambda r: r.get('refresh_counter', 0) >= 2 and r,
            'two refreshes', agent)
        self.assertEqual('running', report['state'])
        self.assertFalse(report['ready'])
        self.assertIn('Ironic at %s is unavailable' % endpoint,
                      report['reason'])
        self.assertEqual([], report['managed'])
        self.assertEqual(0, report['refresh_ok_counter'])
        self.assertEqual(0, agent.stop(timeout=30))
