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
conductor group changes, maintenance, traits added and removed, creations,
deletions); after each
batch the node index, kept current by the change feed alone, must equal a
full listing, but for the deleted nodes that only the periodic full
listing can find. PostgreSQL and MariaDB order the nodes never updated
since created differently (first and last); both are run. The benchmark
``benchmarks/scale_bench.py`` runs the same check at 10^5 nodes.
"""

import random
import uuid

from openstack import exceptions as sdk_exc
from oslotest import base

from ironic_partition.ironic import baremetal
from ironic_partition.ironic import node_index
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
        return {n.id: (n.instance_id, n.is_maintenance, n.conductor_group,
                       sorted(n.traits or ()))
                for n in fresh.list_nodes(conductor_group=group)}

    @staticmethod
    def _seen(index):
        return {u: (n.instance_id, n.is_maintenance, n.conductor_group,
                    sorted(n.traits or ()))
                for u, n in index.nodes.items()}

    def _change(self, rng, deleted):
        nodes = {n.id: n for n in self.conn.baremetal.nodes(
            fields=['uuid', 'instance_uuid', 'provision_state', 'traits'])}
        u = rng.choice(sorted(nodes))
        kind = rng.choice(['instance', 'group', 'maintenance', 'create',
                           'delete', 'traits'])
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
        elif kind == 'traits':
            # NOTE(ironic-partition): through the traits API, which writes
            # the node_traits table and not the node's row itself.
            trait = rng.choice(['CUSTOM_GOLD', 'CUSTOM_SILVER'])
            if trait in (nodes[u].traits or ()):
                bm.remove_node_trait(u, trait)
            else:
                bm.add_node_trait(u, trait)
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
                          'delete', 'traits'}, kinds)
        # The periodic full listing finds the deletions.
        index.invalidate()
        self.assertTrue(index.refresh('rack1').full)
        self.assertEqual(self._truth('rack1'), self._seen(index))

    def test_never_updated_nodes_keep_the_feed(self):
        # More nodes never updated since enrolled than a page (10 here):
        # PostgreSQL sorts them first newest first, and Ironic cannot page
        # past them. The feed must still read only what changed.
        bm = self.conn.baremetal
        created = []
        for _ in range(12):
            node = bm.create_node(name='fresh-%s' % uuid.uuid4().hex[:8],
                                  driver='fake-hardware',
                                  conductor_group='rack2')
            created.append(node.id)
            self.addCleanup(bm.delete_node, node.id, ignore_missing=True)
        self.assertEqual(
            [None] * 12,
            [self.client.get_json('/nodes/%s' % u, {}, None).get('updated_at')
             for u in created])
        index = node_index.NodeIndex(self.client, resync_interval=10 ** 6,
                                     overlap=1)
        self.assertTrue(index.refresh('rack1').full)
        self.assertIsNone(index.feed_problem)
        some = sorted(index.nodes)[1]
        self.addCleanup(bm.unset_node_maintenance, some)
        for step in range(3):
            bm.set_node_maintenance(some, reason='step %d' % step)
            update = index.refresh('rack1')
            self.assertFalse(update.full, update.reason)
            self.assertIsNone(index.feed_problem)
            self.assertTrue(index.nodes[some].is_maintenance)
            self.assertEqual(self._truth('rack1'), self._seen(index))
            bm.unset_node_maintenance(some)
            update = index.refresh('rack1')
            self.assertFalse(update.full, update.reason)
            self.assertFalse(index.nodes[some].is_maintenance)

    def test_trait_changes_reach_the_feed(self):
        # A trait set or removed through Ironic's traits API changes only
        # the node_traits table; the feed sees it because Ironic bumps
        # the node's updated_at (it releases the node's lock with a
        # write). If Ironic ever stops doing that, this fails.
        index = node_index.NodeIndex(self.client, resync_interval=10 ** 6,
                                     overlap=1)
        self.assertTrue(index.refresh('rack1').full)
        node = sorted(index.nodes)[-1]
        trait = 'CUSTOM_FEED_%s' % uuid.uuid4().hex[:8].upper()
        bm = self.conn.baremetal

        def drop_trait():
            try:
                bm.remove_node_trait(node, trait)
            except sdk_exc.NotFoundException:
                pass
        self.addCleanup(drop_trait)
        bm.add_node_trait(node, trait)
        update = index.refresh('rack1')
        self.assertFalse(update.full, update.reason)
        self.assertIn(trait, index.nodes[node].traits)
        bm.remove_node_trait(node, trait)
        update = index.refresh('rack1')
        self.assertFalse(update.full, update.reason)
        self.assertNotIn(trait, index.nodes[node].traits or ())
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
