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

"""nova 34's ``IronicDriver`` with ironic-partition's partitioning.

Enable it in nova.conf::

    [DEFAULT]
    compute_driver = ironic_partition.IronicPartitionDriver

(nova imports ``nova.virt.<compute_driver>``; this package installs the
small ``nova.virt.ironic_partition`` module that points here.)

What changes against nova's driver:

* nova's tooz ring and its ``peer_list`` check (``_refresh_hash_ring``,
  ``_check_peer_list``) are replaced by the
  :class:`~ironic_partition.partition.partitioner.Partitioner`: the same
  node-to-host mapping, host names compared ignoring case, members from
  ``[ironic_partition] membership_backend`` (``nova`` reads nova's own
  service group, as nova does).
* The node cache is filled from one paginated listing of the group with
  only the fields needed, kept as slim records, never a resource object
  per node.
* Any failure to list Ironic or to know the members raises nova's
  ``VirtDriverNotReady``: the resource tracker skips the run and never
  sees an empty or partial node list (which makes nova delete compute
  nodes and resource providers). No keystoneauth exception reaches nova.
* ``[ironic] conductor_group``/``partition_key`` and ``peer_list`` take
  effect on SIGHUP, ``peer_list`` included although nova 34 registers it
  immutable.
* A spawn first checks that this service may report the node at that
  instant (the same test as ``get_available_resource``), before nova's
  first write to the node; otherwise it raises
  ``ComputeResourcesUnavailable`` and nova reschedules the build. nova's
  atomic ``instance_uuid`` write stays the reservation (seed 002); when
  another instance won it, the build is rescheduled too.
* ``[ironic] shard`` filters the listing with the conductor group, as
  nova does; without ``peer_list`` the ring is this host alone (nova's
  one compute per shard), with ``peer_list`` the listed hosts share the
  shard. A SIGHUP that changes the shard is refused (restart instead).
* nova's unpartitioned HA (neither a conductor group nor a shard: nova's
  ring spans every live Ironic compute) needs a claims database that
  every compute shares. On a local SQLite one (the default connection),
  the driver refuses to start while another nova-compute service with
  Ironic compute nodes is up, and is not ready while one is; a compute
  alone keeps working.
* A process whose host name another process took over
  (``ironic-partition takeover``) refuses every build and stops itself
  with SIGTERM (nova's graceful stop) at its next refresh.
* A claims database that does not answer at start does not stop
  nova-compute: the driver is not ready (no node list; its servers keep
  working) until the database answers, then joins. So does a previous
  process of this host name that cannot be proven gone (a container
  restarted in a new PID namespace): not ready until its heartbeat is
  older than ``service_down_time``.

Everything else (spawn, destroy, power, consoles...) is nova's.
"""

import threading
import time

import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.virt.ironic import driver as ironic_driver
from openstack import exceptions as sdk_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from ironic_partition import __version__
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.membership import nova as nova_membership
from ironic_partition.settings import claims as claim_settings
from ironic_partition.virt import lifecycle
from ironic_partition.virt import mixin
from ironic_partition.virt import reservation
from ironic_partition.virt import tracking

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF


