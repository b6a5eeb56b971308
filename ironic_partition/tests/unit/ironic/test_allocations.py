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

"""Reserver and the client's allocation calls, on an in-memory Ironic.

``FakeIronic`` plays Ironic's allocation API behind an SDK-shaped proxy
(the same candidate, resource class, trait and association rules as
Ironic's conductor), so the real ``IronicClient`` and ``Partitioner`` run
unchanged. Mocks only inject faults.
"""

import io
import json
import types
from unittest import mock
import uuid

import fixtures
from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
import requests

from ironic_partition.cmd import cli
from ironic_partition.cmd import reserve as reserve_cmd
from ironic_partition import exception
from ironic_partition.ironic import allocation_request
from ironic_partition.ironic import allocations
from ironic_partition.ironic import baremetal
from ironic_partition.ironic import ironic_allocations
from ironic_partition.membership import static
from ironic_partition.partition import partitioner
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base


def _response(status, body):
    resp = requests.Response()
    resp.status_code = status
    resp._content = json.dumps(body).encode()
    resp.headers['Content-Type'] = 'application/json'
    resp.url = 'http://ironic/v1/allocations'
    return resp


def _http_error(cls, status, message):
    return cls(message=message, response=_response(status, {}),
               details=message)


def _uuid(i):
    return str(uuid.UUID(int=i + 1))


def api_node(i, group='rack1', resource_class='baremetal', traits=(),
             state='available', instance=None):
    return {'uuid': _uuid(i), 'instance_uuid': instance,
            'conductor_group': group, 'driver': 'fake-hardware',
            'maintenance': False, 'provision_state': state,
            'power_state': 'power off', 'resource_class': resource_class,
            'traits': list(traits), 'properties': {}}


