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

"""Reserve a node of this service's own partition: Ironic allocations.

:class:`Reserver` asks Ironic for an allocation (API 1.52+) whose
``candidate_nodes`` are exactly the instance-less nodes this service
manages at its partitioner's latest refresh (those it may report at that
instant, when ownership claims are on), so a reservation never lands
outside the service's conductor group or on a peer's share of it. Ironic
picks one candidate that is ``available``, not in maintenance, has the
resource class and every requested trait, and reserves it atomically: the
allocation becomes ``active`` and the node's ``instance_uuid`` is set to
the allocation's UUID in the same transaction. Passing the instance UUID
as the allocation UUID therefore marks the node with the instance.

Every failure path deletes the allocation it created before raising:
no node matches, Ironic failed the allocation, the timeout ran out,
Ironic became unreachable, or the caller was interrupted.
"""

import dataclasses
import threading
import time

from oslo_log import log as logging
from oslo_utils import uuidutils

from ironic_partition._i18n import _
from ironic_partition import exception
from ironic_partition.ironic import allocation_request
from ironic_partition.ironic import ironic_allocations

LOG = logging.getLogger(__name__)

#: Seconds before the first poll of a new allocation; each following poll
#: waits twice as long, up to :data:`POLL_MAX`.
POLL_INITIAL = 0.1
#: The longest wait between two polls.
POLL_MAX = 2.0
#: Seconds allowed to delete an allocation on a failure path while Ironic
#: is unreachable, on top of the reservation's own timeout.
CLEANUP_TIMEOUT = 15.0

#: Keys of the allocation's ``extra``: who made it, in which partition,
#: and a token telling this request's allocation from any other.
EXTRA_HOST = 'ironic_partition_host'
EXTRA_PARTITION = 'ironic_partition_key'
EXTRA_REQUEST = 'ironic_partition_request'


@dataclasses.dataclass(frozen=True)
class Reservation(object):
    """A node reserved by :meth:`Reserver.reserve`.

    :param allocation_id: the allocation's UUID; also the node's
        ``instance_uuid`` (the instance UUID when one was given).
    :param node_id: the reserved node's UUID.
    :param resource_class: the requested resource class.
    :param traits: the requested traits.
    :param name: the allocation's name, or None.
    :param partition_key: the partition it was made in.
    :param host: the service that made it.
    :param candidates: how many nodes were candidates.
    :param seconds: how long the reservation took.
    """

    allocation_id: str
    node_id: str
    resource_class: str
    traits: tuple
    name: object
    partition_key: object
    host: str
    candidates: int
    seconds: float

    @property
    def instance_uuid(self):
        """The UUID the node's ``instance_uuid`` was set to."""
        return self.allocation_id

    def to_dict(self):
        """The reservation as plain values, for JSON.

        :returns: a dict.
        """
        doc = dataclasses.asdict(self)
        doc['traits'] = list(self.traits)
        doc['instance_uuid'] = self.instance_uuid
        return doc


@dataclasses.dataclass(frozen=True)
class _Request(object):
    resource_class: str
    traits: tuple
    name: object
    instance_uuid: object
    partition_key: object
    host: str
    candidates: frozenset
    with_class: int

    @property
    def partition(self):
        return allocation_request.describe_partition(self.partition_key)


