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

"""The change feed and the node index, against an Ironic-like fake.

The fake sorts and pages as Ironic's API does on top of oslo.db's
``paginate_query``: keyset pagination on (sort key, id), NULL timestamps
first (PostgreSQL) or last (MySQL) on a descending sort, and a marker
without a timestamp compared on its id alone. The functional test
``test_node_index`` checks the same against a real Ironic.
"""

import datetime
import email.utils
import json
import random
from unittest import mock
import uuid

import fixtures
import requests

from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition.ironic import change_feed
from ironic_partition.ironic import node_index
from ironic_partition.partition import partitioner
from ironic_partition.tests import base
from ironic_partition.tests.unit.partition import test_partitioner

T0 = datetime.datetime(2026, 11, 23, 12, 0, 0,
                       tzinfo=datetime.timezone.utc)


def _iso(stamp):
    return stamp.isoformat() if stamp is not None else None


class FakeIronic(object):
    """Nodes with Ironic's timestamps, served like Ironic's node API."""

    def __init__(self, nulls='first', max_limit=1000, shard_ci=None):
        self.nulls = nulls
        #: Ironic's [api] max_limit: the largest page it serves.
        self.max_limit = max_limit
        #: Whether the database's collation ignores case (MySQL); by
        #: default MySQL sorts nulls last and PostgreSQL first.
        self.shard_ci = (nulls == 'last') if shard_ci is None else shard_ci
        self.rows = {}
        self.next_id = 1
        self.now = T0
        self.calls = []

    def tick(self, seconds=1):
        self.now += datetime.timedelta(seconds=seconds)

    def create(self, group='rack1', stamp=True, shard=None, **fields):
        u = str(uuid.uuid4())
        self.rows[u] = dict(
            id=self.next_id, uuid=u, conductor_group=group,
            instance_uuid=None, maintenance=False, shard=shard,
            created_at=self.now, updated_at=self.now if stamp else None,
            **fields)
        self.next_id += 1
        self.tick()
        return u

    def update(self, u, stamp=None, **fields):
        self.rows[u].update(fields)
        self.rows[u]['updated_at'] = stamp or self.now
        self.tick()

    def delete(self, u):
        del self.rows[u]
        self.tick()

    # The SDK proxy's get(), as IronicClient calls it.
    def get(self, path, params=None, microversion=None):
        params = dict(params)
        self.calls.append((path, params))
        if path.startswith('/nodes/') and path != '/nodes/detail':
            row = self.rows.get(path[len('/nodes/'):])
            if row is None:
                return self._response({'error_message': 'not found'}, 404)
            return self._response(self._view(row, path, params))
        rows = list(self.rows.values())
        if 'conductor_group' in params:
            rows = [r for r in rows
                    if r['conductor_group'] == params['conductor_group']]
        if 'shard' in params:
            # Ironic lower-cases the filter; the collation decides.
            rows = [r for r in rows if r['shard'] is not None and (
                r['shard'] == params['shard'] or (
                    self.shard_ci and
                    r['shard'].lower() == params['shard']))]
        key = params.get('sort_key', 'id')
        desc = params.get('sort_dir') == 'desc'

        def order(row):
            value = row[key]
            null = value is None
            rank = (0 if null else 1) if (self.nulls == 'first') == desc \
                else (1 if null else 0)
            return (rank if not desc else -rank,
                    value if value is not None else T0, row['id'])
        rows.sort(key=order, reverse=desc)
        if desc:
            # reverse=True flipped the NULL rank too; put it back.
            rows.sort(key=lambda r: (r[key] is None) != (self.nulls ==
                                                         'first'))
        if 'marker' in params:
            if params['marker'] not in self.rows:
                return self._response({'error_message': 'not found'}, 404)
            marker = self.rows[params['marker']]
            value = marker[key]

            def after(row):
                if value is None:
                    # oslo.db skips a NULL marker value: id alone.
                    return (row['id'] < marker['id'] if desc
                            else row['id'] > marker['id'])
                if row[key] is None:
                    return False
                if row[key] == value:
                    return (row['id'] < marker['id'] if desc
                            else row['id'] > marker['id'])
                return row[key] < value if desc else row[key] > value
            rows = [r for r in rows if after(r)]
        limit = min(params['limit'], self.max_limit)
        page = rows[:limit]
        body = {'nodes': [self._view(r, path, params) for r in page]}
        if len(page) == limit:
            body['next'] = ('http://ironic/v1%s?marker=%s'
                            % (path, page[-1]['uuid']))
        return self._response(body)

    def _response(self, body, status=200):
        resp = requests.Response()
        resp.status_code = status
        resp.url = 'http://ironic/v1/nodes'
        resp._content = json.dumps(body).encode()
        resp.headers['Content-Type'] = 'application/json'
        # The API host's clock: Ironic's, at whole seconds.
        resp.headers['Date'] = email.utils.format_datetime(
            self.now.replace(microsecond=0), usegmt=True)
        return resp

    def _view(self, row, path, params):
        view = {k: v for k, v in row.items() if k != 'id'}
        view['updated_at'] = _iso(row['updated_at'])
        view['created_at'] = _iso(row['created_at'])
        if path == '/nodes':
            assert 'updated_at' not in params.get('fields', '')
            fields = params['fields'].split(',')
            view = {k: view.get(k) for k in fields}
        return view