class FakeIronic(object):
    """Ironic's node list and allocation API, in memory.

    ``process_after`` is the number of reads after which an allocation is
    processed; ``None`` leaves it ``allocating`` for ever. ``fail_with``
    makes processing fail with that message, ``ignore_candidates`` makes
    it pick any node (a misbehaving Ironic).
    """

    def __init__(self, nodes, max_version=(1, 90)):
        self.nodes = {n['uuid']: n for n in nodes}
        self.records = {}
        self.created = []
        self.deleted = []
        self.max_version = max_version
        self.default_microversion = None
        self.process_after = 1
        self.fail_with = None
        self.ignore_candidates = False

    # Version discovery, as a keystoneauth adapter answers it.
    def get_endpoint_data(self):
        return types.SimpleNamespace(min_microversion=(1, 1),
                                     max_microversion=self.max_version)

    # GET /v1/nodes, for list_nodes(); GET /v1/nodes/detail, for the
    # change feed, without timestamps: the tests change the nodes behind
    # Ironic's back, so the index lists in full every time.
    def get(self, path, params=None, microversion=None):
        assert path in ('/nodes', '/nodes/detail'), path
        params = dict(params or {})
        nodes = list(self.nodes.values())
        if path == '/nodes/detail':
            return _response(200, {'nodes': [
                dict(n, updated_at=None, created_at=None) for n in nodes]})
        if 'conductor_group' in params:
            nodes = [n for n in nodes
                     if n['conductor_group'] == params['conductor_group']]
        for key in ('resource_class', 'provision_state'):
            if key in params:
                nodes = [n for n in nodes if n[key] == params[key]]
        if 'associated' in params:
            nodes = [n for n in nodes
                     if bool(n['instance_uuid']) == params['associated']]
        if 'maintenance' in params:
            nodes = [n for n in nodes
                     if n['maintenance'] == params['maintenance']]
        if 'fields' in params:
            fields = params['fields'].split(',')
            nodes = [{k: n.get(k) for k in fields} for n in nodes]
        return _response(200, {'nodes': nodes})

    def _res(self, alloc):
        return types.SimpleNamespace(
            id=alloc['uuid'], name=alloc['name'], state=alloc['state'],
            node_id=alloc['node_uuid'],
            resource_class=alloc['resource_class'],
            traits=list(alloc['traits']),
            candidate_nodes=list(alloc['candidate_nodes']),
            last_error=alloc['last_error'], extra=dict(alloc['extra']))

    def _find(self, ident):
        if ident in self.records:
            return self.records[ident]
        for alloc in self.records.values():
            if alloc['name'] == ident:
                return alloc
        raise _http_error(sdk_exc.NotFoundException, 404,
                          'Allocation %s could not be found.' % ident)

    def create_allocation(self, **attrs):
        self.created.append(attrs)
        alloc_uuid = attrs.get('uuid') or str(uuid.uuid4())
        if alloc_uuid in self.records:
            raise _http_error(sdk_exc.ConflictException, 409,
                              'An allocation with UUID %s already exists.'
                              % alloc_uuid)
        name = attrs.get('name')
        if name and any(a['name'] == name
                        for a in self.records.values()):
            raise _http_error(sdk_exc.ConflictException, 409,
                              'An allocation with name %s already exists.'
                              % name)
        unknown = [c for c in attrs.get('candidate_nodes') or ()
                   if c not in self.nodes]
        if unknown:
            raise _http_error(sdk_exc.BadRequestException, 400,
                              'Nodes cannot be found: %s' % unknown)
        alloc = {'uuid': alloc_uuid, 'name': name, 'state': 'allocating',
                 'node_uuid': None,
                 'resource_class': attrs['resource_class'],
                 'traits': list(attrs.get('traits') or ()),
                 'candidate_nodes': list(attrs.get('candidate_nodes') or ()),
                 'last_error': None, 'extra': dict(attrs.get('extra') or {}),
                 'reads': 0}
        self.records[alloc_uuid] = alloc
        return self._res(alloc)

    def get_allocation(self, ident):
        alloc = self._find(ident)
        alloc['reads'] += 1
        if (alloc['state'] == 'allocating' and self.process_after is not None
                and alloc['reads'] >= self.process_after):
            self._process(alloc)
        return self._res(alloc)

    def _process(self, alloc):
        if self.fail_with:
            alloc.update(state='error', last_error=self.fail_with)
            return
        nodes = [n for n in self.nodes.values()
                 if n['provision_state'] == 'available'
                 and not n['instance_uuid'] and not n['maintenance']
                 and n['resource_class'] == alloc['resource_class']
                 and set(alloc['traits']).issubset(n['traits'])]
        if alloc['candidate_nodes'] and not self.ignore_candidates:
            nodes = [n for n in nodes
                     if n['uuid'] in alloc['candidate_nodes']]
        if not nodes:
            alloc.update(state='error', last_error=(
                'Failed to process allocation %s: none of the requested '
                'nodes are available and match the resource class %s.'
                % (alloc['uuid'], alloc['resource_class'])))
            return
        node = sorted(nodes, key=lambda n: n['uuid'])[-1]
        node['instance_uuid'] = alloc['uuid']
        alloc.update(state='active', node_uuid=node['uuid'])

    def delete_allocation(self, ident, ignore_missing=True):
        try:
            alloc = self._find(ident)
        except sdk_exc.NotFoundException:
            if ignore_missing:
                return None
            raise
        node = self.nodes.get(alloc['node_uuid'])
        if node is not None and node['provision_state'] == 'active':
            raise _http_error(
                sdk_exc.ConflictException, 409,
                'Cannot remove allocation %s for node %s, because the node '
                'is active (and maintenance mode is off)'
                % (alloc['uuid'], node['uuid']))
        if node is not None:
            node['instance_uuid'] = None
        del self.records[alloc['uuid']]
        self.deleted.append(alloc['uuid'])
        return self._res(alloc)

    def allocations(self, node=None, limit=None, **query):
        result = list(self.records.values())
        if node is not None:
            if node not in self.nodes:
                raise _http_error(sdk_exc.BadRequestException, 400,
                                  'Node %s could not be found.' % node)
            result = [a for a in result if a['node_uuid'] == node]
        return iter([self._res(a) for a in result])


class FakeClock(object):
    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class ReserverTestCase(base.TestCase):

    HOSTS = ('cn1', 'cn2')

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        self.clock = FakeClock()

    def make(self, nodes, host='cn1', key='rack1', peers=None,
             timeout=None, **kwargs):
        self.config(group='ironic_partition', host=host)
        self.config(group='ironic', partition_key=key,
                    peer_list=list(peers or self.HOSTS))
        self.ironic = FakeIronic(nodes)
        self.client = baremetal.IronicClient(
            connection=types.SimpleNamespace(baremetal=self.ironic))
        settings = settings_mod.from_conf(self.conf)
        membership = static.StaticMembership(settings, 'agent')
        self.part = partitioner.Partitioner(settings, self.client,
                                            membership)
        self.reserver = allocations.Reserver(
            self.client, self.part, timeout=timeout, clock=self.clock,
            sleep=self.clock.sleep, **kwargs)
        return self.reserver

    def managed(self):
        return set(self.part.last_result.nodes)

    def assert_no_allocation_left(self):
        self.assertEqual({}, self.ironic.records)
        self.assertEqual(
            [], [n['uuid'] for n in self.ironic.nodes.values()
                 if n['instance_uuid'] and n['provision_state'] != 'active'
                 and n['uuid'] not in self.preassigned])

    preassigned = ()


