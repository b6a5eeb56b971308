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

"""Fault injection with real agents: I1-I4 hold under every fault.

One real Ironic (conductor group ``rack1``, on PostgreSQL) serves the
class; three of its 36 nodes have instances (two owned by ``a1``, one by
``a2``). Each test runs three or four ``ironic-partition serve`` agents
as real processes (their own process groups) whose membership and claims
database is a fresh one on MariaDB or on PostgreSQL (testscenarios), with
refresh and heartbeat every second, ``service_down_time`` 4 s and a 4 s
lease (fencing margin 0.4 s, I2 bound 6 s). An
:class:`~ironic_partition.testing.lanes.observer.Observer` reads every
report file every 10 ms and the claims table every 50 ms, and checks
I1-I4 over the whole test (see its module documentation for what counts
as reported at an instant). Each test injects several faults:

* ``test_process_faults``, with ``a1``'s wall clock 7 minutes ahead and
  ``a2``'s 5 minutes behind (libfaketime) throughout: SIGKILL of ``a2``
  then its restart; SIGSTOP of ``a3`` for longer than the lease then
  SIGCONT; a rolling restart (SIGTERM, start) of every agent; a new peer
  ``a4`` that only knows itself at first, then added to every
  ``peer_list`` with SIGHUP.
* ``test_database_and_ironic_faults``: every agent reaches the database
  through a TCP proxy of its own (``db/proxy.py``). The database server
  going away is every proxy cut at once: the shared system servers cannot
  be restarted under other tests, and for the agents a server restart
  is exactly this (every connection reset, new ones refused, then
  accepted again with the data intact). Once for less than the lease
  (nothing may change: no fence, no gap, same epochs), once for longer
  (every agent fences itself, then they recover); then ``a2`` alone is
  cut off while the others still reach the database; then the Ironic
  API is stopped for longer than the lease and started again (agents
  report not ready but keep their claims: nothing moves).
* ``test_graceful_stop_reports_nothing_before_releasing``: one agent's
  ``stopped`` report is written before its claims are released (the
  database's ``updated_at`` of the released claims comes later).

Set ``IRONIC_PARTITION_TEST_FAULT_FIGURES`` to a file name to have the
measured figures appended to it as JSON lines.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from oslotest import base
import testscenarios
from testtools import content

import ironic_partition
from ironic_partition.cmd import _errors
from ironic_partition.db import api as db_api
from ironic_partition.db import migration
from ironic_partition import testing as harness
from ironic_partition.testing.commands import agents as agents_mod
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.install import previous as previous_mod
from ironic_partition.testing.lanes import observer as observer_mod
from ironic_partition.testing.lanes import split as harness_split
from ironic_partition.testing.services import db as harness_db
from ironic_partition.tests.functional import test_cli

GROUP = 'rack1'
NODES = 36
#: Which agent owns the instance of how many nodes.
INSTANCES = (('a1', 2), ('a2', 1))
TIMEOUT = 60
TIMINGS = agents_mod.FAST
#: The fault figures go to this file (JSON lines) when set.
FIGURES_ENV = 'IRONIC_PARTITION_TEST_FAULT_FIGURES'
#: Refreshes take time on a loaded machine; the time to the exact split
#: is measured from the report files as the test polls them.
SPLIT_SLACK = 3.0


def backends(*names):
    """Run a scenario test on these backends only.

    For a scenario whose backend-specific part (the claim and membership
    statements) the ``db`` suites run on both servers, and whose own
    subject (processes, timings) does not depend on the server: it runs
    on one, to keep the README's command within its time.

    :param names: ``'postgresql'``, ``'mysql'``.
    """
    def decorate(method):
        method.backends = frozenset(names)
        return method
    return decorate


def initial_schema(revision):
    """Start a test's database at this schema revision (None: empty).

    :param revision: an alembic revision, or None for no schema.
    """
    def decorate(method):
        method.initial_schema = revision
        return method
    return decorate


def load_tests(loader, standard_tests, pattern):
    """One test per scenario at load time, so a run can pick a backend.

    A test decorated with :func:`backends` gets only those scenarios.
    """
    suite = loader.suiteClass()
    for test in testscenarios.generate_scenarios(standard_tests):
        allowed = getattr(getattr(test, test._testMethodName, None),
                          'backends', None)
        if allowed is None or getattr(test, 'backend', None) in allowed:
            suite.addTest(test)
    return suite


class FaultTestBase(test_cli.SharedIronic, base.BaseTestCase):
    """One Ironic per class; agents, a database and an observer per test."""

    scenarios = [
        ('postgresql', {'backend': 'postgresql'}),
        ('mysql', {'backend': 'mysql'}),
    ]

    @classmethod
    def _start_ironic(cls):
        enrolled = cls.start_shared_ironic(
            'ironic-partition-faults-', [GROUP], NODES,
            provision_state='available', name_prefix='fault')
        conn = harness.connect(cls.ironic.endpoint)
        instances = {}
        cls.instance_owner = {}
        spare = list(enrolled)
        for owner, count in INSTANCES:
            for _i in range(count):
                node = spare.pop()
                instance = str(uuid.uuid4())
                harness.set_instance_uuid(conn, node, instance)
                instances[node['uuid']] = instance
                cls.instance_owner[instance] = owner
        cls.nodes = [{'uuid': n['uuid'], 'conductor_group': GROUP,
                      'instance': instances.get(n['uuid'])}
                     for n in enrolled]
        cls.instance_hosts = agents_mod.write_instance_hosts(
            os.path.join(cls.workdir, 'instances.json'), cls.instance_owner)

    def setUp(self):
        super().setUp()
        self.require_backend()
        if type(self).ironic is None:
            type(self)._start_ironic()
        self.dir = tempfile.mkdtemp(prefix='test-', dir=self.workdir)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.db_url = self.make_database()
        self.admin = db_api.Connection(self.db_url)
        self.addCleanup(self.admin.dispose)
        revision = getattr(getattr(self, self._testMethodName),
                           'initial_schema', 'head')
        if revision is not None:
            self.admin.upgrade(revision)
        self.free = [n['uuid'] for n in self.nodes if n['instance'] is None]
        node_owner = {n['uuid']: self.instance_owner[n['instance']]
                      for n in self.nodes if n['instance'] is not None}
        self.observer = observer_mod.Observer(
            self.free, node_owner, bound=TIMINGS.i2_bound,
            claims_db=self.admin)
        self.useFixture(self.observer)
        self.figures = {'test': self.id(), 'backend': self.backend,
                        'i2_bound': TIMINGS.i2_bound}
        self.faults = []
        self.timings = TIMINGS

    # Helpers.

    def require_backend(self):
        """Fail (or skip, where allowed) without the database server."""
        harness_db.require_server(self, self.backend)

    def make_database(self):
        """A fresh membership and claims database for this test.

        :returns: its SQLAlchemy URL.
        """
        return self.useFixture(harness.DatabaseFixture(self.backend)).url

    def start_agents(self, hosts, proxies=False, offsets=None, timings=None,
                     extra=None):
        if timings is not None:
            self.timings = timings
            self.observer.bound = timings.i2_bound
            self.figures['i2_bound'] = timings.i2_bound
        agents = agents_mod.AgentSet(
            self.dir, self.ironic.endpoint, self.db_url, GROUP,
            timings=self.timings, observer=self.observer,
            instance_hosts=self.instance_hosts, proxies=proxies,
            extra=extra)
        self.useFixture(agents)
        for host in hosts:
            agents.add(host, hosts, clock_offset=(offsets or {}).get(host))
        for host in hosts:
            self.addDetail('log-' + host, _log_detail(agents[host]))
        self.agents = agents
        return agents

    def wait_split(self, members, what, since=None):
        """Wait until the reports give exactly the expected split.

        :param members: the agents expected live.
        :param what: for the timeout message.
        :param since: host -> refresh counter each report must pass.
        :returns: seconds waited.
        """
        start = time.monotonic()
        problems = []

        def done():
            reports = self.observer.latest()
            for host in members:
                report = reports.get(host, {})
                if since and report.get('refresh_counter', 0) <= \
                        since.get(host, -1):
                    problems[:] = ['%s has not refreshed yet' % host]
                    return False
            problems[:] = harness_split.check_split(
                reports, self.nodes, {GROUP: list(members)},
                self.instance_owner)
            return not problems

        try:
            harness.wait_for(done, TIMEOUT, what, interval=0.05,
                             check=lambda: self.agents.check_alive(members))
        except harness.HarnessError as e:
            self.fail('%s; last problems: %s' % (e, problems[:5]))
        return time.monotonic() - start

    def counters(self, hosts):
        reports = self.observer.latest()
        return {h: reports.get(h, {}).get('refresh_counter', 0)
                for h in hosts}

    def reported(self, host):
        return set(self.observer.latest(host).get('managed', ())) & set(
            self.free)

    def wait_fenced_report(self, report, what):
        """A holder cut off from the database, once it was taken over.

        It rewrites its report at each refresh, and that refresh waits on
        the connection it lost, so its last report may predate its fence
        by up to one refresh: what that report vouched for must have run
        out by now (its ``monotonic`` plus ``valid_for``), and its next
        report says it fenced itself.

        :param report: returns the holder's latest report.
        :param what: the holder, for the wait's message.
        :returns: its first report that says it is fenced.
        """
        last = report()
        if not last['claims']['fenced']:
            self.assertLessEqual(
                last['monotonic'] + last['claims']['valid_for'],
                time.monotonic(), last)
        harness.wait_for(lambda: report()['claims']['fenced'], TIMEOUT,
                         '%s to report itself fenced' % what)
        return report()

    def fault(self, label, nodes=None):
        """Mark the start of a fault; its figures are taken at the end."""
        when = self.observer.mark(label)
        self.faults.append((when, label, set(nodes or ())))
        return when

    def analyse(self, i2=True):
        """Stop observing, check I1-I4, record the per-fault figures.

        :param i2: check I2 (every gap within its bound); False for a
            test whose faults leave nodes unreported by design (a service
            that refuses, a database that is gone for longer than the
            lease).
        :returns: the
            :class:`~ironic_partition.testing.lanes.analysis.Analysis`.
        """
        result = self.observer.analyse()
        self.addDetail('observer', _text('\n'.join(
            result.summary() + result.problems())))
        bounds = [t for t, _l, _n in self.faults[1:]] + [result.window[1]]
        per_fault = []
        for (when, label, nodes), until in zip(self.faults, bounds):
            gaps = result.gaps_between(when, until)
            handovers = [h for h in result.handovers
                         if when <= h.free_upper < until]
            per_fault.append({
                'fault': label,
                'at': round(when - self.faults[0][0], 3),
                # NOTE(ironic-partition): from the fault until every node
                # that went unreported after it is reported again.
                'all_back_after': round(max(
                    (g.end - when for g in gaps), default=0.0), 3),
                'longest_gap': round(max(
                    (g.effective for g in gaps), default=0.0), 3),
                'nodes_unreported': len({g.node for g in gaps}),
                'double_reports': len(result.overlaps_between(when, until)),
                'handovers': len(handovers),
                'handovers_inconclusive': len(
                    [h for h in handovers if h.status == 'inconclusive']),
            })
        self.figures.update({
            'faults': per_fault,
            'double_reports': len(result.overlaps),
            'longest_gap': _round(result.longest_gap.effective
                                  if result.longest_gap else 0.0),
            'handovers_ok': len(result.ok_handovers),
            'handovers_inconclusive': len(
                [h for h in result.handovers
                 if h.status == 'inconclusive']),
            'i4_violations': len(result.violations),
            'released_before_last_report': len(result.stop_order),
            'i4_min_margin_expiry': _round(result.min_margin('expiry')),
            'i4_min_margin_release': _round(result.min_margin('release')),
            'reports': result.reports,
            'i2_refresh_allowance': _round(result.refresh_allowance),
        })
        self.addDetail('figures', _text(json.dumps(self.figures, indent=2)))
        zero = self.faults[0][0] if self.faults else 0.0
        self.addDetail('handovers-not-proven', _text('\n'.join(
            '%s %s -> %s (%s): reported until %.3f, free after %.3f..%.3f'
            % (h.node, h.from_host, h.to_host, h.kind, h.reported_end - zero,
               h.free_lower - zero, h.free_upper - zero)
            for h in result.handovers if h.status != 'ok')))
        path = os.environ.get(FIGURES_ENV)
        if path:
            with open(path, 'a') as stream:
                stream.write(json.dumps(self.figures, sort_keys=True) + '\n')
        if not i2:
            self.assertEqual([], [str(o) for o in result.overlaps])
            self.assertEqual([], [str(v) for v in result.violations])
            return result
        self.assertEqual([], result.problems())
        for entry in per_fault:
            self.assertLessEqual(entry['longest_gap'],
                                 result.effective_bound, entry)
        return result

    def wait_elapsed(self, since, seconds, what):
        """Let a fault last ``seconds`` from ``since``; agents must run."""
        harness.wait_for(lambda: time.monotonic() - since >= seconds,
                         seconds + 5, what, interval=0.05,
                         check=self.agents.check_alive)


class RollingUpgradeScenario(object):
    """The previous version's agents, the schema upgraded under them.

    Mixed into the fault tests' class for its Ironic.
    """

    #: The first migration the previous version lacks.
    FIRST_NEW_MIGRATION = '0005_outside_peers.py'
    PREVIOUS_HEAD = '0004_database_node'

    def _dbsync(self, command, conf):
        proc = subprocess.run(
            list(command) + ['--config-file', conf, 'upgrade'],
            capture_output=True, text=True, timeout=120,
            env=harness_cli.cli_env())
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def _held(self, hosts):
        return {c.node_id: (c.owner, c.epoch)
                for c in self.admin.claims.read_claims('agent').claims
                if c.owner in hosts}

    @backends('postgresql')
    @initial_schema(None)
    def test_rolling_upgrade(self):
        previous = self.useFixture(previous_mod.PreviousVersion(
            os.path.join(self.dir, 'previous'), self.FIRST_NEW_MIGRATION))
        old_cli = [previous.script('ironic-partition')]
        # NOTE(ironic-partition): long enough for a process start on a
        # loaded machine; a graceful stop hands over at once anyway.
        self.timings = agents_mod.Timings(
            refresh_interval=1, heartbeat_interval=1, service_down_time=20,
            lease_time=20, fencing_margin=None)
        self.observer.bound = self.timings.i2_bound
        hosts = ['a1', 'a2', 'a3', 'a4']
        agents = agents_mod.AgentSet(
            self.dir, self.ironic.endpoint, self.db_url, GROUP,
            timings=self.timings, observer=self.observer,
            instance_hosts=self.instance_hosts)
        self.useFixture(agents)
        self.agents = agents
        conf = agents.add('a4', hosts, start=False).conf_path
        # The previous version creates its schema, and runs three agents.
        self._dbsync([previous.script('ironic-partition-dbsync')], conf)
        self.assertEqual(self.PREVIOUS_HEAD, self.admin.schema_revision())
        for host in hosts[:3]:
            agents.add(host, hosts, command=old_cli)
            self.addDetail('log-' + host, _log_detail(agents[host]))
        self.addDetail('log-a4', _log_detail(agents['a4']))
        old = hosts[:3]
        self.wait_split(old, 'the previous version\'s split')
        self.observer.steady()
        # This version refuses the previous schema, naming both revisions
        # and its version: it needs ironic-partition-dbsync upgrade first.
        proc = harness_cli.run_cli('--config-file', conf, 'serve')
        self.assertEqual(_errors.EXIT_DATABASE, proc.returncode, proc.stderr)
        self.assertIn(
            'is at schema revision %s but this code (ironic-partition %s) '
            'needs %s (the upgrade applies %s). Run "ironic-partition-dbsync '
            'upgrade"' % (self.PREVIOUS_HEAD, ironic_partition.__version__,
                          migration.head_revision(), ', '.join(
                              migration.pending(self.PREVIOUS_HEAD))),
            proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        # The schema upgraded under the running previous version: every
        # claim kept (same owner, same epoch), every agent still serving.
        held = self._held(old)
        self.assertEqual(len(self.free) + 3, len(held))
        self.fault('schema upgraded under the previous version')
        out = self._dbsync(
            [sys.executable, '-m', 'ironic_partition.cmd.dbsync'], conf)
        self.assertIn('from revision %s to %s' % (
            self.PREVIOUS_HEAD, migration.head_revision()), out)
        self.wait_split(old, 'the previous version after the upgrade',
                        since=self.counters(old))
        self.assertEqual(held, self._held(old))
        # This version joins beside the previous one.
        self.fault('a4 of this version joins')
        agents.start('a4')
        self.wait_split(hosts, 'both versions serving')
        proc = harness_cli.run_cli('--config-file', conf, 'check', '--role',
                                   'agent', '-f', 'json')
        doc = harness_cli.findings(json.loads(proc.stdout))
        self.assertEqual([], doc['problems'])
        self.assertEqual(
            ['The live services run 2 versions of ironic-partition: '
             '%s on a1, a2, a3; %s on a4. A rolling upgrade is under way: '
             'finish it (every service on the new version) before the next '
             '"ironic-partition-dbsync upgrade"' % (
                 previous.reported_version, ironic_partition.__version__)],
            [w['message'] for w in doc['warnings']
             if w['check'] == 'schema'])
        # The previous version replaced host by host.
        for host in old:
            self.fault('%s upgraded in place' % host)
            self.assertEqual(0, agents.replace(host))
            self.wait_split(hosts, '%s back on this version' % host)
        versions = {s.host: s.version for s in self.admin.services.services(
            'agent', self.timings.service_down_time).services}
        self.assertEqual(dict.fromkeys(hosts, ironic_partition.__version__),
                         versions)
        self.analyse()


class FaultTestCase(RollingUpgradeScenario, FaultTestBase):

    @backends('mysql')
    def test_process_faults(self):
        hosts = ['a1', 'a2', 'a3']
        # NOTE(ironic-partition): a1's wall clock is 7 minutes ahead and
        # a2's 5 minutes behind for the whole test: leases go by the
        # database clock and the fence by the monotonic clock.
        offsets = {'a1': 420, 'a2': -300}
        agents = self.start_agents(hosts, offsets=offsets)
        self.wait_split(hosts, 'the initial split')
        self.observer.steady()
        for host, offset in offsets.items():
            report = self.observer.latest(host)
            skew = _parse_time(report['updated_at']) - time.time()
            self.assertAlmostEqual(offset, skew, delta=10)
        self.figures['clock_offsets'] = offsets

        # SIGKILL (of an agent whose clock is behind), then a restart.
        self.fault('SIGKILL a2 (clock -5 min)', self.reported('a2'))
        agents.kill('a2')
        took = self.wait_split(['a1', 'a3'], 'a1 and a3 to take a2 over')
        self.figures['kill_split_seconds'] = round(took, 3)
        self.assertLessEqual(took, TIMINGS.i2_bound + SPLIT_SLACK)
        self.fault('restart a2')
        agents.start('a2')
        self.wait_split(hosts, 'a2 to rejoin')

        # SIGSTOP for longer than the lease, then SIGCONT.
        paused = self.fault('SIGSTOP a3', self.reported('a3'))
        agents.pause('a3')
        took = self.wait_split(['a1', 'a2'], 'a1 and a2 to take a3 over')
        self.figures['pause_split_seconds'] = round(took, 3)
        self.assertLessEqual(took, TIMINGS.i2_bound + SPLIT_SLACK)
        self.wait_elapsed(paused, TIMINGS.lease_time + 1,
                          'a pause longer than the lease')
        self.fault('SIGCONT a3')
        counters = self.counters(hosts)
        agents.resume('a3')
        took = self.wait_split(hosts, 'a3 to come back', since=counters)
        self.figures['resume_split_seconds'] = round(took, 3)

        # A rolling restart: SIGTERM and start, one agent at a time.
        for host in hosts:
            self.fault('rolling restart %s' % host, self.reported(host))
            self.assertEqual(0, agents.stop(host))
            agents.start(host)
            self.wait_split(hosts, '%s to rejoin' % host)

        # A new peer: a4 runs with every peer in its list; the others learn
        # of it through peer_list and SIGHUP.
        everyone = hosts + ['a4']
        self.fault('a4 starts, known only to itself')
        agents.add('a4', everyone)
        self.addDetail('log-a4', _log_detail(agents['a4']))
        # NOTE(ironic-partition): its ring share is claimed by the others:
        # it reports nothing and says why, not ready (never an empty list
        # from its own state).
        harness.wait_for(
            lambda: 'wait for claims held by other processes' in (
                self.observer.latest('a4').get('reason') or ''), TIMEOUT,
            'a4 to wait, not ready, for the claims of the others',
            check=agents.check_alive)
        self.wait_split(hosts, 'the old split to hold', since=self.counters(
            everyone))
        a4 = self.observer.latest('a4')
        self.assertEqual([], a4['managed'])
        self.assertFalse(a4['ready'], a4)
        self.fault('peer_list + SIGHUP adds a4')
        for host in hosts:
            agents.set_peers(host, everyone)
            agents.sighup(host)
        took = self.wait_split(everyone, 'the four-way split')
        self.figures['sighup_split_seconds'] = round(took, 3)
        for host in hosts:
            self.assertEqual(1, self.observer.latest(host)[
                'settings_generation'])

        result = self.analyse()
        self.assertGreater(len(result.ok_handovers), 0)

    def test_database_and_ironic_faults(self):
        hosts = ['a1', 'a2', 'a3']
        agents = self.start_agents(hosts, proxies=True)
        self.wait_split(hosts, 'the initial split')
        self.observer.steady()
        epochs = {c.node_id: c.epoch
                  for c in self.admin.claims.read_claims('agent').claims}

        # The database away for less than the lease minus the margin:
        # nothing changes (no fence, no gap, same epochs).
        cut = self.fault('database away for 2 s')
        agents.cut()
        self.wait_elapsed(cut, 2.0, 'a short database outage')
        agents.restore()
        self.wait_split(hosts, 'the split after a short outage',
                        since=self.counters(hosts))
        harness.wait_for(
            lambda: all(self.observer.latest(h)['claims'][
                'consecutive_failures'] == 0 for h in hosts),
            TIMEOUT, 'claim rounds to succeed again')
        after = {c.node_id: c.epoch
                 for c in self.admin.claims.read_claims('agent').claims}
        self.assertEqual(epochs, after)

        # The database away for longer than the lease: every agent fences
        # itself; nobody may report until it is back.
        cut = self.fault('database away for 6 s')
        agents.cut()
        harness.wait_for(
            lambda: all(self.observer.latest(h)['claims']['fenced'] and
                        not self.reported(h) for h in hosts),
            TIMEOUT, 'every agent to fence itself')
        fenced = time.monotonic() - cut
        self.figures['all_fenced_after'] = round(fenced, 3)
        self.assertLessEqual(fenced, TIMINGS.lease_time + 2)
        self.wait_elapsed(cut, TIMINGS.lease_time + 2,
                          'a long database outage')
        self.fault('database back')
        back = agents.restore()
        self.observer.exempt(cut, back, 'the database was gone for all')
        took = self.wait_split(hosts, 'the split after a long outage',
                               since=self.counters(hosts))
        self.figures['long_outage_split_seconds'] = round(took, 3)

        # One agent cut off while the others reach the database.
        victim = self.reported('a2')
        cut = self.fault('a2 cut off from the database', victim)
        agents.cut('a2')
        took = self.wait_split(['a1', 'a3'], 'a1 and a3 to take over')
        self.figures['cut_split_seconds'] = round(took, 3)
        self.wait_fenced_report(lambda: self.observer.latest('a2'), 'a2')
        self.assertFalse(self.reported('a2'))
        self.wait_elapsed(cut, TIMINGS.service_down_time + 2,
                          'a2 cut off for a while')
        self.fault('a2 reconnected')
        agents.restore('a2')
        took = self.wait_split(hosts, 'a2 to rejoin')
        self.figures['reconnect_split_seconds'] = round(took, 3)

        # The Ironic API stopped for longer than the lease: agents report
        # not ready but keep their claims alive; nothing moves.
        before = {h: self.reported(h) for h in hosts}
        down = self.fault('Ironic API down')
        self.ironic.stop_api()
        harness.wait_for(
            lambda: all(not self.observer.latest(h)['ready'] for h in hosts),
            TIMEOUT, 'every agent to report not ready',
            check=agents.check_alive)
        self.wait_elapsed(down, TIMINGS.lease_time + 2,
                          'an Ironic outage longer than the lease')
        for host in hosts:
            report = self.observer.latest(host)
            self.assertFalse(report['ready'])
            self.assertFalse(report['claims']['fenced'], report)
            self.assertEqual(before[host], self.reported(host))
        self.fault('Ironic API back')
        self.ironic.start_api()
        took = self.wait_split(hosts, 'the agents to be ready again',
                               since=self.counters(hosts))
        self.figures['ironic_back_split_seconds'] = round(took, 3)
        self.assertEqual(before, {h: self.reported(h) for h in hosts})

        result = self.analyse()
        expiries = [h for h in result.ok_handovers if h.kind == 'expiry'
                    and h.from_host == 'a2' and h.node in victim]
        self.assertTrue(expiries, 'no handover of a2\'s nodes was seen')
        self.assertGreater(result.min_margin('expiry'), 0)

    def test_graceful_stop_reports_nothing_before_releasing(self):
        # One agent alone, so that nobody takes the released claims and
        # their updated_at (the database clock, this same host) keeps the
        # instant of the release: the "stopped" report (the agent's clock,
        # the same host clock) must come first.
        agents = self.start_agents(['a1'])
        self.wait_split(['a1'], 'a1 to manage everything')
        self.observer.steady()
        running = self.observer.latest('a1')
        self.assertEqual(len(self.free) + 2,
                         len(running['managed']))
        self.assertEqual(0, agents.stop('a1'))
        stopped = agents['a1'].report()
        self.assertEqual('stopped', stopped['state'])
        written = datetime.datetime.fromisoformat(stopped['updated_at'])
        conn = db_api.Connection(self.db_url)
        self.addCleanup(conn.dispose)
        claims = [c for c in conn.claims.read_claims('agent').claims
                  if c.node_id in set(self.free)]
        self.assertEqual(len(self.free), len(claims))
        self.assertEqual({None}, {c.owner for c in claims})
        released = min(c.updated_at for c in claims)
        self.assertLess(
            written, released,
            'the report still listed %d nodes until %s, after their claims '
            'were released at %s' % (len(self.free), written.isoformat(),
                                     released.isoformat()))
        self.analyse()

    def test_restart_keeping_claims_moves_nothing(self):
        # hand_over_on_stop = False, as for nova-compute: a graceful
        # restart within service_down_time keeps the membership and the
        # claims, and the restarted agent takes its own nodes back with
        # the same epochs. No node is ever reported by another agent.
        # service_down_time and the lease are long enough for any restart
        # on a loaded machine.
        timings = agents_mod.Timings(
            refresh_interval=1, heartbeat_interval=1, service_down_time=20,
            lease_time=20, fencing_margin=None)
        hosts = ['a1', 'a2', 'a3']
        agents = self.start_agents(hosts, timings=timings,
                                   extra={'hand_over_on_stop': False})
        self.wait_split(hosts, 'the initial split')
        self.observer.steady()
        mine = self.reported('a2')
        self.assertTrue(mine)
        before = {c.node_id: (c.owner, c.epoch)
                  for c in self.admin.claims.read_claims('agent').claims
                  if c.node_id in mine}
        self.assertEqual({'a2'}, {o for o, _e in before.values()})
        since = self.counters(hosts)
        self.fault('graceful restart of a2, keeping its claims', mine)
        self.assertEqual(0, agents.restart('a2'))
        self.wait_split(hosts, 'a2 back', since=since)
        after = {c.node_id: (c.owner, c.epoch)
                 for c in self.admin.claims.read_claims('agent').claims
                 if c.node_id in mine}
        self.assertEqual(before, after)
        result = self.analyse()
        self.assertEqual(0, result.moves)
        for host in ('a1', 'a3'):
            self.assertFalse(mine & self.reported(host))


def _round(value):
    return None if value is None else round(value, 3)


def _parse_time(text):
    return datetime.datetime.fromisoformat(text).timestamp()


def _text(text):
    return content.text_content(text)


def _log_detail(agent):
    return content.Content(
        content.UTF8_TEXT, lambda: [agent.log()[-20000:].encode('utf-8')])
