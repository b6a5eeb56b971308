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

"""Reservations through Ironic allocations, on a real Ironic.

Each test starts its own Ironic (one conductor in ``rack1``, one in
``rack2``, on PostgreSQL) with fake-hardware nodes in ``available``, runs
real :class:`~ironic_partition.partition.partitioner.Partitioner` objects
(static membership) against it, and ends by listing every allocation Ironic
has: none may be left behind, whatever path was taken.

Small sets of nodes go through the API and the provision state machine
(``harness.make_available``: about 0.35 s a node with 8 workers, plus a
power-off, since Ironic only allocates nodes with a power state). The
concurrent test needs 130+ available nodes and inserts them in bulk in
the ``available`` state (3.5 s for 110 nodes, against 50 s through the
API), which Ironic's allocation treats the same way.
"""

from concurrent import futures
import json
import logging
import os
import threading
import time
import uuid

import fixtures
from openstack import exceptions as sdk_exc
from oslo_config import cfg
from oslotest import base

from ironic_partition.cmd import reserve as reserve_cmd
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.ironic import allocations
from ironic_partition.membership import static
from ironic_partition.partition import partitioner
from ironic_partition import settings as settings_mod
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.services import db as harness_db
from ironic_partition.tests.functional import test_harness

LOG = logging.getLogger(__name__)

DB_BACKEND = 'postgresql'
GROUPS = ['rack1', 'rack2']
TIMEOUT = 60

#: Each of the two rack1 services must get at least this many nodes.
MIN_SHARE = 53
#: Reservation threads per service in the concurrent test.
WORKERS = 4


def _conf(endpoint, host, key, peers):
    """A service's configuration."""
    conf = cfg.ConfigOpts()
    ip_conf.register_opts(conf)
    conf([], project='ironic-partition')
    conf.set_override('auth_type', 'none', 'ironic')
    conf.set_override('endpoint_override', endpoint, 'ironic')
    conf.set_override('host', host, 'ironic_partition')
    conf.set_override('membership_backend', 'static', 'ironic_partition')
    conf.set_override('partition_key', key, 'ironic')
    conf.set_override('peer_list', peers, 'ironic')
    return conf


