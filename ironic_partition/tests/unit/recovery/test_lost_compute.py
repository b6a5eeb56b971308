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

"""``recover``'s proofs, plan and moves: a real SQLite membership
database, nova's records faked (the functional lane moves real ones)."""

import os
import types

import fixtures
import sqlalchemy as sa

from ironic_partition.cmd import _errors
from ironic_partition.db import api as db_api
from ironic_partition.db import models
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition.recovery import lost_compute as recovery
from ironic_partition.recovery import nova_records
from ironic_partition.tests import base

ROLE = membership_base.ROLE_NOVA_COMPUTE
NODES = ['00000000-0000-4000-8000-%012d' % i for i in range(1, 9)]
SERVERS = ['5e000000-0000-4000-8000-%012d' % i for i in range(1, 9)]


class FakeRecords(object):
    """nova's view: services up or down, servers on hosts."""

    def __init__(self, hosts, servers):
        self.services = {h: dict(up=up, forced_down=False)
                         for h, up in hosts.items()}
        self.placed = dict(servers)
        self.moves = []
        self.forced = []

    def compute_service(self, host):
        for name, state in self.services.items():
            if name.lower() == host.lower():
                return nova_records.ComputeService(
                    host=name, id=1, up=state['up'] and
                    not state['forced_down'],
                    forced_down=state['forced_down'], disabled=False,
                    last_seen='2026-11-28T00:00:00')
        return None

    def servers(self, host):
        return sorted(
            nova_records.Server(uuid=s, name='srv-%s' % s[-1], node=n,
                                host=h, vm_state='active', task_state=None)
            for s, (h, n) in self.placed.items() if h == host)

    def force_down(self, host):
        self.forced.append(host)
        self.services[host]['forced_down'] = True
        return True

    def after(self, count, action):
        """Run ``action`` once the ``count``-th move is done."""
        move = self.move

        def moved(server, source, destination):
            result = move(server, source, destination)
            if len(self.moves) == count:
                action()
            return result
        self.move = moved
        return move

    def move(self, server, source, destination):
        self.moves.append(server)
        host, node = self.placed[server]
        if host != source:
            return nova_records.ALREADY
        self.placed[server] = (destination, node)
        return nova_records.MOVED


class FakeMembership(object):
    """The read-only database backend: its store and members."""

    def __init__(self, db, live):
        self.store = types.SimpleNamespace(db=db)
        self.live = live

    def members(self, partition_key, peers, **kwargs):
        return membership_base.Membership(
            live=frozenset(self.live), dead=frozenset(),
            never_seen=frozenset(), stale=False, as_of=None)


class RecoveryTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'm.sqlite')
        self.db = db_api.Connection('sqlite:///%s' % path)
        self.addCleanup(self.db.dispose)
        self.db.upgrade()
        self.config(group='ironic_partition', host='cn2',
                    service_down_time=60)
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1', 'cn2', 'cn3'])
        self.settings = self.read_settings()
        for host in ('cn1', 'cn2', 'cn3'):
            self.register(host)
        self.records = FakeRecords(
            {'cn1': True, 'cn2': True, 'cn3': True, 'cn4': True},
            {s: ('cn1', n) for s, n in zip(SERVERS, NODES)})

    def register(self, host, key='rack1'):
        self.db.services.register_service(
            host, ROLE, 'inc-%s' % host, origin='test', liveness_token=None,
            partition_key=key)

    def age(self, host, seconds, down=False):
        """Make a host's last heartbeat ``seconds`` old."""
        table = models.Service.__table__
        with self.db.writer() as conn:
            conn.execute(sa.update(table).where(table.c.host == host).values(
                last_seen=models.utc_ago(sa.literal(seconds)), down=down))

    def lose(self, host='cn1'):
        """The host is dead everywhere: silent, its claims run out."""
        self.age(host, 600)
        self.records.services[host]['up'] = False

    def job(self, host='cn1', **kwargs):
        return recovery.Recovery(
            self.settings, FakeMembership(self.db, {'cn1', 'cn2', 'cn3'}),
            self.records, ROLE, host, **kwargs)

    def assert_refused(self, reason, host='cn1', **kwargs):
        job = self.job(host, **kwargs)
        e = self.assertRaises(exception.RecoveryRefused, job.plan)
        self.assertIn(reason, str(e))
        self.assertIn('Nothing was changed.', str(e))
        self.assertEqual(_errors.EXIT_REFUSED, _errors.exit_code_for(e))
        return e


