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

import json
import threading
from unittest import mock

from keystoneauth1 import exceptions as ks_exc
import requests

from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import opts
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base


def _response(status, body):
    resp = requests.Response()
    resp.status_code = status
    resp._content = (body if isinstance(body, bytes)
                     else json.dumps(body).encode())
    resp.headers['Content-Type'] = 'application/json'
    resp.url = 'http://ironic/v1/nodes'
    return resp


class FakeProxy(object):
    """Serves pages of nodes the way Ironic's API does."""

    def __init__(self, nodes, page_faults=None):
        self.nodes = nodes
        self.calls = []
        self.page_faults = page_faults or {}

    def get(self, path, params=None, microversion=None):
        self.calls.append((path, dict(params), microversion))
        fault = self.page_faults.get(len(self.calls))
        if isinstance(fault, Exception):
            raise fault
        if fault is not None:
            return fault
        nodes = self.nodes
        if 'conductor_group' in params:
            nodes = [n for n in nodes
                     if n['conductor_group'] == params['conductor_group']]
        start = 0
        if 'marker' in params:
            start = [n['uuid'] for n in nodes].index(params['marker']) + 1
        page = nodes[start:start + params['limit']]
        body = {'nodes': page}
        if len(page) == params['limit']:
            body['next'] = ('http://ironic/v1/nodes?limit=%d&marker=%s'
                            % (params['limit'], page[-1]['uuid']))
        return _response(200, body)


def _api_nodes(n):
    return [{'uuid': '00000000-0000-0000-0000-%012d' % i,
             'instance_uuid': None,
             'conductor_group': 'rack1' if i % 2 else '',
             'driver': 'fake-hardware', 'maintenance': False,
             'provision_state': 'available', 'properties': {'cpus': 1},
             'links': [{'href': 'x'}]} for i in range(n)]


class TestNode(base.TestCase):

    def test_from_api_uses_sdk_names(self):
        node = baremetal.Node.from_api(_api_nodes(2)[1])
        self.assertEqual('00000000-0000-0000-0000-000000000001', node.id)
        self.assertEqual(node.id, node.uuid)
        self.assertIsNone(node.instance_id)
        self.assertFalse(node.is_maintenance)
        self.assertEqual('rack1', node.conductor_group)
        self.assertIsNone(node.power_state)

    def test_read_only(self):
        node = baremetal.Node.from_api(_api_nodes(1)[0])
        self.assertRaises(AttributeError, setattr, node, 'id', 'x')

    def test_missing_fields_are_none(self):
        self.assertIsNone(baremetal.Node(id='a').instance_id)

    def test_equal_field_by_field(self):
        body = _api_nodes(1)[0]
        a, b = baremetal.Node.from_api(body), baremetal.Node.from_api(body)
        self.assertIsNot(a, b)
        self.assertEqual(a, b)
        for field, value in (('maintenance', True), ('driver', 'other'),
                             ('properties', {'cpus': 99})):
            changed = baremetal.Node.from_api(dict(body, **{field: value}))
            self.assertNotEqual(a, changed, field)
        self.assertNotEqual(a, a.id)
        self.assertEqual(hash(a), hash(b))


class TestListNodes(base.TestCase):

    def _client(self, proxy, page_size=10):
        conn = mock.Mock(baremetal=proxy)
        return baremetal.IronicClient(connection=conn, page_size=page_size)

    def test_pages_until_a_short_page(self):
        proxy = FakeProxy(_api_nodes(25))
        client = self._client(proxy)
        nodes = client.list_nodes()
        self.assertEqual(25, len(nodes))
        self.assertEqual(3, nodes.calls)
        self.assertEqual(3, len(proxy.calls))
        path, params, version = proxy.calls[0]
        self.assertEqual('/nodes', path)
        self.assertEqual(baremetal.MIN_MICROVERSION, version)
        self.assertEqual(','.join(baremetal.NODE_FIELDS), params['fields'])
        self.assertNotIn('conductor_group', params)

    def test_exact_multiple_of_page_size(self):
        proxy = FakeProxy(_api_nodes(20))
        self.assertEqual(20, len(self._client(proxy).list_nodes()))
        self.assertEqual(3, len(proxy.calls))

    def test_group_filter_lower_cased_and_sent_to_server(self):
        proxy = FakeProxy(_api_nodes(25))
        nodes = self._client(proxy).list_nodes(conductor_group='RACK1')
        self.assertEqual(12, len(nodes))
        self.assertEqual('rack1', proxy.calls[0][1]['conductor_group'])

    def test_default_group_is_not_unset(self):
        proxy = FakeProxy(_api_nodes(25))
        nodes = self._client(proxy).list_nodes(conductor_group='')
        self.assertEqual(13, len(nodes))
        self.assertEqual('', proxy.calls[0][1]['conductor_group'])

    def _assert_fault(self, fault, exc_class, page=2):
        proxy = FakeProxy(_api_nodes(25), page_faults={page: fault})
        e = self.assertRaises(exc_class, self._client(proxy).list_nodes)
        return e

    def test_5xx_mid_listing_is_unavailable_not_partial(self):
        e = self._assert_fault(_response(503, {'error': 'busy'}),
                               exception.IronicUnavailable)
        self.assertIn('unavailable', str(e))

    def test_connect_failure(self):
        self._assert_fault(ks_exc.ConnectFailure('refused'),
                           exception.IronicUnavailable, page=1)

    def test_discovery_failure_is_wrapped(self):
        self._assert_fault(ks_exc.DiscoveryFailure('no version'),
                           exception.IronicUnavailable, page=1)

    def test_timeout(self):
        self._assert_fault(requests.Timeout('slow'),
                           exception.IronicUnavailable)

    def test_not_json(self):
        self._assert_fault(_response(200, b'<html>proxy</html>'),
                           exception.IronicUnavailable)

    def test_missing_nodes_key(self):
        self._assert_fault(_response(200, {'error': 'x'}),
                           exception.IronicUnavailable)

    def test_bad_request_is_a_request_error(self):
        self._assert_fault(_response(400, {'error_message': 'bad'}),
                           exception.IronicRequestError, page=1)


