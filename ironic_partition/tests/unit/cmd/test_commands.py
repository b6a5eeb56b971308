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

"""status, ring and check on fakes of Ironic and the membership."""

import collections
import os
from unittest import mock

import fixtures

from ironic_partition.cmd import _errors
from ironic_partition.cmd import check
from ironic_partition.cmd import checks
from ironic_partition.cmd import ironic_checks
from ironic_partition.cmd import ring
from ironic_partition.cmd import status
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.ironic import change_feed
from ironic_partition.partition import readonly
from ironic_partition.ring import hash_ring
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base
from ironic_partition.tests.unit.cmd import fakes
from ironic_partition.tests.unit.ironic import test_node_index


REAL_CLIENT = baremetal.IronicClient


class CommandTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(group='ironic_partition', host='a1', claims='off')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['a1', 'a2', 'a3'])
        self.nodes = fakes.nodes(40, instances={0: 'i-a1', 1: 'i-a2',
                                                2: 'i-gone'})
        self.client = fakes.Client(self.nodes)
        self.membership = fakes.Membership(['a1', 'a3'], dead=['a2'])
        self.patch(readonly.membership_base, 'get_backend',
                   mock.Mock(return_value=self.membership))
        self.patch(settings_mod, 'ironic_client',
                   mock.Mock(return_value=self.client))

    def patch(self, obj, name, value):
        patcher = mock.patch.object(obj, name, value)
        patcher.start()
        self.addCleanup(patcher.stop)


