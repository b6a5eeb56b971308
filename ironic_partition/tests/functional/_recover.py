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

"""A compute lost for good, recovered with ``ironic-partition recover``.

Mixed into the servers lane (:mod:`.test_nova_servers`), whose deployment
it shares: ``cn1`` and ``cn2`` in ``rack1``, ``cn3`` in ``rack2``. Every
assertion reads nova's cell database, placement, Ironic and the
computes' resource-tracker lines, never our code.
"""

import json
import signal
import subprocess
import time

import sqlalchemy
from testtools import content

from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.lanes import novalane

#: Servers on the lost compute.
LOST_SERVERS = 8

#: recover's exit code when it refuses.
EXIT_REFUSED = 9


class RecoverScenario(object):
    """The recover scenario; needs the servers lane's fixtures."""

    def recover(self, *args, via=None):
        """Run ``ironic-partition recover`` as an operator would.

        With a compute's nova.conf of the partition (``via``) and the
        nova.conf nova-manage reads (nova's databases).

        :returns: ``(exit code, rows or None, stderr)``.
        """
        via = via or self.survivor
        out = harness_cli.run_cli(
            'recover', '--config-file', self.nova.computes[via].config_file,
            '--config-file', self.nova.nova_conf, '-f', 'json', *args)
        rows = json.loads(out.stdout) if out.stdout.strip() else None
        return out.returncode, rows, out.stderr

    def assert_refused(self, reason, *args, via=None):
        code, rows, err = self.recover(*args, via=via)
        self.assertEqual(EXIT_REFUSED, code, err)
        self.assertIn(reason, err)
        self.assertIn('Nothing was changed.', err)
        return err

    def nova_state(self, ids):
        """Where nova has the servers, their nodes' records, the service."""
        engine = self.records.engine
        with engine.connect() as conn:
            nodes = dict(conn.execute(sqlalchemy.text(
                'SELECT hypervisor_hostname, host FROM compute_nodes '
                'WHERE deleted = 0')).all())
            # NOTE(ironic-partition): "binary" is a reserved word in
            # PostgreSQL; the column is filtered here.
            services = conn.execute(sqlalchemy.text(
                'SELECT * FROM services WHERE deleted = 0')).mappings().all()
        forced = {s['host']: bool(s['forced_down']) for s in services
                  if s['binary'] == 'nova-compute'}
        instances = self.records.instances(ids)
        return ({i: (inst.host, inst.node) for i, inst in instances.items()},
                {inst.node: nodes.get(inst.node)
                 for inst in instances.values()}, forced)

    def test_g_recover_a_lost_compute(self):
        self.steady()
        since = time.time()
        # The compute with the larger share of rack1 has at least 9 of its
        # 18 nodes: 8 servers are forced onto it.
        owners = novalane.ring_owners(['cn1', 'cn2'], self.group)
        lost = max(['cn1', 'cn2'], key=lambda h: sum(
            1 for n in self.group if owners[n] == h))
        self.survivor = 'cn1' if lost == 'cn2' else 'cn2'
        # NOTE(ironic-partition): the builds are forced onto it: its
        # running process must track its share (it may have just started).
        self.wait_tracked(lost, [n for n in self.group if owners[n] == lost],
                          self.takeover_bound() * 2)
        ids = self.boot_many(LOST_SERVERS, 'lost',
                             availability_zone='nova:%s' % lost)
        servers = self.wait_final(ids, 120)
        self.assertEqual({}, self.faults(servers))
        instances = self.records.instances(ids)
        self.assertEqual({lost}, {i.host for i in instances.values()})
        nodes = sorted(i.node for i in instances.values())

        # Refused while alive; bad input; nothing changes.
        before = self.nova_state(ids)
        self.assert_refused('is alive in the membership database', lost)
        self.assert_refused('neither nova nor the membership database',
                            'no-such-host')
        self.assert_refused("serves conductor group 'rack2'", 'cn3')

        self.addCleanup(self.revive, lost)
        self.nova.kill_compute(lost)
        killed = time.time()
        # At once: alive by its last heartbeat, then a recent heartbeat,
        # then claims still valid, by the database's clock, or up in
        # nova's service group. The dry run: a verdict reached late must
        # not move the servers the rest of the test moves.
        code, _rows, err = self.recover(lost)
        took = time.time() - killed
        # NOTE(ironic-partition): the command's check ran before it ended;
        # its last nova heartbeat was at most one report_interval before
        # the kill, so within service_down_time less that interval of the
        # kill it must refuse. The command alone (its imports) can take
        # longer on a loaded machine: the verdict is then recorded only.
        window = (self.cadence('service_down_time', 60) -
                  self.cadence('report_interval', 10))
        if took < window or code != 0:
            self.assertEqual(EXIT_REFUSED, code, err)
            self.assertIn('Nothing was changed.', err)
            self.assertTrue(any(reason in err for reason in (
                'it is alive in the membership database',
                'within [ironic_partition] service_down_time',
                'of its claims are still valid',
                "nova's service group has it up")), err)
        self.addDetail('refused-at-once', content.text_content(
            'dry run %.1f s after SIGKILL (window %.0f s): exit %d' % (
                took, window, code)))
        self.assertEqual(before, self.nova_state(ids))

        # The operator's loop: the dry run until it passes.
        def planned():
            code, rows, err = self.recover(lost)
            return rows if code == 0 else None
        rows = harness.wait_for(planned, self.takeover_bound() * 2,
                                'recover to prove %s gone' % lost,
                                interval=1)
        waited = time.time() - killed
        self.assertEqual(sorted(ids), sorted(r['server'] for r in rows))
        self.assertEqual({self.survivor},
                         {r['destination'] for r in rows})
        self.assertEqual({'planned'}, {r['result'] for r in rows})
        self.assert_refused('is not a live compute of its partition', lost,
                            '--yes', '--destination', 'cn3')
        self.assert_refused('the destination is the host itself', lost,
                            '--yes', '--destination', lost.upper())
        self.assertEqual(before, self.nova_state(ids))

        # Interrupted: a row lock holds the third server's save while the
        # command runs with one worker; it is SIGKILLed there, half-way
        # through that server's move.
        order = sorted(ids)
        engine = sqlalchemy.create_engine(
            self.nova.cell_url, poolclass=sqlalchemy.pool.NullPool)
        self.addCleanup(engine.dispose)
        blocker = engine.connect()
        held = blocker.begin()
        blocker.execute(sqlalchemy.text(
            'SELECT id FROM instances WHERE uuid = :u FOR UPDATE'),
            {'u': order[2]})
        proc = subprocess.Popen(
            harness_cli.cli_argv() + [
                'recover', lost, '--yes', '--workers', '1',
                '--config-file',
                self.nova.computes[self.survivor].config_file,
                '--config-file', self.nova.nova_conf],
            env=harness_cli.cli_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def half_way():
                hosts, node_hosts, _ = self.nova_state(ids)
                third = hosts[order[2]]
                return (node_hosts[third[1]] == self.survivor and
                        third[0] == lost)
            harness.wait_for(half_way, 60,
                             'recover to reach the third server',
                             interval=0.2)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            held.rollback()
            blocker.close()
        hosts, node_hosts, forced = self.nova_state(ids)
        self.assertEqual([self.survivor] * 2 + [lost] * 6,
                         [hosts[i][0] for i in order])
        self.assertTrue(forced[lost])
        resumed = time.time()
        code, rows, err = self.recover(lost, '--yes')
        moved_at = time.time()
        self.assertEqual(0, code, err)
        results = {r['server']: r['result'] for r in rows}
        self.assertEqual('finished', results[order[2]])
        self.assertEqual(['moved'] * 5, [results[i] for i in order[3:]])
        hosts, node_hosts, forced = self.nova_state(ids)
        self.assertEqual({self.survivor},
                         {h for h, _ in hosts.values()})
        self.assertEqual({self.survivor}, set(node_hosts.values()))
        self.assertTrue(forced[lost])
        for server in ids:
            self.assertEqual([instances[server].node],
                             list(self.records.allocations(server)))
        # A run once done finds nothing left.
        code, rows, err = self.recover(lost, '--yes')
        self.assertEqual((0, []), (code, rows), err)
        self.assertIn('nothing to recover', err)

        # The survivor serves them from its next resource-tracker run.
        harness.wait_for(
            lambda: all(self.recorder.hosts_of().get(n) == [self.survivor]
                        for n in nodes),
            self.takeover_bound() * 2,
            '%s to report the recovered nodes' % self.survivor, interval=1)
        served = time.time()
        self.assert_manageable(ids, instances)

        # The lost host comes back under its name: it waits, forced down,
        # and reports nothing; set up again it joins, without them.
        back = time.time()
        self.nova.start_compute(lost)
        waiting = 'nova has this compute service forced down'
        self.wait_log(lost, waiting, back, self.takeover_bound())
        # Its first resource-tracker run, and the next, find it waiting.
        self.wait_log(lost, waiting, time.time(), self.takeover_bound())
        self.assertEqual([], [n for n, h in self.recorder.hosts_of().items()
                              if lost in [x.lower() for x in h]])
        self.set_up_in_nova(lost)
        self.steady()
        self.assertEqual({self.survivor},
                         {i.host for i in self.records.instances(
                             ids).values()})
        self.addDetail('recover', content.text_content(
            '%d servers of %s: recover passed its checks %.1f s after '
            'SIGKILL; the run finishing the interrupted one took %.1f s; '
            'every node reported by %s %.1f s after it' % (
                len(ids), lost, waited, moved_at - resumed, self.survivor,
                served - moved_at)))
        self.delete_all_and_check(ids, since)

    def revive(self, host):
        """Clean-up: the host set up and running, to delete its servers.

        A delete sent while nova still had the killed host up waits in
        its queue until it runs again.
        """
        self.set_up_in_nova(host)
        if not self.nova.computes[host].running():
            self.nova.start_compute(host)

    def set_up_in_nova(self, host):
        """Clear nova's forced-down flag, as an operator would."""
        for service in self.conn.compute.services():
            if service.host == host and service.binary == 'nova-compute':
                if service.is_forced_down:
                    self.conn.compute.update_service_forced_down(
                        service, forced=False)

    def assert_manageable(self, ids, instances):
        """Stop, start and reboot each server through the compute API."""
        compute = self.conn.compute
        ironic = self.records.ironic.baremetal

        def all_are(status, power):
            servers = self.api.servers(ids)
            return all(servers[i].status == status and
                       ironic.get_node(instances[i].node).power_state ==
                       power for i in ids)
        for server in ids:
            compute.stop_server(server)
        harness.wait_for(lambda: all_are('SHUTOFF', 'power off'), 120,
                         'the recovered servers to stop', interval=1)
        for server in ids:
            compute.start_server(server)
        harness.wait_for(lambda: all_are('ACTIVE', 'power on'), 120,
                         'the recovered servers to start', interval=1)
        for server in ids:
            compute.reboot_server(server, 'HARD')
        harness.wait_for(
            lambda: all_are('ACTIVE', 'power on') and not any(
                s.task_state for s in self.api.servers(ids).values()),
            120, 'the recovered servers to reboot', interval=1)