def _client(fake, page_size=5):
    return baremetal.IronicClient(connection=mock.Mock(baremetal=fake),
                                  page_size=page_size)


def _feed(fake, page_size=5):
    return change_feed.ChangeFeed(_client(fake, page_size))


class TestNodeChanges(base.TestCase):

    def _changes(self, fake, since, overlap=2, page_size=5):
        return _feed(fake, page_size).node_changes(
            since, datetime.timedelta(seconds=overlap))

    def test_reads_only_what_changed_since_the_watermark(self):
        for nulls in ('first', 'last'):
            fake = FakeIronic(nulls)
            old = [fake.create() for _ in range(30)]
            fake.tick(100)
            since = fake.now
            fake.tick(10)
            fake.update(old[3], instance_uuid='i')
            new = fake.create(stamp=False)
            changes = self._changes(fake, since)
            self.assertEqual({old[3], new}, {n.id for n in changes.nodes},
                             nulls)
            self.assertGreater(changes.mark, since)
            # Two short reads, not a listing of 30 nodes.
            self.assertLessEqual(changes.calls, 2)

    def test_a_quiet_fleet_costs_a_small_page_not_a_full_one(self):
        # Ironic's pages of 1000: a quiet refresh must not read a detailed
        # page of the fleet to find the one node that changed.
        first = change_feed.FIRST_PAGE
        for nulls in ('first', 'last'):
            fake = FakeIronic(nulls)
            old = [fake.create() for _ in range(3 * first)]
            fake.tick(100)
            since = fake.now
            fake.update(old[5], maintenance=True)
            changes = self._changes(fake, since, page_size=1000)
            self.assertEqual([old[5]], [n.id for n in changes.nodes], nulls)
            newest_first = [c[1]['limit'] for c in fake.calls
                            if c[1].get('sort_dir') == 'desc']
            self.assertEqual([first, first], newest_first, nulls)
            # A busy minute: more changes than the first page; the read
            # goes on with full pages and misses none.
            since = fake.now
            busy = old[:2 * first]
            for u in busy:
                fake.update(u, maintenance=False)
            del fake.calls[:]
            changes = self._changes(fake, since, page_size=1000)
            self.assertEqual(set(busy), {n.id for n in changes.nodes},
                             nulls)
            self.assertIn(1000, [c[1]['limit'] for c in fake.calls
                                 if c[1].get('sort_key') == 'updated_at'])

    def test_overlap_reads_again_before_the_watermark(self):
        fake = FakeIronic()
        u = fake.create()
        fake.tick(100)
        since = fake.now
        # Committed late, stamped a second before the watermark.
        fake.update(u, stamp=since - datetime.timedelta(seconds=1),
                    maintenance=True)
        changes = self._changes(fake, since, overlap=2)
        self.assertEqual([u], [n.id for n in changes.nodes])
        changes = self._changes(fake, since + datetime.timedelta(seconds=5),
                                overlap=2)
        self.assertEqual([], changes.nodes)

    def test_creation_watermark_moves_with_updates(self):
        # A batch enrolled at one instant is read again only until a later
        # change moves the one watermark past it.
        fake = FakeIronic()
        batch = [fake.create() for _ in range(20)]
        fake.now = fake.rows[batch[0]]['created_at']
        for u in batch:
            fake.rows[u]['created_at'] = fake.now
            fake.rows[u]['updated_at'] = fake.now
        since = fake.now
        fake.tick(30)
        fake.update(batch[0], maintenance=True)
        changes = self._changes(fake, since, overlap=2, page_size=50)
        self.assertEqual(20, len(changes.nodes))
        fake.tick(30)
        fake.update(batch[1], maintenance=True)
        changes = self._changes(fake, changes.mark, overlap=2,
                                page_size=50)
        # The new change, and the last one again (at the watermark, inside
        # the overlap); not the batch.
        self.assertEqual({batch[0], batch[1]},
                         {n.id for n in changes.nodes})
        # Read on from an anchor (the newest node below the watermark
        # minus the overlap), the batch is not read again either.
        self.assertEqual(batch[0], changes.anchors[0].uuid)
        fake.tick(30)
        fake.update(batch[2], maintenance=True)
        changes = _feed(fake, page_size=50).node_changes(
            changes.mark, datetime.timedelta(seconds=2),
            anchors=changes.anchors)
        self.assertEqual({batch[1], batch[2]},
                         {n.id for n in changes.nodes})

    def test_of_nodes_sharing_a_stamp_the_last_listed_is_the_anchor(self):
        # Ironic reads on from the marker's (updated_at, id): of a batch
        # stamped at one instant, only the last one leaves the batch out.
        fake = FakeIronic()
        batch = [fake.create() for _ in range(6)]
        for u in batch:
            fake.rows[u]['updated_at'] = T0
        since = fake.now + datetime.timedelta(seconds=10)
        changes = self._changes(fake, since)
        self.assertEqual([], changes.nodes)
        self.assertEqual((batch[-1],),
                         tuple(a.uuid for a in changes.anchors))
        changes = _feed(fake).node_changes(
            since, datetime.timedelta(seconds=2), anchors=changes.anchors)
        self.assertEqual([], changes.nodes)
        ties = [change_feed.Anchor(u, T0) for u in batch]
        self.assertEqual(batch[-1], change_feed._next_anchors(
            (), ties, T0 + datetime.timedelta(seconds=5),
            datetime.timedelta(seconds=2))[0].uuid)

    def test_watermark_is_ironics_clock_not_ours(self):
        fake = FakeIronic()
        fake.now = T0 - datetime.timedelta(days=365)
        u = fake.create()
        changes = self._changes(fake, T0 - datetime.timedelta(days=366))
        self.assertEqual([u], [n.id for n in changes.nodes])
        # The node's stamp, or the API's Date (its clock, a second
        # later): never this host's, a year ahead.
        self.assertLessEqual(fake.rows[u]['updated_at'], changes.mark)
        self.assertLessEqual(changes.mark, fake.now)

    def test_a_quiet_fleet_moves_the_watermark_by_ironics_clock(self):
        # A batch enrolled at one instant, then nothing: the newest stamp
        # stays where it was, and a watermark taken from it alone read the
        # whole batch again at every refresh.
        fake = FakeIronic()
        batch = [fake.create() for _ in range(20)]
        for u in batch:
            fake.rows[u]['created_at'] = fake.rows[u]['updated_at'] = T0
        changes = self._changes(fake, T0 - datetime.timedelta(seconds=30),
                                overlap=10, page_size=50)
        self.assertEqual(20, len(changes.nodes))
        fake.tick(60)
        changes = self._changes(fake, changes.mark, overlap=10,
                                page_size=50)
        self.assertEqual([], changes.nodes)
        # The API's Date minus the read's duration: at most its clock.
        self.assertLessEqual(changes.mark, fake.now)
        self.assertGreater(changes.mark,
                           fake.now - datetime.timedelta(seconds=10))
        # A change committed late, stamped before that watermark but
        # within the overlap, is read at the next refresh.
        late = changes.mark - datetime.timedelta(seconds=5)
        fake.update(batch[3], stamp=late, maintenance=True)
        changes = self._changes(fake, changes.mark, overlap=10,
                                page_size=50)
        self.assertEqual([batch[3]], [n.id for n in changes.nodes])

    def test_a_date_ahead_of_this_host_is_ignored(self):
        # A TLS proxy 90 s ahead answers for Ironic: a watermark taken
        # from its Date would skip the change a lagging conductor commits
        # stamped 10 s after the quiet batch, until the next full listing.
        logger = self.useFixture(fixtures.FakeLogger())
        second = datetime.timedelta(seconds=1)
        overlap = 60 * second
        fake = FakeIronic()
        batch = [fake.create() for _ in range(5)]
        for u in batch:
            fake.rows[u]['created_at'] = fake.rows[u]['updated_at'] = T0
        host = [T0]
        fake.now = T0 + 90 * second
        feed = change_feed.ChangeFeed(_client(fake, page_size=50),
                                      wall_clock=lambda: host[0])
        changes = feed.node_changes(T0 - 30 * second, overlap)
        self.assertEqual(5, len(changes.nodes))
        self.assertEqual(T0, changes.mark)
        self.assertGreaterEqual(feed.date_ahead, 89)
        self.assertIn('Ignoring the Date of the Ironic API at', logger.output)
        self.assertIn('more than [ironic_partition] change_feed_overlap '
                      '(60 s)', logger.output)
        host[0], fake.now = T0 + 20 * second, T0 + 110 * second
        fake.update(batch[2], stamp=T0 + 10 * second, maintenance=True)
        changes = feed.node_changes(changes.mark, overlap)
        self.assertIn(batch[2], [n.id for n in changes.nodes])
        self.assertEqual(T0 + 10 * second, changes.mark)
        self.assertEqual(1, logger.output.count('Ignoring the Date'))
        # The proxy's clock fixed: the Date moves the watermark again.
        host[0] = fake.now = T0 + 200 * second
        changes = feed.node_changes(changes.mark, overlap)
        self.assertEqual(0.0, feed.date_ahead)
        self.assertGreater(changes.mark, T0 + 100 * second)
        self.assertIn('within [ironic_partition] change_feed_overlap of '
                      "this host's clock again", logger.output)

    def test_a_date_behind_this_host_still_moves_the_watermark(self):
        fake = FakeIronic()
        fake.create()
        feed = change_feed.ChangeFeed(
            _client(fake), wall_clock=lambda: fake.now + datetime.timedelta(
                seconds=600))
        fake.tick(30)
        changes = feed.node_changes(fake.now - datetime.timedelta(
            seconds=5), datetime.timedelta(seconds=2))
        self.assertLessEqual(changes.mark, fake.now)
        self.assertGreater(changes.mark,
                           fake.now - datetime.timedelta(seconds=1))
        self.assertEqual(0.0, feed.date_ahead)

    def test_the_clock_watermark_is_before_every_query(self):
        meter = baremetal.Meter()
        date = T0 + datetime.timedelta(seconds=30)
        meter.add(0.1, date + datetime.timedelta(seconds=2))
        meter.add(0.1, date)
        self.assertEqual(date, meter.first_server_date)
        self.assertEqual(date - datetime.timedelta(seconds=3),
                         change_feed._read_began(meter, 3.0))
        self.assertEqual(change_feed._EPOCH,
                         change_feed._read_began(baremetal.Meter(), 3.0))

    def test_never_updated_nodes_sorted_first_are_read_past(self):
        # PostgreSQL puts never-updated nodes first newest first; a marker
        # without a timestamp would make Ironic skip newer nodes. The
        # updated nodes are read oldest first from the oldest one instead.
        fake = FakeIronic('first')
        for _ in range(6):
            fake.create(stamp=False)
        changes = self._changes(fake, T0)
        # Nothing was ever updated: only the creations count.
        self.assertEqual(6, len(changes.nodes))
        fake.tick(100)
        since = fake.now
        old = fake.create()
        fake.tick(100)
        fresh = fake.create()
        fake.update(fresh, maintenance=True)
        changes = self._changes(fake, since)
        self.assertEqual({old, fresh}, {n.id for n in changes.nodes})
        self.assertLessEqual(fake.rows[fresh]['updated_at'], changes.mark)
        # The oldest updated node is the anchor the next read goes on
        # from: only what changed after it, without the untimed nodes.
        self.assertEqual((old,), tuple(a.uuid for a in changes.anchors))
        fake.tick(100)
        fake.update(fresh, maintenance=False)
        del fake.calls[:]
        changes = _feed(fake).node_changes(
            changes.mark, datetime.timedelta(seconds=2),
            anchors=changes.anchors)
        self.assertEqual([fresh], [n.id for n in changes.nodes])
        # The oldest-first read, the anchor's check, the creations (the
        # updated and the created nodes are read at once, in any order).
        self.assertEqual(3, len(fake.calls))
        self.assertEqual(
            ['asc'], [c[1]['sort_dir'] for c in fake.calls
                      if c[1].get('sort_key') == 'updated_at'])

    def test_a_changed_anchor_falls_back_to_an_older_one(self):
        fake = FakeIronic('first')
        nodes = [fake.create() for _ in range(3)]
        for _ in range(6):
            fake.create(stamp=False)
        fake.tick(100)
        anchors = tuple(change_feed.Anchor(u, fake.rows[u]['updated_at'])
                        for u in (nodes[2], nodes[0]))
        since = fake.now
        # The newest anchor changes again: Ironic would read on from its
        # new stamp and skip nodes[1]'s change, made in between.
        fake.update(nodes[1], maintenance=True)
        fake.update(nodes[2], maintenance=True)
        changes = _feed(fake).node_changes(
            since, datetime.timedelta(seconds=2), anchors=anchors)
        self.assertEqual({nodes[1], nodes[2]},
                         {n.id for n in changes.nodes})
        self.assertEqual(nodes[0], changes.anchors[0].uuid)
        # Every anchor gone: the newest-first read, then the oldest node.
        fake.delete(nodes[0])
        changes = _feed(fake).node_changes(
            since, datetime.timedelta(seconds=2), anchors=changes.anchors)
        self.assertEqual({nodes[1], nodes[2]},
                         {n.id for n in changes.nodes})

    def test_a_page_marker_changed_during_the_read_is_caught(self):
        fake = FakeIronic('first')
        nodes = [fake.create() for _ in range(12)]
        anchor = change_feed.Anchor(nodes[0],
                                    fake.rows[nodes[0]]['updated_at'])
        real = fake.get

        def get(path, params=None, microversion=None):
            resp = real(path, params, microversion)
            if params and params.get('marker') == nodes[5]:
                # The first page's last node changes while the second
                # page is read.
                fake.update(nodes[5], maintenance=True)
            return resp
        fake.get = get
        feed = _feed(fake)
        self.assertRaises(change_feed.ChangeFeedUnavailable,
                          feed._read_on_from, anchor, T0,
                          None, baremetal.Meter())

    def test_a_watermark_ahead_of_the_api_clock_is_refused(self):
        # A conductor whose clock runs 10 minutes ahead stamps a change:
        # a watermark taken from it would hide the other hosts' changes.
        fake = FakeIronic()
        nodes = [fake.create() for _ in range(5)]
        fake.tick(30)
        since = fake.now
        fake.tick(5)
        fake.update(nodes[1], maintenance=True)
        self.assertEqual(1, len(self._changes(fake, since).nodes))
        fake.update(nodes[2], stamp=fake.now + datetime.timedelta(
            minutes=10), maintenance=True)
        e = self.assertRaises(change_feed.ChangeFeedUnavailable,
                              self._changes, fake, since)
        self.assertIn('ahead of the clock of the Ironic API', str(e))
        self.assertIn('change_feed_overlap (2 s)', str(e))

    def test_short_pages_of_never_updated_nodes_are_read_past(self):
        # Ironic's [api] max_limit (3) is below our page size (5): its
        # pages are short, and only its "next" link tells that the page
        # ending on a node without a timestamp has a next one.
        fake = FakeIronic('first', max_limit=3)
        for _ in range(3):
            fake.create(stamp=False)
        fake.tick(100)
        u = fake.create()
        fake.update(u, maintenance=True)
        changes = self._changes(fake, T0 + datetime.timedelta(seconds=50))
        self.assertEqual([u], [n.id for n in changes.nodes])
        self.assertTrue(fake.rows[u]['maintenance'])

    def test_newest_stamp(self):
        fake = FakeIronic('first')
        fake.create(stamp=False)
        u = fake.create()
        fake.create(stamp=False)
        mark, meter = _feed(fake).newest_stamp()
        # One watermark: the newest stamp of either kind.
        newest = max(r['created_at'] for r in fake.rows.values())
        self.assertGreater(newest, fake.rows[u]['updated_at'])
        self.assertEqual(newest, mark)
        # One node per timestamp, and a larger page past the node without
        # an updated_at that PostgreSQL sorts first.
        self.assertEqual(3, meter.calls)
        fake.nulls = 'last'
        self.assertEqual(2, _feed(fake).newest_stamp()[1].calls)