class TestProofs(RecoveryTestCase):

    def test_alive_is_refused(self):
        self.assert_refused('it is alive in the membership database: '
                            'incarnation inc-cn1 on test')

    def test_a_recent_heartbeat_is_refused_even_marked_down(self):
        self.age('cn1', 20, down=True)
        self.assert_refused('within [ironic_partition] service_down_time '
                            '(60 s)')

    def test_a_valid_claim_is_refused(self):
        self.db.claims.acquire_claims(ROLE, 'cn1', NODES[:2], 300,
                                      incarnation='inc-cn1')
        self.lose()
        self.assert_refused('2 of its claims are still valid')

    def test_up_in_nova_is_refused_unless_forced(self):
        self.age('cn1', 600)
        self.assert_refused("nova's service group has it up")
        self.assertEqual(8, len(self.job(force=True).plan()))

    def test_unknown_host(self):
        self.assert_refused('neither nova nor the membership database',
                            host='cn9')

    def test_nova_only_host_points_at_nova_manage(self):
        self.assert_refused('nova-manage db ironic_compute_node_move',
                            host='cn4')

    def test_another_partition(self):
        self.register('cn5', key='rack2')
        self.records.services['cn5'] = dict(up=False, forced_down=False)
        self.assert_refused("it serves conductor group 'rack2' and shard "
                            "(none), and these configuration files describe "
                            "conductor group 'rack1'", host='cn5')

    def test_no_servers_is_an_empty_plan(self):
        self.lose('cn3')
        self.assertEqual([], self.job('cn3').plan())


class TestPlan(RecoveryTestCase):

    def test_each_server_goes_where_the_ring_puts_its_node(self):
        self.lose()
        rows = self.job().plan()
        self.assertEqual(SERVERS, [r.server for r in rows])
        self.assertEqual({'planned'}, {r.result for r in rows})
        # cn2 and cn3 share the nodes; cn1 gets none.
        self.assertEqual({'cn2', 'cn3'}, {r.destination for r in rows})

    def test_a_destination_down_in_nova_is_refused(self):
        self.lose()
        self.records.services['cn3']['up'] = False
        self.assert_refused("the destination cn3 is down in nova's service "
                            "group")

    def test_the_destination_asked_for(self):
        self.lose()
        rows = self.job(destination='CN3').plan()
        self.assertEqual({'cn3'}, {r.destination for r in rows})
        self.assert_refused('the destination cn9 is not a live compute of '
                            'its partition', destination='cn9')
        self.assert_refused('the destination is the host itself',
                            destination='cn1')
        self.records.services['cn3']['forced_down'] = True
        self.assert_refused('the destination cn3 is forced down in nova',
                            destination='cn3')

    def test_a_dead_configuration_host_is_no_destination(self):
        # The configuration's own host is always in its live set; a dead
        # one must not be given servers.
        self.lose()
        self.age('cn3', 600)
        rows = self.job().plan()
        self.assertEqual({'cn2'}, {r.destination for r in rows})

    def test_workers_bounded(self):
        e = self.assertRaises(exception.InvalidCommandInput, self.job,
                              workers=0)
        self.assertIn('--workers', str(e))


class TestApply(RecoveryTestCase):

    def test_fences_forces_down_and_moves(self):
        self.db.claims.acquire_claims(ROLE, 'cn1', NODES[:2], 1,
                                      incarnation='inc-cn1')
        self.lose()
        table = models.Claim.__table__
        with self.db.writer() as conn:
            conn.execute(sa.update(table).values(
                expires_at=models.utc_ago(sa.literal(5))))
        job = self.job(workers=3)
        rows = job.plan()
        seen = []
        moved = job.apply(rows, progress=lambda d, t: seen.append((d, t)))
        self.assertEqual({'moved'}, {r.result for r in moved})
        self.assertEqual([(i, 8) for i in range(1, 9)], seen)
        self.assertEqual(['cn1'], self.records.forced)
        self.assertEqual(job.fence, self.db.services.holder('cn1', ROLE))
        (row,) = [s for s in self.db.services.services(ROLE, 60).services
                  if s.host == 'cn1']
        self.assertTrue(row.down)
        self.assertEqual([], [c for c in self.db.claims.read_claims(
            ROLE, owner='cn1').claims])
        self.assertIn('Fenced host cn1 for good', self.logger.output)
        # A second run: nothing left.
        self.assertEqual([], self.job().plan())

    def test_a_process_back_before_the_fence_changes_nothing(self):
        self.lose()
        job = self.job()
        rows = job.plan()
        self.db.services.register_service(
            'cn1', ROLE, 'new', origin='back', liveness_token=None,
            partition_key='rack1')
        e = self.assertRaises(exception.RecoveryRefused, job.apply, rows)
        self.assertIn('Nothing was changed.', str(e))
        self.assertEqual([], self.records.forced + self.records.moves)
        self.assertEqual('new', self.db.services.holder('cn1', ROLE))

    def test_a_process_back_half_way_stops_the_moves(self):
        self.lose()
        job = self.job(workers=1)
        rows = job.plan()
        self.records.after(3, lambda: self.db.services.register_service(
            'cn1', ROLE, 'new', origin='back', liveness_token=None,
            partition_key='rack1', service_down_time=0))
        e = self.assertRaises(exception.RecoveryRefused, job.apply, rows)
        self.assertIn('a process took the host name during the recovery',
                      str(e))
        self.assertIn('3 servers were moved before', str(e))
        self.assertEqual(3, len(self.records.moves))
        self.assertIn('stopped after 3 of 8 servers', self.logger.output)


