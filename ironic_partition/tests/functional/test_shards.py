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

"""Ironic shards on a real Ironic, next to nova 34's own driver.

One real Ironic (PostgreSQL, conductor groups ``rack1`` and ``rack2``)
serves the class. Its 72 nodes are spread over every (group, shard) pair
of the groups and the shards ``s1``, ``s2`` and none: 12 nodes each. Two
nodes have instances: one in (rack1, s1) and one in (rack2, s2).

* ``test_same_nodes_as_nova``: for ``[ironic]`` options with ``shard``
  alone, ``conductor_group`` alone, both, and neither, each without
  ``peer_list``, our driver and nova 34's ``IronicDriver`` run in this
  process on the same nova CONF and the same fleet, side by side: the
  same node set for every host, or both refusing the configuration.
* ``test_nova_compute_sighup_keeps_the_shard``: a nova-compute-like
  process (``compute_worker`` under oslo.service, nova's own immutable
  ``[ironic] shard``) serving shard ``s1`` alone; a SIGHUP after its
  nova.conf moved it to another shard and group is refused with one
  ERROR line and it keeps reporting the same nodes.
* ``test_cli``: ``status``, ``ring`` and ``check`` with a shard.
* ``test_ha_inside_a_shard``: three ``ironic-partition serve`` agents
  with ``shard = s1`` and a peer list of the three: a disjoint and
  complete split of the shard's instance-less nodes, then a SIGKILL and
  the take-over within ``service_down_time`` + 2 refreshes (+ slack),
  then a SIGHUP that changes one agent's shard, refused with one line,
  all watched by the fault tests' observer (I1-I4). No agent ever reports
  a node outside the shard; membership rows and claims carry the shard.
"""

import json
import os
import signal
import sys
import time
import uuid

import fixtures
from oslotest import base
from testtools import content

from ironic_partition.cmd import _errors
from ironic_partition.db import api as db_api
from ironic_partition import exception
from ironic_partition import testing as harness
from ironic_partition.testing.commands import agents as agents_mod
from ironic_partition.testing.lanes import observer as observer_mod
from ironic_partition.testing.lanes import split as harness_split
from ironic_partition.testing.services import compute_worker
from ironic_partition.testing.services import nova_env
from ironic_partition.tests.functional import test_cli

GROUPS = ['rack1', 'rack2']
SHARDS = ['s1', 's2', None]
NODES = 72
TIMEOUT = 60
TIMINGS = agents_mod.FAST
#: Refreshes take time on a loaded machine (as in test_faults).
SPLIT_SLACK = 3.0


