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

"""Membership and claims on a Galera cluster: I1-I4 through its faults.

The class shares one real Ironic (``rack1``, 36 nodes, three with
instances; see :mod:`test_faults`) and one three-node MariaDB Galera
cluster behind HAProxy, configured as kolla-ansible and OpenStack-Ansible
configure it: ``node0`` takes the connections, ``node1`` and ``node2`` are
``backup`` servers, ``option mysql-check`` (see
:class:`~ironic_partition.testing.services.galera.GaleraFixture`). ``node1``'s
wall clock is :data:`NODE1_AHEAD` seconds ahead and ``node2``'s
:data:`NODE2_AHEAD` seconds (libfaketime), so every failover also moves
the services to another clock. Each test runs three ``ironic-partition
serve`` agents whose membership and claims database is a fresh one on the
cluster, reached through HAProxy, with the fault tests' timings (lease
4 s, margin 0.4 s, I2 bound 6 s) or slower ones where a test says so, and
the fault tests' observer checks I1-I4 over the whole test.

* ``test_writer_failover``: SIGKILL of the node taking the writes while
  the agents refresh, then its return (HAProxy moves the agents back to
  it: a second failover). The clocks differ by :data:`NODE1_AHEAD`
  seconds, within what the lease (10 s) and margin (3 s) of this test
  cover.
* ``test_isolated_writer``: the writer is cut off from the other two (a
  non-primary component answering WSREP errors); mysql-check still sees
  it up, so the agents stay on it and fail closed (not ready, reporting
  what they hold until their lease of 10 s says otherwise); when it
  rejoins they are ready again and nothing moved.
* ``test_clock_difference_beyond_the_lease``: a failover to ``node2``,
  whose clock is further ahead than the 4 s lease can cover: every agent
  says so and reports nothing; none reports a node another reports.
  Restarted on node0, they still refuse (what they measured is kept in
  their rows); once node2's clock is put right and a failover measures
  it again, they report again.
* ``test_whole_cluster_restart``: all three nodes stopped, then the
  cluster bootstrapped again from the most advanced one: the agents are
  not ready while it is down, and afterwards every claim is kept or taken
  again, never held twice.
* ``test_several_writers_are_refused``: the agents reach the cluster
  through a front end that hands connections to node0 and node1 in turn
  (``balance roundrobin``, no ``backup``), so both take writes: every
  agent says so and is not ready, within twice ``service_down_time``
  (and the reconnection that precedes it); nothing is reported twice.

After a failover and a failback (``test_writer_failover``), the services'
rows name one database node again: those left on the backup by HAProxy
reconnected when they saw the others write through node0.
"""

import re
import time

from ironic_partition.claims import db_writers
from ironic_partition import testing as harness
from ironic_partition.testing.commands import agents as agents_mod
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import galera as galera_mod
from ironic_partition.tests.functional import test_faults
from ironic_partition.tests.functional import test_galera_fixture

#: How far ahead of node0's clock node1's runs (seconds).
NODE1_AHEAD = 2.0
#: How far ahead of node0's clock node2's runs (seconds).
NODE2_AHEAD = 6.0
#: Timings that cover NODE1_AHEAD: the margin less the agents' hold (0)
#: is 3 s; a lease of 10 s leaves 7 s to report between renewals.
COVERED = agents_mod.Timings(refresh_interval=1, heartbeat_interval=1,
                             service_down_time=4, lease_time=10,
                             fencing_margin=3)
HOSTS = ['a1', 'a2', 'a3']
TIMEOUT = 90
#: Where the cluster's directories go: chosen at import, outside the
#: per-test temporary directory that oslotest removes after each test.
WORK_PARENT = harness_db.default_workdir()


def _clock_of(report):
    """The database clock difference an agent's claims have seen."""
    return ((report or {}).get('claims') or {}).get(
        'database_clock_difference')


