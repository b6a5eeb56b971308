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

"""The nova lane with servers: nova boots and deletes them through us.

One deployment for the class: a real Ironic (conductor groups ``rack1``
and ``rack2``, 36 fake-hardware nodes, automated cleaning on), glance,
neutron (for the delete path's port listing), placement, nova-api,
nova-scheduler, nova-conductor and three nova-compute services running
our driver: ``cn1`` and ``cn2`` share ``rack1``, ``cn3`` has ``rack2``.
Servers are booted with ``networks: none`` through the compute API.

Everything is asserted from outside our code: the servers API, the cell
database's ``instances`` and ``compute_nodes``, placement's allocations
and providers, Ironic's nodes, and the computes' resource-tracker lines.
See ``doc/source/contributor/nova-lane.rst``.
"""

import json
import logging
import os
import threading
import time

import fixtures
from testtools import content

from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.install import upstream
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.lanes import servers as harness_servers
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import glance as harness_glance
from ironic_partition.testing.services import neutron as harness_neutron
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.testing.services import nova_api as harness_api
from ironic_partition.tests.functional import _recover
from ironic_partition.tests.functional import test_nova_compute
from ironic_partition.tests.functional import test_upstream_fixes

LOG = logging.getLogger(__name__)

RACK1 = ['cn1', 'cn2']
RACK2 = ['cn3']
HOSTS = RACK1 + RACK2
NODES = 36
BURST = 30
RESOURCE_CLASS = 'CUSTOM_BAREMETAL'

#: nova's reaping of servers deleted while their compute was down
#: (``_cleanup_running_deleted_instances``), every this many seconds in
#: the lane (nova's default: 1800).
REAP_INTERVAL = 5

#: Seconds a fake-hardware deploy or cleaning takes here at most, for
#: the bounds (it takes 2 to 6 s on two loaded cores).
PROVISION = 60