class TestNodeIndex(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = [0.0]

    def _index(self, fake, resync=300, page_size=7):
        return node_index.NodeIndex(_client(fake, page_size), resync, 2,
                                    clock=lambda: self.clock[0])

    @staticmethod
    def _truth(fake, group, shard=None):
        return {u: (r['instance_uuid'], r['maintenance'])
                for u, r in fake.rows.items()
                if r['conductor_group'] == group
                and (shard is None or r['shard'] == shard)}

    @staticmethod
    def _seen(index):
        return {u: (n.instance_id, n.is_maintenance)
                for u, n in index.nodes.items()}

    def test_random_changes_match_a_full_listing(self):
        rng = random.Random(42)
        for nulls in ('first', 'last'):
            fake = FakeIronic(nulls)
            for i in range(60):
                fake.create(group=rng.choice(['rack1', 'rack2']))
            index = self._index(fake, resync=10 ** 6)
            update = index.refresh('rack1')
            self.assertTrue(update.full)
            fulls = 0
            for step in range(30):
                live = sorted(fake.rows)
                for _ in range(rng.randint(0, 4)):
                    u = rng.choice(live)
                    kind = rng.choice(['instance', 'group', 'maintenance',
                                       'create'])
                    if kind == 'instance':
                        fake.update(u, instance_uuid=rng.choice(
                            [None, str(uuid.uuid4())]))
                    elif kind == 'group':
                        fake.update(u, conductor_group=rng.choice(
                            ['rack1', 'rack2']))
                    elif kind == 'maintenance':
                        fake.update(u, maintenance=rng.random() < 0.5)
                    else:
                        # Never updated since created, mostly.
                        fake.create(group='rack1',
                                    stamp=rng.random() < 0.3)
                self.clock[0] += 10
                update = index.refresh('rack1')
                fulls += update.full
                if update.full:
                    # Too many never-updated nodes for PostgreSQL's
                    # order: listed in full, never trusted.
                    self.assertIn('incomplete', update.reason)
                self.assertEqual(self._truth(fake, 'rack1'),
                                 self._seen(index), (nulls, step))
            self.assertLess(fulls, 10, nulls)

    def test_deletion_is_found_by_the_periodic_resync(self):
        fake = FakeIronic()
        nodes = [fake.create() for _ in range(10)]
        index = self._index(fake, resync=300)
        index.refresh('rack1')
        fake.delete(nodes[0])
        self.clock[0] += 30
        self.assertFalse(index.refresh('rack1').full)
        self.assertIn(nodes[0], index.nodes)
        self.clock[0] += 300
        update = index.refresh('rack1')
        self.assertTrue(update.full)
        self.assertEqual('periodic full resync', update.reason)
        self.assertNotIn(nodes[0], index.nodes)

    def test_a_full_listing_keeps_the_records_of_unchanged_nodes(self):
        fake = FakeIronic()
        nodes = [fake.create() for _ in range(10)]
        index = self._index(fake, resync=0)
        index.refresh('rack1')
        before = dict(index.nodes)
        fake.update(nodes[3], maintenance=True)
        self.assertTrue(index.refresh('rack1').full)
        for u in nodes:
            if u == nodes[3]:
                self.assertIsNot(before[u], index.nodes[u])
                self.assertTrue(index.nodes[u].is_maintenance)
            else:
                self.assertIs(before[u], index.nodes[u])

    def test_resync_interval_zero_always_lists_in_full(self):
        fake = FakeIronic()
        fake.create()
        index = self._index(fake, resync=0)
        index.refresh('rack1')
        self.assertTrue(index.refresh('rack1').full)

    def test_moved_out_of_the_group_is_dropped(self):
        fake = FakeIronic()
        u = fake.create(group='rack1')
        index = self._index(fake)
        index.refresh('rack1')
        fake.update(u, conductor_group='rack2')
        self.clock[0] += 1
        self.assertFalse(index.refresh('rack1').full)
        self.assertNotIn(u, index.nodes)

    def test_shard_filter(self):
        fake = FakeIronic()
        u = fake.create(group='rack1', shard='s1')
        index = self._index(fake)
        index.refresh('rack1', 's1')
        self.assertIn(u, index.nodes)
        fake.update(u, shard='s2')
        self.clock[0] += 1
        index.refresh('rack1', 's1')
        self.assertNotIn(u, index.nodes)

    def test_partition_change_lists_in_full(self):
        fake = FakeIronic()
        fake.create(group='rack1')
        v = fake.create(group='rack2')
        index = self._index(fake)
        index.refresh('rack1')
        update = index.refresh('rack2')
        self.assertTrue(update.full)
        self.assertEqual({v}, set(index.nodes))

    def test_listing_failed_half_way_is_done_again(self):
        fake = FakeIronic()
        for _ in range(20):
            fake.create()
        index = self._index(fake, page_size=7)
        index.refresh('rack1')
        real = fake.get
        calls = []

        def flaky(path, params=None, microversion=None):
            calls.append(path)
            if path == '/nodes' and 'marker' in params:
                raise requests.ConnectionError('cut')
            return real(path, params, microversion)
        fake.get = flaky
        index.invalidate()
        self.assertRaises(exception.IronicUnavailable, index.refresh,
                          'rack1')
        fake.get = real
        self.clock[0] += 1
        update = index.refresh('rack1')
        self.assertTrue(update.full)
        self.assertEqual('the last listing did not finish', update.reason)
        self.assertEqual(20, len(index))

    def test_incomplete_feed_falls_back_to_a_full_listing(self):
        fake = FakeIronic('first')
        nodes = [fake.create() for _ in range(3)]
        index = self._index(fake, page_size=5)
        index.refresh('rack1')
        fake.update(nodes[0], stamp=fake.now + datetime.timedelta(
            minutes=10), maintenance=True)
        fake.create()
        self.clock[0] += 1
        update = index.refresh('rack1')
        self.assertTrue(update.full)
        self.assertIn('change feed is incomplete', update.reason)
        self.assertEqual(4, len(index))

    def _mixed_case(self, nulls):
        fake = FakeIronic(nulls)
        mixed = fake.create(group='rack1', shard='Rack-A')
        lower = fake.create(group='rack1', shard='rack-a')
        index = self._index(fake)
        index.refresh('rack1', 'Rack-A')
        self.clock[0] += 1
        fake.update(mixed, maintenance=True)
        fake.update(lower, maintenance=True)
        return fake, index, mixed, lower

    def test_mixed_case_shard_on_mysql_stays_in_the_index(self):
        logger = self.useFixture(fixtures.FakeLogger())
        fake, index, mixed, lower = self._mixed_case('last')
        update = index.refresh('rack1', 'Rack-A')
        self.assertFalse(update.full)
        self.assertEqual({mixed, lower}, set(index.nodes))
        self.assertTrue(index.nodes[mixed].is_maintenance)
        self.assertNotIn('change feed cannot be used', logger.output)

    def test_mixed_case_shard_on_postgresql_lists_in_full(self):
        logger = self.useFixture(fixtures.FakeLogger())
        fake, index, mixed, lower = self._mixed_case('first')
        self.assertEqual({lower}, set(index.nodes))
        update = index.refresh('rack1', 'Rack-A')
        # The feed cannot tell whether Ironic lists it: a full listing,
        # which does not.
        self.assertTrue(update.full)
        self.assertIn("has shard 'Rack-A'", update.reason)
        self.assertEqual({lower}, set(index.nodes))
        self.assertEqual(1, logger.output.count('change feed cannot be '
                                                'used'))
        self.assertIn('use lower-case shard names', index.feed_problem)

    def test_feed_problem_warned_once_and_cleared(self):
        logger = self.useFixture(fixtures.FakeLogger())
        fake = FakeIronic('first')
        nodes = [fake.create() for _ in range(3)]
        index = self._index(fake, page_size=5)
        index.refresh('rack1')
        # A conductor whose clock runs 10 minutes ahead stamps a change.
        fake.update(nodes[0], stamp=fake.now + datetime.timedelta(
            minutes=10), maintenance=True)
        for _ in range(2):
            self.clock[0] += 1
            self.assertTrue(index.refresh('rack1').full)
        warned = logger.output.count('change feed cannot be used')
        self.assertGreaterEqual(warned, 1)
        for _ in range(3):
            self.clock[0] += 1
            self.assertTrue(index.refresh('rack1').full)
        # Once per reason, not at every refresh.
        self.assertEqual(warned, logger.output.count('change feed cannot '
                                                     'be used'))
        self.assertIn('ahead of the clock of the Ironic API',
                      index.feed_problem)
        # Once Ironic's clock caught up, the feed is used again.
        fake.tick(11 * 60)
        self.clock[0] += 1
        index.refresh('rack1')
        self.clock[0] += 1
        self.assertFalse(index.refresh('rack1').full)
        self.assertIsNone(index.feed_problem)

    def test_never_updated_nodes_never_force_a_full_listing(self):
        # PostgreSQL sorts the nodes never updated since enrolled first;
        # more of them than a page used to make every refresh a full
        # listing. The feed reads the updated nodes on from an anchor.
        for nulls in ('first', 'last'):
            fake = FakeIronic(nulls)
            nodes = [fake.create() for _ in range(4)]
            for _ in range(12):
                fake.create(stamp=False)
            fake.tick(100)
            index = self._index(fake, page_size=5)
            self.assertTrue(index.refresh('rack1').full)
            self.assertIsNone(index.feed_problem, nulls)
            for step in range(4):
                fake.tick(100)
                fake.update(nodes[step], maintenance=True)
                fake.create(stamp=False)
                self.clock[0] += 1
                update = index.refresh('rack1')
                self.assertFalse(update.full, (nulls, step, update.reason))
                self.assertEqual(self._truth(fake, 'rack1'),
                                 self._seen(index), (nulls, step))
            self.assertIsNone(index.feed_problem)
            # A few calls, not pages of never-updated nodes.
            self.assertLessEqual(update.calls, 4, nulls)


class TestPartitionerReadsTheOptions(base.TestCase):
    """The partitioner's index follows its two options.

    ``full_resync_interval`` and ``change_feed_overlap``, as listed in
    ``test_option_audit``.
    """

    def _partitioner(self, fake):
        self.config(group='ironic_partition', host='cn1', claims='off')
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn1'])
        self.clock = [0.0]
        membership = test_partitioner.FakeMembership(['cn1'])
        return partitioner.Partitioner(self.read_settings(), _client(fake),
                                       membership,
                                       clock=lambda: self.clock[0])

    def test_full_resync_interval(self):
        fake = FakeIronic()
        for _ in range(3):
            fake.create()
        self.config(group='ironic_partition', full_resync_interval=20)
        p = self._partitioner(fake)
        self.assertTrue(p.refresh().metrics.full)
        self.clock[0] += 10
        self.assertFalse(p.refresh().metrics.full)
        self.clock[0] += 10
        # 20 s after the full listing: the default, 300, would not list.
        self.assertTrue(p.refresh().metrics.full)

    def test_change_feed_overlap(self):
        fake = FakeIronic()
        u = fake.create()
        fake.tick(1000)
        fake.create()
        self.config(group='ironic_partition', change_feed_overlap=120)
        p = self._partitioner(fake)
        p.refresh()
        # Committed late, stamped 90 s before the watermark: inside a
        # 120 s overlap, outside the default 60 s.
        fake.update(u, stamp=fake.now - datetime.timedelta(seconds=91),
                    maintenance=True)
        self.clock[0] += 1
        result = p.refresh()
        self.assertFalse(result.metrics.full)
        self.assertTrue(result.nodes[u].is_maintenance)