class TestStatus(CommandTestCase):

    HOSTS = {'i-a1': 'a1', 'i-a2': 'a2'}

    def test_read_only_refresh(self):
        data = status.gather(self.conf, 'agent', self.HOSTS)
        doc = status.to_dict(data)
        ring_ = hash_ring.HashRing(['a1', 'a3'])
        free = [n.id for n in self.nodes if n.instance_id is None]
        mine = {u for u in free if ring_.get_node(u) == 'a1'}
        self.assertEqual(mine | {self.nodes[0].id},
                         {n['uuid'] for n in doc['managed']})
        self.assertEqual(1, doc['by_instance_count'])
        self.assertEqual(2, doc['foreign_count'])
        self.assertEqual([{'node': self.nodes[1].id, 'instance': 'i-a2',
                           'owner': 'a2',
                           'suggested_host': ring_.get_node(
                               self.nodes[1].id)}], doc['stranded'])
        self.assertEqual(['a1', 'a3'], doc['peers']['live'])
        self.assertEqual(['a2'], doc['peers']['dead'])
        self.assertEqual({'alive': ['c1'], 'dead': []}, doc['conductors'])
        text = fakes.human_record(status.present(doc))
        self.assertIn('a2: dead', text)
        self.assertIn('nova-manage db ironic_compute_node_move', text)
        self.assertIn('"ironic-partition recover a2"', text)

    def test_peers_counted_from_novas_service_group(self):
        # a1 (a compute of ours) counts a2, up in nova on nova's own
        # driver: status shows the ring the computes use, and says who
        # counts a2 and what to do.
        self.membership.counted_by = (('a2', ('a1',)),)
        doc = status.to_dict(status.gather(self.conf, 'agent', self.HOSTS))
        self.assertEqual({'a2': ['a1']}, doc['peers']['outside'])
        self.assertEqual(['a1', 'a2', 'a3'], doc['ring_members'])
        text = fakes.human_record(status.present(doc))
        self.assertIn('a2: live in nova, outside the membership database '
                      '(counted by a1)', text)
        [line] = [a for a in status.advice(doc) if 'own driver' in a]
        self.assertIn("a2 run nova's own driver, or this driver with "
                      "another [ironic_partition_database] connection",
                      line)

    def test_peers_show_the_database_clocks_they_measured(self):
        # A refusal for the database nodes' clocks is visible without the
        # service's log: the clocks its row keeps, when they differ.
        peers = {'live': ['a1', 'a3'], 'dead': [], 'never_seen': [],
                 'stale': False}
        services = [
            {'host': 'a1', 'incarnation': 'i1', 'origin': 'm1 pid 1',
             'started_at': 't1', 'database_clocks': {
                 'db1:3306': 0.0, 'db3:3306': 6.002}},
            {'host': 'a3', 'incarnation': 'i3', 'origin': 'm3 pid 3',
             'started_at': 't3', 'database_clocks': {
                 'db1:3306': 0.0, 'db3:3306': 0.004}}]
        text = status.PeersColumn(
            (peers, services, ['a1', 'a3'], 'a1')).human_readable()
        self.assertEqual(
            'a1: live (this host); m1 pid 1 since t1; database clocks: '
            'db3:3306 +6.002 s, db1:3306 +0.000 s\n'
            'a3: live; m3 pid 3 since t3', text)

    def test_no_alive_conductor_is_advice(self):
        self.client.conductors = [dict(c, alive=False)
                                  for c in self.client.conductors]
        doc = status.to_dict(status.gather(self.conf, 'agent', self.HOSTS))
        self.assertEqual({'alive': [], 'dead': ['c1']}, doc['conductors'])
        [line] = [a for a in status.advice(doc) if 'conductor' in a]
        self.assertIn("No conductor of conductor group rack1 is alive "
                      "(dead: c1): Ironic cannot deploy, power or clean the "
                      "40 nodes of the group", line)

    def test_change_feed_state(self):
        # The fakes have no change feed: said, with the reason.
        doc = status.to_dict(status.gather(self.conf, 'agent', self.HOSTS))
        self.assertEqual({'usable': False,
                          'problem': 'no change feed in this fake'},
                         doc['change_feed'])
        self.assertIn("Ironic's change feed is not usable, so every refresh "
                      "lists the group in full: no change feed in this fake",
                      fakes.human_record(status.present(doc)))
        # A fake Ironic with a feed: usable.
        fake = test_node_index.FakeIronic('first')
        for _ in range(12):
            fake.create()
        real = REAL_CLIENT(connection=mock.Mock(baremetal=fake),
                           page_size=5)
        real.list_conductors = self.client.list_conductors
        self.patch(settings_mod, 'ironic_client',
                   mock.Mock(return_value=real))
        doc = status.to_dict(status.gather(self.conf, 'agent'))
        self.assertEqual({'usable': True, 'problem': None},
                         doc['change_feed'])
        self.assertEqual(12, doc['listed'])
        self.assertNotIn('change feed is not usable',
                         fakes.human_record(status.present(doc)))

    def test_stranded_nodes_need_no_listing_of_their_own(self):
        calls = []
        list_nodes = self.client.list_nodes

        def counting(*args, **kwargs):
            calls.append(kwargs)
            return list_nodes(*args, **kwargs)
        self.client.list_nodes = counting
        doc = status.to_dict(status.gather(self.conf, 'agent', self.HOSTS))
        self.assertEqual(1, doc['stranded_count'])
        self.assertEqual('i-a2', doc['stranded'][0]['instance'])
        # The refresh's own listing of the group, and nothing else.
        self.assertEqual(1, len(calls), calls)
        self.assertNotIn('associated', calls[0])

    def test_without_instance_owners_status_explains(self):
        doc = status.to_dict(status.gather(self.conf, 'agent'))
        self.assertEqual([], doc['stranded'])
        self.assertIn('Pass --instance-hosts',
                      fakes.human_record(status.present(doc)))

    def test_long_lists_nodes(self):
        doc = status.to_dict(status.gather(self.conf, 'agent', self.HOSTS))
        text = fakes.human_record(status.present(doc, long_listing=True))
        self.assertIn(self.nodes[0].id + ' instance instance=i-a1', text)
        short = fakes.human_record(status.present(doc))
        self.assertNotIn(self.nodes[0].id, short)
        self.assertIn('managed: %d nodes (--long lists them)'
                      % doc['managed_count'], short)

    def test_faults(self):
        self.config(group='ironic', partition_key='rack9')
        self.assertRaises(exception.UnknownConductorGroup, status.gather,
                          self.conf, 'agent')
        self.config(group='ironic', partition_key='rack1')
        self.client.fault = exception.IronicUnavailable(endpoint='e',
                                                        reason='down')
        err = self.assertRaises(exception.IronicUnavailable, status.gather,
                                self.conf, 'agent')
        self.assertEqual(_errors.EXIT_IRONIC, _errors.exit_code_for(err))
        self.client.fault = None
        self.config(group='ironic', peer_list=['a2', 'a3'])
        self.assertRaises(exception.InvalidPeerList, status.gather,
                          self.conf, 'agent')


class TestRing(CommandTestCase):

    def test_compute_ring_counts(self):
        doc = ring.compute_ring(self.conf, 'agent',
                                {'i-a1': 'a1', 'i-a2': 'a2'})
        self.assertEqual(40, doc['listed'])
        self.assertEqual(37, doc['ring_nodes'])
        self.assertEqual(['a1', 'a3'], [m['member'] for m in doc['members']])
        self.assertEqual(37, sum(m['ring_nodes'] for m in doc['members']))
        self.assertEqual({'dead': ['a2'], 'never_seen': []},
                         doc['not_on_ring'])
        self.assertEqual([1, 0], [m['instance_nodes']
                                  for m in doc['members']])
        rows = {r['member']: r for r in ring.member_rows(doc)}
        self.assertTrue(rows['a1']['this_host'])
        self.assertEqual(('dead', 0), (rows['a2']['state'],
                                       rows['a2']['ring_nodes']))

    def test_conductor_rings(self):
        self.client.nodes += fakes.nodes(5, group='rack2', start=100)
        doc = ring.conductor_rings(self.client)
        groups = {g['conductor_group']: g for g in doc['groups']}
        self.assertEqual([{'hostname': 'c1', 'nodes': 40,
                           'share_percent': 100.0}],
                         groups['rack1']['conductors'])
        self.assertEqual(5, groups['rack2']['unmapped_nodes'])
        self.assertIn({'conductor_group': 'rack2', 'conductor': None,
                       'state': 'no alive conductor', 'nodes': 5,
                       'share_percent': 100.0}, ring.conductor_rows(doc))
        self.assertRaises(exception.UnknownConductorGroup,
                          ring.conductor_rings, self.client, 'nope')