class ServersLaneTest(_recover.RecoverScenario, test_nova_compute._Lane):
    """Servers booted and deleted through nova, under faults.

    The last test, a compute lost for good and its servers recovered, is
    in :mod:`._recover`.
    """

    CADENCE = harness_nova.SHORT_CADENCE
    PARTITION_OPTIONS = {'membership_stale_timeout': 20}
    SERVERS = True

    @classmethod
    def setUpClass(cls):
        super(test_nova_compute._Lane, cls).setUpClass()
        cls.started = time.time()
        cls.switched = False
        cls.fixtures = []
        try:
            cls._deploy()
        except BaseException:
            cls._tear_down()
            raise

    @classmethod
    def _use(cls, fixture):
        fixture.setUp()
        cls.fixtures.append(fixture)
        return fixture

    @classmethod
    def _deploy(cls):
        cls.ironic = cls._use(harness.IronicFixture(
            db_backend='postgresql', conductor_groups=['rack1', 'rack2'],
            extra_config={'conductor': {'automated_clean': True}}))
        nodes = harness.bulk_enroll(cls.ironic.config_file, NODES,
                                    ['rack1', 'rack2'],
                                    provision_state='available')
        cls.group = sorted(n['uuid'] for n in nodes
                           if n['conductor_group'] == 'rack1')
        cls.other = sorted(n['uuid'] for n in nodes
                           if n['conductor_group'] == 'rack2')
        cls.glance = cls._use(harness_glance.GlanceFixture())
        cls.neutron = cls._use(harness_neutron.NeutronFixture())
        # NOTE(ironic-partition): nova and placement on PostgreSQL. On
        # MariaDB (REPEATABLE READ), placement 16 wrote three allocations
        # on one node's provider (total 1) during a 30-server burst: its
        # retry after a generation conflict re-checks capacity in the
        # snapshot of the request's first read. See nova-lane.rst.
        cls.nova = cls._use(harness_nova.NovaFixture(
            cls.ironic.endpoint, RACK1, partition_key='rack1',
            db_backend='postgresql',
            cadence=cls.CADENCE, partition_options=cls.PARTITION_OPTIONS,
            glance_endpoint=cls.glance.endpoint,
            neutron_endpoint=cls.neutron.endpoint,
            extra_config={'DEFAULT': {
                'running_deleted_instance_poll_interval': REAP_INTERVAL}}))
        cls.nova.add_compute('cn3', config={'ironic': {
            'partition_key': 'rack2', 'peer_list': 'cn3'}})
        cls.nova.wait_for_services(HOSTS)
        cls.api = cls._use(harness_api.NovaAPIFixture(cls.nova, cls.glance))
        cls.api.discover_hosts()
        cls.conn = cls.api.connection()
        cls.records = harness_servers.ServerRecords(
            cls.nova.cell_url, cls.conn, harness.connect(cls.ironic.endpoint))
        cls.recorder = novalane.Recorder(cls.nova.cell_url,
                                         cls.nova.placement_endpoint)
        cls.recorder.start()

    @classmethod
    def _tear_down(cls):
        if getattr(cls, 'recorder', None) is not None:
            cls.recorder.stop()
        if getattr(cls, 'records', None) is not None:
            cls.records.close()
        for fixture in reversed(getattr(cls, 'fixtures', [])):
            try:
                fixture.cleanUp()
            except Exception:
                LOG.exception('Cleaning up %s failed', fixture)

    def setUp(self):
        super().setUp()
        for name in ('keystoneauth', 'urllib3', 'openstack'):
            logger = logging.getLogger(name)
            self.addCleanup(logger.setLevel, logger.level)
            logger.setLevel(logging.INFO)
        self.created = []
        self.addCleanup(self._delete_leftovers)
        # NOTE(ironic-partition): a test that failed half-way may have left
        # a compute stopped or paused; every test starts with all three.
        for compute in self.nova.computes.values():
            compute.resume()
            if not compute.running():
                compute.start()

    # -- driving nova ---------------------------------------------------

    def boot_many(self, count, prefix, **kwargs):
        ids = self.api.boot_many(count, prefix, **kwargs)
        self.created.extend(ids)
        return ids

    def wait_final(self, ids, timeout):
        return self.api.wait_final(ids, timeout)

    def delete_and_wait(self, ids, timeout):
        self.api.delete_and_wait(ids, timeout)

    def _delete_leftovers(self):
        left = list(self.api.servers(self.created))
        if left:
            try:
                self.delete_and_wait(left, 300)
            except Exception:
                LOG.exception('Could not delete servers %s', left)

    def faults(self, servers):
        """The failed servers' faults, with the computes' lines on them.

        The lines (warnings and errors naming a failed server, tracebacks
        included) are attached as the ``build-failures`` detail, so that a
        failure says why after the lane's logs are gone.
        """
        faults = harness_api.faults(servers)
        if faults:
            lines = []
            for host, compute in sorted(self.nova.computes.items()):
                with open(compute.log_path, 'rb') as stream:
                    for raw in stream:
                        line = raw.decode('utf-8', 'replace')
                        if (any(server in line for server in faults) and
                                (' ERROR ' in line or ' WARNING ' in line)):
                            lines.append('%s: %s' % (host, line.rstrip()))
            self.addDetail('build-failures', content.text_content(
                '\n'.join(lines[-400:]) or 'no compute logged them'))
        return faults

    def delete_all_and_check(self, ids, since, delete=None):
        """Delete servers, then check nothing is left and nothing broke.

        Every node back to ``available``, records agree, no allocation
        or usage left, every node on exactly one compute, no node held by
        two computes since ``since``, no row or provider deleted.

        :param ids: the servers the test created.
        :param since: the start of the observation.
        :param delete: the servers to delete; ``ids`` by default.
        """
        self.delete_and_wait(ids if delete is None else delete,
                             PROVISION * 4)
        self.wait_nodes_available(PROVISION * 4)
        self.assert_records_agree(ids)
        self.assert_no_usage()
        self.steady()
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()

    def assert_only_interrupted(self, errors, nodes, hosts):
        """Every failed build was interrupted by its compute's restart.

        When a compute starts, nova sets to ERROR, without a fault, the
        builds it had been sent and not finished: those it had not claimed
        yet ("Instance spawn was interrupted before instance_claim",
        logged at debug by ``init_host``) and those it had (still
        BUILDING on this host). They keep their allocation, on the node
        they were scheduled to, until deleted. No build may fail for any
        other reason: not ownership (a refused spawn is rescheduled), not
        retries.

        :param errors: from :meth:`faults`.
        :param nodes: the nodes of the computes that were restarted.
        :param hosts: the computes that were restarted.
        """
        instances = self.records.instances(list(errors))
        for server_id, (status, message) in errors.items():
            self.assertEqual('ERROR', status)
            self.assertIsNone(message, server_id)
            self.assertIn(instances[server_id].host, [None] + list(hosts),
                          server_id)
            allocs = self.records.allocations(server_id)
            self.assertTrue(set(allocs) <= set(nodes), (server_id, allocs))

    def assert_double_holds_after(self, resumed, since):
        """Nodes held twice only after a SIGCONT, each for under a run.

        After SIGCONT nova acts on its old view until its next
        resource-tracker run: only nova's run can end that hold (the
        lane's ``test_e_sigstop_longer_than_lease`` measures the same).

        :param resumed: when the paused compute was continued.
        :param since: the start of the observation.
        """
        seconds, overlaps = self.double_holds(since)
        self.addDetail('double-holds', content.text_content(
            '%.1f node-seconds after SIGCONT: %r' % (seconds, overlaps)))
        for spans in overlaps.values():
            for start, end, _hosts in spans:
                self.assertGreaterEqual(start, resumed - 1)
                self.assertLess(end - start, test_nova_compute.SLACK)

    def assert_records_agree(self, ids):
        problems = self.records.problems(ids, RESOURCE_CLASS)
        self.assertEqual([], problems)

    def wait_nodes_available(self, timeout):
        harness.wait_for(self.records.nodes_available, timeout,
                         'every node back to available', interval=1)

    def assert_no_usage(self):
        self.assertEqual({}, self.records.usages())

    # -- the split, per group, instance nodes with their server's host --

    def expected_hosts(self, live):
        # NOTE(ironic-partition): a node carries an instance when Ironic
        # says so (seed 003); a build its compute claimed but never
        # reserved in Ironic leaves the node instance-less.
        hosts = {uuid: i.host for uuid, i in self.records.instances()
                 .items() if not i.deleted}
        instances = {n.id: hosts.get(n.instance_id)
                     for n in self.records.nodes().values()
                     if n.instance_id}
        rack1 = novalane.ring_owners([h for h in live if h in RACK1],
                                     self.group)
        expected = {}
        for node in self.group + self.other:
            if node in instances:
                expected[node] = instances[node]
            elif node in rack1:
                expected[node] = rack1[node]
            else:
                expected[node] = 'cn3'
        return expected

    def split_done(self, live):
        expected = self.expected_hosts(live)
        hosts_of = self.recorder.hosts_of()
        providers = getattr(self.recorder, 'current_providers', {})
        for node, host in expected.items():
            if [h.lower() for h in hosts_of.get(node, [])] != [host]:
                return False
            if providers.get(node) != node:
                return False
        return True

    def steady(self):
        return self.wait_split(HOSTS, self.takeover_bound() * 2)

    def held_at(self, host, node, when):
        events = novalane.parse_compute_log(
            self.nova.computes[host].log_path)
        return any(start <= when <= end for start, end in
                   novalane.holds(events).get(node, []))

    # -- the scenarios --------------------------------------------------

    def test_a_boot_and_delete_a_burst(self):
        self.steady()
        since = time.time()
        ids = self.boot_many(BURST, 'burst')
        servers = self.wait_final(ids, PROVISION * 4)
        took = time.time() - since
        self.assertEqual({}, self.faults(servers))
        self.assert_records_agree(ids)
        instances = self.records.instances(ids)
        per_host = {h: 0 for h in HOSTS}
        for server_id in ids:
            inst = instances[server_id]
            per_host[inst.host] += 1
            # Built on a node its compute held (reported) at the time.
            launched = servers[server_id].launched_at
            stamp = time.mktime(time.strptime(launched[:19],
                                              '%Y-%m-%dT%H:%M:%S'))
            self.assertTrue(
                self.held_at(inst.host, inst.node, stamp) or
                self.held_at(inst.host, inst.node, stamp - time.timezone),
                '%s built on %s, not held by %s' % (server_id, inst.node,
                                                    inst.host))
        self.assertEqual(BURST, len({instances[i].node for i in ids}))
        self.addDetail('burst', content.text_content(
            '%d servers ACTIVE in %.1f s; per compute %r' % (
                BURST, took, per_host)))
        self.delete_all_and_check(ids, since)

    def _write_instance_hosts(self):
        path = os.path.join(self.nova.workdir, 'instance-hosts.json')
        with open(path, 'w') as stream:
            json.dump([{'ID': s.id, 'Host': s.compute_host}
                       for s in self.conn.compute.servers(
                           details=True, all_projects=True)], stream)
        return path

    def status_of(self, host):
        """``ironic-partition status`` with a compute's own nova.conf."""
        extra = os.path.join(self.nova.workdir, 'status-%s.conf' % host)
        harness_process.write_config(extra, {'ironic_partition': {
            'host': host}}, join_lists=True)
        out = harness_cli.run_cli(
            '--config-file', self.nova.computes[host].config_file,
            '--config-file', extra, 'status', '--role', 'nova-compute',
            '--instance-hosts', self._write_instance_hosts(), '-f', 'json')
        self.assertEqual(0, out.returncode, out.stderr)
        return json.loads(out.stdout)

    def test_b_compute_killed_during_a_burst(self):
        self.steady()
        since = time.time()
        ids = self.boot_many(BURST, 'kill')
        cn2_nodes = {n for n, hosts in self.recorder.hosts_of().items()
                     if hosts == ['cn2']}
        killed = time.time()
        self.nova.kill_compute('cn2')

        # The survivors: cn1 takes cn2's instance-less nodes over, while
        # the servers cn2 built stay with cn2 (stranded).
        def settled():
            # Every build is done, or was accepted by the dead compute, or
            # waits in its queue (scheduled to one of its nodes).
            instances = self.records.instances(ids)
            servers = self.api.servers(ids)
            return all(
                servers[i].status in harness_servers.FINAL_STATES or
                (i in instances and instances[i].host == 'cn2') or
                set(self.records.allocations(i)) & cn2_nodes
                for i in ids)
        harness.wait_for(settled, PROVISION * 4,
                         'the builds not on cn2 to end', interval=1)
        self.wait_split(['cn1', 'cn3'], self.takeover_bound() + PROVISION)
        on_cn2 = {i: inst for i, inst in self.records.instances(ids).items()
                  if inst.host == 'cn2'}
        active_on_cn2 = {i: inst for i, inst in on_cn2.items()
                         if inst.vm_state == 'active'}
        hosts_of = self.recorder.hosts_of()
        status = self.status_of('cn1')
        stranded = {row['node']: row for row in status['stranded']}
        for server_id, inst in active_on_cn2.items():
            # Reported by nobody but its dead owner's last row.
            self.assertEqual(['cn2'], hosts_of.get(inst.node))
            self.assertIn(inst.node, stranded)
            self.assertEqual('cn2', stranded[inst.node]['owner'])
        self.addDetail('stranded', content.text_content(
            '%d ACTIVE servers on cn2 when killed; status: %r' % (
                len(active_on_cn2), status['stranded'])))
        restarted = time.time()
        self.nova.start_compute('cn2')
        # Bound: nova-compute's start and its first resource-tracker run,
        # then its instances interrupted in BUILD are set to ERROR.
        lost = self.wait_final_or_lost(ids, cn2_nodes, restarted)
        final_at = time.time() - killed
        if lost:
            # A platform limit, asserted as such: nova never retries or
            # fails these; an operator deletes them (admin/servers.rst).
            self.addDetail('lost-builds', content.text_content(
                'builds cn2 received and lost when killed, left in BUILD '
                'without a host by nova: %s' % sorted(lost)))
            self.delete_and_wait(sorted(lost), 60)
            ids = [i for i in ids if i not in lost]
        servers = self.api.servers(ids)
        errors = self.faults(servers)
        # A named fault (a reschedule that found every alternate taken,
        # in a burst on a fleet 30/36 full), or nova's fault-less ERROR of
        # a build interrupted by cn2's death.
        self.assert_only_interrupted(
            {i: e for i, e in errors.items() if not e[1]}, cn2_nodes,
            ['cn2'])
        for server_id, (status_, message) in errors.items():
            self.assertEqual('ERROR', status_)
            self.assertNotIn('may not be deployed', message or '')
        self.addDetail('kill-burst', content.text_content(
            'killed cn2 at burst end; %d ACTIVE, %d ERROR %r; no server in '
            'BUILD %.1f s after the kill (restart %.1f s after it)' % (
                len(servers) - len(errors), len(errors), errors, final_at,
                restarted - killed)))
        self.steady()
        for server_id, inst in active_on_cn2.items():
            self.assertEqual(['cn2'], self.recorder.hosts_of()[inst.node])
        self.assert_records_agree(ids)
        self.assert_no_double_hold(since=since)
        self.assert_no_damage()
        self.delete_and_wait(ids, PROVISION * 4)
        self.wait_nodes_available(PROVISION * 4)
        self.assert_records_agree(ids)
        self.assert_no_usage()

    def wait_final_or_lost(self, ids, nodes, restarted):
        """Wait until each server is final, or a build its compute lost.

        nova acknowledges an RPC cast when a compute receives it, before
        the compute acts on it. A build the killed compute had received
        and not yet claimed is lost with the process: the server stays in
        BUILD, without a host, for ever (``instance_build_timeout`` only
        looks at a compute's own hosts' servers) and keeps the allocation
        the scheduler made on the killed compute's node. A build that
        waited in the compute's queue while it was down is received when
        its RPC server starts (it logs "Join ServiceGroup" after that) and
        claimed within seconds, so it is only taken for lost once
        ``PROVISION`` seconds have passed since then.

        nova's ``init_host``, before that, sets to ERROR every build
        scheduled to the compute's nodes and not claimed, those whose
        cast still waits in its queue included; the RPC server then
        receives these casts and builds them all the same (ERROR, then
        BUILD, then ACTIVE: seen in CI, the five queued builds of a
        burst). So no server counts as final until ``SLACK`` seconds
        after the RPC server started, by when each queued build has been
        received and saved BUILDING again.

        :param ids: the server IDs.
        :param nodes: the killed compute's nodes (provider UUIDs).
        :param restarted: when the killed compute was started again.
        :returns: the set of lost builds' server IDs.
        """
        # NOTE(ironic-partition): the restarted process holds nova's
        # start while its peers hand its nodes back (at most a lease and
        # an interval, ``_await_handover``) after its own start, slow
        # beside the other lanes: a restart's bound, as in the other lanes.
        line = self.wait_log('cn2', 'Running periodic task',
                             restarted, self.takeover_bound() * 2)
        joined = novalane.line_time(line)
        received = joined + test_nova_compute.SLACK
        lost = set()

        def settled():
            lost.clear()
            if time.time() < received:
                return False
            servers = self.api.servers(ids)
            instances = self.records.instances(ids)
            for i in ids:
                server = servers.get(i)
                if server is not None and (
                        server.status in harness_servers.FINAL_STATES):
                    continue
                inst = instances.get(i)
                if (server is None or server.status != 'BUILD' or
                        (inst is not None and inst.host) or
                        not set(self.records.allocations(i)) & nodes or
                        time.time() < joined + PROVISION):
                    return False
                lost.add(i)
            return True
        harness.wait_for(settled, self.takeover_bound() + PROVISION,
                         'every build to end or be one cn2 lost',
                         interval=1, check=self.nova.check_services)
        return set(lost)

    def orphan_bound(self):
        """Seconds from the owner's start to its orphans being reported.

        nova-compute's start and first resource-tracker run (the driver
        then reports the orphaned node as its own), nova's reaping period,
        the tear down and cleaning, then the owner releases the node at
        its next refresh and the ring owner claims and reports it at the
        one after: start + reap + provision + 3 refreshes, plus slack.
        """
        interval = self.cadence('update_resources_interval', 60)
        return (self.takeover_bound() + REAP_INTERVAL + PROVISION +
                3 * interval)

    def test_c_delete_while_the_owner_is_down(self):
        self.steady()
        since = time.time()
        ids = self.boot_many(6, 'orphan')
        servers = self.wait_final(ids, PROVISION * 2)
        self.assertEqual({}, self.faults(servers))
        instances = self.records.instances(ids)
        counts = {h: sum(1 for i in instances.values() if i.host == h)
                  for h in RACK1}
        owner = max(RACK1, key=lambda h: counts[h])
        mine = [i for i, inst in instances.items() if inst.host == owner]
        self.assertTrue(mine)
        nodes = {instances[i].node for i in mine}
        self.nova.stop_compute(owner)
        harness.wait_for(
            lambda: any(s.host == owner and s.state == 'down'
                        for s in self.conn.compute.services()),
            self.cadence('service_down_time', 60) + 30,
            '%s to be down in nova' % owner, interval=1)
        # nova-api deletes them alone (a local delete): the nodes stay
        # deployed with their instances, orphaned until the owner returns.
        self.delete_and_wait(mine, 60)
        ironic_nodes = self.records.nodes()
        for node in nodes:
            self.assertEqual('active', ironic_nodes[node].provision_state)
            self.assertIsNotNone(ironic_nodes[node].instance_id)
        back = time.time()
        self.nova.start_compute(owner)
        bound = self.orphan_bound()
        harness.wait_for(
            lambda: all(self.records.nodes()[n].provision_state ==
                        'available' for n in nodes),
            bound, 'the orphaned nodes to be cleaned', interval=1)
        took = self.wait_split(HOSTS, bound) + (time.time() - back)
        self.addDetail('orphans', content.text_content(
            '%d servers deleted while %s was down; nodes cleaned and '
            'reported by their ring owner %.1f s after its start (bound '
            '%d s)' % (len(mine), owner, time.time() - back, bound)))
        self.assertLess(took, bound * 2)
        self.delete_all_and_check(
            ids, since, delete=[i for i in ids if i not in mine])

    def test_d_churn_with_rolling_restarts(self):
        self.steady()
        since = time.time()
        stop = threading.Event()
        errors = []
        booted = []
        deleted = []

        def churn():
            n = 0
            live = []
            while not stop.is_set():
                try:
                    live.append(self.api.boot('churn-%d' % n).id)
                    booted.append(live[-1])
                    self.created.append(live[-1])
                    n += 1
                    if len(live) > 4:
                        deleted.append(live.pop(0))
                        self.conn.compute.delete_server(deleted[-1])
                except Exception as e:
                    errors.append(repr(e))
                stop.wait(3)

        thread = threading.Thread(target=churn, daemon=True)
        thread.start()
        try:
            for host in HOSTS:
                step = time.time()
                self.nova.restart_compute(host)
                self.wait_log(host, 'Final resource view', step, 120)
            # At least 45 s of churn, whatever the restarts took.
            stop.wait(max(0, since + 45 - time.time()))
        finally:
            stop.set()
            thread.join(60)
        self.assertEqual([], errors)
        # NOTE(ironic-partition): a server whose delete is still running
        # is listed until it is gone: only the never deleted ones count.
        alive = [i for i in booted if i not in deleted]
        servers = self.wait_final(alive, PROVISION * 4)
        self.assert_only_interrupted(self.faults(servers),
                                     self.group + self.other, HOSTS)
        self.addDetail('churn', content.text_content(
            '%d boots and %d deletes in %.0f s across 3 rolling restarts; '
            'builds interrupted by a restart: %r' % (
                len(booted), len(deleted), time.time() - since,
                self.faults(servers))))
        self.assertGreater(len(booted), 10)
        self.delete_all_and_check(booted, since)

    def test_e_spawn_refused_when_ownership_moved(self):
        self.steady()
        since = time.time()
        # Two nodes carry a trait: one cn1 holds, one cn2 holds. A flavor
        # asking for it gives the scheduler exactly these two candidates:
        # one is the build's host, the other its alternate.
        owners = novalane.ring_owners(RACK1, self.group)
        picked = {host: sorted(n for n in self.group if owners[n] == host)[0]
                  for host in RACK1}
        ironic = self.records.ironic
        for node in picked.values():
            ironic.baremetal.add_node_trait(node, 'CUSTOM_RACE')
        self.addCleanup(lambda: [ironic.baremetal.remove_node_trait(
            n, 'CUSTOM_RACE', ignore_missing=True) for n in picked.values()])
        flavor = self.conn.compute.create_flavor(
            name='bm.race', ram=1024, vcpus=1, disk=10)
        self.addCleanup(self.conn.compute.delete_flavor, flavor)
        self.conn.compute.create_flavor_extra_specs(flavor, {
            'resources:%s' % RESOURCE_CLASS: '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0',
            'trait:CUSTOM_RACE': 'required'})

        def traits_in_placement():
            for node in picked.values():
                traits = self.conn.placement.get(
                    '/resource_providers/%s/traits' % node, headers={
                        'OpenStack-API-Version': 'placement 1.6'}).json()
                if 'CUSTOM_RACE' not in traits.get('traits', []):
                    return False
            return True
        harness.wait_for(traits_in_placement, self.takeover_bound(),
                         'the trait in placement', interval=1)

        # Both computes stop before the build is scheduled: it waits in
        # its host's queue. The other compute comes back and takes the
        # paused one's nodes over; then the build's host comes back and
        # must refuse the node it was given.
        for host in RACK1:
            self.nova.pause_compute(host)
        try:
            server = self.conn.compute.create_server(
                name='race', image_id=self.glance.image_id,
                flavor_id=flavor.id, networks='none')
            self.created.append(server.id)
            first = harness.wait_for(
                lambda: self.records.allocations(server.id), 30,
                'the scheduler to allocate the build', interval=0.5)
            (node,) = first
            target = [h for h, n in picked.items() if n == node][0]
            other = [h for h in RACK1 if h != target][0]
            self.nova.resume_compute(other)
            harness.wait_for(
                lambda: self.recorder.hosts_of().get(node) == [other],
                self.takeover_bound() * 2,
                '%s to take %s over from %s' % (other, node, target),
                interval=0.5)
            before = self.records.nodes()[node]
        finally:
            resumed = time.time()
            for host in RACK1:
                self.nova.resume_compute(host)
        servers = self.wait_final([server.id], PROVISION * 2)
        built = servers[server.id]
        self.assertEqual('ACTIVE', built.status, self.faults(servers))
        self.assertEqual(other, built.compute_host)
        self.assertEqual(picked[other], built.hypervisor_hostname)
        # The build's host refused it before any write, in one of three
        # places, whichever came first after the resume: nova's claim
        # asking our driver (node_is_available), our spawn check (the
        # claim passed before the claims ran out), or nova's claim alone
        # (a resource-tracker run had already dropped the node this
        # service no longer lists; nova logs it at debug level).
        line = self.wait_log(
            target, '|'.join([
                'Node %s is not available to this service now' % node,
                'Refusing to deploy to node %s' % node,
                'Attempt to claim resources for instance %s on unknown '
                'node %s failed' % (server.id, node)]), since, 30)
        self.addDetail('refusal', content.text_content(line))
        # Nothing was written to the refused node.
        after = self.records.nodes()[node]
        self.assertIsNone(after.instance_id)
        self.assertEqual('available', after.provision_state)
        self.assertIsNone(before.instance_id)
        self.assert_records_agree([server.id])
        self.delete_and_wait([server.id], PROVISION * 2)
        self.wait_nodes_available(PROVISION * 4)
        self.assert_no_usage()
        self.steady()
        self.assert_double_holds_after(resumed, since)
        self.assert_no_damage()

    def server_status(self, server_id):
        return self.api.servers([server_id])[server_id].status

    def test_f_claims_database_down_at_start(self):
        # The membership and claims database does not answer when a
        # compute holding servers starts: it runs anyway, not ready, its
        # servers' power actions work through nova, and it joins when the
        # database answers.
        self.steady()
        since = time.time()
        ids = self.boot_many(4, 'dbdown')
        servers = self.wait_final(ids, PROVISION * 2)
        self.assertEqual({}, self.faults(servers))
        instances = self.records.instances(ids)
        owner = max(HOSTS, key=lambda h: sum(
            1 for i in instances.values() if i.host == h))
        server_id = sorted(i for i in ids if instances[i].host == owner)[0]
        node = instances[server_id].node
        self.nova.stop_compute(owner)
        self.nova.membership_proxy.cut()
        try:
            started = time.time()
            self.nova.start_compute(owner)
            line = self.wait_log(owner, 'Not ready: the membership and '
                                 'claims database does not answer',
                                 started, self.takeover_bound())
            self.addDetail('not-ready', content.text_content(line))
            # Power off and on through nova: only the new process of the
            # owner, which runs without the database, can do it.
            self.conn.compute.stop_server(server_id)
            harness.wait_for(
                lambda: (self.server_status(server_id) == 'SHUTOFF' and
                         self.records.nodes()[node].power_state ==
                         'power off'),
                PROVISION, 'the server stopped through %s' % owner,
                interval=1, check=self.nova.check_services)
            self.conn.compute.start_server(server_id)
            harness.wait_for(
                lambda: (self.server_status(server_id) == 'ACTIVE' and
                         self.records.nodes()[node].power_state ==
                         'power on'),
                PROVISION, 'the server started through %s' % owner,
                interval=1, check=self.nova.check_services)
            self.assertTrue(self.nova.computes[owner].running())
        finally:
            self.nova.membership_proxy.restore()
        # It joins: the split is back, its servers' nodes with it.
        self.wait_log(owner, 'Registered as host %s ' % owner, started,
                      self.takeover_bound())
        self.steady()
        self.assertEqual(owner, self.records.instances([server_id])[
            server_id].host)
        self.delete_all_and_check(ids, since)

    # -- rebuild, with the fixes proposed upstream -----------------------

    def _rebuild(self, server_id, microversion):
        """Ask nova to rebuild a server at a compute API microversion."""
        resp = self.conn.compute.post(
            '/servers/%s/action' % server_id,
            json={'rebuild': {'imageRef': self.glance.image_id}},
            microversion=microversion)
        self.assertEqual(202, resp.status_code, resp.text)

    def _wait_rebuilt(self, server_id, status):
        """Wait until a rebuild ended; the server's status and fault."""
        def ended():
            server = self.api.servers([server_id])[server_id]
            if server.task_state is None and server.status == status:
                return server
        server = harness.wait_for(ended, PROVISION * 2,
                                  'the rebuild of %s to end %s' % (
                                      server_id, status),
                                  interval=1, check=self.nova.check_services)
        return (server.fault or {}).get('message')

    def _last_action_details(self, server_id, action):
        """The error of the last ``action`` on a server, as nova records it.

        An ACTIVE server shows no fault: a refused operation that nova
        rolled back is in the server's instance actions, whose events
        carry the error's message from compute API 2.84 on
        (``openstack server event show``).
        """
        resp = self.conn.compute.get(
            '/servers/%s/os-instance-actions' % server_id,
            microversion='2.84')
        self.assertEqual(200, resp.status_code, resp.text)
        request_id = [a['request_id'] for a in resp.json()['instanceActions']
                      if a['action'] == action][0]
        resp = self.conn.compute.get(
            '/servers/%s/os-instance-actions/%s' % (server_id, request_id),
            microversion='2.84')
        self.assertEqual(200, resp.status_code, resp.text)
        return [(e['event'], e['result'], e.get('details'))
                for e in resp.json()['instanceAction']['events']]

    def _conductor_log(self, needle, since):
        for cond in self.ironic.conductors:
            with open(cond.log_path, 'rb') as stream:
                for raw in stream:
                    line = raw.decode('utf-8', 'replace')
                    when = novalane.line_time(line)
                    if needle in line and when and when >= since:
                        return line.rstrip()
        return None

    def _with_fixes(self, fixed_nova, fixed_ironic):
        """Restart the computes and conductors on the fixed copies."""
        # NOTE(ironic-partition): cleanups run last first: registered
        # before the environments' restores, the restart runs after them,
        # on the releases, and before the copies are removed.
        self.addCleanup(self._restart_all)
        for cond in self.ironic.conductors:
            self.addCleanup(setattr, cond, 'env', cond.env)
            cond.env = upstream.pythonpath(fixed_ironic, cond.env)
        for host in HOSTS:
            compute = self.nova.computes[host]
            self.addCleanup(setattr, compute, 'env', compute.env)
            compute.env = upstream.pythonpath(fixed_nova, compute.env)
        self._restart_all()

    def _restart_all(self):
        restarted = time.time()
        for cond in list(self.ironic.conductors):
            self.ironic.restart_conductor(cond)
        for host in HOSTS:
            self.nova.restart_compute(host)
        for host in HOSTS:
            self.wait_log(host, 'Registered as host %s ' % host, restarted,
                          self.takeover_bound() * 2)
        self.steady()

    def test_h_rebuild_with_the_upstream_fixes(self):
        # nova 34 with Ironic 39 rebuilds no bare metal server: from
        # compute API 2.93 nova-api asks every rebuild to re-image a boot
        # volume, which nova's Ironic driver refuses; below, Ironic's
        # conductor fails on an unbound local. Both on the releases, then
        # a rebuild with the fixes we propose (contributor/upstream/
        # rebuild), in copies that only this lane's computes and
        # conductors import.
        harness.skip_unless_long(self)
        self.steady()
        since = time.time()
        (server_id,) = self.boot_many(1, 'rebuild')
        servers = self.wait_final([server_id], PROVISION * 2)
        self.assertEqual({}, self.faults(servers))
        node = self.records.instances([server_id])[server_id].node
        self._rebuild(server_id, '2.93')
        fault = self._wait_rebuilt(server_id, 'ERROR')
        self.assertIn("Ironic doesn't support rebuilding volume backed "
                      "instances", fault)
        asked = time.time()
        self._rebuild(server_id, '2.92')
        self._wait_rebuilt(server_id, 'ERROR')
        line = harness.wait_for(
            lambda: self._conductor_log(
                "UnboundLocalError: cannot access local variable "
                "'auto_lessee'", asked), 30,
            "Ironic's conductor to fail the rebuild", interval=0.5)
        self.addDetail('release-failures', content.text_content(
            '2.93: %s\n2.92: %s' % (fault, line)))
        tmp = self.useFixture(fixtures.TempDir()).path
        fixed_nova = upstream.patched_copy(
            'nova', [test_upstream_fixes.NOVA_REBUILD,
                     test_upstream_fixes.NOVA_REBUILD_FAILURE,
                     test_upstream_fixes.NOVA_ABORT_CLAIM],
            os.path.join(tmp, 'nova'))
        fixed_ironic = upstream.patched_copy(
            'ironic', test_upstream_fixes.IRONIC_REBUILD,
            os.path.join(tmp, 'ironic'))
        self._with_fixes(fixed_nova, fixed_ironic)
        rebuilt = time.time()
        self._rebuild(server_id, '2.93')
        self.assertIsNone(self._wait_rebuilt(server_id, 'ACTIVE'))
        took = time.time() - rebuilt
        # The same server on the same node, redeployed by Ironic.
        instance = self.records.instances([server_id])[server_id]
        self.assertEqual(node, instance.node)
        after = self.records.nodes()[node]
        self.assertEqual(server_id, after.instance_id)
        self.assertEqual('active', after.provision_state)
        self.assertIsNotNone(self._conductor_log(
            'Node %s moved to provision state "deploying" from state '
            '"active"' % node, rebuilt))
        self.addDetail('rebuild', content.text_content(
            'ACTIVE again %.1f s after the rebuild at 2.93' % took))
        # Its compute restarted while the claims database does not
        # answer: not ready, it may not act on the node. A rebuild is
        # refused before Ironic is asked; nova keeps the server ACTIVE,
        # the reason in the rebuild's event (on the release, nova's
        # failure path turned it into a KeyError and the server into
        # ERROR).
        owner = instance.host
        self.nova.stop_compute(owner)
        self.nova.membership_proxy.cut()
        try:
            started = time.time()
            self.nova.start_compute(owner)
            self.wait_log(owner, 'Not ready: the membership and claims '
                          'database does not answer', started,
                          self.takeover_bound())
            refused = time.time()
            self._rebuild(server_id, '2.93')
            self.assertIsNone(self._wait_rebuilt(server_id, 'ACTIVE'))
            events = self._last_action_details(server_id, 'rebuild')
            (result, details), = [(r, d) for e, r, d in events
                                  if e == 'compute_rebuild_instance']
            self.assertEqual('Error', result)
            self.assertRegex(
                details, r'^Rebuild refused before anything was written to '
                r'node %s: compute %s may not act on it now \(no refresh '
                r'of this service has succeeded yet; claim held by \w+\); '
                r'the server is unchanged, retry once the compute is '
                r'ready$' % (node, owner))
            self.assertIsNone(self._conductor_log(
                'Node %s moved to provision state "deploying"' % node,
                refused))
            self.assertEqual('active',
                             self.records.nodes()[node].provision_state)
            self.addDetail('refused-rebuild', content.text_content(
                repr(events)))
        finally:
            self.nova.membership_proxy.restore()
        self.wait_log(owner, 'Registered as host %s ' % owner, started,
                      self.takeover_bound())
        self.steady()
        self.delete_all_and_check([server_id], since)
