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

"""The ``ironic-partition`` inspection hook inside a real ironic-conductor.

One Ironic for the class (PostgreSQL; conductors in ``rack1``, ``rack2``,
the default group and ``rack3``), with the ``agent`` inspect interface,
auto-discovery (``fake-hardware``) and ``[inspector] hooks =
$default_hooks,ironic-partition``: Ironic's default hooks run before ours.
Inspection data is posted to ``/v1/continue_inspection`` as the ramdisk
would post it: without a node for auto-discovery, with ``node_uuid`` for
a known node in ``inspect wait``.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid

import fixtures
from oslo_config import cfg
from oslotest import base
from testtools import content

from ironic_partition.cmd import _errors
from ironic_partition import conf as ip_conf
from ironic_partition import settings as settings_mod
from ironic_partition import testing as harness
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import ironic as harness_ironic
from ironic_partition.tests.functional import test_cli

GROUPS = ['rack1', 'rack2', '', 'rack3']
TIMEOUT = 60
#: The microversion of the inventory API and of node shard (1.82+) and of
#: ``node_uuid`` in ``/v1/continue_inspection`` (1.84+).
MICROVERSION = '1.95'

MAP = [
    'cidr=10.1.0.0/16,group=rack1,shard=shard-r1',
    'cidr=10.2.0.0/16,group=rack2,shard=shard-r2',
    'cidr=fd00:2::/64,group=rack2,shard=shard-r2v6',
    'cidr=10.3.0.0/16,group=rack3',
    'cidr=10.9.0.0/16,group=rack9',
    'switch=tor-r4,group=rack1',
]

EXTRA_CONFIG = {
    'DEFAULT': {
        'enabled_inspect_interfaces': 'no-inspect,fake,agent',
        # NOTE(ironic-partition): auto-discovered nodes get the default
        # interfaces; only "agent" runs the inspection hooks.
        'default_inspect_interface': 'agent',
    },
    'inspector': {
        # NOTE(ironic-partition): switch entries need parse-lldp first.
        'hooks': '$default_hooks,parse-lldp,ironic-partition',
        # NOTE(ironic-partition): fake-hardware's "fake" boot interface
        # cannot boot a ramdisk (no validate_inspection), so inspection is
        # "unmanaged": power off, PXE boot device, power on, inspect wait.
        'require_managed_boot': False,
    },
    'auto_discovery': {'enabled': True,
                       'driver': harness_ironic.HARDWARE_TYPE},
    'ironic_partition_inspection': {'map': MAP},
}

LOADED = 'ironic-partition inspection hook loaded'

WORK_PARENT = harness_db.default_workdir()


def inventory(bmc=None, bmc6=None, mac=None, switch=None):
    """The inventory a ramdisk posts, with one NIC.

    :param bmc: the BMC IPv4 address.
    :param bmc6: the BMC IPv6 address.
    :param mac: the NIC's MAC; a random one by default.
    :param switch: the LLDP system name the NIC sees (raw TLV 5).
    :returns: the request body of ``/v1/continue_inspection``.
    """
    mac = mac or '52:54:00:%02x:%02x:%02x' % tuple(uuid.uuid4().bytes[:3])
    lldp = [[5, switch.encode().hex()]] if switch else []
    inv = {'interfaces': [{'name': 'eth0', 'mac_address': mac,
                           'ipv4_address': '192.168.50.7',
                           'lldp': lldp}],
           'cpu': {'architecture': 'x86_64'},
           'boot': {'pxe_interface': mac}}
    if bmc:
        inv['bmc_address'] = bmc
    if bmc6:
        inv['bmc_v6address'] = bmc6
    return {'inventory': inv}


class InspectionHookTestCase(test_cli.SharedIronic, base.BaseTestCase):
    """One Ironic with the hook for the class (see ``SharedIronic``)."""

    def setUp(self):
        super().setUp()
        cls = type(self)
        if cls.ironic is None:
            cls.workdir = tempfile.mkdtemp(prefix='ironic-partition-hook-',
                                           dir=WORK_PARENT)
            fixture = harness.IronicFixture(
                db_backend='postgresql', conductor_groups=GROUPS,
                workdir=cls.workdir, extra_config=EXTRA_CONFIG)
            # NOTE(ironic-partition): a fixture whose setUp fails has
            # already cleaned up what it started.
            fixture.setUp()
            cls.ironic = fixture
        self.conn = harness.connect(self.ironic.endpoint)

    # -- helpers ----------------------------------------------------------

    def _call(self, method, path, body=None):
        req = urllib.request.Request(
            self.ironic.endpoint + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={'X-OpenStack-Ironic-API-Version': MICROVERSION,
                     'Content-Type': 'application/json',
                     'Accept': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read().decode()
                return resp.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def get_node(self, node):
        status, body = self._call('GET', '/v1/nodes/%s' % node)
        self.assertEqual(200, status, body)
        return body

    def continue_inspection(self, body, node=None):
        path = '/v1/continue_inspection'
        if node:
            path += '?' + urllib.parse.urlencode({'node_uuid': node})
        status, answer = self._call('POST', path, body)
        self.assertEqual(202, status, answer)
        return answer['node']['uuid']

    def plugin_data(self, node):
        status, body = self._call('GET', '/v1/nodes/%s/inventory' % node)
        return body['plugin_data'] if status == 200 else None

    def wait_processed(self, node, states=('enroll', 'manageable')):
        """Wait until the inspection data of a node is processed.

        :returns: ``(node, plugin_data['ironic_partition'])``.
        """
        def done():
            current = self.get_node(node)
            if (current['reservation'] or current['provision_state']
                    not in states):
                return None
            data = self.plugin_data(node)
            if not data or 'ironic_partition' not in data:
                return None
            return current, data['ironic_partition']
        return harness.wait_for(done, TIMEOUT,
                                'inspection of %s to finish' % node)

    def conductor_log(self, which=None):
        conductors = ([self.ironic.conductor(which)] if which is not None
                      else self.ironic.conductors)
        text = ''
        for cond in conductors:
            with open(cond.log_path, errors='replace') as stream:
                text += stream.read()
        return text

    def log_lines(self, *needles):
        return [line for line in self.conductor_log().splitlines()
                if all(n in line for n in needles)]

    def group_hosts(self, group):
        return {c.hostname for c in self.ironic.conductors_in(group)}

    def client(self):
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf([], project='ironic-partition')
        conf.set_override('auth_type', 'none', 'ironic')
        conf.set_override('endpoint_override', self.ironic.endpoint,
                          'ironic')
        return settings_mod.ironic_client(conf)

    def known_node(self, group='', **attrs):
        """A manageable fake-hardware node with the agent inspect iface."""
        fields = {'driver': harness_ironic.HARDWARE_TYPE,
                  'conductor_group': group}
        for iface, name in harness_ironic.NODE_INTERFACES.items():
            fields['%s_interface' % iface] = name
        fields['inspect_interface'] = 'agent'
        fields.update(attrs)
        node = self.conn.baremetal.create_node(**fields)
        self.conn.baremetal.set_node_provision_state(node, 'manage',
                                                     wait=True,
                                                     timeout=TIMEOUT)
        return node.id

    def inspect(self, node, body):
        """Inspect a known node: start, then post the ramdisk's data."""
        self.conn.baremetal.set_node_provision_state(node, 'inspect')
        self.conn.baremetal.wait_for_nodes_provision_state(
            [node], 'inspect wait', timeout=TIMEOUT)
        self.continue_inspection(body, node=node)
        return self.wait_processed(node, states=('manageable',))

    def assert_stays(self, node, group, conductors_alive=True):
        current = self.get_node(node)
        self.assertEqual(group, current['conductor_group'])
        if conductors_alive:
            self.assertIsNotNone(current['conductor'])
        status, body = self._call('PATCH', '/v1/nodes/%s' % node, [
            {'op': 'add', 'path': '/extra/checked', 'value': 'yes'}])
        self.assertEqual(200, status, body)

    # -- tests ------------------------------------------------------------

    def test_loaded_by_every_conductor_and_misspelled_stops_one(self):
        for cond in self.ironic.conductors:
            self.assertIn(LOADED, self.conductor_log(cond), cond.name)
            self.assertIn('6 map entries (5 networks, 1 switches)',
                          self.conductor_log(cond))

        typo = self.ironic.make_conductor('typo', 'rack1', {
            'inspector': {'hooks': '$default_hooks,ironic-partitoin'}})
        # NOTE(ironic-partition): a multi-valued option adds up over the
        # configuration files: this entry comes after the shared ones.
        bad_map = self.ironic.make_conductor('badmap', 'rack1', {
            'ironic_partition_inspection': {'map': [
                'cidr=10.1.2.0/24,group=rack2']}})
        no_lldp = self.ironic.make_conductor('nolldp', 'rack1', {
            'inspector': {'hooks': '$default_hooks,ironic-partition'}})
        for cond in (typo, bad_map, no_lldp):
            self.addCleanup(cond.kill)
            cond.start()

        def logged(cond, text, times=2):
            with open(cond.log_path, errors='replace') as stream:
                return stream.read().count(text) >= times

        # NOTE(ironic-partition): the service launcher forks the failing
        # worker again and again; two failures prove it never got past
        # loading the hooks, which comes before registering.
        harness.wait_for(lambda: logged(
            typo, 'missing or failed to load: ironic-partitoin'),
            TIMEOUT, 'the misspelled hook to fail twice')
        harness.wait_for(lambda: logged(
            bad_map, "Invalid value 'cidr=10.1.2.0/24,group=rack2' for "
            "option [ironic_partition_inspection] map: network "
            "10.1.2.0/24 overlaps 10.1.0.0/16"),
            TIMEOUT, 'the invalid map to fail twice')
        harness.wait_for(lambda: logged(
            no_lldp, 'Hook ironic-partition requires these missing hooks '
            'to be enabled before it: parse-lldp'),
            TIMEOUT, 'the missing parse-lldp to fail twice')
        states = self.ironic.conductor_states()
        for cond in (typo, bad_map, no_lldp):
            self.assertNotIn(cond.hostname, states)
        for cond in (typo, bad_map):
            with open(cond.log_path, errors='replace') as stream:
                self.assertNotIn(LOADED, stream.read())

    def test_discovered_node_lands_in_rack2(self):
        node = self.continue_inspection(inventory(bmc='10.2.7.15'))
        current, record = self.wait_processed(node)
        self.assertEqual('rack2', current['conductor_group'])
        self.assertEqual('shard-r2', current['shard'])
        self.assertIn(current['conductor'], self.group_hosts('rack2'))
        self.assertEqual('moved', record['action'])
        self.assertEqual('', record['group_from'])
        self.assertEqual('inventory.bmc_address', record['matched_by'])
        # Ironic's default hooks ran too: "architecture" and "ports".
        self.assertEqual('x86_64', current['properties'].get('cpu_arch'))
        self.assertEqual(1, len(list(self.conn.baremetal.ports(node=node))))
        # Our client lists it for rack2, and for no other group.
        client = self.client()
        for group in GROUPS:
            listed = {n.id for n in client.list_nodes(conductor_group=group)}
            self.assertEqual(group == 'rack2', node in listed, group)
        self.assertEqual(1, len(self.log_lines(
            ' INFO ', 'moved node %s' % node, "to 'rack2'")))

    def test_discovered_by_ipv6_bmc_address(self):
        node = self.continue_inspection(inventory(bmc6='fd00:2::42'))
        current, record = self.wait_processed(node)
        self.assertEqual(('rack2', 'shard-r2v6'),
                         (current['conductor_group'], current['shard']))
        self.assertEqual('inventory.bmc_v6address', record['matched_by'])

    def test_discovered_by_lldp_switch(self):
        node = self.continue_inspection(inventory(bmc='192.0.2.4',
                                                  switch='TOR-R4'))
        current, record = self.wait_processed(node)
        self.assertEqual('rack1', current['conductor_group'])
        self.assertIn(current['conductor'], self.group_hosts('rack1'))
        self.assertEqual(('moved', 'eth0.switch_system_name', 'TOR-R4'),
                         (record['action'], record['matched_by'],
                          record['matched_value']))

    def test_group_without_conductor_is_refused(self):
        node = self.continue_inspection(inventory(bmc='10.9.0.3'))
        current, record = self.wait_processed(node)
        self.assertEqual('refused', record['action'])
        self.assertIsNone(current['shard'])
        self.assert_stays(node, '')
        self.assertIn(self.get_node(node)['conductor'],
                      self.group_hosts(''))
        self.assertEqual(1, len(self.log_lines(
            ' ERROR ', node, "'rack9'", 'fake-hardware')))

    def test_group_whose_only_conductor_died_is_refused(self):
        [rack3] = self.ironic.conductors_in('rack3')
        self.ironic.kill_conductor(rack3)
        self.addCleanup(self.ironic.restart_conductor, rack3)
        self.ironic.wait_for_conductors(dead=[rack3], timeout=TIMEOUT)
        node = self.continue_inspection(inventory(bmc='10.3.0.8'))
        current, record = self.wait_processed(node)
        self.assertEqual('refused', record['action'])
        self.assert_stays(node, '')
        self.assertEqual(1, len(self.log_lines(
            ' ERROR ', node, "'rack3'", 'fake-hardware')))

    def test_instance_or_explicit_group_never_changes(self):
        explicit = self.known_node(group='rack1')
        with_instance = self.known_node()
        harness.set_instance_uuid(self.conn, with_instance,
                                  str(uuid.uuid4()))
        for node, group, action in ((explicit, 'rack1', 'kept'),
                                    (with_instance, '', 'skipped')):
            current, record = self.inspect(node, inventory(bmc='10.2.0.9'))
            self.assertEqual(action, record['action'], node)
            self.assertEqual(group, current['conductor_group'])
            self.assert_stays(node, group)
        self.assertIsNone(self.get_node(with_instance)['shard'])

    def test_shard_is_set_once(self):
        node = self.known_node()
        current, record = self.inspect(node, inventory(bmc='10.1.0.5'))
        self.assertEqual(('rack1', 'shard-r1', 'set'),
                         (current['conductor_group'], current['shard'],
                          record['shard_action']))
        # The map moves it again (the hook set its group), never its shard.
        current, record = self.inspect(node, inventory(bmc='10.2.0.5'))
        self.assertEqual(('moved', 'kept'),
                         (record['action'], record['shard_action']))
        self.assertEqual(('rack2', 'shard-r1'),
                         (current['conductor_group'], current['shard']))
        self.assertIn(current['conductor'], self.group_hosts('rack2'))
        # A shard an operator set is kept too.
        by_hand = self.known_node(shard='by-hand')
        current, record = self.inspect(by_hand, inventory(bmc='10.1.0.6'))
        self.assertEqual(('rack1', 'by-hand'),
                         (current['conductor_group'], current['shard']))

    def test_check_audits_against_the_map(self):
        placed = self.continue_inspection(inventory(bmc='10.2.9.1'))
        self.assertEqual('rack2',
                         self.wait_processed(placed)[0]['conductor_group'])
        by_hand = self.conn.baremetal.create_node(
            driver=harness_ironic.HARDWARE_TYPE, conductor_group='rack1',
            name='by-hand', driver_info={'ipmi_address': '10.2.0.77'}).id
        [stranded] = harness.bulk_enroll(self.ironic.config_file, 1,
                                         ['rack9'], name_prefix='stranded')
        conf = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'check.conf')
        with open(conf, 'w') as stream:
            stream.write('[ironic]\nauth_type = none\n'
                         'endpoint_override = %s\n'
                         '[ironic_partition]\nhost = audit\n'
                         'state_path = %s\n'
                         % (self.ironic.endpoint, os.path.dirname(conf)))
        env = dict(os.environ, PYTHONWARNINGS='ignore::DeprecationWarning')
        proc = subprocess.run(
            [sys.executable, '-m', 'ironic_partition.cmd.cli',
             '--config-file', conf, 'check', '--role', 'agent',
             '--inspection-config', self.ironic.config_file,
             '-f', 'json'],
            capture_output=True, text=True, timeout=120, env=env,
            stdin=subprocess.DEVNULL)
        self.assertEqual(_errors.EXIT_PROBLEMS, proc.returncode, proc.stderr)
        doc = harness_cli.findings(json.loads(proc.stdout))
        self.addDetail('check-output', content.text_content(
            proc.stdout))
        served = [p['message'] for p in doc['problems']
                  if p['check'] == 'inspection-served']
        mapped = [w['message'] for w in doc['warnings']
                  if w['check'] == 'inspection-map']
        self.assertEqual(1, len([m for m in served
                                 if stranded['uuid'] in m]), served)
        self.assertIn("'rack9'", ' '.join(served))
        [line] = [m for m in mapped if by_hand in m]
        self.assertIn("group 'rack1', the map says 'rack2'", line)
        self.assertIn('driver_info.ipmi_address 10.2.0.77', line)
        self.assertFalse([m for m in served + mapped if placed in m])
        self.assertIn('inspection-map', doc['passed'])

    def test_bmc_address_from_driver_info(self):
        # What out-of-band (redfish) inspection relies on: no BMC address
        # in the inventory, the host of driver_info's URL instead.
        node = self.known_node(driver_info={
            'redfish_address': 'https://10.2.0.44:8000/redfish/v1'})
        current, record = self.inspect(node, inventory())
        self.assertEqual('rack2', current['conductor_group'])
        self.assertEqual(('driver_info.redfish_address', '10.2.0.44'),
                         (record['matched_by'], record['matched_value']))

    def test_group_without_an_alive_conductor_in_one_sentence(self):
        # A rack whose only conductor died: eight nodes, more than the
        # handful named one by one. The upgrade check says it once, with
        # the count and the first few; status of a service of that group
        # says what to do. NOTE(ironic-partition): the nodes stay (deleting
        # a node needs an alive conductor of its group); no other test of
        # the class lists the group 'rack7'.
        gone = self.ironic.make_conductor('gone', 'rack7')
        self.addCleanup(gone.kill)
        gone.start()
        self.ironic.wait_for_conductors(alive=[gone], timeout=TIMEOUT)
        nodes = harness.bulk_enroll(self.ironic.config_file, 8, ['rack7'],
                                    name_prefix='gone',
                                    provision_state='available')
        gone.kill()
        self.ironic.wait_for_conductors(alive=[], dead=[gone],
                                        timeout=TIMEOUT)
        workdir = self.useFixture(fixtures.TempDir()).path
        conf = harness_cli.agent_conf(
            os.path.join(workdir, 'rack7.conf'), self.ironic.endpoint,
            'r7', 'rack7', ['r7'], workdir)
        proc = subprocess.run(
            [sys.executable, '-m', 'ironic_partition.cmd.upgrade_check',
             '--config-file', conf, '--role', 'agent', '--new-deployment',
             'upgrade', 'check', '--json'],
            capture_output=True, text=True, timeout=120,
            env=harness_cli.cli_env(), stdin=subprocess.DEVNULL)
        self.addDetail('upgrade-check', content.text_content(proc.stdout))
        self.assertEqual(2, proc.returncode, proc.stderr)
        checks = {c['check']: c for c in json.loads(proc.stdout)['checks']}
        served = checks['Conductor groups and shards served']
        self.assertEqual(2, served['result'], served)
        lines = [line for line in served['details'].splitlines()
                 if "'rack7'" in line]
        self.assertEqual(1, len(lines), served['details'])
        self.assertIn("8 nodes are in conductor group 'rack7', where no "
                      "alive conductor serves their hardware type",
                      lines[0])
        self.assertEqual(5, sum(1 for n in nodes if n['name'] in lines[0]))
        # status of the group's service (its schema created): the advice
        # names the cause.
        proc = subprocess.run(
            [sys.executable, '-m', 'ironic_partition.cmd.dbsync',
             '--config-file', conf, 'upgrade'], capture_output=True,
            text=True, timeout=120, env=harness_cli.cli_env(),
            stdin=subprocess.DEVNULL)
        self.assertEqual(0, proc.returncode, proc.stderr)
        proc = harness_cli.run_cli('--config-file', conf, 'status',
                                   '--role', 'agent', '-f', 'json')
        self.addDetail('status', content.text_content(
            proc.stdout + proc.stderr))
        advice = ' '.join(json.loads(proc.stdout)['advice'])
        self.assertIn('No conductor of conductor group rack7 is alive '
                      '(dead: %s)' % gone.hostname, advice)
        self.assertIn('the 8 nodes of the group', advice)

    def test_refusal_can_fail_the_inspection(self):
        # NOTE(ironic-partition): with "strict" as its default group, a
        # node there is not explicitly placed: the map applies to it.
        strict = self.ironic.make_conductor('strict', 'strict', {
            'DEFAULT': {'default_conductor_group': 'strict'},
            'ironic_partition_inspection': {'on_refusal': 'fail'}})
        self.addCleanup(strict.kill)
        strict.start()
        self.ironic.wait_for_conductors(alive=[strict], timeout=TIMEOUT)
        node = self.known_node(group='strict')
        self.conn.baremetal.set_node_provision_state(node, 'inspect')
        self.conn.baremetal.wait_for_nodes_provision_state(
            [node], 'inspect wait', timeout=TIMEOUT)
        self.continue_inspection(inventory(bmc='10.9.0.77'), node=node)

        def failed():
            current = self.get_node(node)
            return (current if current['provision_state'] == 'inspect failed'
                    and not current['reservation'] else None)
        current = harness.wait_for(failed, TIMEOUT, 'inspection to fail')
        self.assertIn("no alive conductor in group 'rack9'",
                      current['last_error'])
        self.assertEqual('strict', current['conductor_group'])
        self.assert_stays(node, 'strict')
        with open(strict.log_path, errors='replace') as stream:
            self.assertEqual(1, len([
                line for line in stream.read().splitlines()
                if ' ERROR ' in line and node in line and "'rack9'" in line
                and 'fake-hardware' in line
                and 'ironic_partition.inspection.hook' in line]))
