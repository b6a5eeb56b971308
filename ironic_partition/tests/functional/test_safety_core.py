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

"""The four everyday situations that broke the invariants, on real parts.

Each test runs real ``ironic-partition serve`` agents against the real
Ironic and a real PostgreSQL or MariaDB database, with real signals:

* a node that carries an instance moves to another conductor group: its
  owner keeps it (seed 000), nobody else takes it;
* two processes start with the same host name: the second refuses, naming
  the first; an explicit takeover fences the first with no window in which
  both report a node, instance nodes included, whether the first was
  paused or cut off from the database (and never learns of the takeover);
* Ironic answers slower than the lease: no claim lapses, nothing flaps;
* the claims database is away for longer than the lease: the agent says
  "not ready", it never reports a shorter list as if it were ready;
* a partition key that nothing serves is "not ready" with a message.
"""

import json
import os
import subprocess
import time
import uuid

import fixtures
from oslotest import base

from ironic_partition.db import api as db_api
from ironic_partition import testing as harness
from ironic_partition.testing.commands import agents as agents_mod
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import proxy as tcp_proxy
from ironic_partition.tests.functional import test_cli
from ironic_partition.tests.functional import test_faults

TIMEOUT = 60
#: The fast timings, with a holder counted alive for 30 s after its last
#: heartbeat: longer than a process start on a loaded machine.
TAKEOVER_TIMINGS = agents_mod.FAST._replace(service_down_time=30)


def _ready_share(agent):
    report = agent.report()
    return report.get('ready'), frozenset(report.get('managed') or ())


