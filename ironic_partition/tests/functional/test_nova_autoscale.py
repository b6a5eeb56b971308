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

"""Computes added and removed on a schedule, with servers booting.

One deployment for the class: a real Ironic (36 fake-hardware nodes),
glance, neutron, placement, nova-api, nova-scheduler, nova-conductor and
nova-computes on our driver, unpartitioned (no ``conductor_group``, no
``peer_list``: every Ironic compute shares every node, as a Kubernetes
Deployment of identical replicas would run them) on one shared claims
database. The replicas go 1 -> 4 -> 2 -> 5 -> 1, a change every two
resource-tracker runs, while servers are booted through nova-api
unpinned (the scheduler picks among the replicas) and deleted.

A replica removed is drained first, as an autoscaler's pre-stop hook
does: the servers it runs are deleted and nova sees it down before new
builds are scheduled; then SIGTERM (nova's graceful stop). The nodes of
a server stay with the compute that runs it (seed 003), so a replica
removed with servers strands them until it returns (see the admin
guide's "Adopting ironic-partition").

Asserted from nova's cell database, placement, Ironic and the computes'
resource-tracker lines: 0 node-seconds held by two computes, no compute
node row deleted or re-created, no provider vanished, every build ACTIVE
(a refused spawn rescheduled), no allocation left once every server is
deleted; the node-seconds that no compute reported are measured per
scale event and bounded by the nodes that changed owner times the
documented takeover bound, plus the slack of one resource-tracker run
over the nodes taken.
"""

import time

from testtools import content

from ironic_partition import testing as harness
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.testing.services import nova_api as harness_api
from ironic_partition.tests.functional import test_nova_compute

#: The replicas' host names, in the order an autoscaler adds them.
POOL = ['cn1', 'cn2', 'cn3', 'cn4', 'cn5']
#: The number of replicas, step by step.
SCHEDULE = (1, 4, 2, 5, 1)
RESOURCE_CLASS = 'CUSTOM_BAREMETAL'
#: Seconds a fake-hardware deploy takes here at most, for the bounds.
PROVISION = 60