class TestCheck(CommandTestCase):

    def test_all_good(self):
        self.membership.dead = frozenset()
        doc = checks.run_checks(self.conf, 'agent')
        self.assertEqual([], doc['problems'])
        # The fake membership has no database: no identities, no
        # database user to check.
        without = ('privileges', 'duplicates', 'schema')
        self.assertEqual([c for c in checks.CHECKS if c not in without],
                         doc['passed'])
        self.assertEqual(list(without), doc['skipped'])
        self.assertEqual(
            [('passed', 7), ('skipped', 3)],
            sorted(collections.Counter(
                r['result'] for r in check.finding_rows(doc)).items()))

    def _messages(self, doc):
        return [p['message'] for p in doc['problems']]

    def test_compare_feed_on_a_fleet_without_feed(self):
        # The fakes have no change feed: a warning, never a problem.
        doc = checks.run_checks(self.conf, 'agent', compare_feed=True)
        self.assertEqual([], doc['problems'])
        self.assertIn('feed', [w['check'] for w in doc['warnings']])
        self.assertIn('no change feed in this fake',
                      ' '.join(w['message'] for w in doc['warnings']))

    def _feed_check(self, fake, between=None):
        # NOTE: CommandTestCase patched settings.ironic_client.
        client = REAL_CLIENT(connection=mock.Mock(baremetal=fake),
                             page_size=7)
        if between is not None:
            real = change_feed.ChangeFeed.node_changes

            def changes(feed, *args, **kwargs):
                between()
                return real(feed, *args, **kwargs)
            self.patch(change_feed.ChangeFeed, 'node_changes', changes)
        report = checks._Report()
        settings = checks._lenient_settings(self.conf)
        ironic_checks.check_feed(client, self.conf, settings, report)
        return report

    def test_compare_feed_agrees(self):
        fake = test_node_index.FakeIronic('first')
        nodes = [fake.create() for _ in range(20)]
        fake.tick(120)
        report = self._feed_check(
            fake, between=lambda: fake.update(nodes[3], maintenance=True))
        self.assertEqual(['feed'], report.passed)
        self.assertEqual([], report.findings)

    def test_compare_feed_finds_a_change_it_missed(self):
        # A change committed late, stamped before the watermark minus the
        # overlap: the feed cannot see it, a full listing does.
        fake = test_node_index.FakeIronic('first')
        nodes = [fake.create() for _ in range(20)]
        fake.tick(600)
        # The watermark is now; the batch is older than the overlap.
        fake.update(nodes[0], maintenance=False)
        report = self._feed_check(fake, between=lambda: fake.update(
            nodes[3], stamp=test_node_index.T0, maintenance=True))
        self.assertEqual(['feed'], [f.check for f in report.findings])
        self.assertEqual('problem', report.findings[0].severity)
        self.assertIn('disagree on 1 nodes (%s)' % nodes[3],
                      report.findings[0].message)

    def test_one_line_per_problem(self):
        self.config(group='ironic', partition_key='RACK2',
                    peer_list=['A1', 'a4'])
        self.config(group='ironic_partition', host='a1')
        self.membership.never_seen = frozenset(['a4'])
        doc = checks.run_checks(self.conf, 'agent')
        messages = self._messages(doc)
        self.assertEqual(4, len(messages), messages)
        self.assertIn('no alive conductor', messages[0])
        self.assertIn("[ironic] partition_key 'RACK2' differs in case from "
                      "Ironic's conductor group 'rack2'", messages[1])
        self.assertIn("peer_list entry 'A1' differs in case", messages[2])
        self.assertIn("Peer 'a4'", messages[3])
        self.assertEqual(['peers'], [w['check'] for w in doc['warnings']])
        rows = [r for r in check.finding_rows(doc)
                if r['result'] in ('problem', 'warning')]
        self.assertEqual(5, len(rows))
        self.assertTrue(all('\n' not in r['message'] for r in rows))

    def test_sqlite_shared_by_peers_fails_as_nova_compute_would(self):
        # nova-compute refuses a SQLite claims database while peer_list
        # names other hosts; the check says so, whether or not the file
        # exists yet, and reads nothing from it.
        state = self.useFixture(fixtures.TempDir()).path
        self.config(group='ironic_partition', state_path=state)
        doc = checks.run_checks(self.conf, 'nova-compute')
        [problem] = [p for p in doc['problems'] if p['check'] == 'database']
        self.assertIn('[ironic_partition_database] connection', problem[
            'message'])
        self.assertIn('peer_list names other hosts (a2, a3)',
                      problem['message'])
        self.assertNotIn('database', doc['passed'])
        self.assertEqual([], os.listdir(state))
        # Alone in peer_list: the same file is fine.
        self.config(group='ironic', peer_list=['a1'])
        doc = checks.run_checks(self.conf, 'nova-compute')
        self.assertNotIn('database', [p['check'] for p in doc['problems']])
        # An agent may share a file on one host: not refused.
        self.config(group='ironic', peer_list=['a1', 'a2', 'a3'])
        doc = checks.run_checks(self.conf, 'agent')
        self.assertNotIn('database', [p['check'] for p in doc['problems']])

    def test_new_deployment_expects_peers_never_seen(self):
        # Before the first compute starts, no peer has heartbeated: a new
        # deployment's check passes what can be checked.
        self.membership.dead = frozenset()
        self.membership.never_seen = frozenset(['a2', 'a3'])
        doc = checks.run_checks(self.conf, 'agent')
        self.assertEqual(['peers', 'peers'],
                         [p['check'] for p in doc['problems']])
        doc = checks.run_checks(self.conf, 'agent', new_deployment=True)
        self.assertEqual([], doc['problems'])
        self.assertIn('peers', doc['passed'])

    def test_adopting_takes_peers_never_seen_for_novas_driver(self):
        # During a rolling switch, the computes still on nova's driver
        # never heartbeat: a warning each, naming it, not a failure.
        self.membership.dead = frozenset()
        self.membership.never_seen = frozenset(['a2', 'a3'])
        doc = checks.run_checks(self.conf, 'agent', adopting=True)
        self.assertEqual([], doc['problems'])
        warnings = [w['message'] for w in doc['warnings']
                    if w['check'] == 'peers']
        self.assertEqual(2, len(warnings), warnings)
        self.assertIn("Peer 'a2' in [ironic] peer_list has never "
                      "heartbeated", warnings[0])
        self.assertIn("taken to run nova's own driver (--adopting)",
                      warnings[0])
        self.assertIn('without --adopting once every compute',
                      warnings[1])

    def test_peers_counted_outside_fail_unless_adopting(self):
        # A live compute counts a2 from nova's service group: a problem
        # naming it and who counts it, a warning while --adopting.
        self.membership.dead = frozenset()
        self.membership.counted_by = (('a2', ('a1', 'a3')),)
        doc = checks.run_checks(self.conf, 'agent')
        [problem] = [p['message'] for p in doc['problems']
                     if p['check'] == 'peers']
        self.assertIn("Peer 'a2' is up in nova's service group but never "
                      "heartbeats the membership database: a1, a3 count "
                      "it", problem)
        self.assertIn('pass --adopting while it lasts', problem)
        doc = checks.run_checks(self.conf, 'agent', adopting=True)
        self.assertEqual([], doc['problems'])
        [warning] = [w['message'] for w in doc['warnings']
                     if w['check'] == 'peers']
        self.assertIn('expected during a rolling switch', warning)

    def test_host_missing_and_unknown_group(self):
        self.config(group='ironic', partition_key='rack9',
                    peer_list=['a2', 'a3'])
        doc = checks.run_checks(self.conf, 'agent')
        messages = self._messages(doc)
        self.assertIn("must contain this service's own host 'a1'",
                      messages[0])
        self.assertIn("partition_key 'rack9' is not a conductor group",
                      messages[1])

    def test_unreachable_services(self):
        self.client.fault = exception.IronicUnavailable(endpoint='e',
                                                        reason='refused')
        self.membership.fault = exception.MembershipUnavailable(
            role='agent', reason='db gone')
        doc = checks.run_checks(self.conf, 'agent')
        self.assertEqual(['database', 'ironic'],
                         [p['check'] for p in doc['problems']])
        self.assertNotIn('group', doc['passed'])
        self.assertIn('group', doc['skipped'])

    def test_nova_backend_is_refused_clearly(self):
        self.config(group='ironic_partition', membership_backend='nova')
        doc = checks.run_checks(self.conf, 'agent')
        self.assertIn('only be read inside nova-compute',
                      self._messages(doc)[0])
