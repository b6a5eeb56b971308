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

"""Adopting our driver the way operators do: one compute at a time.

One deployment for the class: a real Ironic (24 fake-hardware nodes in
``rack1``), glance, neutron, placement, nova-api, nova-scheduler,
nova-conductor and three nova-computes in ``rack1`` with ``peer_list``,
all started on **nova's own driver** (``ironic.IronicDriver``), with
servers booted through the compute API. The test switches
``compute_driver`` on one compute at a time and restarts it, with two
resource-tracker runs between switches, then rolls one back to nova's
driver while another is pointed at an empty claims database of its own
(a mistyped ``[ironic_partition_database] connection``). Then two
processes run with one host name: a surge rollout's new pod beside the
old one until SIGTERM, and a force-deleted pod's replacement waiting
beside it until it is SIGKILLed. Throughout, the
mapping stays nova's: asserted from nova's cell database, placement and
the computes' resource-tracker lines, never from our code.

The cadence is short, with ``service_down_time`` (30 s) longer than a
restart of nova-compute here, so that nova's own driver on the other
computes does not move a restarting compute's nodes away and back (that
would be nova's own double management, which this lane does not
measure).
"""

import json
import os
import re
import time

from openstack import exceptions as sdk_exc
from testtools import content

from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.lanes import novalane
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import nova as harness_nova
from ironic_partition.testing.services import nova_api as harness_api
from ironic_partition.testing.services import \
    nova_compute as harness_nova_compute
from ironic_partition.tests.functional import test_nova_compute


HOSTS = ['cn1', 'cn2', 'cn3']
RESOURCE_CLASS = 'CUSTOM_BAREMETAL'

#: Seconds a fake-hardware deploy takes here at most, for the bounds.
PROVISION = 60

#: nova's timing options: every 4 s, down after 30 s; nova's own defaults
#: with ``IRONIC_PARTITION_TEST_ADOPTION_CADENCE=nova-default`` (a run of
#: about 20 minutes, outside the README's command).
CADENCE = (harness_nova.NOVA_DEFAULT_CADENCE
           if os.environ.get('IRONIC_PARTITION_TEST_ADOPTION_CADENCE')
           == 'nova-default'
           else dict(harness_nova.SHORT_CADENCE, service_down_time=30))