class ShardTestCase(test_cli.SharedIronic, base.BaseTestCase):
    """One Ironic for the class, nodes over every (group, shard) pair."""

    @classmethod
    def _start_ironic(cls):
        enrolled = cls.start_shared_ironic(
            'ironic-partition-shards-', GROUPS, NODES, shards=SHARDS,
            name_prefix='shard')
        conn = harness.connect(cls.ironic.endpoint)
        cls.pair = {n['uuid']: (n['conductor_group'], n['shard'])
                    for n in enrolled}
        # One instance in (rack1, s1), one in (rack2, s2).
        cls.instance = {}
        for pair in (('rack1', 's1'), ('rack2', 's2')):
            node = sorted(u for u, p in cls.pair.items() if p == pair)[0]
            cls.instance[node] = str(uuid.uuid4())
            harness.set_instance_uuid(conn, node, cls.instance[node])
        (cls.node_a,) = [u for u, p in cls.pair.items()
                         if u in cls.instance and p == ('rack1', 's1')]
        (cls.node_b,) = [u for u, p in cls.pair.items()
                         if u in cls.instance and p == ('rack2', 's2')]

    def setUp(self):
        super().setUp()
        if type(self).ironic is None:
            type(self)._start_ironic()
        counts = {}
        for pair in self.pair.values():
            counts[pair] = counts.get(pair, 0) + 1
        self.assertEqual({(g, s): NODES // 6 for g in GROUPS
                          for s in SHARDS}, counts)

    def nodes_of(self, group=None, shard=None):
        """The nodes of a (group, shard) filter; None matches any.

        :returns: a set of UUIDs.
        """
        return {u for u, (g, s) in self.pair.items()
                if (group is None or g == group)
                and (shard is None or s == shard)}

    # nova parity.

    def _ours(self, novaconf, host):
        from ironic_partition.virt import nova_driver
        novaconf.config(host=host)
        driver = nova_driver.IronicPartitionDriver(None)
        driver.init_host(host)
        try:
            return set(driver.get_available_nodes())
        finally:
            driver.cleanup_host(host)

    def _nova(self, novaconf, host, live):
        from nova.virt.ironic import driver as ironic_driver
        # nova's service group needs recent heartbeats, which a real
        # nova-compute would keep sending.
        for peer in live:
            nova_env.set_up(peer, True)
        novaconf.config(host=host)
        return set(ironic_driver.IronicDriver(None).get_available_nodes())

    def test_same_nodes_as_nova(self):
        from nova import exception as nova_exception
        tag = uuid.uuid4().hex[:6]
        h1, h2 = '%s-cn1' % tag, '%s-cn2' % tag
        for host in (h1, h2):
            nova_env.add_compute(host)
        mine = self.instance[self.node_a]
        nova_env.add_instance(mine, h1)
        nova_env.add_instance(self.instance[self.node_b], '%s-other' % tag)
        novaconf = self.useFixture(nova_env.NovaConf(
            self.ironic.endpoint, {
                ('ironic', 'peer_list'): [],
                ('ironic_partition', 'membership_backend'): 'nova'}))
        free = set(self.pair) - set(self.instance)
        # (name, conductor_group, {host: shard}, {host: expected nodes}):
        # without peer_list, each host manages its (group, shard) alone.
        cases = [
            ('shard alone', None, {h1: 's1', h2: 'S2'},
             {h1: (self.nodes_of(shard='s1') & free) | {self.node_a},
              h2: self.nodes_of(shard='s2') & free}),
            ('both', 'rack1', {h1: 's1', h2: 's2'},
             {h1: (self.nodes_of('rack1', 's1') & free) | {self.node_a},
              h2: self.nodes_of('rack1', 's2') & free}),
            ('neither', None, {h1: None, h2: None}, None),
        ]
        figures = []
        for name, group, shards, expected in cases:
            reported = {}
            for host, shard in shards.items():
                novaconf.config(group='ironic', conductor_group=group,
                                shard=shard)
                theirs = self._nova(novaconf, host, (h1, h2))
                ours = self._ours(novaconf, host)
                self.assertEqual(theirs, ours, '%s: %s' % (name, host))
                reported[host] = ours
                figures.append('%s %s: %d nodes' % (name, host, len(ours)))
                self.assertNotIn(self.node_b, ours, name)
                if shard is not None:
                    outside = {u for u in ours
                               if self.pair[u][1] != shard.lower()}
                    self.assertEqual(set(), outside, name)
                if expected is not None:
                    self.assertEqual(expected[host], ours,
                                     '%s: %s' % (name, host))
            if name == 'neither':
                # The ring of every live ironic compute: h1 and h2 share
                # (at least part of) the fleet, never a node twice.
                self.assertEqual(set(), reported[h1] & reported[h2])
                self.assertIn(self.node_a, reported[h1])
        self.addDetail('node-sets', content.text_content(
            '\n'.join(figures)))

        # conductor_group alone, without peer_list: nova refuses at its
        # first refresh, ours at once, each with its own error.
        novaconf.config(group='ironic', conductor_group='rack1', shard=None)
        self.assertRaises(nova_exception.InvalidPeerList,
                          self._nova, novaconf, h1, (h1, h2))
        from ironic_partition.virt import nova_driver
        e = self.assertRaises(exception.ConfigurationError,
                              nova_driver.IronicPartitionDriver, None)
        self.assertIn('peer_list', str(e))

    # SIGHUP inside nova-compute.

    def _nova_conf(self, path, host, shard, group=None):
        lines = ['[DEFAULT]', 'host = %s' % host,
                 '[database]', 'connection = %s' % nova_env.nova_database(),
                 '[ironic]', 'auth_type = none',
                 'endpoint_override = %s' % self.ironic.endpoint,
                 'shard = %s' % shard,
                 '[ironic_partition]', 'membership_backend = static']
        if group is not None:
            lines.insert(lines.index('[ironic_partition]'),
                         'conductor_group = %s' % group)
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return path

    def test_nova_compute_sighup_keeps_the_shard(self):
        workdir = self.useFixture(
            fixtures.TempDir(rootdir=self.workdir)).path
        host = 'cn-%s' % uuid.uuid4().hex[:6]
        config = self._nova_conf(os.path.join(workdir, 'nova.conf'), host,
                                 's1')
        report_path = os.path.join(workdir, 'report.json')
        service = harness.Service(
            'worker-' + host,
            [sys.executable, '-m',
             'ironic_partition.testing.services.compute_worker',
             '--mode', 'nova', '--report', report_path, '--interval', '0.5',
             '--', '--config-file', config],
            os.path.join(workdir, 'worker.log'))
        self.addCleanup(service.stop)
        self.addCleanup(lambda: self.addDetail(
            'worker-log', content.content_from_file(
                service.log_path, buffer_now=True)))
        service.start()

        def log():
            with open(service.log_path) as f:
                return f.read()

        def report_after(stamp):
            def check():
                report = compute_worker.read_report(report_path)
                return (report is not None and report['time'] > stamp
                        and report['ready'])

            def alive():
                if not service.running():
                    raise harness.HarnessError('the worker exited: %s'
                                               % log()[-3000:])
            harness.wait_for(check, TIMEOUT, 'a report', check=alive)
            return compute_worker.read_report(report_path)

        free = self.nodes_of(shard='s1') - set(self.instance)
        first = report_after(0)
        self.assertEqual(free, set(first['nodes']))

        # nova.conf now says another shard (and a group): refused whole.
        self._nova_conf(config, host, 's2', group='rack2')
        stamp = time.time()
        os.kill(service.pid, signal.SIGHUP)
        refused = "[ironic] shard cannot change on SIGHUP ('s1' -> 's2')"
        harness.wait_for(lambda: refused in log(), TIMEOUT,
                         'the refusal of the shard change')
        report = report_after(time.time())
        self.assertGreater(report['time'], stamp)
        self.assertEqual(free, set(report['nodes']))
        self.assertIsNone(report['partition_key'])
        self.assertEqual(1, log().count(refused))
        errors = [line for line in log().splitlines()
                  if ' ERROR ' in line and 'shard' in line]
        self.assertEqual(1, len(errors), errors)

    # The CLI.

    def _conf(self, name, key, shard, peers=('c1',)):
        return test_cli.agent_conf(
            os.path.join(self.workdir, name), self.ironic.endpoint, 'c1',
            key, list(peers), self.workdir, shard=shard,
            membership_backend='static')

    def _json(self, *args):
        proc = test_cli.run_cli(*args, '-f', 'json')
        self.assertIn(proc.returncode, (_errors.EXIT_OK,
                                        _errors.EXIT_PROBLEMS), proc.stderr)
        return proc.returncode, json.loads(proc.stdout)

    def test_cli(self):
        alone = self._conf('s1.conf', None, 'S1', peers=())
        free = self.nodes_of(shard='s1') - set(self.instance)
        code, doc = self._json('--config-file', alone, 'status', '--role',
                               'agent')
        self.assertEqual(_errors.EXIT_OK, code)
        self.assertEqual('s1', doc['shard'])
        self.assertEqual(len(self.nodes_of(shard='s1')), doc['listed'])
        self.assertEqual(free, {n['uuid'] for n in doc['managed']})
        self.assertEqual(['c1'], doc['ring_members'])
        proc = test_cli.run_cli('--config-file', alone, 'status',
                                '--role', 'agent')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('| shard ', proc.stdout)
        self.assertIn('| s1 ', proc.stdout)

        both = self._conf('rack1-s1.conf', 'rack1', 's1',
                          peers=('c1', 'c2'))
        code, rows = self._json('--config-file', both, 'ring', '--role',
                                'agent')
        self.assertEqual(_errors.EXIT_OK, code)
        # rack1's shard s1 only, less the node with an instance.
        self.assertEqual(len(self.nodes_of('rack1', 's1') - {self.node_a}),
                         sum(r['ring_nodes'] for r in rows))
        self.assertEqual({'c1', 'c2'}, {r['member'] for r in rows})

        code, rows = self._json('--config-file', both, 'check', '--role',
                                'agent')
        doc = test_cli.findings(rows)
        self.assertEqual(_errors.EXIT_OK, code, doc)
        self.assertIn('shards', doc['passed'])
        warnings = [w['message'] for w in doc['warnings']
                    if w['check'] == 'shards']
        self.assertEqual(1, len(warnings), warnings)
        self.assertIn('12 of the 36 nodes of conductor group rack1 have no '
                      'shard', warnings[0])
        empty = self._conf('s3.conf', 'rack2', 's3')
        code, rows = self._json('--config-file', empty, 'check', '--role',
                                'agent')
        doc = test_cli.findings(rows)
        self.assertEqual(_errors.EXIT_PROBLEMS, code, doc)
        problems = [p['message'] for p in doc['problems']
                    if p['check'] == 'shards']
        self.assertIn("Ironic lists no node of conductor group rack2 in "
                      "[ironic] shard 's3' (the query this service makes): "
                      "it would manage nothing. Shards there: 's1', 's2'.",
                      problems)

        # A shard in mixed case on Ironic's PostgreSQL: the service's
        # query (Ironic lower-cases the shard it filters on) lists none of
        # its nodes, so check fails it rather than passing.
        mixed = sorted(self.nodes_of('rack2') - self.nodes_of(shard='s1')
                       - self.nodes_of(shard='s2'))[0]
        conn = harness.connect(self.ironic.endpoint)
        conn.baremetal.patch_node(mixed, [
            {'op': 'add', 'path': '/shard', 'value': 'ShardA'}])
        self.addCleanup(conn.baremetal.patch_node, mixed, [
            {'op': 'remove', 'path': '/shard'}])
        for name in ('ShardA', 'sharda'):
            path = self._conf('mixed-%s.conf' % name, 'rack2', name)
            code, rows = self._json('--config-file', path, 'check',
                                    '--role', 'agent')
            doc = test_cli.findings(rows)
            self.assertEqual(_errors.EXIT_PROBLEMS, code, doc)
            problems = [p['message'] for p in doc['problems']
                        if p['check'] == 'shards']
            self.assertEqual(1, len(problems), doc)
            self.assertIn("Nodes are in 'ShardA', which Ironic's filter "
                          "does not match on this database", problems[0])

        # Bad values are refused naming the option.
        bad = self._conf('bad.conf', None, 's,1')
        proc = test_cli.run_cli('--config-file', bad, 'status')
        self.assertNotEqual(0, proc.returncode)
        self.assertIn('shard', proc.stderr)
        self.assertIn("'s,1'", proc.stderr)

    # HA inside a shard.

    def test_ha_inside_a_shard(self):
        database = self.useFixture(harness.DatabaseFixture('postgresql'))
        admin = db_api.Connection(database.url)
        self.addCleanup(admin.dispose)
        admin.upgrade()
        workdir = self.useFixture(
            fixtures.TempDir(rootdir=self.workdir)).path
        shard_nodes = self.nodes_of(shard='s1')
        free = sorted(shard_nodes - set(self.instance))
        owner = {self.instance[self.node_a]: 'a1',
                 # another shard's instance, owned by a host of no shard
                 self.instance[self.node_b]: 'zz-other'}
        instance_hosts = agents_mod.write_instance_hosts(
            os.path.join(workdir, 'instances.json'), owner)
        observer = observer_mod.Observer(
            free, {self.node_a: 'a1'}, bound=TIMINGS.i2_bound,
            claims_db=admin)
        self.useFixture(observer)
        hosts = ['a1', 'a2', 'a3']
        agents = agents_mod.AgentSet(
            workdir, self.ironic.endpoint, database.url, None,
            timings=TIMINGS, observer=observer,
            instance_hosts=instance_hosts, shard='s1')
        self.useFixture(agents)
        for host in hosts:
            agents.add(host, hosts)
            self.addDetail('log-' + host, content.Content(
                content.UTF8_TEXT,
                lambda h=host: [agents[h].log().encode('utf-8')]))
        # Every node of the shard, as split.check_split wants them: the
        # shard is the "group" the agents share.
        nodes = [{'uuid': u, 'conductor_group': 's1',
                  'instance': self.instance.get(u)} for u in shard_nodes]
        outside = []

        def wait_split(members, what):
            problems = []

            def done():
                reports = observer.latest()
                for host, report in reports.items():
                    extra = set(report.get('managed', ())) - shard_nodes
                    if extra:
                        outside.append((host, sorted(extra)))
                problems[:] = harness_split.check_split(
                    {h: reports.get(h) for h in members if h in reports},
                    nodes, {'s1': list(members)}, owner)
                return not problems and not outside

            start = time.monotonic()
            try:
                harness.wait_for(done, TIMEOUT, what, interval=0.05,
                                 check=lambda: agents.check_alive(members))
            except harness.HarnessError as e:
                self.fail('%s; last problems: %s; outside the shard: %s'
                          % (e, problems[:5], outside[:5]))
            return time.monotonic() - start

        wait_split(hosts, 'the three-way split of shard s1')
        observer.steady()
        split = {h: set(observer.latest(h)['managed']) for h in hosts}
        self.assertEqual(set(free) | {self.node_a},
                         split['a1'] | split['a2'] | split['a3'])
        self.assertEqual(len(free) + 1, sum(len(s) for s in split.values()))
        for host in hosts:
            self.assertEqual('s1', observer.latest(host)['shard'])

        agents.kill('a3')
        took = wait_split(['a1', 'a2'], 'a1 and a2 to take a3 over')
        self.addDetail('takeover-seconds',
                       content.text_content('%.2f' % took))
        self.assertLessEqual(took, TIMINGS.i2_bound + SPLIT_SLACK)

        # A SIGHUP that changes the shard is refused with one ERROR line;
        # a1 keeps serving s1 and nothing moves.
        before = observer.latest('a1')['refresh_counter']
        agents.set_shard('a1', 's2')
        agents.sighup('a1')
        refused = "[ironic] shard cannot change on SIGHUP ('s1' -> 's2')"
        harness.wait_for(lambda: refused in agents['a1'].log(), TIMEOUT,
                         'the refusal of the shard change',
                         check=lambda: agents.check_alive(['a1', 'a2']))
        harness.wait_for(
            lambda: observer.latest('a1')['refresh_counter'] > before + 1,
            TIMEOUT, 'a1 to refresh after the SIGHUP',
            check=lambda: agents.check_alive(['a1', 'a2']))
        self.assertEqual(1, agents['a1'].log().count(refused))
        self.assertEqual('s1', observer.latest('a1')['shard'])
        wait_split(['a1', 'a2'], 'the same split after the refused SIGHUP')

        result = observer.analyse()
        self.addDetail('observer', content.text_content('\n'.join(
            result.summary() + result.problems())))
        self.assertEqual([], result.problems())
        self.assertEqual([], result.overlaps)
        self.assertEqual([], outside)

        # The membership rows and the claims carry the shard.
        services = admin.services.services('agent', 3600).services
        self.assertEqual({'a1': 's1', 'a2': 's1', 'a3': 's1'},
                         {s.host: s.shard for s in services})
        claims = [c for c in admin.claims.read_claims('agent').claims
                  if c.owner is not None]
        self.assertTrue(claims)
        self.assertEqual({'s1'}, {c.shard for c in claims})
        self.assertEqual(set(), {c.node_id for c in claims} - shard_nodes)