class AllocationsTestCase(test_harness.TeardownAssertions,
                          base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.quiet_sdk_logs()
        harness_db.require_server(self, DB_BACKEND)
        self.ironic = harness.IronicFixture(db_backend=DB_BACKEND,
                                            conductor_groups=GROUPS)
        self.watch_teardown(self.ironic)
        self.useFixture(self.ironic)
        self.conn = harness.connect(self.ironic.endpoint)

    # -- helpers ----------------------------------------------------------

    def make_allocatable(self, nodes):
        """Move API-enrolled nodes to ``available`` with a power state.

        Ironic only allocates nodes with a power state; a node made
        available through the API has none until the power sync runs
        (every 60 s), so it is powered off explicitly.
        """
        start = time.monotonic()
        uuids = harness.make_available(self.conn, nodes)
        available = time.monotonic() - start
        with futures.ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda u: self.conn.baremetal.set_node_power_state(
                u, 'power off'), uuids))
        harness.wait_for(
            lambda: all(self.conn.baremetal.get_node(u).power_state
                        == 'power off' for u in uuids),
            TIMEOUT, 'the nodes to be powered off')
        LOG.info('Made %d nodes available in %.1f s (+%.1f s power off)',
                 len(uuids), available, time.monotonic() - start - available)
        return uuids

    def service(self, host, key, peers):
        conf = _conf(self.ironic.endpoint, host, key, peers)
        settings = settings_mod.from_conf(conf)
        membership = static.StaticMembership(settings, 'nova-compute')
        membership.start()
        self.addCleanup(membership.stop)
        client = settings_mod.ironic_client(conf)
        part = partitioner.Partitioner(settings, client, membership)
        return allocations.Reserver(client, part), part

    def node(self, node_id):
        return self.conn.baremetal.get_node(node_id)

    def assert_no_allocation_left(self):
        """List every allocation Ironic has: there must be none."""
        left = [(a.id, a.state, a.node_id)
                for a in self.conn.baremetal.allocations()]
        self.assertEqual([], left)
        marked = [n.id for n in self.conn.baremetal.nodes(
            associated=True)]
        self.assertEqual([], marked)

    # -- tests ------------------------------------------------------------

    def test_own_partition_only_and_release(self):
        rack1 = harness.enroll_api(self.conn, 4, ['rack1'])
        gold = harness.enroll_api(self.conn, 1, ['rack2'],
                                  resource_class='gold', name_prefix='gold')
        gpu = harness.enroll_api(self.conn, 1, ['rack2'], name_prefix='gpu')
        self.make_allocatable(rack1 + gold + gpu)
        self.conn.baremetal.set_node_traits(gpu[0]['uuid'], ['CUSTOM_GPU'])
        rack1_ids = {n['uuid'] for n in rack1}

        reserver, part = self.service('cn1', 'rack1', ['cn1'])

        # rack2 holds the only free gold node and the only GPU node: a
        # rack1 service never gets them, and says why.
        exc = self.assertRaises(exception.NoMatchingNode,
                                reserver.reserve, 'gold')
        msg = str(exc)
        self.assertIn("No node of conductor group 'rack1' matches resource "
                      "class 'gold'", msg)
        self.assertIn('candidates were restricted to the nodes this service '
                      '(host cn1) manages there', msg)
        self.assertIn('none of the 4 instance-less nodes considered', msg)
        self.assertIn('0 of them with that resource class', msg)
        self.assertIn('Ironic said: Failed to process allocation', msg)
        exc = self.assertRaises(exception.NoMatchingNode, reserver.reserve,
                                'baremetal', traits=['CUSTOM_GPU'])
        self.assertIn('4 of them with that resource class', str(exc))
        self.assertIn('[CUSTOM_GPU]', str(exc))
        self.assertIsNone(self.node(gold[0]['uuid']).instance_id)
        self.assertIsNone(self.node(gpu[0]['uuid']).instance_id)
        self.assert_no_allocation_left()

        # Those nodes were free and matching: rack2's own service gets
        # them.
        rack2_reserver, _ = self.service('cn9', 'rack2', ['cn9'])
        got = rack2_reserver.reserve('gold')
        self.assertEqual(gold[0]['uuid'], got.node_id)
        got_gpu = rack2_reserver.reserve('baremetal', traits=['CUSTOM_GPU'])
        self.assertEqual(gpu[0]['uuid'], got_gpu.node_id)
        rack2_reserver.release(got)
        rack2_reserver.release(got_gpu)

        # rack1's four nodes, each marked with its instance, then a clear
        # error.
        reservations = []
        for i in range(4):
            instance = str(uuid.uuid4())
            res = reserver.reserve('baremetal', instance_uuid=instance,
                                   name='vm-%d' % i)
            self.assertEqual(instance, res.allocation_id)
            node = self.node(res.node_id)
            self.assertEqual(instance, node.instance_id)
            self.assertEqual(instance, node.allocation_id)
            self.assertEqual('rack1', node.conductor_group)
            alloc = self.conn.baremetal.get_allocation(instance)
            self.assertEqual('vm-%d' % i, alloc.name)
            self.assertEqual('cn1', alloc.extra['ironic_partition_host'])
            self.assertEqual(sorted(rack1_ids), sorted(alloc.candidate_nodes))
            reservations.append(res)
        self.assertEqual(rack1_ids, {r.node_id for r in reservations})
        exc = self.assertRaises(exception.NoMatchingNode, reserver.reserve,
                                'baremetal')
        self.assertIn('none of the 4 instance-less nodes considered',
                      str(exc))

        # Release makes the node reservable again; twice is harmless.
        first = reservations[0]
        released = reserver.release(first)
        self.assertEqual(first.allocation_id, released.id)
        self.assertIsNone(self.node(first.node_id).instance_id)
        self.assertIsNone(reserver.release(first))
        self.assertIsNone(reserver.release(first.allocation_id))
        again = reserver.reserve('baremetal')
        self.assertEqual(first.node_id, again.node_id)
        # By node, twice.
        self.assertEqual(again.allocation_id,
                         reserver.release(node=again.node_id).id)
        self.assertIsNone(reserver.release(node=again.node_id))
        # By name.
        self.assertEqual(reservations[1].allocation_id,
                         reserver.release('vm-1').id)
        for res in reservations[2:]:
            reserver.release(res)
        self.assert_no_allocation_left()

    def test_two_services_of_one_group_reserve_concurrently(self):
        hosts = ['cn1', 'cn2']
        services = {h: self.service(h, 'rack1', hosts) for h in hosts}
        rack2 = {n['uuid'] for n in harness.bulk_enroll(
            self.ironic.config_file, 10, ['rack2'],
            provision_state='available', name_prefix='r2')}
        # Enough rack1 nodes that each service's share holds 50
        # reservations plus a few; the ring's split depends on the UUIDs.
        count = 0
        start = time.monotonic()
        while True:
            batch = 2 * MIN_SHARE + 24 if not count else 16
            harness.bulk_enroll(self.ironic.config_file, batch, ['rack1'],
                                provision_state='available', start=count)
            count += batch
            shares = {h: set(p.refresh().nodes)
                      for h, (r, p) in services.items()}
            if min(len(s) for s in shares.values()) >= MIN_SHARE:
                break
        LOG.info('Enrolled %d available rack1 nodes in %.1f s; shares %s',
                 count, time.monotonic() - start,
                 {h: len(s) for h, s in shares.items()})
        self.assertEqual(set(), shares['cn1'] & shares['cn2'])
        self.assertEqual(count, len(shares['cn1'] | shares['cn2']))

        lock = threading.Lock()
        got = {h: [] for h in hosts}
        ran_out = {h: [] for h in hosts}
        errors = []

        def work(host):
            reserver = services[host][0]
            while True:
                try:
                    res = reserver.reserve('baremetal')
                except exception.NoMatchingNode as e:
                    with lock:
                        ran_out[host].append(e)
                    return
                except Exception as e:
                    with lock:
                        errors.append((host, e))
                    return
                with lock:
                    got[host].append(res)

        start = time.monotonic()
        with futures.ThreadPoolExecutor(
                max_workers=WORKERS * len(hosts)) as pool:
            for f in [pool.submit(work, h)
                      for h in hosts for _ in range(WORKERS)]:
                f.result()
        seconds = time.monotonic() - start
        total = sum(len(v) for v in got.values())
        LOG.info('%d reservations by %d threads in %.1f s (%.0f ms each)',
                 total, WORKERS * len(hosts), seconds,
                 1000 * seconds / max(total, 1))

        self.assertEqual([], [(h, str(e)) for h, e in errors])
        all_nodes = [r.node_id for v in got.values() for r in v]
        self.assertEqual(len(all_nodes), len(set(all_nodes)),
                         'a node was reserved twice')
        for host in hosts:
            nodes = {r.node_id for r in got[host]}
            # Every node of the share, none outside it, >= 50 each.
            self.assertEqual(shares[host], nodes, host)
            self.assertGreaterEqual(len(got[host]), 50)
            self.assertEqual(WORKERS, len(ran_out[host]))
            exc = self.assertRaises(exception.NoMatchingNode,
                                    services[host][0].reserve, 'baremetal')
            self.assertIn("No node of conductor group 'rack1'", str(exc))
            self.assertIn('(host %s)' % host, str(exc))
            self.assertIn('none of the %d instance-less nodes considered'
                          % len(shares[host]), str(exc))
        marked = {n.id: n.instance_id for n in self.conn.baremetal.nodes(
            associated=True, details=True)}
        self.assertEqual({r.node_id: r.allocation_id
                          for v in got.values() for r in v}, marked)
        self.assertEqual(set(), rack2 & set(marked))

        # Release everything, concurrently too.
        with futures.ThreadPoolExecutor(max_workers=8) as pool:
            released = list(pool.map(
                lambda r: services[r.host][0].release(r),
                [r for v in got.values() for r in v]))
        self.assertEqual(total, len([r for r in released if r is not None]))
        self.assert_no_allocation_left()

    def test_invalid_requests_timeout_and_unreachable(self):
        nodes = harness.enroll_api(self.conn, 2, ['rack1'])
        self.make_allocatable(nodes)
        reserver, part = self.service('cn1', 'rack1', ['cn1'])
        part.refresh()

        # Invalid values are refused before anything is sent; Ironic
        # itself refuses each of them too.
        cand = [n['uuid'] for n in nodes]
        for kwargs, exc_class, ironic_body in (
                ({'resource_class': 'x' * 81},
                 exception.InvalidResourceClass,
                 {'resource_class': 'x' * 81}),
                ({'resource_class': 'baremetal', 'traits': ['gpu']},
                 exception.InvalidTrait,
                 {'resource_class': 'baremetal', 'traits': ['gpu']}),
                ({'resource_class': 'baremetal',
                  'traits': ['HW_NOT_A_REAL_TRAIT']},
                 exception.InvalidTrait,
                 {'resource_class': 'baremetal',
                  'traits': ['HW_NOT_A_REAL_TRAIT']}),
                ({'resource_class': 'baremetal', 'name': 'a b'},
                 exception.InvalidAllocationName,
                 {'resource_class': 'baremetal', 'name': 'a b'})):
            exc = self.assertRaises(exc_class, reserver.reserve, **kwargs)
            self.assertIn('Invalid', str(exc))
            self.assertRaises(sdk_exc.BadRequestException,
                              self.conn.baremetal.create_allocation,
                              candidate_nodes=cand, **ironic_body)
        self.assert_no_allocation_left()

        # A timeout too short for any allocation: it is deleted.
        exc = self.assertRaises(exception.AllocationTimeout,
                                reserver.reserve, 'baremetal', timeout=0)
        self.assertIn('did not become active within 0 s', str(exc))
        self.assertIn('it was deleted', str(exc))
        self.assert_no_allocation_left()

        # Ironic's API goes away while the reservation waits, and comes
        # back while the failed reservation cleans up after itself.
        events = []

        def sleep(seconds):
            if not events:
                self.ironic.stop_api()
                events.append(('stopped', time.monotonic()))
            elif (len(events) == 1
                  and time.monotonic() - events[0][1] > 3):
                self.ironic.start_api()
                events.append(('started', time.monotonic()))
            time.sleep(seconds)
        flaky = allocations.Reserver(reserver.client, part, sleep=sleep)
        exc = self.assertRaises(exception.IronicUnavailable, flaky.reserve,
                                'baremetal', timeout=2)
        self.assertEqual(['stopped', 'started'], [e for e, t in events])
        self.assertIn('while waiting for allocation', str(exc))
        self.assertIn('which was deleted', str(exc))
        self.assert_no_allocation_left()

        # Ironic down before the reservation: nothing is left either.
        self.ironic.stop_api()
        down = allocations.Reserver(reserver.client, part,
                                    cleanup_timeout=1)
        exc = self.assertRaises(exception.IronicUnavailable, down.reserve,
                                'baremetal')
        self.assertIn('while creating allocation', str(exc))
        self.assertIn('may have been created', str(exc))
        self.ironic.start_api()
        self.assert_no_allocation_left()

        # The CLI: the same path, JSON out, one line on error.
        path = harness_cli.agent_conf(
            os.path.join(self.useFixture(fixtures.TempDir()).path,
                         'cn1.conf'),
            self.ironic.endpoint, 'cn1', 'rack1', ['cn1'],
            self.useFixture(fixtures.TempDir()).path,
            membership_backend='static')

        def run(*argv):
            proc = harness_cli.run_cli('--config-file', path, *argv)
            return proc.returncode, proc.stdout, proc.stderr

        instance = str(uuid.uuid4())
        code, out, err = run('reserve', 'baremetal', '--name', 'demo',
                             '--instance-uuid', instance, '-f', 'json')
        self.assertEqual((0, ''), (code, err))
        doc = json.loads(out)
        self.assertEqual(instance, doc['allocation_id'])
        self.assertIn(doc['node_id'], cand)
        self.assertEqual('demo', self.conn.baremetal.get_allocation(
            instance).name)
        code, out, err = run('reserve', 'gold')
        self.assertEqual(reserve_cmd.EXIT_RESERVATION_FAILED, code)
        self.assertEqual(1, err.count('\n'))
        self.assertIn("No node of conductor group 'rack1'", err)
        code, out, err = run('release', 'demo', '-f', 'value', '-c',
                             'released', '-c', 'allocation', '-c', 'node')
        self.assertEqual((0, ''), (code, err))
        self.assertEqual(['True', instance, doc['node_id']],
                         out.splitlines())
        code, out, err = run('release', instance, '-f', 'json')
        self.assertEqual(0, code)
        self.assertEqual({'released': False, 'allocation': None,
                          'node': None, 'target': instance},
                         json.loads(out))
        self.assert_no_allocation_left()