class FakeObject(types.SimpleNamespace):

    def save(self):
        self.saved = getattr(self, 'saved', 0) + 1


class TestNovaMove(base.TestCase):
    """``NovaRecords.move`` does what nova-manage's move does, idempotent."""

    def setUp(self):
        super().setUp()
        self.instance = FakeObject(uuid=SERVERS[0], host='cn1',
                                   node=NODES[0])
        self.node = FakeObject(host='cn1', service_id=1)
        self.target = FakeObject(host='cn2', id=2, forced_down=False)
        self.others = [self.instance]
        test = self

        class NotFound(Exception):
            pass

        class Objects(object):
            Instance = types.SimpleNamespace(
                get_by_uuid=lambda ctxt, uuid, expected_attrs: test.instance)
            Service = types.SimpleNamespace(
                get_by_compute_host=lambda ctxt, host: test.target)
            InstanceList = types.SimpleNamespace(
                get_by_host_and_node=lambda ctxt, host, node,
                expected_attrs: test.others)
            ComputeNode = types.SimpleNamespace(
                get_by_uuid=lambda ctxt, uuid: test.node)

        nova = types.SimpleNamespace(
            objects=Objects, exception=types.SimpleNamespace(
                NotFound=NotFound),
            context=types.SimpleNamespace(get_admin_context=lambda: None),
            servicegroup=types.SimpleNamespace(API=lambda: None))
        self.records = nova_records.NovaRecords(nova)

    def test_moves_the_node_record_then_the_server(self):
        self.assertEqual('moved', self.records.move(SERVERS[0], 'cn1', 'cn2'))
        self.assertEqual(('cn2', 2), (self.node.host, self.node.service_id))
        self.assertEqual('cn2', self.instance.host)

    def test_finishes_a_half_move(self):
        self.node.host = 'cn2'
        self.assertEqual('finished',
                         self.records.move(SERVERS[0], 'cn1', 'cn2'))
        self.assertFalse(hasattr(self.node, 'saved'))
        self.assertEqual('cn2', self.instance.host)

    def test_a_moved_server_is_left_alone(self):
        self.instance.host = 'cn3'
        self.assertEqual('already',
                         self.records.move(SERVERS[0], 'cn1', 'cn2'))
        self.assertEqual('cn1', self.node.host)

    def test_refuses_a_forced_down_destination(self):
        self.target.forced_down = True
        e = self.assertRaises(exception.RecoveryRefused, self.records.move,
                              SERVERS[0], 'cn1', 'cn2')
        self.assertIn('the destination cn2 is forced down', str(e))
        self.assertEqual('cn1', self.instance.host)

    def test_refuses_a_node_with_two_servers(self):
        self.others = [self.instance, FakeObject(uuid=SERVERS[1])]
        e = self.assertRaises(exception.RecoveryRefused, self.records.move,
                              SERVERS[0], 'cn1', 'cn2')
        self.assertIn('carries 2 servers in nova', str(e))
        self.assertEqual('cn1', self.node.host)


class TestInterrupted(RecoveryTestCase):

    def test_ctrl_c_drops_the_moves_not_begun(self):
        self.lose()
        job = self.job(workers=1)
        rows = job.plan()

        def interrupt():
            raise KeyboardInterrupt()
        move = self.records.after(2, interrupt)
        self.assertRaises(KeyboardInterrupt, job.apply, rows)
        self.assertEqual(2, len(self.records.moves))
        # A second run finishes: the two moved are not on cn1 any more.
        self.records.move = move
        again = self.job()
        rows = again.plan()
        self.assertEqual(6, len(rows))
        self.assertEqual({'moved'}, {r.result for r in again.apply(rows)})
        self.assertEqual({'cn2', 'cn3'},
                         {h for h, _n in self.records.placed.values()})