class AdoptionLaneTest(test_nova_compute._Lane):
    """nova's driver to ours, one compute at a time, and back."""

    CADENCE = CADENCE
    SERVERS = True
    LANE_HOSTS = HOSTS
    PARTITION_KEY = 'rack1'
    # NOTE(ironic-partition): nova's power sync off. On fake hardware it
    # stops the lane's servers on its own ("Instance shutdown by itself");
    # in the surge test its stop cast, sent by the new process while the
    # old one exited, was taken by the old one and lost (nova's processes
    # of one host share its topic queue), leaving the server in
    # powering-off: the platform limit admin/adopting.rst states. The
    # tests' own operations are sent once the old process is gone.
    EXTRA_CONFIG = {'DEFAULT': {'sync_power_state_interval': -1}}

    @classmethod
    def nova_kwargs(cls):
        return {'driver': harness_nova.NOVA_DRIVER}

    def setUp(self):
        super().setUp()
        self.created = []
        self.addCleanup(self.delete_leftovers)

    # -- driving nova ---------------------------------------------------

    def boot_and_wait(self, count, prefix, **kwargs):
        """Boot servers through nova-api; every one must be ACTIVE.

        :param kwargs: more ``create_server`` arguments.
        :returns: their IDs.
        """
        ids = self.api.boot_many(count, prefix, **kwargs)
        self.created.extend(ids)
        servers = self.api.wait_final(ids, PROVISION * 4)
        self.assertEqual({}, harness_api.faults(servers))
        return ids

    def switch(self, host, driver):
        """Restart one compute with another ``compute_driver``.

        Then wait for two complete resource-tracker runs of it (three
        begun), and for the split to be nova's ring over all three.

        :returns: when it was restarted.
        """
        self.nova.edit_compute_config(host, {'DEFAULT': {
            'compute_driver': driver}})
        since = time.time()
        self.nova.restart_compute(host)
        harness.wait_for(lambda: self.runs_since(host, since) >= 3,
                         4 * self.interval() + 180,
                         'two resource-tracker runs of %s after its '
                         'switch to %s' % (host, driver), interval=1,
                         check=self.nova.check_services)
        self.wait_split(HOSTS, 2 * self.interval() + 60)
        return since

    def assert_logged(self, host, pattern, since):
        self.wait_log(host, pattern, since, 30)

    def cli(self, host, command, *args):
        """An ``ironic-partition`` command with a compute's nova.conf.

        :returns: ``(exit code, the JSON document)``.
        """
        out = harness_cli.run_cli(
            '--config-file', self.nova.computes[host].config_file, command,
            '--role', 'nova-compute', '-f', 'json', *args)
        self.assertIn(out.returncode, (0, 1), out.stderr)
        return out.returncode, json.loads(out.stdout)

    def assert_commands_count_outside(self, host, others):
        """status and check see whom ``host`` counts from nova."""
        def recorded():
            doc = self.cli(host, 'status')[1]
            return doc if doc['peers']['outside'] else None
        doc = harness.wait_for(recorded, 4 * self.interval() + 30,
                               'status to show the peers %s counts from '
                               "nova's service group" % host, interval=1)
        self.assertEqual({peer: [host] for peer in others},
                         doc['peers']['outside'])
        self.assertEqual(HOSTS, doc['ring_members'])
        code, rows = self.cli(host, 'check')
        self.assertEqual(1, code)
        named = [r['message'] for r in rows if r['result'] == 'problem']
        for peer in others:
            self.assertTrue(any(
                "Peer '%s' is up in nova's service group but never "
                "heartbeats the membership database: %s count it" % (
                    peer, host) in m for m in named), named)
        code, rows = self.cli(host, 'check', '--adopting')
        self.assertEqual(0, code, rows)

    def assert_mapping_is_novas(self, since):
        """No node held twice, no row moved, nothing deleted."""
        self.assert_no_double_hold(since=since)
        self.assertEqual([], self.moves_since(since))
        self.assert_no_damage()

    # -- the scenario ---------------------------------------------------

    def _restore(self, host):
        self.nova.edit_compute_config(host, {
            'DEFAULT': {'compute_driver': harness_nova.PARTITION_DRIVER},
            'ironic_partition_database': {
                'connection': self.nova.membership_url}})
        self.nova.restart_compute(host)

    def test_a_rolling_switch_and_back(self):
        # NOTE(ironic-partition): nova's own driver, started on three
        # computes at once, reports nodes twice until each has seen the
        # others up (its start-up race): observe from its split on.
        self.wait_split(HOSTS, 3 * self.interval() + 180)
        split = time.time()
        for host in HOSTS:
            harness.wait_for(lambda: self.runs_since(host, split) >= 2,
                             2 * self.interval() + 60,
                             'a complete run of %s after the split' % host,
                             interval=1)
        t0 = time.time()
        ids = self.boot_and_wait(6, 'before')
        instances = self.records.instances(ids)
        self.assertEqual(6, len(instances))

        # One compute at a time, as an operator rolls a change.
        for number, host in enumerate(HOSTS):
            since = self.switch(host, harness_nova.PARTITION_DRIVER)
            others = [h for h in HOSTS[number + 1:]]
            if others:
                # It counts the computes still on nova's driver in its
                # ring, and says so, naming them.
                self.assert_logged(
                    host, r"WARNING .*Counting %s in the ring of partition "
                    r"'rack1': up in nova's service group"
                    % ', '.join(others), since)
            if number == 0:
                # So do status and check, which read our database only.
                self.assert_commands_count_outside(host, others)
            ids += self.boot_and_wait(2, 'after-%s' % host)
            self.api.delete_and_wait([ids.pop(0)], PROVISION * 2)
            self.assert_mapping_is_novas(t0)

        # Every compute runs ours: nobody is counted from outside.
        self.assert_logged(
            'cn1', r"Every peer that nova's service group has up in "
            r"partition 'rack1' heartbeats the membership database", t0)

        # Roll cn3 back to nova's driver, and give cn2 a mistyped claims
        # connection (an empty database of its own), together: nova's
        # service group still has everyone up, so the mapping stays
        # nova's once their heartbeats in the shared database are old,
        # and each side names the other.
        typo = harness_db.DatabaseFixture('postgresql',
                                          workdir=self.nova.workdir)
        self.useFixture(typo)
        # NOTE(ironic-partition): cn2 leaves the typo's database before
        # it is dropped, once the servers are gone, for the shared one.
        self.addCleanup(self._restore, 'cn2')
        self.addCleanup(self.delete_leftovers)
        conf = self.nova.workdir + '/typo.conf'
        harness_process.write_config(conf, {'ironic_partition_database': {
            'connection': typo.url}}, join_lists=True)
        harness_process.run_logged(
            [harness_process.bin_path('ironic-partition-dbsync'),
             '--config-file', conf, 'upgrade'], self.nova.setup_log)
        self.nova.edit_compute_config('cn2', {'ironic_partition_database': {
            'connection': typo.url}})
        since = time.time()
        self.switch('cn3', harness_nova.NOVA_DRIVER)
        self.switch('cn2', harness_nova.PARTITION_DRIVER)
        self.assert_logged('cn2', r'WARNING .*Counting cn1, cn3 in the ring',
                           since)
        aged = since + self.cadence('service_down_time', 60)
        harness.wait_for(lambda: self.runs_since('cn1', aged) >= 3,
                         4 * self.interval() + 180,
                         'cn1 to run after the heartbeats of cn2 and cn3 '
                         'in the shared database aged', interval=1)
        self.assert_logged('cn1', r'WARNING .*Counting cn2, cn3 in the ring',
                           since)
        ids += self.boot_and_wait(2, 'mixed')
        self.assert_mapping_is_novas(t0)

        # Every server is manageable through nova, then deleted.
        self.stop_then_delete(ids, PROVISION)
        self.assertEqual([], self.records.problems(ids, RESOURCE_CLASS))
        self.assert_mapping_is_novas(t0)

    # -- two processes with one host name ---------------------------------

    def _process(self, host, name):
        """One more nova-compute process for ``host`` (a new pod)."""
        old = self.nova.computes[host]
        compute = self.nova._service(
            'nova-compute-%s' % name,
            ['nova-compute', '--config-file', old.config_file],
            cls=harness_nova_compute.Compute, host=host,
            config_file=old.config_file)
        self.addDetail('log-nova-compute-%s' % name,
                       harness_process.log_content(compute.log_path))
        return compute

    def _standing_by(self, host, name, logs):
        """Start one more process for ``host``; it must stand by."""
        compute = self._process(host, name)
        logs[name] = compute.log_path
        started = time.time()
        compute.start()
        self._logged(compute, "Not ready: Another process already runs as "
                     "host '%s'" % host, started, 120)
        return compute

    def _logged(self, compute, pattern, since, timeout):
        regex = re.compile(pattern)

        def find():
            with open(compute.log_path, 'rb') as stream:
                for raw in stream:
                    line = raw.decode('utf-8', 'replace')
                    when = novalane.line_time(line)
                    if when is not None and when >= since and \
                            regex.search(line):
                        return when
            return None
        return harness.wait_for(find, timeout, '%r in %s' % (
            pattern, compute.name), interval=0.5)

    def _double_holds(self, processes, since):
        per = {name: novalane.holds(novalane.parse_compute_log(path))
               for name, path in processes.items()}
        seconds, overlaps = novalane.double_held(per)
        return seconds, {node: [o for o in spans if o[1] > since]
                         for node, spans in overlaps.items()
                         if any(o[1] > since for o in spans)}

    def test_b_surge_rollout_then_force_delete(self):
        self.wait_split(HOSTS, 2 * self.interval() + 120)
        interval = self.interval()
        since = time.time()
        (server,) = self.boot_and_wait(1, 'surge',
                                       availability_zone='nova:cn1')
        self.assertEqual('cn1', self.records.instances([server])[server].host)
        old = self.nova.computes['cn1']
        logs = {h: c.log_path for h, c in self.nova.computes.items()}

        # maxSurge: the new pod starts beside the old one, same host.
        started = time.time()
        new = self._standing_by('cn1', 'cn1-surge', logs)
        waited = self._logged(new, 'Virt driver is not ready', started, 60)
        self.assertTrue(old.running())
        # SIGTERM of the old pod: the new one serves within one run.
        stop = time.time()
        self.nova.stop_compute('cn1')
        stopped = time.time()
        took = self._logged(new, 'Final resource view', stop,
                            2 * interval + test_nova_compute.SLACK) - stopped
        self.addDetail('surge', content.text_content(
            'the new process stood by from %.1f s, served %.1f s after the '
            'old one exited (its stop took %.1f s)'
            % (waited - started, took, stopped - stop)))
        self.assertLess(took, 2 * interval + test_nova_compute.SLACK)
        # NOTE(ironic-partition): the old process gives the host name up
        # (and detaches its claims) in nova's cleanup_host, then takes a
        # few seconds to exit. From its release on it reports nothing and
        # refuses every build, but the lane's hold model, conservative,
        # counts nova's view in a stopping process as held until the
        # process is gone. Overlap is allowed only in that window, and
        # measured; not before the release, not after the exit.
        released = self._logged(old, 'Stopped heartbeating as cn1 ', stop,
                                10)
        gone = max(e.time for e in novalane.parse_compute_log(old.log_path)
                   if e.kind == 'stopped')
        _seconds, overlaps = self._double_holds(logs, since)
        for spans in overlaps.values():
            for start, end, hosts in spans:
                self.assertEqual(['cn1', 'cn1-surge'], hosts)
                self.assertGreaterEqual(start, released)
                self.assertLessEqual(end, gone + 0.01)
        self.addDetail('surge-window', content.text_content(
            'overlap only while the old process exited: %d nodes, released '
            'at %.3f, gone %.1f s later' % (len(overlaps), released,
                                            gone - released)))
        # The host's server is managed by the new process (nova's power
        # sync, run by it, may be stopping it already: fake hardware).
        try:
            self.api.conn.compute.stop_server(server)
        except sdk_exc.ConflictException as e:
            if 'powering-off' not in str(e):
                raise
        harness.wait_for(
            lambda: self.api.servers([server])[server].status == 'SHUTOFF',
            PROVISION, 'the server stopped through the new process',
            interval=1)

        # A force-deleted pod: its replacement waits beside it, then the
        # holder dies (SIGKILL); the replacement serves within the bound.
        third = self._standing_by('cn1', 'cn1-third', logs)
        killed = time.time()
        new.kill()
        took = self._logged(third, 'Final resource view', killed,
                            self.takeover_bound()) - killed
        self.addDetail('force-delete', content.text_content(
            'the replacement served %.1f s after the SIGKILL (bound %d s)'
            % (took, self.takeover_bound())))
        self.nova.computes['cn1'] = third
        self.assertEqual({}, self._double_holds(logs, gone + 0.01)[1])
        self.assertEqual([], self.moves_since(since))
        self.assert_no_damage()
        self.api.conn.compute.start_server(server)
        harness.wait_for(
            lambda: self.api.servers([server])[server].status == 'ACTIVE',
            PROVISION, 'the server started through the replacement',
            interval=1)
        self.api.delete_and_wait([server], PROVISION * 2)

    # -- mistakes in peer_list ------------------------------------------

    def test_c_peer_list_mistakes_are_named(self):
        # Every compute on our driver (test_a left cn3 on nova's). Then
        # cn1's peer_list names a host nobody knows, a nova-compute of
        # another hypervisor type, and a compute up in nova for conductor
        # group rack2: each named, with the option, and no node reported
        # twice.
        self._restore('cn3')
        self.wait_split(HOSTS, 2 * self.interval() + 120)
        since = time.time()
        self.nova.add_compute('cn4', config={
            'DEFAULT': {'compute_driver': harness_nova.NOVA_DRIVER},
            'ironic': {'partition_key': 'rack2', 'peer_list': 'cn4'}})
        self.nova.add_compute('cn5', config={
            'DEFAULT': {'compute_driver': 'fake.SmallFakeDriver'}})
        for host in ('cn4', 'cn5'):
            self.addCleanup(self.nova.stop_compute, host)
        harness.wait_for(lambda: self.runs_since('cn4', since) >= 2,
                         4 * self.interval() + 120,
                         'cn4 to report rack2 nodes to nova', interval=1,
                         check=self.nova.check_services)
        self.nova.wait_for_services(['cn4', 'cn5'])
        self.nova.edit_compute_config('cn1', {'ironic': {
            'peer_list': HOSTS + ['cn4', 'cn5', 'ghost']}})
        # NOTE(ironic-partition): the last test of the class: cn1 keeps
        # the mistaken peer_list until the class's deployment is torn down.
        restarted = time.time()
        self.nova.restart_compute('cn1')
        self.assert_logged(
            'cn1', r"WARNING .*\[ironic\] peer_list names cn5: nova has "
            r"them as nova-compute services, but without any Ironic "
            r"compute node", restarted)
        self.assert_logged(
            'cn1', r"WARNING .*\[ironic\] peer_list names cn5, ghost, which "
            r"neither nova .* nor the membership database", restarted)
        self.assert_logged(
            'cn1', r"WARNING .*Counting cn4 in the ring of partition "
            r"'rack1', as nova's own driver does .* none of its \d+ "
            r"Ironic compute nodes is in that partition", restarted)
        harness.wait_for(lambda: self.runs_since('cn1', restarted) >= 3,
                         4 * self.interval() + 120,
                         'two runs of cn1 with the mistaken peer_list',
                         interval=1, check=self.nova.check_services)
        # check names each, with the option.
        code, rows = self.cli('cn1', 'check')
        self.assertEqual(1, code)
        named = '\n'.join(r['message'] for r in rows
                          if r['result'] == 'problem')
        for peer in ('cn5', 'ghost'):
            self.assertIn("Peer '%s' in [ironic] peer_list has never "
                          "heartbeated" % peer, named)
        self.assertIn("Peer 'cn4' is up in nova's service group but never "
                      "heartbeats the membership database: cn1 count it",
                      named)
        # Never twice: cn1's ring now differs from its peers', and the
        # claims decide; nothing moved in nova, nothing deleted.
        self.assert_no_double_hold(since=since)
        self.assertEqual([], self.moves_since(since))
        self.assert_no_damage()
