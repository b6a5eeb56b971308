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

"""The incremental refresh against a real Ironic, on both SQL servers.

Random changes go through Ironic's own API (instances set and cleared,
conductor group changes, maintenance, creations, deletions); after each
batch the node index, kept current by the change feed alone, must equal a
full listing, but for the deleted nodes that only the periodic full
listing can find. PostgreSQL and MariaDB order the nodes never updated
since created differently (first and last); both are run. The benchmark
``benchmarks/scale_bench.py`` runs the same check at 10^5 nodes.
"""

import random
import uuid

from oslotest import base

from ironic_partition import baremetal
from ironic_partition import node_index
from ironic_partition import testing as harness
from ironic_partition.tests.functional import test_cli

GROUPS = ['rack1', 'rack2']
STEPS = 8


class _NodeIndexTest(test_cli.SharedIronic):

    db_backend = None

    def setUp(self):
        super().setUp()
        if self.ironic is None:
            type(self).nodes = self.start_shared_ironic(
                'ironic-partition-index-', GROUPS, 40,
                db_backend=self.db_backend, provision_state='available')
        self.conn = harness.connect(self.ironic.endpoint)
        self.client = baremetal.IronicClient(connection=self.conn,
                                             page_size=10)

    def _truth(self, group):
        fresh = baremetal.IronicClient(connection=self.conn, page_size=10)
        return {n.id: (n.instance_id, n.is_maintenance, n.conductor_group)
                for n in fresh.list_nodes(conductor_group=group)}

    @staticmethod
    def _seen(index):
        return {u: (n.instance_id, n.is_maintenance, n.conductor_group)
                for u, n in index.nodes.items()}

    def _change(self, rng, deleted):
        nodes = {n.id: n for n in self.conn.baremetal.nodes(
            fields=['uuid', 'instance_uuid', 'provision_state'])}
        u = rng.choice(sorted(nodes))
        kind = rng.choice(['instance', 'group', 'maintenance', 'create',
                           'delete'])
        bm = self.conn.baremetal
        if kind == 'instance':
            if nodes[u].instance_id is None:
                harness.set_instance_uuid(self.conn, u, str(uuid.uuid4()))
            else:
                harness.clear_instance_uuid(self.conn, u)
        elif kind == 'group':
            bm.patch_node(u, [{'op': 'replace', 'path': '/conductor_group',
                               'value': rng.choice(GROUPS)}])
        elif kind == 'maintenance':
            if rng.random() < 0.5:
                bm.set_node_maintenance(u, reason='test')
            else:
                bm.unset_node_maintenance(u)
        elif kind == 'create':
            bm.create_node(name='idx-%s' % uuid.uuid4().hex[:8],
                           driver='fake-hardware',
                           conductor_group=rng.choice(GROUPS))
        else:
            free = sorted(v for v, n in nodes.items()
                          if n.instance_id is None)
            victim = rng.choice(free)
            bm.delete_node(victim)
            deleted.add(victim)
        return kind

    def test_random_changes_match_a_full_listing(self):
        rng = random.Random(self.db_backend)
        index = node_index.NodeIndex(self.client, resync_interval=10 ** 6,
                                     overlap=5)
        self.assertTrue(index.refresh('rack1').full)
        self.assertEqual(self._truth('rack1'), self._seen(index))
        deleted = set()
        kinds = set()
        for step in range(STEPS):
            for _ in range(rng.randint(2, 6)):
                kinds.add(self._change(rng, deleted))
            update = index.refresh('rack1')
            self.assertFalse(update.full, (step, update.reason))
            truth = self._truth('rack1')
            seen = self._seen(index)
            # Ironic keeps no trace of a deleted node: only those may
            # linger until the periodic full listing.
            lingering = set(seen) - set(truth)
            self.assertLessEqual(lingering, deleted, step)
            self.assertEqual(truth, {u: v for u, v in seen.items()
                                     if u not in lingering}, step)
        self.assertEqual({'instance', 'group', 'maintenance', 'create',
                          'delete'}, kinds)
        # The periodic full listing finds the deletions.
        index.invalidate()
        self.assertTrue(index.refresh('rack1').full)
        self.assertEqual(self._truth('rack1'), self._seen(index))

    def test_feed_reads_only_what_changed(self):
        index = node_index.NodeIndex(self.client, resync_interval=10 ** 6,
                                     overlap=1)
        self.assertTrue(index.refresh('rack2').full)
        some = sorted(index.nodes)[0]
        self.addCleanup(self.conn.baremetal.unset_node_maintenance, some)

        def change_and_refresh():
            # The nodes were all enrolled at one instant: the feed reads
            # them again until a change stamped past the overlap moves
            # its watermark on.
            reason = uuid.uuid4().hex
            self.conn.baremetal.set_node_maintenance(some, reason=reason)
            update = index.refresh('rack2')
            self.assertFalse(update.full)
            self.assertTrue(index.nodes[some].is_maintenance)
            self.assertGreaterEqual(update.changed, 1)
            return update if update.changed < len(self.nodes) else None

        update = harness.wait_for(change_and_refresh, 60,
                                  'the feed to read less than the fleet',
                                  interval=0.5)
        # What Ironic changed lately (this node, the conductors' own
        # updates, the never-updated nodes PostgreSQL sorts first), not
        # the whole fleet again.
        self.assertLess(update.changed, len(self.nodes) // 2)


class TestNodeIndexPostgreSQL(_NodeIndexTest, base.BaseTestCase):
    db_backend = 'postgresql'


class TestNodeIndexMariaDB(_NodeIndexTest, base.BaseTestCase):
    db_backend = 'mysql'