class TestReserve(ReserverTestCase):

    def test_reserves_an_own_node_and_marks_it(self):
        nodes = [api_node(i) for i in range(20)]
        reserver = self.make(nodes)
        instance = str(uuid.uuid4())
        res = reserver.reserve('baremetal', instance_uuid=instance.upper(),
                               name='vm-1')
        managed = self.managed()
        self.assertIn(res.node_id, managed)
        self.assertEqual(instance, res.allocation_id)
        self.assertEqual(instance, res.instance_uuid)
        self.assertEqual(instance,
                         self.ironic.nodes[res.node_id]['instance_uuid'])
        created = self.ironic.created[0]
        # The candidates are exactly this service's instance-less nodes.
        self.assertEqual(sorted(managed), created['candidate_nodes'])
        self.assertLess(len(managed), len(nodes))
        self.assertEqual('vm-1', created['name'])
        self.assertEqual('cn1', created['extra'][allocations.EXTRA_HOST])
        self.assertEqual('rack1',
                         created['extra'][allocations.EXTRA_PARTITION])
        self.assertTrue(created['extra'][allocations.EXTRA_REQUEST])
        self.assertEqual(len(managed), res.candidates)
        self.assertEqual('rack1', res.partition_key)
        self.assertEqual(res.allocation_id, res.to_dict()['instance_uuid'])
        self.assertIn('Reserved node %s' % res.node_id, self.logger.output)

    def test_without_instance_uuid_the_allocation_uuid_marks_the_node(self):
        reserver = self.make([api_node(i) for i in range(6)])
        res = reserver.reserve('baremetal')
        self.assertTrue(uuid.UUID(res.allocation_id))
        self.assertEqual(res.allocation_id,
                         self.ironic.nodes[res.node_id]['instance_uuid'])

    def test_candidates_skip_nodes_with_an_instance(self):
        nodes = [api_node(i) for i in range(20)]
        reserver = self.make(nodes, peers=['cn1'])
        taken = {_uuid(i) for i in range(0, 20, 2)}
        for node in nodes:
            if node['uuid'] in taken:
                node['instance_uuid'] = str(uuid.uuid4())
        self.preassigned = taken
        res = reserver.reserve('baremetal')
        self.assertNotIn(res.node_id, taken)
        self.assertEqual(set(self.managed()) - taken,
                         set(self.ironic.created[0]['candidate_nodes']))

    def test_refreshes_only_when_there_is_no_result(self):
        reserver = self.make([api_node(i) for i in range(6)], peers=['cn1'])
        self.assertIsNone(self.part.last_result)
        reserver.reserve('baremetal')
        first = self.part.last_result
        self.assertIsNotNone(first)
        reserver.reserve('baremetal')
        self.assertIs(first, self.part.last_result)

    def test_never_outside_the_partition(self):
        # The only gold node is in rack2, and a peer's share of rack1 has
        # a gpu node: neither is ever a candidate.
        nodes = ([api_node(i) for i in range(10)]
                 + [api_node(10, group='rack2', resource_class='gold')])
        reserver = self.make(nodes, peers=['cn1'])
        exc = self.assertRaises(exception.NoMatchingNode,
                                reserver.reserve, 'gold')
        msg = str(exc)
        self.assertIn("conductor group 'rack1'", msg)
        self.assertIn('restricted to the nodes this service (host cn1)', msg)
        self.assertIn('none of the 10 instance-less nodes considered', msg)
        self.assertIn('0 of them with that resource class', msg)
        self.assertIn('none of the requested nodes are available', msg)
        self.assertNotIn(_uuid(10),
                         self.ironic.created[0]['candidate_nodes'])
        self.assertIsNone(self.ironic.nodes[_uuid(10)]['instance_uuid'])
        self.assert_no_allocation_left()

    def test_peer_share_is_never_used(self):
        nodes = [api_node(i) for i in range(40)]
        reserver = self.make(nodes)
        self.part.refresh()
        mine = self.managed()
        theirs = [u for u in self.ironic.nodes if u not in mine]
        for u in theirs[:-1]:
            self.ironic.nodes[u]['resource_class'] = 'other'
        self.ironic.nodes[theirs[-1]]['traits'] = ['CUSTOM_GPU']
        self.assertRaises(exception.NoMatchingNode, reserver.reserve,
                          'baremetal', traits=['CUSTOM_GPU'])
        self.assertIsNone(self.ironic.nodes[theirs[-1]]['instance_uuid'])
        self.assert_no_allocation_left()

    def test_no_instance_less_node_sends_nothing(self):
        nodes = [api_node(i, instance=str(uuid.uuid4())) for i in range(4)]
        reserver = self.make(nodes, peers=['cn1'])
        self.preassigned = {n['uuid'] for n in nodes}
        exc = self.assertRaises(exception.NoMatchingNode,
                                reserver.reserve, 'baremetal')
        self.assertIn('nothing was sent to Ironic', str(exc))
        self.assertIn('none of the 0 instance-less nodes', str(exc))
        self.assertEqual([], self.ironic.created)

    def test_fenced_service_sends_nothing(self):
        # A lapsed ownership lease (a fault) leaves nothing reportable.
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.part.refresh()
        with mock.patch.object(self.part, 'reported_nodes', autospec=True,
                               return_value={}):
            exc = self.assertRaises(exception.NoMatchingNode,
                                    reserver.reserve, 'baremetal')
        self.assertIn('4 more are not reported while its ownership claims '
                      'are not valid', str(exc))
        self.assertEqual([], self.ironic.created)

    def test_peer_claimed_nodes_are_never_offered(self):
        # A read-only run holds no claim: nodes the ring gives this host
        # that a peer still holds a valid claim on (its lease has not run
        # out) are left out of the candidates.
        nodes = [api_node(i) for i in range(5)]
        reserver = self.make(nodes, peers=['cn1'])
        held = frozenset(n['uuid'] for n in nodes[:2])
        with mock.patch.object(self.part, 'claimed_by_others',
                               autospec=True, return_value=held):
            got = [reserver.reserve('baremetal').node_id for _ in range(3)]
        self.assertEqual(set(n['uuid'] for n in nodes[2:]), set(got))
        for created in self.ironic.created:
            self.assertFalse(held & set(created['candidate_nodes']))
        self.assertEqual(3, len(self.ironic.created))

    def test_only_peer_claimed_nodes_sends_nothing(self):
        nodes = [api_node(i) for i in range(2)]
        reserver = self.make(nodes, peers=['cn1'])
        held = frozenset(n['uuid'] for n in nodes)
        with mock.patch.object(self.part, 'claimed_by_others',
                               autospec=True, return_value=held):
            exc = self.assertRaises(exception.NoMatchingNode,
                                    reserver.reserve, 'baremetal')
        self.assertIn('2 without an instance are still claimed by another '
                      'service', str(exc))
        self.assertIn('nothing was sent to Ironic', str(exc))
        self.assertEqual([], self.ironic.created)

    def test_runs_out_then_says_so(self):
        reserver = self.make([api_node(i) for i in range(5)], peers=['cn1'])
        got = [reserver.reserve('baremetal').node_id for _ in range(5)]
        self.assertEqual(5, len(set(got)))
        exc = self.assertRaises(exception.NoMatchingNode,
                                reserver.reserve, 'baremetal')
        self.assertIn('none of the 5 instance-less nodes considered',
                      str(exc))
        self.assertIn('5 of them with that resource class', str(exc))
        self.assertEqual(5, len(self.ironic.records))

    def test_polls_with_backoff(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.ironic.process_after = 6
        reserver.reserve('baremetal')
        self.assertEqual([0.1, 0.2, 0.4, 0.8, 1.6, 2.0], self.clock.sleeps)

    def test_polls_never_past_the_deadline(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'],
                             timeout=1)
        self.ironic.process_after = None
        self.assertRaises(exception.AllocationTimeout, reserver.reserve,
                          'baremetal')
        self.assertAlmostEqual(1.0, sum(self.clock.sleeps))
        self.assertAlmostEqual(0.3, self.clock.sleeps[-1])


class TestFailures(ReserverTestCase):

    def test_timeout_deletes_the_allocation(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        # A mutable option: applied by the next reload (SIGHUP).
        self.config(group='ironic_partition', allocation_timeout=7)
        self.assertFalse(self.part.reload_settings(
            lambda: settings_mod.from_conf(self.conf)))
        self.ironic.process_after = None
        exc = self.assertRaises(exception.AllocationTimeout,
                                reserver.reserve, 'baremetal')
        alloc = self.ironic.created[0]['uuid']
        self.assertIn('did not become active within 7 s', str(exc))
        self.assertIn('last state: allocating', str(exc))
        self.assertIn('it was deleted', str(exc))
        self.assertEqual([alloc], self.ironic.deleted)
        self.assert_no_allocation_left()

    def test_zero_timeout_gives_up_at_once(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        exc = self.assertRaises(exception.AllocationTimeout,
                                reserver.reserve, 'baremetal', timeout=0)
        self.assertIn('within 0 s', str(exc))
        self.assertEqual([], self.clock.sleeps)
        self.assert_no_allocation_left()

    def test_ironic_failure_with_matching_nodes_left(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.ironic.fail_with = 'could not reserve any of 4 suitable nodes'
        exc = self.assertRaises(exception.AllocationFailed,
                                reserver.reserve, 'baremetal')
        self.assertIn('could not reserve any of 4 suitable nodes', str(exc))
        self.assertIn('the allocation was deleted', str(exc))
        self.assert_no_allocation_left()

    def test_ironic_ignoring_candidates_is_refused(self):
        nodes = ([api_node(i, resource_class='x') for i in range(4)]
                 + [api_node(9, group='rack2')])
        reserver = self.make(nodes, peers=['cn1'])
        self.ironic.ignore_candidates = True
        exc = self.assertRaises(exception.AllocationFailed,
                                reserver.reserve, 'baremetal')
        self.assertIn('not one of the candidates', str(exc))
        self.assertIsNone(self.ironic.nodes[_uuid(9)]['instance_uuid'])
        self.assert_no_allocation_left()

    def test_allocation_deleted_by_someone_else(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.ironic.process_after = None
        real_sleep = self.clock.sleep

        def sleep(seconds):
            real_sleep(seconds)
            self.ironic.records.clear()
        reserver._sleep = sleep
        exc = self.assertRaises(exception.AllocationFailed,
                                reserver.reserve, 'baremetal')
        self.assertIn('deleted by someone else', str(exc))

    def test_interrupted_wait_deletes_the_allocation(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.ironic.process_after = None
        with mock.patch.object(self.clock, 'sleep', autospec=True,
                               side_effect=[None, KeyboardInterrupt]):
            reserver._sleep = self.clock.sleep
            self.assertRaises(KeyboardInterrupt, reserver.reserve,
                              'baremetal')
        self.assert_no_allocation_left()

    def test_conflict_leaves_the_other_allocation_alone(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        instance = str(uuid.uuid4())
        first = reserver.reserve('baremetal', instance_uuid=instance)
        exc = self.assertRaises(exception.AllocationConflict,
                                reserver.reserve, 'baremetal',
                                instance_uuid=instance)
        self.assertIn(instance, str(exc))
        self.assertIn('already exists', str(exc))
        self.assertEqual([instance], list(self.ironic.records))
        self.assertEqual(instance,
                         self.ironic.nodes[first.node_id]['instance_uuid'])

    def test_name_conflict(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        reserver.reserve('baremetal', name='vm-1')
        self.assertRaises(exception.AllocationConflict, reserver.reserve,
                          'baremetal', name='vm-1')
        self.assertEqual(1, len(self.ironic.records))


class TestUnreachable(ReserverTestCase):

    def test_lost_create_answer_is_cleaned_up(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        real_create = self.ironic.create_allocation

        def create_then_fail(**attrs):
            real_create(**attrs)
            raise ks_exc.ConnectFailure('connection reset')
        with mock.patch.object(self.ironic, 'create_allocation',
                               autospec=True, side_effect=create_then_fail):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal')
        self.assertIn('connection reset', str(exc))
        self.assertIn('which was deleted', str(exc))
        self.assert_no_allocation_left()

    def test_lost_create_never_deletes_an_older_allocation(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        instance = str(uuid.uuid4())
        reserver.reserve('baremetal', instance_uuid=instance)
        with mock.patch.object(self.ironic, 'create_allocation',
                               autospec=True,
                               side_effect=ks_exc.ConnectFailure('reset')):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal',
                                    instance_uuid=instance)
        self.assertIn('belongs to another request', str(exc))
        self.assertEqual([instance], list(self.ironic.records))

    def test_create_never_reached_ironic(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.part.refresh()
        with mock.patch.object(self.ironic, 'create_allocation',
                               autospec=True,
                               side_effect=ks_exc.ConnectFailure('refused')):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal')
        self.assertIn('which was not created', str(exc))

    def test_lost_create_that_cannot_be_checked(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'],
                             cleanup_timeout=3)
        self.part.refresh()
        down = ks_exc.ConnectFailure('down')
        with mock.patch.object(self.ironic, 'create_allocation',
                               autospec=True, side_effect=down), \
                mock.patch.object(self.ironic, 'get_allocation',
                                  autospec=True, side_effect=down):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal')
        self.assertIn('may have been created and could not be checked',
                      str(exc))
        self.assertIn('ironic-partition release', str(exc))
        self.assertLessEqual(sum(self.clock.sleeps), 3)
        self.assertGreater(len(self.clock.sleeps), 1)

    def test_unreachable_while_polling_until_the_deadline(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'],
                             timeout=5)
        self.ironic.process_after = None
        with mock.patch.object(
                self.ironic, 'get_allocation', autospec=True,
                side_effect=ks_exc.ConnectFailure('down')):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal')
        self.assertIn('while waiting for allocation', str(exc))
        self.assertIn('which was deleted', str(exc))
        self.assert_no_allocation_left()
        self.assertIn('retrying until the reservation times out',
                      self.logger.output)

    def test_transient_poll_failure_is_retried(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        real_get = self.ironic.get_allocation
        errors = [ks_exc.ConnectFailure('blip'),
                  _http_error(sdk_exc.HttpException, 503, 'busy')]

        def flaky(ident):
            if errors:
                raise errors.pop(0)
            return real_get(ident)
        with mock.patch.object(self.ironic, 'get_allocation',
                               autospec=True, side_effect=flaky):
            res = reserver.reserve('baremetal')
        self.assertEqual([], errors)
        self.assertIn(res.node_id, self.managed())

    def test_cleanup_gives_up_after_its_bound(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'],
                             cleanup_timeout=10)
        self.ironic.process_after = None
        with mock.patch.object(self.ironic, 'delete_allocation',
                               autospec=True,
                               side_effect=ks_exc.ConnectFailure('down')):
            exc = self.assertRaises(exception.AllocationTimeout,
                                    reserver.reserve, 'baremetal',
                                    timeout=1)
        alloc = self.ironic.created[0]['uuid']
        self.assertIn('could not be deleted', str(exc))
        self.assertIn('ironic-partition release %s' % alloc, str(exc))
        self.assertLess(sum(self.clock.sleeps), 1 + 10)
        self.assertIn('Could not delete allocation %s' % alloc,
                      self.logger.output)

    def test_no_refresh_possible(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        with mock.patch.object(self.ironic, 'get',
                               autospec=True,
                               side_effect=ks_exc.ConnectFailure('down')):
            exc = self.assertRaises(exception.IronicUnavailable,
                                    reserver.reserve, 'baremetal')
        self.assertIn('down', str(exc))
        self.assertEqual([], self.ironic.created)

    def test_unreachable_is_one_error_type_across_the_calls(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        self.part.refresh()
        for fault in (ks_exc.ConnectFailure('x'),
                      _http_error(sdk_exc.HttpException, 500, 'boom'),
                      requests.ConnectionError('y')):
            with mock.patch.object(self.ironic, 'create_allocation',
                                   autospec=True, side_effect=fault):
                self.assertRaises(exception.IronicUnavailable,
                                  reserver.reserve, 'baremetal')
        self.assertEqual({}, self.ironic.records)


class TestValidation(ReserverTestCase):

    def _check(self, exc_class, text, **kwargs):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        kwargs.setdefault('resource_class', 'baremetal')
        exc = self.assertRaises(exc_class, reserver.reserve, **kwargs)
        self.assertIn(text, str(exc))
        self.assertIsInstance(exc, exception.InvalidAllocationRequest)
        self.assertIsInstance(exc, ValueError)
        self.assertEqual([], self.ironic.created)
        self.assertIsNone(self.part.last_result)
        return exc

    def test_resource_class(self):
        for value, text in (('', 'it is empty'),
                            ('x' * 81, 'it is 81 characters long'),
                            ('bare\nmetal', 'non-printable'),
                            (None, 'not a string'),
                            (42, 'not a string')):
            exc = self._check(exception.InvalidResourceClass, text,
                              resource_class=value)
            self.assertIn('1 to 80 printable characters', str(exc))
            self.assertIn(repr(value), str(exc))
        allocation_request.check_resource_class('x' * 80)
        allocation_request.check_resource_class('baremetal-gold.large')

    def test_traits(self):
        for value, text in (('lower', 'does not start with CUSTOM_'),
                            ('CUSTOM_', 'may only contain'),
                            ('CUSTOM_lower', 'may only contain'),
                            ('CUSTOM_A-B', 'may only contain'),
                            ('', 'empty'),
                            ('CUSTOM_' + 'A' * 249, '256 characters')):
            exc = self._check(exception.InvalidTrait, text,
                              traits=['CUSTOM_OK', value])
            self.assertIn(repr(value), str(exc))
            self.assertIn('CUSTOM_ followed by', str(exc))

    def test_standard_traits_from_os_traits(self):
        if allocation_request.os_traits is None:
            self.skipTest('os-traits is not installed')
        self.assertEqual(('HW_CPU_X86_AVX2', 'CUSTOM_GPU'),
                         allocation_request.check_traits(
                             ['HW_CPU_X86_AVX2', 'CUSTOM_GPU',
                              'HW_CPU_X86_AVX2']))
        self._check(exception.InvalidTrait, 'not a standard trait',
                    traits=['HW_NOT_A_REAL_TRAIT'])

    def test_standard_traits_without_os_traits(self):
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.ironic.allocation_request.os_traits', None))
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.ironic.allocation_request._standard_traits',
            None))
        self.assertEqual(('HW_ANYTHING',),
                         allocation_request.check_traits('HW_ANYTHING'))
        self._check(exception.InvalidTrait, 'made of A-Z',
                    traits=['hw_lower'])

    def test_name(self):
        for value in ('bad name', 'x' * 256, '', 'a/b'):
            self._check(exception.InvalidAllocationName, 'A-Z, a-z',
                        name=value)
        allocation_request.check_name('vm-1.example_x~')

    def test_instance_uuid(self):
        self._check(exception.InvalidInstanceUUID, 'must be a UUID',
                    instance_uuid='not-a-uuid')

    def test_timeout(self):
        for value in (-1, 'ten', True):
            self._check(exception.InvalidAllocationRequest,
                        'a number of seconds', timeout=value)


class TestRelease(ReserverTestCase):

    def test_release_forms_and_idempotence(self):
        reserver = self.make([api_node(i) for i in range(4)], peers=['cn1'])
        for form in ('reservation', 'uuid', 'name', 'node'):
            res = reserver.reserve('baremetal', name='vm-%s' % form)
            arg = {'reservation': {'allocation': res},
                   'uuid': {'allocation': res.allocation_id},
                   'name': {'allocation': 'vm-%s' % form},
                   'node': {'node': res.node_id}}[form]
            released = reserver.release(**arg)
            self.assertEqual(res.allocation_id, released.id, form)
            self.assertEqual(res.node_id, released.node_id, form)
            self.assertIsNone(
                self.ironic.nodes[res.node_id]['instance_uuid'], form)
            # Twice is harmless.
            self.assertIsNone(reserver.release(**arg), form)
        self.assert_no_allocation_left()

    def test_release_makes_the_node_reservable_again(self):
        reserver = self.make([api_node(0)], peers=['cn1'])
        first = reserver.reserve('baremetal')
        self.assertRaises(exception.NoMatchingNode, reserver.reserve,
                          'baremetal')
        reserver.release(first)
        second = reserver.reserve('baremetal')
        self.assertEqual(first.node_id, second.node_id)

    def test_release_of_a_deployed_node_is_refused(self):
        reserver = self.make([api_node(0)], peers=['cn1'])
        res = reserver.reserve('baremetal')
        self.ironic.nodes[res.node_id]['provision_state'] = 'active'
        exc = self.assertRaises(exception.ReleaseRefused, reserver.release,
                                res)
        self.assertIn('because the node is active', str(exc))
        self.assertIn(res.node_id, str(exc))
        self.assertEqual([res.allocation_id], list(self.ironic.records))

    def test_release_of_an_unknown_node(self):
        reserver = self.make([api_node(0)], peers=['cn1'])
        exc = self.assertRaises(exception.AllocationRequestRefused,
                                reserver.release, node=_uuid(99))
        self.assertEqual(400, exc.status)
        self.assertIsInstance(exc, exception.IronicRequestError)

    def test_exactly_one_target(self):
        reserver = self.make([api_node(0)], peers=['cn1'])
        self.assertRaises(ValueError, reserver.release)
        self.assertRaises(ValueError, reserver.release, 'a', node='b')


class TestClientAllocations(ReserverTestCase):

    def test_old_ironic(self):
        self.make([api_node(0)], peers=['cn1'])
        self.ironic.max_version = (1, 46)
        exc = self.assertRaises(exception.AllocationsNotSupported,
                                self.reserver.api.list_allocations)
        self.assertIn('need API version 1.52', str(exc))
        self.assertIn('supports up to 1.46', str(exc))

    def test_empty_candidates_are_refused(self):
        self.make([api_node(0)], peers=['cn1'])
        self.assertRaises(ValueError, self.reserver.api.create_allocation,
                          'baremetal', [])
        self.assertEqual([], self.ironic.created)

    def test_records(self):
        self.make([api_node(0)], peers=['cn1'])
        alloc = self.reserver.api.create_allocation(
            'baremetal', [_uuid(0)], traits=['CUSTOM_X'], name='a',
            extra={'k': 'v'})
        self.assertEqual('allocating', alloc.state)
        self.assertEqual(alloc.id, alloc.uuid)
        self.assertEqual(('CUSTOM_X',), alloc.traits)
        self.assertEqual({'k': 'v'}, alloc.extra)
        self.assertRaises(AttributeError, setattr, alloc, 'state', 'x')
        self.assertEqual([alloc], self.reserver.api.list_allocations())
        self.assertIsNone(self.reserver.api.get_allocation('missing'))
        self.assertTrue(self.reserver.api.delete_allocation(alloc.id))
        self.assertFalse(self.reserver.api.delete_allocation(alloc.id))

    def test_error_mapping(self):
        self.make([api_node(0)], peers=['cn1'])
        for fault, expected in (
                (_http_error(sdk_exc.HttpException, 503, 'x'),
                 exception.IronicUnavailable),
                (_http_error(sdk_exc.HttpException, 401, 'x'),
                 exception.IronicUnavailable),
                (ks_exc.DiscoveryFailure('x'), exception.IronicUnavailable),
                (_http_error(sdk_exc.BadRequestException, 400, 'bad'),
                 exception.AllocationRequestRefused)):
            with mock.patch.object(self.ironic, 'allocations',
                                   autospec=True, side_effect=fault):
                self.assertRaises(expected, self.reserver.api.list_allocations)

    def test_discovery_failure_is_unavailable(self):
        class Down(object):
            @property
            def baremetal(self):
                raise ks_exc.DiscoveryFailure('no version document')
        client = baremetal.IronicClient(connection=Down())
        exc = self.assertRaises(exception.IronicUnavailable,
                                ironic_allocations.AllocationAPI(
                                    client).get_allocation, 'x')
        self.assertIn('no version document', str(exc))


class TestCommand(base.TestCase):
    """The CLI's argument handling and error lines; no Ironic is reached.

    A closed port stands for an unreachable Ironic; the happy paths run in
    the functional tests against a real Ironic.
    """

    def run_cmd(self, *argv):
        path = self.useFixture(fixtures.TempDir()).join('test.conf')
        with open(path, 'w') as stream:
            stream.write('[ironic]\nauth_type = none\n'
                         'endpoint_override = http://127.0.0.1:9\n'
                         '[ironic_partition]\nmembership_backend = static\n'
                         'host = cn1\n')
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.cmd.cli.IronicPartitionApp.setup_logging',
            lambda app, conf, cmd: None))
        out, err = io.StringIO(), io.StringIO()
        app = cli.IronicPartitionApp(stdout=out, stderr=err)
        code = app.run(['--config-file', path] + list(argv))
        return code, out.getvalue(), err.getvalue()

    def assert_one_line(self, text, command):
        self.assertEqual(1, text.count('\n'), text)
        self.assertTrue(text.startswith(
            'ironic-partition %s: error: ' % command), text)
        self.assertNotIn('Traceback', text)

    def test_invalid_values_are_usage_errors(self):
        for argv, text in (
                (('reserve', 'x' * 81), 'Invalid resource class'),
                (('reserve', 'baremetal', '--trait', 'CUSTOM_OK', '--trait',
                  'gpu'), "Invalid trait 'gpu'"),
                (('reserve', 'baremetal', '--name', 'a b'),
                 "Invalid allocation name 'a b'"),
                (('reserve', 'baremetal', '--instance-uuid', 'nope'),
                 "Invalid instance UUID 'nope'")):
            code, out, err = self.run_cmd(*argv)
            self.assertEqual(2, code, argv)
            self.assertEqual('', out)
            self.assert_one_line(err, 'reserve')
            self.assertIn(text, err)

    def test_release_needs_exactly_one_target(self):
        for argv in (('release',), ('release', 'a', '--node', 'b')):
            code, out, err = self.run_cmd(*argv)
            self.assertEqual(2, code)
            self.assert_one_line(err, 'release')
            self.assertIn('not both and not neither', err)

    def test_unreachable_ironic(self):
        for argv, command in ((('reserve', 'baremetal', '-f', 'json'),
                               'reserve'),
                              (('release', 'x'), 'release'),
                              (('release', '--node', 'n'), 'release')):
            code, out, err = self.run_cmd(*argv)
            self.assertEqual(4, code, argv)
            self.assertEqual('', out)
            self.assert_one_line(err, command)
            self.assertIn('Ironic at http://127.0.0.1:9 is unavailable', err)

    def test_exit_codes(self):
        self.assertEqual(7, reserve_cmd.exit_code_for(
            exception.AllocationTimeout(allocation='a', resource_class='r',
                                        traits='[]', timeout=1,
                                        state='allocating',
                                        cleanup='was deleted')))
        self.assertEqual(4, reserve_cmd.exit_code_for(
            exception.AllocationRequestRefused(method='POST', path='/x',
                                               status=400, reason='r')))
        self.assertEqual(2, reserve_cmd.exit_code_for(
            exception.InvalidResourceClass(value='', reason='r', max=80)))