class GaleraTestCase(test_galera_fixture.SharedGalera,
                     test_faults.FaultTestBase):
    """I1-I4 on Galera behind HAProxy; one cluster for the class."""

    scenarios = None
    backend = 'galera'

    def require_backend(self):
        if type(self).galera is None:
            fixture = galera_mod.GaleraFixture(
                clock_offsets={1: NODE1_AHEAD, 2: NODE2_AHEAD},
                timeout=TIMEOUT, workdir=WORK_PARENT)
            fixture.setUp()
            type(self).galera = fixture

    def make_database(self):
        self.db_name = name = harness_db.unique_name()
        self.galera.create_database(name)
        self.addCleanup(self.galera.drop_database, name)
        # NOTE(ironic-partition): cleanups run last first: the cluster is
        # whole again before the database is dropped.
        self.addCleanup(self.galera.restore)
        return self.galera.url(name) + '?charset=utf8mb4'

    # Helpers.

    def wait_ready(self, hosts, what, since=None):
        """Wait until every agent's report is ready after ``since``.

        :param hosts: the agents.
        :param what: for the timeout message.
        :param since: host -> refresh counter each report must pass.
        :returns: None
        """
        def ready():
            reports = self.observer.latest()
            return all(
                reports.get(h, {}).get('ready') and
                reports[h].get('refresh_counter', 0) > (since or {}).get(
                    h, -1) for h in hosts)
        harness.wait_for(ready, TIMEOUT, what, interval=0.05,
                         check=lambda: self.agents.check_alive(hosts))

    def wait_not_ready(self, hosts, what, needle=None):
        """Wait until every agent says it is not ready (and why).

        :param hosts: the agents.
        :param what: for the timeout message.
        :param needle: a string every reason must contain.
        :returns: the reasons, by host.
        """
        def not_ready():
            reports = self.observer.latest()
            return all(
                reports.get(h) and not reports[h].get('ready') and
                (needle is None or needle in (reports[h].get('reason')
                                              or ''))
                for h in hosts)
        harness.wait_for(not_ready, TIMEOUT, what, interval=0.05,
                         check=lambda: self.agents.check_alive(hosts))
        reports = self.observer.latest()
        return {h: reports[h].get('reason') for h in hosts}

    def writers(self):
        """The database nodes the live agents' heartbeats went through."""
        snapshot = self.admin.services.services('agent', 4)
        return db_writers.writers(snapshot.services)

    def epochs(self):
        """Every claim's owner and epoch, from the claims table."""
        snapshot = self.admin.claims.read_claims('agent')
        return {c.node_id: (c.owner, c.epoch) for c in snapshot.claims
                if c.valid}

    # Tests.

    def test_writer_failover(self):
        self.start_agents(HOSTS, timings=COVERED)
        self.wait_split(HOSTS, 'the initial split')
        self.assertEqual(0, self.galera.writer())
        since = self.counters(HOSTS)
        self.fault('SIGKILL of the writer, node0')
        self.galera.kill(0)
        harness.wait_for(lambda: self.galera.writer() == 1, TIMEOUT,
                         'HAProxy to send connections to node1')
        self.wait_ready(HOSTS, 'the agents to be ready on node1', since)
        self.wait_split(HOSTS, 'the split on node1', since)
        # Every agent meets node1's clock, NODE1_AHEAD ahead of node0's,
        # and widens its margin to cover it: at the first round on node1
        # whose reading of the server's time is sharp (a reading that
        # waited, as the first ones after a failover may, measures
        # nothing).
        harness.wait_for(
            lambda: all(_clock_of(self.observer.latest().get(h))
                        for h in HOSTS), TIMEOUT,
            'every agent to measure node1\'s clock', interval=0.2,
            check=lambda: self.agents.check_alive(HOSTS))
        reports = self.observer.latest()
        self.figures['clock_difference_seen'] = {
            h: _clock_of(reports[h]) for h in HOSTS}
        for host in HOSTS:
            self.assertAlmostEqual(NODE1_AHEAD, _clock_of(reports[host]),
                                   delta=0.5, msg=host)
        since = self.counters(HOSTS)
        self.fault('node0 back: HAProxy fails back to it')
        self.galera.start(0)
        harness.wait_for(lambda: self.galera.writer() == 0, TIMEOUT,
                         'HAProxy to send connections to node0 again')
        self.wait_ready(HOSTS, 'the agents to be ready on node0', since)
        self.wait_split(HOSTS, 'the split on node0 again', since)
        # One database node takes every agent's writes again.
        harness.wait_for(lambda: len(self.writers()) == 1, TIMEOUT,
                         'the agents to write through one node',
                         interval=0.2)
        self.figures['writers_after_failback'] = self.writers()
        result = self.analyse()
        self.assertEqual(0, len(result.overlaps))

    def test_isolated_writer(self):
        self.start_agents(HOSTS, timings=COVERED)
        self.wait_split(HOSTS, 'the initial split')
        before = self.epochs()
        self.fault('node0 isolated (non-primary), still up for HAProxy')
        self.galera.isolate(0)
        reasons = self.wait_not_ready(HOSTS, 'the agents to fail closed')
        # A statement on a node outside the primary component: 1047 for
        # a read, 1180 for a write whose replication cannot start.
        for host, reason in reasons.items():
            self.assertRegex(
                reason, r"\(1047, 'WSREP has not yet prepared node|"
                r"\(1180, .*Not connected to Primary Component", host)
        self.assertEqual(0, self.galera.writer())
        since = self.counters(HOSTS)
        self.fault('node0 rejoins')
        self.galera.rejoin(0)
        self.wait_ready(HOSTS, 'the agents to be ready again', since)
        self.wait_split(HOSTS, 'the split after the rejoin', since)
        result = self.analyse()
        self.assertEqual(0, len(result.overlaps))
        # Nothing moved: the claims that were valid are held by the same
        # agents with the same epochs (a lease of 4 s ran out during the
        # cut, so a claim may have been taken back with a new epoch by
        # its own holder, never by another).
        after = self.epochs()
        self.assertEqual({n: o for n, (o, _e) in before.items()},
                         {n: o for n, (o, _e) in after.items()
                          if n in before})

    def test_clock_difference_beyond_the_lease(self):
        self.start_agents(HOSTS)
        self.wait_split(HOSTS, 'the initial split')
        self.fault('node0 and node1 stopped: node2 (%s s ahead) takes the '
                   'connections' % NODE2_AHEAD)
        self.galera.stop(0)
        self.galera.stop(1)
        harness.wait_for(lambda: self.galera.writer() == 2, TIMEOUT,
                         'HAProxy to send connections to node2')
        reasons = self.wait_not_ready(
            HOSTS, 'the agents to refuse node2\'s clock',
            needle='clocks of the database server differed by')
        for host, reason in reasons.items():
            self.assertIn('can cover', reason, host)
        # Refused agents report nothing, and keep refusing.
        for host in HOSTS:
            self.assertEqual(set(), self.reported(host), host)
        self.fault('node0 and node1 back; the agents restarted')
        self.galera.start(0)
        self.galera.start(1)
        harness.wait_for(lambda: self.galera.writer() == 0, TIMEOUT,
                         'HAProxy to send connections to node0 again')
        pids = {h: self.observer.latest(h).get('pid') for h in HOSTS}
        for host in HOSTS:
            self.agents.restart(host)
        # A restart keeps what was measured: node2's clock is still 6 s
        # off, and the new processes, on node0, refuse as the old ones
        # did, naming it.
        node2 = re.compile(r':%d \+([0-9.]+) s' % self.galera.nodes[2].port)

        def names_node2(reason):
            found = node2.search(reason or '')
            return found and abs(float(found.group(1)) - NODE2_AHEAD) < 0.5

        def refused_again():
            reports = self.observer.latest()
            return all(
                reports.get(h, {}).get('pid') not in (None, pids[h]) and
                not reports[h].get('ready') and
                names_node2(reports[h].get('reason')) for h in HOSTS)
        harness.wait_for(refused_again, TIMEOUT,
                         'the restarted agents to keep refusing node2\'s '
                         'clock', interval=0.05,
                         check=lambda: self.agents.check_alive(HOSTS))
        for host in HOSTS:
            self.assertIn('a restart keeps what was measured',
                          self.observer.latest(host)['reason'], host)
            self.assertEqual(set(), self.reported(host), host)
        self.fault("node2's clock put right; node0 and node1 stopped: the "
                   "agents measure node2 again")
        since = self.counters(HOSTS)
        self.galera.set_clock_offset(2, None)
        self.galera.stop(0)
        self.galera.stop(1)
        harness.wait_for(lambda: self.galera.writer() == 2, TIMEOUT,
                         'HAProxy to send connections to node2')
        self.wait_ready(HOSTS, 'the agents to lift the refusal on node2',
                        since)
        self.wait_split(HOSTS, 'the split on node2', since)
        # What is left is node1's 2 s where an agent met it on the way:
        # within what they cover.
        for host in HOSTS:
            self.assertLess(_clock_of(self.observer.latest(host)),
                            NODE1_AHEAD + 0.5, host)
        # I1 and I4 hold; I2 does not, by design: the refusal is a gap.
        self.analyse(i2=False)

    def test_whole_cluster_restart(self):
        self.start_agents(HOSTS)
        self.wait_split(HOSTS, 'the initial split')
        before = self.epochs()
        self.fault('all three nodes stopped')
        for index in (2, 1, 0):
            self.galera.stop(index)
        self.wait_not_ready(HOSTS, 'the agents to fail closed')
        for host in HOSTS:
            harness.wait_for(lambda: not self.reported(host), TIMEOUT,
                             '%s to fence itself' % host, interval=0.05)
        started = time.monotonic()
        since = self.counters(HOSTS)
        self.fault('the cluster bootstrapped again')
        self.galera.restart_all()
        self.wait_split(HOSTS, 'the split after the bootstrap', since)
        self.figures['cluster_restart_to_split'] = round(
            time.monotonic() - started, 3)
        # Fenced while the cluster was down: I2 does not hold, by design.
        self.analyse(i2=False)
        # Every claim kept its owner, or was taken again by the ring's
        # owner: never two holders.
        after = self.epochs()
        self.assertEqual({n: o for n, (o, _e) in before.items()},
                         {n: o for n, (o, _e) in after.items()
                          if n in before})

    def test_several_writers_are_refused(self):
        self.db_url = self.galera.url(self.db_name, roundrobin=True) + \
            '?charset=utf8mb4'
        # COVERED: node1's clock is within what the lease covers, so the
        # refusal can only be the several writers'.
        started = time.monotonic()
        self.start_agents(HOSTS, timings=COVERED)
        self.fault('the agents on a round-robin front end')
        reasons = self.wait_not_ready(
            HOSTS, 'the agents to refuse several writers',
            needle='written through several database nodes at once')
        self.figures['refused_after'] = round(time.monotonic() - started, 3)
        for host, reason in reasons.items():
            self.assertIn('configure HAProxy with one active server and '
                          'the others "backup"', reason, host)
        # Each agent saw both nodes behind that front end, named by host
        # and port, and reconnected before it refused.
        ((hostname,),) = self.galera.execute('SELECT @@hostname')
        both = ['%s:%d' % (hostname, self.galera.nodes[i].port)
                for i in (0, 1)]
        for host in HOSTS:
            sightings = re.findall(
                r'write through several database nodes: (.*); closing the '
                r'database connections of %s ' % host, self.agents[host].log())
            self.assertTrue(sightings, host)
            for node in both:
                self.assertIn(node, sightings[0], host)
        # Refused: I2 does not hold, by design; I1 does.
        self.analyse(i2=False)