class Reserver(object):
    """Reserves and releases nodes of one service's partition.

    Thread-safe: concurrent reservations are serialised by Ironic, which
    never gives one node to two allocations.

    :param client: the
        :class:`~ironic_partition.ironic.baremetal.IronicClient`.
    :param partitioner: the service's
        :class:`~ironic_partition.partition.partitioner.Partitioner`; its
        latest refresh tells which nodes the service manages.
    :param timeout: seconds a reservation may take by default; None reads
        ``[ironic_partition] allocation_timeout`` at each reservation.
    :param clock: a monotonic clock.
    :param sleep: a sleep function.
    :param poll_initial: seconds before the first poll.
    :param poll_max: the longest wait between two polls.
    :param cleanup_timeout: seconds allowed to delete an allocation on a
        failure path while Ironic cannot be reached.
    """

    def __init__(self, client, partitioner, timeout=None,
                 clock=time.monotonic, sleep=time.sleep,
                 poll_initial=POLL_INITIAL, poll_max=POLL_MAX,
                 cleanup_timeout=CLEANUP_TIMEOUT):
        self.client = client
        #: The allocation calls, on the client's connection.
        self.api = ironic_allocations.AllocationAPI(client)
        self.partitioner = partitioner
        self.timeout = timeout
        self._clock = clock
        self._sleep = sleep
        self._poll_initial = poll_initial
        self._poll_max = poll_max
        self._cleanup_timeout = cleanup_timeout
        self._refresh_lock = threading.Lock()

    # -- reserve ----------------------------------------------------------

    def reserve(self, resource_class, traits=None, name=None,
                instance_uuid=None, timeout=None):
        """Reserve one node of this service's partition.

        :param resource_class: the node resource class (required).
        :param traits: traits the node must have (optional).
        :param name: a unique name for the allocation (optional).
        :param instance_uuid: the instance the node is for; it becomes the
            allocation's UUID and the node's ``instance_uuid``. A random
            UUID is used when None.
        :param timeout: seconds allowed; None for the Reserver's default.
        :returns: a :class:`Reservation`.
        :raises InvalidAllocationRequest: an invalid resource class
            (:class:`~ironic_partition.exception.InvalidResourceClass`),
            trait, name, instance UUID or timeout; nothing was sent.
        :raises NoMatchingNode: no node of this partition matches.
        :raises AllocationFailed: Ironic failed the allocation.
        :raises AllocationTimeout: it was not active in time.
        :raises AllocationConflict: the instance UUID or the name is
            already used by another allocation.
        :raises IronicUnavailable: Ironic cannot be reached.
        :raises AllocationsNotSupported: Ironic is older than API 1.52.
        :raises PartitionNotReady: there was no refresh yet and one could
            not be made for a reason other than Ironic.
        """
        start = self._clock()
        resource_class = allocation_request.check_resource_class(
            resource_class)
        traits = allocation_request.check_traits(traits)
        if name is not None:
            allocation_request.check_name(name)
        if instance_uuid is not None:
            instance_uuid = allocation_request.check_instance_uuid(
                instance_uuid)
        timeout = self._get_timeout(timeout)
        deadline = start + timeout

        result = self._partition()
        # NOTE(ironic-partition): the nodes this service may report at this
        # instant: with ownership claims on, a ring node whose claim is not
        # valid any more (the service is fenced) is not ours to give.
        reported = self.partitioner.reported_nodes()
        free = [node for node in reported.values()
                if node.instance_id is None]
        # NOTE(ironic-partition): a read-only run (the CLI) holds no claim
        # of its own: a node the ring gives this host may still be held
        # by a peer until that peer's lease runs out; never offer it.
        peer_held = self.partitioner.claimed_by_others(
            [node.id for node in free]) if free else frozenset()
        free = [node for node in free if node.id not in peer_held]
        request = _Request(
            resource_class=resource_class, traits=traits, name=name,
            instance_uuid=instance_uuid,
            partition_key=result.settings.partition_key,
            host=result.settings.host,
            candidates=frozenset(node.id for node in free),
            with_class=sum(1 for node in free
                           if node.resource_class == resource_class))
        if not request.candidates:
            # NOTE(ironic-partition): never send an empty candidate list:
            # Ironic reads it as "any node of the fleet".
            detail = _('This service manages %d nodes there now, all with '
                       'an instance') % len(reported)
            if peer_held:
                detail = _('This service manages %(count)d nodes there now; '
                           '%(held)d without an instance are still claimed '
                           'by another service, the rest have an '
                           'instance') % {'count': len(reported),
                                          'held': len(peer_held)}
            unreported = len(result.nodes) - len(reported)
            if unreported:
                detail += _('; %d more are not reported while its ownership '
                            'claims are not valid') % unreported
            raise self._no_match(request, detail + _(
                '; nothing was sent to Ironic.'))

        allocation = self._create(request)
        try:
            final = self._wait(request, allocation, deadline)
        except exception.IronicUnavailable as e:
            cleanup = self._cleanup(allocation.id)
            raise exception.IronicUnavailable(
                endpoint=self.client.endpoint,
                reason=_('%(err)s (while waiting for allocation %(id)s, '
                         'which %(cleanup)s)') % {
                    'err': e.kwargs.get('reason', e), 'id': allocation.id,
                    'cleanup': cleanup}) from e
        except BaseException:
            self._cleanup(allocation.id)
            raise
        if final.state == ironic_allocations.ALLOCATION_ALLOCATING:
            cleanup = self._cleanup(final.id)
            raise exception.AllocationTimeout(
                allocation=final.id, resource_class=resource_class,
                traits=allocation_request.show_traits(traits), timeout=timeout,
                state=final.state, cleanup=cleanup)
        if final.state != ironic_allocations.ALLOCATION_ACTIVE:
            cleanup = self._cleanup(final.id)
            raise self._failure(request, final, cleanup)
        if final.node_id not in request.candidates:
            # NOTE(ironic-partition): fail closed should Ironic ever ignore
            # candidate_nodes: a node outside the partition is never kept.
            cleanup = self._cleanup(final.id)
            raise exception.AllocationFailed(
                allocation=final.id, resource_class=resource_class,
                traits=allocation_request.show_traits(traits),
                partition=request.partition,
                last_error=_('Ironic reserved node %s, which is not one of '
                             'the candidates') % final.node_id,
                cleanup=cleanup)
        reservation = Reservation(
            allocation_id=final.id, node_id=final.node_id,
            resource_class=resource_class, traits=traits, name=name,
            partition_key=request.partition_key, host=request.host,
            candidates=len(request.candidates),
            seconds=self._clock() - start)
        LOG.info('Reserved node %(node)s for allocation %(alloc)s '
                 '(resource class %(rc)r, traits %(traits)s) among '
                 '%(count)d candidates of %(part)s in %(secs).2f s',
                 {'node': reservation.node_id,
                  'alloc': reservation.allocation_id,
                  'rc': resource_class,
                  'traits': allocation_request.show_traits(traits),
                  'count': reservation.candidates,
                  'part': request.partition, 'secs': reservation.seconds})
        return reservation

    def _get_timeout(self, timeout):
        if timeout is None:
            timeout = self.timeout
        if timeout is None:
            timeout = self.partitioner.settings.allocation_timeout
        if (isinstance(timeout, bool)
                or not isinstance(timeout, (int, float)) or timeout < 0):
            raise exception.InvalidAllocationRequest(
                field='timeout', value=timeout,
                allowed=_('a number of seconds, 0 or more'))
        return timeout

    def _partition(self):
        """The latest refresh of the partitioner; refresh if there is none.

        :returns: a
            :class:`~ironic_partition.partition.refresh_result.RefreshResult`.
        """
        result = self.partitioner.last_result
        if result is not None:
            return result
        with self._refresh_lock:
            result = self.partitioner.last_result
            if result is not None:
                return result
            try:
                return self.partitioner.refresh()
            except exception.PartitionNotReady as e:
                cause = e.kwargs.get('reason')
                if isinstance(cause, exception.IronicUnavailable):
                    raise cause from None
                raise

    def _create(self, request):
        """Create the allocation; on an unknown outcome, remove it.

        :returns: the
            :class:`~ironic_partition.ironic.ironic_allocations.Allocation`.
        """
        allocation_id = request.instance_uuid or uuidutils.generate_uuid()
        token = uuidutils.generate_uuid()
        extra = {EXTRA_HOST: request.host,
                 EXTRA_PARTITION: request.partition_key,
                 EXTRA_REQUEST: token}
        try:
            return self.api.create_allocation(
                request.resource_class, sorted(request.candidates),
                traits=request.traits, name=request.name,
                uuid=allocation_id, extra=extra)
        except exception.AllocationRequestRefused as e:
            if e.status == 409:
                raise exception.AllocationConflict(
                    uuid=allocation_id, name=request.name,
                    reason=e.kwargs.get('reason')) from e
            raise
        except exception.IronicUnavailable as e:
            # NOTE(ironic-partition): the request may have reached Ironic
            # and only its answer been lost. The allocation's UUID was
            # chosen here, and the token tells this request's allocation
            # from an older one of the same instance, which is left alone.
            cleanup = self._cleanup(allocation_id, token=token)
            raise exception.IronicUnavailable(
                endpoint=self.client.endpoint,
                reason=_('%(err)s (while creating allocation %(id)s, '
                         'which %(cleanup)s)') % {
                    'err': e.kwargs.get('reason', e), 'id': allocation_id,
                    'cleanup': cleanup}) from e
        except BaseException:
            self._cleanup(allocation_id, token=token)
            raise

    def _wait(self, request, allocation, deadline):
        """Poll until the allocation leaves ``allocating`` or time is up.

        :returns: the last :class:`~ironic_partition.ironic.ironic_allocations.
            Allocation` read; still ``allocating`` when the deadline passed.
        :raises IronicUnavailable: the deadline passed while polls failed.
        :raises AllocationFailed: the allocation disappeared.
        """
        delay = self._poll_initial
        failure = None
        while allocation.state == ironic_allocations.ALLOCATION_ALLOCATING:
            remaining = deadline - self._clock()
            if remaining <= 0:
                if failure is not None:
                    raise failure
                return allocation
            self._sleep(min(delay, remaining))
            delay = min(delay * 2, self._poll_max)
            try:
                current = self.api.get_allocation(allocation.id)
            except exception.IronicUnavailable as e:
                LOG.warning('Cannot read allocation %(id)s, retrying until '
                            'the reservation times out: %(err)s',
                            {'id': allocation.id, 'err': e})
                failure = e
                continue
            failure = None
            if current is None:
                raise exception.AllocationFailed(
                    allocation=allocation.id,
                    resource_class=request.resource_class,
                    traits=allocation_request.show_traits(request.traits),
                    partition=request.partition,
                    last_error=_('it was deleted by someone else while '
                                 'Ironic processed it'),
                    cleanup=_('no longer exists'))
            allocation = current
        return allocation

    def _no_match(self, request, detail):
        return exception.NoMatchingNode(
            partition=request.partition,
            resource_class=request.resource_class,
            traits=allocation_request.show_traits(request.traits),
            host=request.host,
            considered=len(request.candidates),
            with_class=request.with_class, detail=detail)

    def _failure(self, request, allocation, cleanup):
        """The error for an allocation Ironic put in the ``error`` state.

        Whether any candidate still matches is asked from Ironic rather
        than read from its message: none means the partition has no
        matching node (:class:`~ironic_partition.exception.NoMatchingNode`),
        some means Ironic failed for another reason (locks, a bug).
        """
        try:
            matching = self._matching_now(request)
        except (exception.IronicUnavailable,
                exception.IronicRequestError) as e:
            LOG.warning('Cannot tell why allocation %(id)s failed: %(err)s',
                        {'id': allocation.id, 'err': e})
            matching = None
        if matching == 0:
            return self._no_match(request, _(
                'Ironic said: %(err)s (allocation %(id)s %(cleanup)s).') % {
                    'err': allocation.last_error, 'id': allocation.id,
                    'cleanup': cleanup})
        return exception.AllocationFailed(
            allocation=allocation.id, resource_class=request.resource_class,
            traits=allocation_request.show_traits(request.traits),
            partition=request.partition,
            last_error=allocation.last_error or _('(no error recorded)'),
            cleanup=cleanup)

    def _matching_now(self, request):
        """Count the candidates Ironic could allocate right now.

        :returns: an int.
        """
        nodes = self.client.list_nodes(
            conductor_group=request.partition_key, fields=('uuid', 'traits'),
            resource_class=request.resource_class,
            provision_state='available', associated=False,
            maintenance=False)
        wanted = set(request.traits)
        return sum(1 for node in nodes
                   if node.id in request.candidates
                   and wanted.issubset(node.traits or ()))

    def _cleanup(self, allocation_id, token=None):
        """Delete an allocation on a failure path; never raises.

        Retries while Ironic is unreachable, for up to ``cleanup_timeout``
        seconds.

        :param allocation_id: the allocation's UUID.
        :param token: when set, delete the allocation only if it carries
            this request token (its creation was not confirmed).
        :returns: what happened, to end a sentence ("was deleted").
        """
        deadline = self._clock() + self._cleanup_timeout
        delay = self._poll_initial
        while True:
            try:
                if token is not None:
                    current = self.api.get_allocation(allocation_id)
                    if current is None:
                        return _('was not created')
                    if current.extra.get(EXTRA_REQUEST) != token:
                        LOG.warning('Allocation %s was not made by this '
                                    'request; leaving it alone',
                                    allocation_id)
                        return _('belongs to another request and was left '
                                 'alone')
                deleted = self.api.delete_allocation(allocation_id)
            except exception.IronicUnavailable as e:
                error = e
                if self._clock() + delay < deadline:
                    self._sleep(delay)
                    delay = min(delay * 2, self._poll_max)
                    continue
            except Exception as e:
                error = e
            else:
                if deleted:
                    LOG.info('Deleted allocation %s after a failed '
                             'reservation', allocation_id)
                    return _('was deleted')
                return _('no longer exists')
            params = {'id': allocation_id, 'err': error}
            if token is not None:
                LOG.error('Could not check whether allocation %(id)s was '
                          'created by a failed reservation; if it exists, '
                          'delete it with "ironic-partition release '
                          '%(id)s": %(err)s', params)
                return _('may have been created and could not be checked '
                         '(%(err)s): if it exists, delete it with '
                         '"ironic-partition release %(id)s"') % params
            LOG.error('Could not delete allocation %(id)s after a failed '
                      'reservation; delete it with "ironic-partition '
                      'release %(id)s": %(err)s', params)
            return _('could not be deleted (%(err)s): delete it with '
                     '"ironic-partition release %(id)s"') % params

    # -- release ----------------------------------------------------------

    def release(self, allocation=None, node=None):
        """Delete an allocation, given itself or its node. Idempotent.

        Deleting the allocation also clears the node's ``instance_uuid``.

        :param allocation: a :class:`Reservation`, an
            :class:`~ironic_partition.ironic.ironic_allocations.Allocation`, or
            an allocation UUID or name.
        :param node: instead of ``allocation``: a node UUID or name (or a
            record with ``id``) whose allocation to delete.
        :returns: the deleted
            :class:`~ironic_partition.ironic.ironic_allocations.Allocation`, or
            None when there was none (already released).
        :raises ValueError: not exactly one of ``allocation`` and ``node``.
        :raises ReleaseRefused: the node is deployed (Ironic answers 409).
        :raises IronicUnavailable: Ironic cannot be reached.
        :raises AllocationRequestRefused: Ironic refused the request (an
            unknown node, for instance).
        """
        if (allocation is None) == (node is None):
            raise ValueError('release() takes exactly one of allocation '
                             'and node')
        if node is not None:
            ident = getattr(node, 'id', node)
            released = None
            for found in self.api.list_allocations(node=ident):
                if self._delete(found):
                    released = found
            if released is None:
                LOG.info('Node %s has no allocation to release', ident)
            return released
        ident = getattr(allocation, 'allocation_id', None) or getattr(
            allocation, 'id', allocation)
        current = self.api.get_allocation(ident)
        if current is None or not self._delete(current):
            LOG.info('Allocation %s is already released', ident)
            return None
        return current

    def _delete(self, allocation):
        try:
            deleted = self.api.delete_allocation(allocation.id)
        except exception.AllocationRequestRefused as e:
            if e.status == 409:
                raise exception.ReleaseRefused(
                    allocation=allocation.id, node=allocation.node_id,
                    reason=e.kwargs.get('reason')) from e
            raise
        if deleted:
            LOG.info('Released allocation %(id)s of node %(node)s',
                     {'id': allocation.id, 'node': allocation.node_id})
        return deleted