class InstanceProxy(object):
    """Answers instance look-ups slowly, counting those at once."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.all_in = threading.Event()

    def get(self, path, params=None, microversion=None):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            if self.running >= baremetal.LOOKUP_WORKERS:
                self.all_in.set()
        # Hold each answer until the pool is full (or a moment passed).
        self.all_in.wait(2)
        with self.lock:
            self.running -= 1
        found = [n for n in self.nodes
                 if n['instance_uuid'] == params['instance_uuid']]
        return _response(200, {'nodes': found})


class TestNodesForInstances(base.TestCase):

    def test_look_ups_run_in_parallel_within_a_bound(self):
        nodes = _api_nodes(40)
        for i, node in enumerate(nodes[:20]):
            node['instance_uuid'] = 'inst-%02d' % i
        proxy = InstanceProxy(nodes)
        client = baremetal.IronicClient(
            connection=mock.Mock(baremetal=proxy))
        meter = baremetal.Meter()
        ids = ['inst-%02d' % i for i in range(20)] + ['no-node']
        found = client.nodes_for_instances(ids, meter=meter)
        self.assertEqual(sorted(n['uuid'] for n in nodes[:20]),
                         sorted(n.id for n in found))
        self.assertEqual(21, meter.calls)
        self.assertEqual(baremetal.LOOKUP_WORKERS, proxy.most)


class TestExecutor(base.TestCase):

    def test_one_executor_for_the_life_of_the_client(self):
        proxy = FakeProxy(_api_nodes(25))
        client = baremetal.IronicClient(
            connection=mock.Mock(baremetal=proxy), page_size=10)
        self.addCleanup(client.close)
        executor = client.executor
        for _ in range(3):
            self.assertEqual(25, len(client.list_nodes()))
        self.assertIs(executor, client.executor)
        # The prefetching worker went back to the pool each time.
        self.assertLessEqual(executor.workers, 2)
        client.close()
        self.assertRaises(RuntimeError, executor.submit, lambda: None)
        # A later call starts a new one.
        self.assertEqual(25, len(client.list_nodes()))
        self.assertIsNot(executor, client.executor)

    def test_an_abandoned_listing_lets_its_worker_go(self):
        proxy = FakeProxy(_api_nodes(25))
        client = baremetal.IronicClient(
            connection=mock.Mock(baremetal=proxy), page_size=10)
        self.addCleanup(client.close)
        pages = client.node_pages()
        next(pages)
        pages.close()
        # The worker is free again: a look-up can run on it.
        future = client.executor.submit(lambda: 'free')
        self.assertEqual('free', future.result(timeout=10))


class TestConnectionFromConf(base.TestCase):

    def test_registers_keystoneauth_options(self):
        ironic_conf.register_ksa_opts(self.conf)
        ironic_conf.register_ksa_opts(self.conf)
        self.assertEqual('baremetal', self.conf.ironic.service_type)
        self.assertIn('auth_type', self.conf.ironic)

    def test_sample_config_shows_runtime_defaults(self):
        # What oslo-config-generator does: call the defaults hook found
        # through its entry point, then render list_opts().
        import stevedore
        mgr = stevedore.NamedExtensionManager(
            'oslo.config.opts.defaults', names=['ironic_partition'])
        mgr['ironic_partition'].plugin()
        shown = {o.name: o.default for group, group_opts in opts.list_opts()
                 if group == 'ironic' for o in group_opts}
        self.assertEqual('baremetal', shown['service-type'])
        self.assertEqual(['internal', 'public'], shown['valid-interfaces'])

    def test_endpoint_masks_password(self):
        ironic_conf.register_ksa_opts(self.conf)
        self.config(group='ironic',
                    endpoint_override='http://u:secret@ironic:6385')
        client = settings_mod.ironic_client(self.conf)
        self.assertNotIn('secret', client.endpoint)
        self.assertIn('***', client.endpoint)

    def test_noauth_connection_is_built_lazily_and_reset(self):
        ironic_conf.register_ksa_opts(self.conf)
        self.config(group='ironic', auth_type='none',
                    endpoint_override='http://127.0.0.1:1')
        client = settings_mod.ironic_client(self.conf)
        conn = client.connection
        self.assertIs(conn, client.connection)
        client.reset()
        self.assertIsNot(conn, client.connection)

    def test_unreachable_endpoint(self):
        ironic_conf.register_ksa_opts(self.conf)
        # Port 1 on loopback refuses connections.
        self.config(group='ironic', auth_type='none',
                    endpoint_override='http://127.0.0.1:1')
        client = settings_mod.ironic_client(self.conf)
        e = self.assertRaises(exception.IronicUnavailable,
                              client.list_nodes)
        self.assertIn('127.0.0.1:1', str(e))