class AutoscaleLaneTest(test_nova_compute._Lane):
    """Unpartitioned replicas scaled 1 -> 4 -> 2 -> 5 -> 1."""

    # NOTE(ironic-partition): down after 30 s, longer than a restart of
    # nova-compute here, as in the adoption lane: a replica restarted
    # with nova's own driver keeps its place in nova's ring.
    CADENCE = dict(harness_nova.SHORT_CADENCE, service_down_time=30)
    SERVERS = True
    LANE_HOSTS = POOL[:1]
    PARTITION_KEY = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # NOTE(ironic-partition): unpartitioned, every node is shared.
        cls.group = sorted(cls.group + cls.other)
        cls.other = []

    def setUp(self):
        super().setUp()
        self.created = []
        self.addCleanup(self.delete_leftovers)

    def delete_leftovers(self):
        # NOTE(ironic-partition): a test that failed half-way may have
        # left servers on a replica it stopped.
        if list(self.api.servers(self.created)):
            for compute in self.nova.computes.values():
                if not compute.running():
                    compute.start()
        super().delete_leftovers()

    # -- helpers ----------------------------------------------------------

    def live(self):
        return [h for h in POOL if h in self.nova.computes and
                self.nova.computes[h].running()]

    def novas_view(self):
        """``{host: 'up' or 'down'}`` as nova's compute API says."""
        return {s.host: s.state for s in
                self.api.conn.compute.services(binary='nova-compute')}

    def per_compute(self):
        return {host: novalane.holds(novalane.parse_compute_log(
            compute.log_path)) for host, compute in self.nova.computes.items()}

    def drain(self, hosts, alive):
        """Delete the servers of ``hosts``, then stop them (SIGTERM).

        :returns: the servers left.
        """
        instances = self.records.instances(alive)
        on_them = [s for s in alive if instances[s].host in hosts]
        if on_them:
            self.api.delete_and_wait(on_them, PROVISION * 2)
        for host in hosts:
            self.nova.stop_compute(host)
        harness.wait_for(
            lambda: all(self.novas_view().get(h) == 'down' for h in hosts),
            self.cadence('service_down_time', 60) + 30,
            'nova to see %s down' % ', '.join(hosts), interval=1)
        return [s for s in alive if s not in on_them]

    def scale(self, count, alive):
        """Go to ``count`` replicas while two servers are booted.

        :returns: ``(event time, servers alive, nodes that changed
            owner)``.
        """
        want = POOL[:count]
        before = self.live()
        event = time.time()
        gone = [h for h in before if h not in want]
        if gone:
            alive = self.drain(gone, alive)
        for host in want:
            if host not in self.nova.computes:
                self.nova.add_compute(host)
            elif not self.nova.computes[host].running():
                self.nova.start_compute(host)
        # Builds while the nodes move to (or from) the new replicas.
        ids = self.api.boot_many(2, 'scale-%d' % count)
        self.created.extend(ids)
        for host in want:
            harness.wait_for(lambda: self.runs_since(host, event) >= 3,
                             4 * self.interval() + 180,
                             'two resource-tracker runs of %s at %d '
                             'replicas' % (host, count), interval=1,
                             check=self.nova.check_services)
        self.wait_split(want, 2 * self.takeover_bound())
        servers = self.api.wait_final(ids, PROVISION * 4)
        self.assertEqual({}, harness_api.faults(servers))
        old = novalane.ring_owners(before, self.group)
        new = novalane.ring_owners(want, self.group)
        moved = sum(1 for node in self.group if old[node] != new[node])
        return event, alive + ids, moved

    # -- the scenario -------------------------------------------------------

    def test_a_scale_with_servers(self):
        self.wait_split(POOL[:1], 2 * self.takeover_bound())
        t0 = time.time()
        alive = self.api.boot_many(2, 'first')
        self.created.extend(alive)
        self.assertEqual({}, harness_api.faults(
            self.api.wait_final(alive, PROVISION * 4)))
        events = []
        for count in SCHEDULE[1:]:
            event, alive, moved = self.scale(count, alive)
            events.append((count, event, moved))
            # One server deleted at each step too.
            self.api.delete_and_wait([alive.pop(0)], PROVISION * 2)
        end = time.time()

        # Per scale event: the node-seconds no compute reported, from the
        # event until the next one, bounded by the nodes that changed
        # owner times the takeover bound (a stopped replica keeps its
        # claims for the lease, as a restart must) plus one more SLACK for
        # the survivor's resource-tracker run over the nodes it takes.
        per = self.per_compute()
        bound = self.takeover_bound() + test_nova_compute.SLACK
        figures = []
        for index, (count, event, moved) in enumerate(events):
            until = events[index + 1][1] if index + 1 < len(events) else end
            figures.append((count, moved, novalane.unheld(
                per, self.group, event, until)))
        self.addDetail('scale-events', content.text_content('\n'.join(
            '%d replicas: %d nodes changed owner, %.0f node-seconds '
            'unreported (bound %d)' % (count, moved, lost, moved * bound)
            for count, moved, lost in figures)))
        for count, moved, lost in figures:
            self.assertLessEqual(lost, moved * bound, count)
        self.assert_no_double_hold(since=t0)
        self.assert_no_damage()

        # Every server is managed by the last replica: stopped, deleted;
        # nothing is left in placement or Ironic.
        self.assertEqual({'cn1'}, {i.host for i in self.records.instances(
            alive).values()})
        self.stop_then_delete(alive, PROVISION)
        self.assertEqual([], self.records.problems(self.created,
                                                   RESOURCE_CLASS))

    def test_b_rolled_back_to_novas_driver_and_forward(self):
        # Unpartitioned HA on a shared claims database: one replica goes
        # back to nova's own driver and forward again, servers running.
        # nova's ring counts every Ironic compute it has up; so does ours,
        # from nova's service group, for the one that does not heartbeat
        # the claims database: the mapping stays nova's.
        hosts = POOL[:3]
        _event, alive, _moved = self.scale(3, [])
        since = time.time()
        for driver in (harness_nova.NOVA_DRIVER,
                       harness_nova.PARTITION_DRIVER):
            self.nova.edit_compute_config('cn2', {'DEFAULT': {
                'compute_driver': driver}})
            step = time.time()
            self.nova.restart_compute('cn2')
            for host in hosts:
                harness.wait_for(lambda: self.runs_since(host, step) >= 3,
                                 4 * self.interval() + 180,
                                 'two resource-tracker runs of %s after '
                                 'cn2 switched to %s' % (host, driver),
                                 interval=1, check=self.nova.check_services)
            self.wait_split(hosts, 2 * self.takeover_bound())
            if driver == harness_nova.NOVA_DRIVER:
                self.wait_log('cn1', r'WARNING .*Counting cn2 in the ring',
                              step, 30)
            ids = self.api.boot_many(2, 'switched')
            self.created.extend(ids)
            self.assertEqual({}, harness_api.faults(
                self.api.wait_final(ids, PROVISION * 4)))
            alive += ids
        self.assert_no_double_hold(since=since)
        self.assertEqual([], self.moves_since(since))
        self.assert_no_damage()
        self.api.delete_and_wait(alive, PROVISION * 4)
        harness.wait_for(self.records.nodes_available, PROVISION * 4,
                         'every node back to available', interval=1)
        self.assertEqual({}, self.records.usages())
