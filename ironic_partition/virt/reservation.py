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

"""nova's reservation of a node, made under a claim the database proves.

A mixin for :class:`~ironic_partition.virt.nova_driver.
IronicPartitionDriver`, ahead of nova's ``IronicDriver`` in its bases: it
replaces nova's ``_set_instance_id`` (the ``instance_uuid`` PATCH that
reserves a node for a build) with a write bounded by
:class:`~ironic_partition.claims.write_guard.WriteGuard`. Imports nova, like
the driver.
"""

from nova import exception as nova_exception
from openstack import exceptions as sdk_exc
from oslo_log import log as logging

from ironic_partition.claims import write_guard
from ironic_partition import exception

LOG = logging.getLogger(__name__)


class ProvenReservation(object):
    """Reserve nodes only under a proven claim; undo what is not.

    Needs, from the class it is mixed into: ``partitioner`` (its
    ``claims``), ``ironic_connection`` (the SDK's baremetal proxy),
    ``_get_node`` and ``_nova_host``.
    """

    @property
    def _write_guard(self):
        """The claims' ``WriteGuard``, or None.

        None when claims are off: nothing to prove a write against.
        """
        claims = self.partitioner.claims
        guard = getattr(self, '_guard', None)
        if claims is None:
            return None
        if guard is None or guard.claims is not claims:
            guard = self._guard = write_guard.WriteGuard(claims)
        return guard

    def _set_instance_id(self, node, instance):
        """Reserve the node, under a claim the database proves.

        nova's own write (``instance_uuid``, refused by Ironic while
        another instance is set), made only with the claim proven by the
        database's clock to outlive it, with a timeout that ends before
        the claim can run out, and confirmed after it (see
        :mod:`ironic_partition.claims.write_guard`). A claim not proven refuses
        the build before any write; a write that did not land under the
        proven claim (too late, failed, the claim moved meanwhile) is
        undone while the node still names this instance. Either way
        nova reschedules the build (``ComputeResourcesUnavailable``).

        :param node: the node, as nova read it.
        :param instance: the nova ``Instance``.
        :raises ComputeResourcesUnavailable: to reschedule the build.
        :raises InstanceDeployFailure: Ironic refused the write (as
            nova's own driver raises it, from the SDK's error).
        :returns: None
        """
        guard = self._write_guard
        if guard is None:
            return super()._set_instance_id(node, instance)
        try:
            proof = guard.prove(node.id)
            timeout = guard.time_left(proof)
        except exception.ClaimNotProven as e:
            LOG.warning('Refusing to reserve node %(node)s: %(reason)s; '
                        'nova reschedules the build',
                        {'node': node.id, 'reason': e.reason},
                        instance=instance)
            raise nova_exception.ComputeResourcesUnavailable(
                reason='node %s may not be reserved by %s: %s'
                       % (node.id, self._nova_host, e))
        started = guard.claims.clock()
        try:
            self._patch_instance_id(node.id, instance.uuid, timeout)
            guard.confirm(proof, started)
        except exception.ClaimNotProven as e:
            self._undo_reservation(node.id, instance, e.reason)
        except sdk_exc.ConflictException as e:
            raise nova_exception.InstanceDeployFailure(
                reason='Failed to reserve node %s when provisioning the '
                       'instance %s' % (node.id, instance.uuid)) from e
        except Exception as e:
            self._undo_reservation(node.id, instance, (
                'the write did not end within %.1f s, or failed: %s'
                % (timeout, exception.one_line(e))))

    def _patch_instance_id(self, node_id, instance_uuid, timeout):
        """PATCH ``instance_uuid`` through the SDK's session, bounded.

        No retry of any kind: a retry would spend the proof's time.

        :raises: ``ConflictException`` and the SDK's other errors;
            ``requests``' timeouts.
        :returns: None
        """
        response = self.ironic_connection.patch(
            '/nodes/%s' % node_id,
            json=[{'op': 'add', 'path': '/instance_uuid',
                   'value': instance_uuid}],
            timeout=timeout, connect_retries=0, status_code_retries=0,
            raise_exc=False)
        sdk_exc.raise_from_response(response)

    def _undo_reservation(self, node_id, instance, reason):
        """Clear a reservation not proven, then reschedule the build.

        Only while the node names this instance: no other build's
        reservation is ever touched.

        :raises ComputeResourcesUnavailable: always.
        """
        LOG.warning('Reservation of node %(node)s not proven (%(reason)s): '
                    'undoing it; nova reschedules the build',
                    {'node': node_id, 'reason': reason}, instance=instance)
        try:
            if self._get_node(node_id).instance_id == instance.uuid:
                self.ironic_connection.patch_node(
                    node_id, [{'op': 'remove', 'path': '/instance_uuid'}])
        except Exception as e:
            # NOTE(ironic-partition): nova's failed_spawn_cleanup, next,
            # finds the node by this instance and clears it too.
            LOG.error('Undoing the reservation of node %(node)s failed '
                      '(%(err)s); nova\'s clean-up of the failed build '
                      'tries again',
                      {'node': node_id, 'err': exception.one_line(e)},
                      instance=instance)
        raise nova_exception.ComputeResourcesUnavailable(
            reason='the reservation of node %s by %s was not proven: %s'
                   % (node_id, self._nova_host, reason))
