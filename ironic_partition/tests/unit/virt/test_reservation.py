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

"""nova's reservation of a node under a proven claim, with fakes.

nova's own exceptions and the SDK's errors are real; Ironic's API and
nova's ``IronicDriver`` are fakes; the claims run on the in-memory claims
database of ``test_claims``, with a database clock and a lease clock the
test moves.
"""

import json
import types

from nova import exception as nova_exception
from openstack import exceptions as sdk_exc
import requests

from ironic_partition.tests.unit.claims import test_manager as test_claims
from ironic_partition.virt import reservation

NODE = test_claims._ids(1)[0]
INSTANCE = 'c0ffee00-0000-4000-8000-000000000001'


def _response(status, body=None):
    response = requests.Response()
    response.status_code = status
    response.reason = {200: 'OK', 409: 'Conflict'}.get(status, 'Error')
    response.url = 'http://ironic/v1/nodes/%s' % NODE
    response.headers['Content-Type'] = 'application/json'
    response._content = json.dumps(body or {}).encode()
    return response


class FakeIronic(object):
    """The SDK's baremetal proxy, as much of it as the mixin uses."""

    def __init__(self, on_patch=None):
        self.nodes = {NODE: types.SimpleNamespace(id=NODE, instance_id=None)}
        self.patches = []
        self.removed = []
        #: Called with the timeout at each PATCH: returns a response or
        #: raises (a test's fault); by default the write lands.
        self.on_patch = on_patch

    def patch(self, url, json=None, timeout=None, connect_retries=None,
              status_code_retries=None, raise_exc=True):
        self.patches.append({'url': url, 'timeout': timeout,
                             'retries': (connect_retries,
                                         status_code_retries),
                             'raise_exc': raise_exc})
        if self.on_patch is not None:
            response = self.on_patch(timeout)
            if response is not None:
                return response
        self.nodes[NODE].instance_id = json[0]['value']
        return _response(200)

    def patch_node(self, node_id, patch):
        self.removed.append((node_id, patch))
        self.nodes[node_id].instance_id = None


class NovaDriver(object):
    """nova's ``IronicDriver._set_instance_id``, recorded."""

    def _set_instance_id(self, node, instance):
        self.nova_wrote = (node.id, instance.uuid)


class Driver(reservation.ProvenReservation, NovaDriver):

    def __init__(self, claims, ironic):
        self.partitioner = types.SimpleNamespace(claims=claims)
        self.ironic_connection = ironic
        self._nova_host = 'cn1'

    def _get_node(self, node_id):
        return self.ironic_connection.nodes[node_id]


class TestProvenReservation(test_claims.ClaimsTestCase):

    def setUp(self):
        super().setUp()
        # A 120 s lease with a 72 s margin: the write's budget and
        # timeout are 10 s.
        self.cn1 = self.manager('cn1', lease=120, margin=72)
        self.cn1.round([NODE])
        self.ironic = FakeIronic()
        self.driver = Driver(self.cn1, self.ironic)
        self.node = self.ironic.nodes[NODE]
        self.instance = types.SimpleNamespace(uuid=INSTANCE)

    def reserve(self):
        return self.driver._set_instance_id(self.node, self.instance)

    def test_proven_write_is_bounded_and_not_retried(self):
        self.reserve()
        self.assertEqual(INSTANCE, self.node.instance_id)
        [patch] = self.ironic.patches
        self.assertEqual('/nodes/%s' % NODE, patch['url'])
        self.assertEqual(10.0, patch['timeout'])
        self.assertEqual((0, 0), patch['retries'])
        self.assertEqual([], self.ironic.removed)

    def test_half_a_second_left_refuses_before_any_write(self):
        self.db_clock.now += 119.5
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.reserve)
        self.assertIn("its claim has 0.5 s left by the database's clock",
                      str(e))
        self.assertEqual([], self.ironic.patches)
        self.assertIsNone(self.node.instance_id)
        self.assertIn('Refusing to reserve node %s' % NODE,
                      self.logger.output)

    def test_write_past_the_fence_while_a_peer_takes_it_is_undone(self):
        # The PATCH lands, but only after this process stalled past its
        # lease, and cn2 took the claim meanwhile: undone, rescheduled.
        def stall(timeout):
            self.advance(130)
            self.manager('cn2').round([NODE])
        self.ironic.on_patch = stall
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.reserve)
        self.assertIn('was not proven: the write took 130.0 s', str(e))
        self.assertEqual('cn2', self.db.owner(NODE))
        self.assertEqual([(NODE, [{'op': 'remove',
                                   'path': '/instance_uuid'}])],
                         self.ironic.removed)
        self.assertIsNone(self.node.instance_id)

    def test_write_that_timed_out_is_undone_if_it_landed(self):
        def timed_out(timeout):
            self.node.instance_id = INSTANCE
            raise requests.exceptions.ReadTimeout('read timed out')
        self.ironic.on_patch = timed_out
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.reserve)
        self.assertIn('the write did not end within 10.0 s, or failed: '
                      'read timed out', str(e))
        self.assertIsNone(self.node.instance_id)
        self.assertEqual(1, len(self.ironic.removed))

    def test_undo_never_touches_another_instance(self):
        def other(timeout):
            self.node.instance_id = 'another-instance'
            raise requests.exceptions.ConnectionError('reset')
        self.ironic.on_patch = other
        self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                          self.reserve)
        self.assertEqual('another-instance', self.node.instance_id)
        self.assertEqual([], self.ironic.removed)

    def test_conflict_is_novas_deploy_failure(self):
        # Ironic refused the write (another instance holds the node):
        # nothing to undo; nova's error, as its own driver raises it, so
        # that prepare_for_spawn tells a lost race from a locked node.
        self.ironic.on_patch = lambda timeout: _response(
            409, {'error_message': json.dumps({'faultstring': 'taken'})})
        e = self.assertRaises(nova_exception.InstanceDeployFailure,
                              self.reserve)
        self.assertIsInstance(e.__cause__, sdk_exc.ConflictException)
        self.assertEqual([], self.ironic.removed)

    def test_claim_released_during_the_write_is_undone(self):
        def released(timeout):
            self.cn1.stop(release=True)
        self.ironic.on_patch = released
        e = self.assertRaises(nova_exception.ComputeResourcesUnavailable,
                              self.reserve)
        self.assertIn('its claim moved during the write (epoch 1 proven, '
                      'now none)', str(e))
        self.assertIsNone(self.node.instance_id)

    def test_claims_off_is_novas_own_write(self):
        self.driver.partitioner.claims = None
        self.reserve()
        self.assertEqual((NODE, INSTANCE), self.driver.nova_wrote)
        self.assertEqual([], self.ironic.patches)