class SafetyCoreTestCase(test_faults.FaultTestBase):
    """One conductor group, the fault suite's agents and observer."""

    def _holder(self, host='a1'):
        with self.admin.engine.connect() as conn:
            row = conn.execute(db_api.sa.text(
                "SELECT incarnation, origin, started_at FROM "
                "ironic_partition_services WHERE host = :h AND role = "
                "'agent'"), {'h': host}).first()
        return tuple(row) if row is not None else None

    @test_faults.backends('postgresql')
    def test_duplicate_host_is_refused_then_taken_over(self):
        # NOTE(ironic-partition): a1 is paused before the takeover starts,
        # and a takeover of a holder whose heartbeat is older than
        # service_down_time is refused ("start without a takeover"): the
        # paused a1 must still count as alive while the new process
        # starts (several seconds on two loaded cores), so
        # service_down_time is longer here; the lease stays 4 s.
        agents = self.start_agents(['a1', 'a2'], timings=TAKEOVER_TIMINGS)
        self.wait_split(['a1', 'a2'], 'a1 and a2 to share the group')
        holder = self._holder()
        self.assertIsNotNone(holder[0])
        pid = agents['a1'].service.pid
        self.assertIn('pid %d' % pid, holder[1])

        # A copy-pasted host name: the newcomer refuses, naming the holder.
        argv = test_cli.cli_argv() + [
            '--config-file', agents['a1'].conf_path, 'serve',
            '--report-file', os.path.join(self.dir, 'twin.json')]
        twin = subprocess.run(argv, env=test_cli.cli_env(),
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(8, twin.returncode, twin.stderr)
        lines = [ln for ln in twin.stderr.splitlines()
                 if ln.startswith('ironic-partition serve: error:')]
        self.assertEqual(1, len(lines), twin.stderr)
        self.assertNotIn('Traceback', twin.stderr)
        self.assertIn("Another process already runs as host 'a1'", lines[0])
        self.assertIn('pid %d' % pid, lines[0])
        self.assertIn('--takeover', lines[0])
        # A rejected start changes no row.
        self.assertEqual(holder, self._holder())

        # The first a1 hangs (SIGSTOP); an explicit takeover replaces it,
        # with a clock 7 minutes ahead for good measure (libfaketime).
        before = frozenset(self.reported('a1'))
        self.assertTrue(before)
        instance_nodes = frozenset(
            agents['a1'].report().get('by_instance') or ())
        self.assertEqual(2, len(instance_nodes))
        agents.pause('a1')
        new = self._take_over()
        # The old process resumes: it must never report alongside the new,
        # instance nodes included.
        agents.resume('a1')
        self._watch_overlap(agents['a1'], new)
        old = agents['a1'].report()
        self.assertFalse(old['ready'], old)
        self.assertEqual([], old['managed'])
        self.assertIn('lost host a1', old['reason'])
        self.assertIn('lost host a1', agents['a1'].log())
        # The new a1 owns a1's instance nodes and its ring share again.
        self.assertEqual(before, frozenset(new.report()['managed'])
                         & frozenset(self.free))
        self.assertEqual(instance_nodes, frozenset(
            new.report()['by_instance']))

    def test_takeover_of_a_process_cut_off_from_the_database(self):
        # The old a1 runs on but cannot reach the database: it never
        # learns it was taken over. Once its lease minus the margin ran
        # out it reports nothing, its instance nodes included, and the new
        # a1 reports them only once it holds their claims: at no instant
        # do both report a node. (A takeover needs a holder still counted
        # alive: see test_duplicate_host_is_refused_then_taken_over.)
        agents = self.start_agents(['a1', 'a2'], proxies=True,
                                   timings=TAKEOVER_TIMINGS)
        self.wait_split(['a1', 'a2'], 'a1 and a2 to share the group')
        instance_nodes = frozenset(
            agents['a1'].report().get('by_instance') or ())
        self.assertEqual(2, len(instance_nodes))
        agents.cut('a1')
        new = self._take_over()
        self._watch_overlap(agents['a1'], new)
        self.assertTrue(agents['a1'].service.running())
        old = self.wait_fenced_report(agents['a1'].report, 'the old a1')
        self.assertFalse(old['ready'], old)
        self.assertTrue(old['claims']['fenced'], old)
        self.assertEqual([], old['managed'])
        self.assertEqual(instance_nodes, frozenset(
            new.report()['by_instance']))

    def _take_over(self):
        """Start a second a1 with ``--takeover``; wait for its row."""
        holder = self._holder()
        newdir = os.path.join(self.dir, 'new')
        os.mkdir(newdir)
        takeover = agents_mod.AgentSet(
            newdir, self.ironic.endpoint, self.db_url,
            test_faults.GROUP, timings=self.timings,
            instance_hosts=self.instance_hosts)
        self.useFixture(takeover)
        new = takeover.add('a1', ['a1', 'a2'], clock_offset=7 * 60,
                           args=['--takeover'])
        self.addDetail('log-a1-new', test_faults._log_detail(new))
        harness.wait_for(lambda: self._holder()[0] not in (None, holder[0]),
                         TIMEOUT, 'the takeover to register',
                         check=lambda: takeover.check_alive(['a1']))
        return new

    def _watch_overlap(self, old_agent, new):
        """Poll both a1 reports until the new one serves, then 3 leases.

        A report counts until it is replaced or, for a process with
        claims, until its lease minus the margin runs out (its
        ``valid_for``): a paused or cut-off process's last report is
        acted on until then. No node, instance nodes included, may be in
        both processes' reports at any instant.
        """
        overlap = []

        def old_valid(now):
            report = old_agent.report()
            managed = frozenset(report.get('managed') or ())
            valid_for = (report.get('claims') or {}).get('valid_for') or 0
            if now > report.get('monotonic', 0) + valid_for:
                return frozenset()
            return managed

        def settled():
            now = time.monotonic()
            new_ready, mine = _ready_share(new)
            both = old_valid(now) & mine
            if both:
                overlap.append(('both', round(now, 3), sorted(both)))
            return bool(mine) and new_ready and not old_agent.report().get(
                'managed')

        harness.wait_for(settled, TIMEOUT, 'the new a1 to take a1\'s nodes',
                         interval=0.05)
        deadline = time.monotonic() + 3 * self.timings.lease_time
        while time.monotonic() < deadline:
            settled()
            time.sleep(0.05)
        self.assertEqual([], overlap)

    def test_takeover_without_a_live_process_is_refused(self):
        conf = os.path.join(self.dir, 'nobody.conf')
        test_cli.agent_conf(conf, self.ironic.endpoint, 'a9',
                            test_faults.GROUP, ['a9'], self.dir,
                            database=self.db_url)
        out = subprocess.run(
            test_cli.cli_argv() + ['--config-file', conf, 'serve',
                                   '--takeover'],
            env=test_cli.cli_env(), capture_output=True, text=True,
            timeout=120)
        self.assertEqual(8, out.returncode, out.stderr)
        self.assertIn("Cannot take over host 'a9'", out.stderr)
        self.assertIsNone(self._holder('a9'))

    @test_faults.backends('postgresql')
    def test_listing_slower_than_the_lease_keeps_every_claim(self):
        agents = self.start_agents(['a1', 'a2'])
        self.wait_split(['a1', 'a2'], 'a1 and a2 to share the group')
        # a1 is restarted behind an Ironic that takes longer than the
        # lease to answer every listing.
        slow = tcp_proxy.TCPProxy('127.0.0.1', int(
            self.ironic.endpoint.rsplit(':', 1)[1].split('/')[0]))
        self.useFixture(slow)
        agents.stop('a1', timeout=30)
        agents['a1'].endpoint = 'http://127.0.0.1:%d' % slow.port
        agents.write_conf('a1')
        agents.start('a1')
        self.wait_split(['a1', 'a2'], 'a1 back')
        self.observer.steady()
        epochs = {c.node_id: (c.owner, c.epoch)
                  for c in self.admin.claims.read_claims('agent').claims}
        counter = agents['a1'].report()['refresh_counter']
        slow.delay = self.timings.lease_time + 1.0
        self.fault('Ironic slower than the lease for a1')
        # NOTE(ironic-partition): a ready refresh that took longer than
        # the lease, after three refreshes through the slow Ironic. One of
        # them may fail on a kept-alive connection the API closed while
        # the proxy held the request back (a not-ready refresh: it moves
        # no claim, as the epochs below show); the next one is ready.

        def slow_and_ready():
            report = agents['a1'].report()
            return (report.get('refresh_counter', 0) >= counter + 3 and
                    report.get('ready') and
                    (report.get('refresh_seconds') or 0) >
                    self.timings.lease_time)
        harness.wait_for(
            slow_and_ready, 8 * (self.timings.lease_time + 2) + TIMEOUT,
            'a ready refresh of a1 slower than the lease, after three '
            'through the slow Ironic',
            check=lambda: agents.check_alive(['a1', 'a2']))
        slow.delay = 0.0
        result = self.analyse()
        self.assertEqual([], result.problems())
        self.assertEqual(0, len(result.overlaps))
        self.assertNotIn('Fenced:', agents['a1'].log())
        after = {c.node_id: (c.owner, c.epoch)
                 for c in self.admin.claims.read_claims('agent').claims}
        self.assertEqual(epochs, after)

    def test_database_outage_is_not_ready_never_shorter(self):
        agents = self.start_agents(['a1', 'a2'], proxies=True)
        self.wait_split(['a1', 'a2'], 'a1 and a2 to share the group')
        full = frozenset(agents['a1'].report()['managed'])
        self.fault('a1 cut off from the database', full)
        agents.cut('a1')
        shorter = []

        def fenced():
            ready, share = _ready_share(agents['a1'])
            if ready and share != full:
                shorter.append(sorted(full - share))
            return ready is False and agents['a1'].report()[
                'claims']['fenced']

        harness.wait_for(fenced, TIMEOUT, 'a1 to report not ready, fenced',
                         interval=0.05, check=agents.check_alive)
        report = agents['a1'].report()
        # Either a failed refresh's reason or the lease timer's, whichever
        # wrote the report last: both are the database outage.
        self.assertRegex(report['reason'] or '',
                         r'^(The partition is not ready: cannot prove which '
                         r'nodes this service holds: the claim round failed'
                         r'|fenced: the claims could not be renewed before '
                         r'their lease ran out)')
        self.assertEqual([], shorter)
        agents.restore('a1')
        self.wait_split(['a1', 'a2'], 'a1 to rejoin')
        self.assertEqual([], self.analyse().problems())

    def test_unserved_partition_key_is_not_ready(self):
        # At start the agent refuses an unknown group (exit 3, see
        # test_cli); after a SIGHUP it must not report an empty partition.
        agents = self.start_agents(['a1'])
        self.wait_split(['a1'], 'a1 to manage the group')
        agents.key = 'rack9'
        agents.write_conf('a1')
        agents.sighup('a1')
        harness.wait_for(lambda: agents['a1'].report().get('ready') is False
                         and agents['a1'].report()['partition_key'] ==
                         'rack9', TIMEOUT, 'a1 to report not ready',
                         check=agents.check_alive)
        report = agents['a1'].report()
        self.assertIn("partition_key 'rack9' names a conductor group",
                      report['reason'])
        self.assertIn("'%s'" % test_faults.GROUP, report['reason'])


class GroupChangeTestCase(test_cli.SharedIronic, base.BaseTestCase):
    """Seed 000: a node keeps its instance's owner across group changes."""

    scenarios = test_faults.FaultTestBase.scenarios

    @classmethod
    def _start(cls):
        enrolled = cls.start_shared_ironic(
            'ironic-partition-groups-', ['rack1', 'rack2'], 24,
            provision_state='available', name_prefix='grp')
        cls.conn = harness.connect(cls.ironic.endpoint)
        rack1 = [n for n in enrolled if n['conductor_group'] == 'rack1']
        cls.moved = rack1[0]
        cls.instance = str(uuid.uuid4())
        harness.set_instance_uuid(cls.conn, cls.moved, cls.instance)
        cls.instance_hosts = agents_mod.write_instance_hosts(
            os.path.join(cls.workdir, 'instances.json'),
            {cls.instance: 'a1'})

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, self.backend)
        if type(self).ironic is None:
            type(self)._start()
        self.dir = self.useFixture(fixtures.TempDir(
            rootdir=self.workdir)).path
        database = self.useFixture(harness.DatabaseFixture(self.backend))
        self.admin = db_api.Connection(database.url)
        self.addCleanup(self.admin.dispose)
        self.admin.upgrade()
        self.db_url = database.url

    def _set_group(self, group):
        self.conn.baremetal.update_node(self.moved['uuid'],
                                        conductor_group=group)

    def test_instance_node_stays_with_its_owner_across_groups(self):
        sets = {}
        for key, hosts in (('rack1', ['a1', 'a2']), ('rack2', ['b1'])):
            agents = agents_mod.AgentSet(
                self.dir, self.ironic.endpoint, self.db_url, key,
                instance_hosts=self.instance_hosts)
            self.useFixture(agents)
            for host in hosts:
                agents.add(host, hosts)
            sets[key] = agents
        self.addCleanup(self._set_group, 'rack1')
        a1, b1 = sets['rack1']['a1'], sets['rack2']['b1']
        node = self.moved['uuid']
        harness.wait_for(lambda: node in _ready_share(a1)[1]
                         and _ready_share(b1)[0], TIMEOUT,
                         'a1 to report its instance node')
        self._set_group('rack2')
        start = a1.report()['refresh_counter']
        wrong = []

        def three_refreshes():
            ready, share = _ready_share(a1)
            if ready and node not in share:
                wrong.append('a1 dropped it')
            if node in _ready_share(b1)[1]:
                wrong.append('b1 reported it')
            return a1.report()['refresh_counter'] >= start + 3 and \
                b1.report()['refresh_counter'] >= start + 3

        harness.wait_for(three_refreshes, TIMEOUT,
                         'three refreshes after the group change',
                         interval=0.05)
        self.assertEqual([], wrong)
        # status on the rack2 side: the node has a live owner elsewhere,
        # so it is not "stranded".
        out = subprocess.run(
            test_cli.cli_argv() + [
                '--config-file', b1.conf_path, 'status', '--role', 'agent',
                '--instance-hosts', self.instance_hosts, '-f', 'json'],
            env=test_cli.cli_env(), capture_output=True, text=True,
            timeout=120)
        self.assertEqual(0, out.returncode, out.stderr)
        doc = json.loads(out.stdout)
        self.assertNotIn(node, [s['uuid'] if isinstance(s, dict) else s
                                for s in doc.get('stranded') or ()])


load_tests = test_faults.load_tests