class IronicPartitionDriver(lifecycle.LifecyclePolicy,
                            mixin.PartitionMixin,
                            reservation.ProvenReservation,
                            ironic_driver.IronicDriver):
    """nova's Ironic driver, partitioned safely by ironic-partition."""

    # NOTE(ironic-partition): a nova-compute restart must not move its
    # nodes away and back: each move is a compute node rebalance in nova
    # (the path of bug 1853009). Keep the claims and the membership, as
    # nova's own hash ring keeps a restarting service in the ring.
    partition_hand_over_default = False

    # NOTE(ironic-partition): nova.conf's default membership is a SQLite
    # file under state_path: with several computes, each would see only
    # itself and report every node of the group.
    partition_allow_local_database = False

    def __init__(self, virtapi, read_only=False, conf=None):
        super().__init__(virtapi, read_only=read_only)
        conf = conf if conf is not None else CONF
        # NOTE(ironic-partition): nova keeps instances by its own [DEFAULT]
        # host, exactly as written; the ring uses it lower-cased.
        self._nova_host = conf.host
        self._orphans = set()
        self._not_orphans = set()
        self._stopping = False
        #: The claim check made again inside nova's resource lock.
        self._pass_gate = tracking.PassGate()
        #: Whether this process handed nova a node list yet.
        self._reported = False
        self._first_check = None
        #: When this process started, by the clock nova stamps heartbeats
        #: with, and when its first heartbeat since was seen.
        self._started_at = timeutils.utcnow(with_timezone=True)
        self._heartbeat_seen = None
        #: Set to end the start-up wait for a handover (a stop).
        self._handover_over = threading.Event()
        ip_conf.register_opts(conf)
        ip_conf.follow_nova_service_down_time(conf)
        # NOTE(ironic-partition): the version goes in the services row, for
        # status and the upgrade check's view of a rolling upgrade.
        self.partition_setup(conf, version=__version__)

    def partition_outside_view(self, settings, membership):
        """nova's service group, as nova's own driver builds its ring.

        A peer that nova has up, and that does not heartbeat the
        membership database (it still runs nova's own driver during a
        rolling switch or after a rollback, or runs ours against another
        claims database), counts in the ring: its share is left to it,
        as nova's ring leaves it, instead of being claimed and reported
        a second time here.

        :param settings: the :class:`~ironic_partition.settings.Settings`.
        :param membership: the membership backend in use.
        :returns: a :class:`~ironic_partition.membership.nova.
            NovaMembership`, or None when the membership already is
            nova's service group, or keeps a local SQLite database: then
            this compute serves alone or not at all
            (:meth:`_local_database_error`), and a rival nova has up is
            refused, not given a share.
        """
        backend = nova_membership.NovaMembership
        if getattr(membership, 'name', None) == backend.name:
            return None
        store = getattr(membership, 'store', None)
        if getattr(store, 'dialect', None) == 'sqlite':
            return None
        return backend(settings, self.partition_role)

    def partition_cadence(self, conf):
        """nova's resource tracker: every ``update_resources_interval``.

        :param conf: nova's ``ConfigOpts``.
        :returns: :func:`~ironic_partition.settings.claims.
            nova_cadence` (the fence comes the write window, or one
            interval when shorter, before the lease runs out).
        """
        return claim_settings.nova_cadence(
            getattr(conf, 'update_resources_interval', 0))

    def init_host(self, host):
        """Join the membership instead of building nova's tooz ring.

        :param host: the compute host name.
        :raises ConfigurationError: the claims database is a local one
            while other Ironic computes share the fleet with this one.
        :returns: None
        """
        ctxt = nova_context.get_admin_context()
        error = self._local_database_error(ctxt, starting=True)
        if error is not None:
            raise error
        workers = getattr(getattr(self.partition_conf, 'compute', None),
                          'update_resources_max_workers', 1) or 1
        if workers > 1 and self.partitioner.claims is not None:
            LOG.info("nova's resource tracker updates %d nodes at once "
                     "([compute] update_resources_max_workers): each "
                     "node's claim is checked again inside nova's resource "
                     "lock, before its writes", workers)
        if self._forced_down_error(ctxt) is None and \
                self._partition_join() is None:
            self._await_handover()

    def cleanup_host(self, host):
        """Leave the membership at once, then do nova's cleanup.

        :param host: the compute host name.
        :returns: None
        """
        self._handover_over.set()
        self.partition_stop()
        super().cleanup_host(host)

    def _refresh_hash_ring(self, ctxt):
        """Replaced: the partitioner reads the members on every refresh.

        nova's version also runs ``_check_peer_list``, which compares host
        names case-sensitively and warns about every HA configuration.

        :param ctxt: unused.
        :returns: None
        """

    def _my_instances(self, ctxt):
        # NOTE(ironic-partition): a generator, so that nova's instance list
        # is read after the (long) Ironic listing, as nova does; a stale
        # list could orphan a node whose instance was just spawned here.
        live = set(objects.InstanceList.get_uuids_by_host(ctxt,
                                                          self._nova_host))
        yield from live
        yield from self._orphans_of_mine(ctxt, live)

    def _orphans_of_mine(self, ctxt, live):
        """Deleted instances of this host still set on a node.

        A server deleted while its compute was down is deleted by nova-api
        alone (a "local delete"); its node keeps the instance and stays
        deployed. It is still this service's (seed 003: the node waits for
        its owner to tear it down), so it is reported here, where nova's
        ``_cleanup_running_deleted_instances`` finds it through
        ``list_instance_uuids`` and tears the node down
        (``[DEFAULT] running_deleted_instance_action = reap``). Other
        services never report it: the instance is not theirs.

        Instances found not to be deleted ones of this host are remembered,
        so a refresh queries nova only for instances it has not seen on a
        node before.

        :param ctxt: an admin context.
        :param live: this host's live instance UUIDs.
        :returns: the UUIDs of this host's deleted instances on a node.
        """
        on_nodes = {node.instance_id
                    for node in self.partitioner.index.nodes.values()
                    if node.instance_id is not None} - live
        unknown = on_nodes - self._not_orphans
        orphans = set(self._orphans & on_nodes)
        if unknown:
            found = objects.InstanceList.get_by_filters(
                ctxt.elevated(read_deleted='only'),
                {'uuid': sorted(unknown), 'host': self._nova_host},
                expected_attrs=[], use_slave=True)
            new = {instance.uuid for instance in found}
            for uuid in sorted(new - orphans):
                LOG.warning('Instance %s of this host was deleted while '
                            'this service was down, and is still on its '
                            'node: reporting the node until nova tears it '
                            'down', uuid)
            orphans |= new
            self._not_orphans |= unknown - new
        self._not_orphans &= on_nodes
        self._orphans = orphans
        return orphans

    def _refresh_cache(self):
        """Refresh the node cache from this service's partition.

        :raises VirtDriverNotReady: Ironic or the membership is
            unavailable; the cache keeps the last good nodes.
        :returns: None
        """
        self._stop_if_replaced()
        ctxt = nova_context.get_admin_context()
        try:
            error = self._local_database_error(ctxt)
        except Exception as e:
            # NOTE(ironic-partition): fail closed: alone is not proven.
            LOG.warning('Not reporting any node list this time: could not '
                        'ask nova which Ironic computes are up: %s', e)
            raise self.partition_refuse(e) from e
        if isinstance(error, lifecycle.WaitForRival):
            LOG.warning('Not reporting any node list yet: %s', error)
            raise self.partition_refuse(error)
        if error is not None:
            LOG.error('Not reporting any node list: %s', error)
            self._stop_refused(error)
            raise self.partition_refuse(error)
        error = self._forced_down_error(ctxt)
        if error is None:
            error = self._partition_join()
        if error is not None:
            raise self.partition_refuse(error)
        try:
            result = self.partition_refresh(self._my_instances(ctxt))
        except nova_exception.VirtDriverNotReady:
            self._stop_if_replaced()
            raise
        self.node_cache = dict(result.nodes)
        self.node_cache_time = time.time()
        self._reported = True

    def list_instance_uuids(self):
        """nova's, and at start nova's own records when not ready yet.

        nova-compute calls this from ``init_host`` for a service it has no
        record of (``_sanity_check_new_host``), before any resource-tracker
        run: with nova's driver an uncaught ``VirtDriverNotReady`` there
        ends nova-compute. Until this process has reported a node list,
        a partition that is not ready yet (the claims of a peer or of a
        previous process of this host not run out, the claims database
        not answering) answers with the instances nova has on this host,
        and says that the check could not look at Ironic. From then on,
        not ready is raised as nova expects.

        :returns: a list of instance UUIDs.
        :raises VirtDriverNotReady: not ready, after the first report.
        """
        try:
            return super().list_instance_uuids()
        except nova_exception.VirtDriverNotReady as e:
            if self._reported:
                raise
            LOG.warning('Listing the instances on this host\'s Ironic nodes '
                        'from nova\'s own records: the partition is not '
                        'ready yet (%s)', e)
            return list(objects.InstanceList.get_uuids_by_host(
                nova_context.get_admin_context(), self._nova_host))

    def get_available_resource(self, nodename):
        """nova's, for a node this service may still report.

        nova's resource tracker asks for each node of the list it got at
        the start of its run. When this service's claim on a node ran out
        since (the process was paused half-way through the run, or could
        not renew its claims), another service may hold it now: refuse,
        so that this run neither records nor reports it. nova logs the
        error for that node and goes on with the others; it deletes
        nothing.

        :param nodename: the node UUID.
        :raises VirtDriverNotReady: the node may not be reported any more.
        :returns: nova's resource dict.
        """
        if not self.partitioner.may_report(nodename):
            raise nova_exception.VirtDriverNotReady(
                message='Virt driver is not ready: node %s may not be '
                        'reported any more by this service (its claim ran '
                        'out since the resource tracker listed it)'
                % nodename)
        resources = super().get_available_resource(nodename)
        self._pass_gate.checked(nodename)
        return resources

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        """nova's, after the resource tracker's claim check made again.

        nova calls it inside its resource lock, right before it writes the
        node's inventory to placement and saves (or moves to this host)
        its compute node row. For the resource tracker's pass, the claim
        checked in :meth:`get_available_resource` is checked again here:
        with ``[compute] update_resources_max_workers`` above 1 the node
        may have waited for the lock behind the other workers' nodes (see
        :mod:`ironic_partition.virt.tracking`). A claim that ran out
        meanwhile refuses the node: nova logs the error for it, writes
        nothing more for it in this pass and goes on with the others.

        :param provider_tree: nova's ``ProviderTree``.
        :param nodename: the node UUID.
        :param allocations: nova's allocations, for a reshape.
        :raises VirtDriverNotReady: the node may not be reported any more.
        :returns: None
        """
        refusal = self._pass_gate.refusal(nodename, self.partitioner)
        if refusal is not None:
            raise nova_exception.VirtDriverNotReady(message=refusal)
        return super().update_provider_tree(provider_tree, nodename,
                                            allocations=allocations)

    def node_is_available(self, nodename):
        """Whether nova may account for a node, and claim it, now.

        nova's resource tracker asks before every claim (a build, a
        rebuild, a move) and before updating a node's usage. nova's own
        driver answers from its node cache and refreshes the cache when it
        is empty or lacks the node: a refresh inside a build's claim,
        which raised ``VirtDriverNotReady`` there when the partition was
        not ready (a paused compute resumed after a peer took its nodes
        over), failing the build with a traceback before its reschedule.
        Ours answers the reporting gate's question at that instant, with
        no call (the node is in this service's last list and its claim
        is valid, instance nodes included). When it may not, one line
        names the node, the claim's holder and the reason; nova then
        refuses the claim ("Attempt to claim resources ... on unknown
        node") and reschedules a build, before anything is written to the
        node.

        :param nodename: the node UUID.
        :returns: True when this service may report the node now.
        """
        refusal = self.partitioner.spawn_refusal(nodename)
        if refusal is None:
            return True
        LOG.warning('Node %(node)s is not available to this service now '
                    '(claim held by %(holder)s): %(reason)s; nova neither '
                    'claims it nor updates its usage (a build is '
                    'rescheduled)',
                    {'node': nodename,
                     'holder': self.partitioner.claim_holder(nodename),
                     'reason': refusal})
        return False

    def is_node_deleted(self, nodename):
        """nova's orphan check, without a call for a node we listed.

        nova asks at every resource-tracker run for each compute node row
        of this host the driver did not report: with nova's driver one
        ``GET /v1/nodes/<uuid>`` each, for every node handed over to
        another service until it moved the row (about a thousand calls
        for 349 nodes handed back after a restart, in the 1000-node
        benchmark). A node in this service's partition index is not
        deleted; only the others are asked. A node deleted in Ironic is
        seen as deleted at most ``full_resync_interval`` later (the index
        drops it at the next full listing): nova keeps its orphan row and
        provider until then, never the other way round.

        :param nodename: the node UUID.
        :returns: whether the node is gone from Ironic.
        """
        if self.partitioner.listed(nodename):
            return False
        return super().is_node_deleted(nodename)

    def _write_refusal(self, instance, action, outcome):
        """Why this service may not write to an instance's node now.

        Logs one line naming the node, the claim's holder, the reason and
        what nova does next.

        :param instance: the nova ``Instance``.
        :param action: what was asked, for the line (``deploy to``).
        :param outcome: what happens instead, for the line.
        :returns: ``(reason, holder)``, or None when it may.
        """
        node_id = instance.get('node')
        refusal = node_id and self.partitioner.spawn_refusal(node_id)
        if not refusal:
            return None
        holder = self.partitioner.claim_holder(node_id)
        LOG.warning('Refusing to %(action)s node %(node)s (claim held by '
                    '%(holder)s): %(reason)s; %(outcome)s',
                    {'action': action, 'node': node_id, 'holder': holder,
                     'reason': refusal, 'outcome': outcome},
                    instance=instance)
        return refusal, holder

    def prepare_for_spawn(self, instance):
        """Reserve the node, only while this service may report it.

        nova calls this first in a build, before anything is written to
        the node. Between the scheduler's choice and now, the node's claim
        may have moved to another service (this one was paused, or could
        not renew its claims): then nothing is written, one line names
        the node, the claim's holder and the reason, and
        ``ComputeResourcesUnavailable`` makes nova reschedule the build to
        another host. Otherwise nova reserves the node with its atomic
        ``instance_uuid`` write (Ironic refuses it while another instance
        is set), and a build that lost that race is rescheduled as well,
        as is one whose write Ironic refused with a conflict while no
        other instance holds the node (an Ironic conductor held the
        node's lock: nova's own driver fails that build); nova's
        ``failed_spawn_cleanup`` leaves a node it never reserved
        untouched.

        :param instance: the nova ``Instance`` being built.
        :raises ComputeResourcesUnavailable: to reschedule the build.
        :returns: None
        """
        node_id = instance.get('node')
        refused = self._write_refusal(instance, 'deploy to',
                                      'nova reschedules the build')
        if refused:
            refusal, holder = refused
            raise nova_exception.ComputeResourcesUnavailable(
                reason='node %s may not be deployed by %s: %s (claim held '
                       'by %s)' % (node_id, self._nova_host, refusal,
                                   holder))
        try:
            super().prepare_for_spawn(instance)
        except nova_exception.InstanceDeployFailure as e:
            other = self._reserved_by_other(node_id, instance.uuid)
            if other is not None:
                LOG.warning('Node %(node)s was reserved for instance '
                            '%(other)s first; nova reschedules the build',
                            {'node': node_id, 'other': other},
                            instance=instance)
                raise nova_exception.ComputeResourcesUnavailable(
                    reason='node %s was reserved for instance %s first'
                           % (node_id, other))
            cause = e.__context__
            if not isinstance(cause, sdk_exc.ConflictException):
                LOG.error('Reserving node %(node)s failed, and no other '
                          'instance holds it: %(cause)s',
                          {'node': node_id, 'cause': cause},
                          instance=instance)
                raise
            # NOTE(ironic-partition): a conflict without another instance
            # on the node: an Ironic conductor held the node's lock
            # (NodeLocked), or another build reserved it and let it go
            # meanwhile. Either way the node was not this build's to take
            # now; nova's own driver fails the build, a reschedule is
            # what the scheduler's choice deserves.
            LOG.warning('Node %(node)s could not be reserved (%(cause)s); '
                        'nova reschedules the build',
                        {'node': node_id, 'cause': exception.one_line(cause)},
                        instance=instance)
            raise nova_exception.ComputeResourcesUnavailable(
                reason='node %s could not be reserved: %s'
                       % (node_id, exception.one_line(cause)))

    def rebuild(self, context, instance, image_meta, injected_files,
                admin_password, allocations, bdms, detach_block_devices,
                attach_block_devices, network_info=None, evacuate=False,
                block_device_info=None, preserve_ephemeral=False,
                accel_uuids=None, reimage_boot_volume=False):
        """Redeploy a server's node, only while this service may report it.

        A rebuild writes to the server's node (nova's driver asks Ironic
        to redeploy it), so it has the spawn's gate: when this service
        cannot prove the node is its own now (not ready, fenced, the claim
        held by another service), nothing is asked of Ironic, one line
        names the node, the claim's holder and the reason, and nova keeps
        the server as it was (``InstanceFaultRollback``: its state back,
        the reason in the rebuild's instance action event). nova 34 as
        released may still turn this into a ``KeyError`` on its way out
        (see the contributor guide's proposed nova fixes).

        :raises InstanceFaultRollback: wrapping ``VirtDriverNotReady``,
            when the node may not be written now.
        :returns: what nova's driver returns.
        """
        node_id = instance.get('node')
        refused = self._write_refusal(
            instance, 'rebuild on', 'nothing was asked of Ironic, nova '
            'keeps the server as it was')
        if refused:
            refusal, holder = refused
            raise nova_exception.InstanceFaultRollback(
                inner_exception=nova_exception.VirtDriverNotReady(
                    message='Rebuild refused before anything was written '
                            'to node %s: compute %s may not act on it now '
                            '(%s; claim held by %s); the server is '
                            'unchanged, retry once the compute is ready'
                            % (node_id, self._nova_host, refusal, holder)))
        return super().rebuild(
            context, instance, image_meta, injected_files, admin_password,
            allocations, bdms, detach_block_devices, attach_block_devices,
            network_info=network_info, evacuate=evacuate,
            block_device_info=block_device_info,
            preserve_ephemeral=preserve_ephemeral, accel_uuids=accel_uuids,
            reimage_boot_volume=reimage_boot_volume)

    def _reserved_by_other(self, node_id, instance_uuid):
        try:
            node = self._get_node(node_id)
        except Exception:
            LOG.debug('Could not read node %s after a failed reservation',
                      node_id, exc_info=True)
            return None
        other = node.instance_id
        return other if other and other != instance_uuid else None

    def partition_not_ready(self, error):
        """Report a not-ready partition the way nova expects.

        :param error: the ``PartitionNotReady``.
        :returns: a ``VirtDriverNotReady`` carrying the reason.
        """
        return nova_exception.VirtDriverNotReady(
            message='Virt driver is not ready: %s' % error)

    # NOTE(ironic-partition): after a settings change (SIGHUP) nova's node
    # cache is left to the next resource-tracker run, as nova's own driver
    # leaves it between runs: emptying it made nova's other callers
    # (list_instances, node_is_available, get_info) refresh off-cycle, and
    # a refresh between two runs advanced the deferred release of the
    # claims by one run, handing a node to a peer while this compute's
    # last run still reported it. get_available_resource and
    # prepare_for_spawn check the claim at each call (may_report).
