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

"""Our Ironic client, conductor ring and partitioner on a real Ironic.

One multi-conductor Ironic (rack1 x2, rack2 and the default group, on
PostgreSQL) serves every check: it costs ~15 s to start.
"""

import collections
import math

from oslo_config import cfg
from oslotest import base

from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.membership import static
from ironic_partition.partition import partitioner
from ironic_partition.ring import conductor
from ironic_partition import settings as settings_mod
from ironic_partition import testing as harness
from ironic_partition.tests.functional import test_harness

NODES = 1200
PAGE = 100
TIMEOUT = 60


class RealIronicTestCase(test_harness.TeardownAssertions,
                         base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.quiet_sdk_logs()
        self.ironic = harness.IronicFixture(db_backend='postgresql')
        self.watch_teardown(self.ironic)
        self.useFixture(self.ironic)
        self.conn = harness.connect(self.ironic.endpoint)
        self.expected = collections.defaultdict(set)
        for node in harness.bulk_enroll(self.ironic.config_file, NODES,
                                        self.ironic.conductor_groups):
            self.expected[node['conductor_group']].add(node['uuid'])

    def _conf(self, host, key, peers):
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf([], project='ironic-partition')
        conf.set_override('auth_type', 'none', 'ironic')
        conf.set_override('endpoint_override', self.ironic.endpoint,
                          'ironic')
        conf.set_override('host', host, 'ironic_partition')
        conf.set_override('partition_key', key, 'ironic')
        conf.set_override('peer_list', peers, 'ironic')
        return conf

    def _check_conductor_ring(self, provider):
        provider.reset()
        ours = provider.map_nodes(
            {'uuid': n.id, 'driver': n.driver,
             'conductor_group': n.conductor_group}
            for n in self.conn.baremetal.nodes(details=True))
        theirs = harness.node_conductors(self.conn)
        self.assertEqual(NODES, len(theirs))
        self.assertEqual(theirs, ours)

    def test_against_real_ironic(self):
        # The client lists each group, page by page, through the SDK proxy.
        client = settings_mod.ironic_client(self._conf('cn1', None, []),
                                            page_size=PAGE)
        for group, uuids in self.expected.items():
            nodes = client.list_nodes(conductor_group=group)
            self.assertEqual(uuids, {n.id for n in nodes}, group)
            self.assertEqual({group}, {n.conductor_group for n in nodes})
            self.assertLessEqual(nodes.calls,
                                 math.ceil(len(uuids) / PAGE) + 1)
        self.assertEqual(NODES, len(client.list_nodes()))

        # The conductor ring maps every node where Ironic does, before and
        # after a rack1 conductor dies and Ironic rebalances.
        provider = conductor.ConductorRingProvider(connection=self.conn)
        self._check_conductor_ring(provider)
        victim, survivor = self.ironic.conductors_in('rack1')
        self.ironic.kill_conductor(victim)
        self.ironic.wait_for_conductors(dead=[victim], timeout=TIMEOUT)
        harness.wait_for(
            lambda: set(harness.node_conductors(
                self.conn, conductor_group='rack1').values())
            == {survivor.hostname}, TIMEOUT, 'rack1 nodes to move')
        self._check_conductor_ring(provider)

        # Three services share rack1: disjoint, complete.
        peers = ['cn1', 'cn2', 'cn3']
        parts = {}
        for host in peers:
            conf = self._conf(host, 'RACK1', [p.upper() for p in peers])
            settings = settings_mod.from_conf(conf)
            membership = static.StaticMembership(settings, 'agent')
            membership.start()
            self.addCleanup(membership.stop)
            parts[host] = partitioner.Partitioner(
                settings, settings_mod.ironic_client(conf), membership)
        results = {h: p.refresh() for h, p in parts.items()}
        managed = [set(r.nodes) for r in results.values()]
        self.assertEqual(self.expected['rack1'], set().union(*managed))
        self.assertEqual(sum(len(m) for m in managed),
                         len(self.expected['rack1']))

        # Ironic down: not ready, never an empty list; back: same split.
        self.ironic.stop_api()
        for p in parts.values():
            self.assertRaises(exception.PartitionNotReady, p.refresh)
            self.assertIsNotNone(p.last_result)
        self.ironic.start_api()
        for host, p in parts.items():
            self.assertEqual(set(results[host].nodes), set(p.refresh().nodes))
