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

"""A mixin that gives an Ironic virt driver safe partitioning.

:class:`PartitionMixin` holds no nova code: it wires a
:class:`~ironic_partition.partition.partitioner.Partitioner` (the code path the
agent and the CLI share) into any driver that keeps a node cache. A driver:

1. calls :meth:`PartitionMixin.partition_setup` from its constructor;
2. calls :meth:`PartitionMixin.partition_start` when its service starts
   (this joins the membership and, for the database backend, starts
   heartbeating) and :meth:`PartitionMixin.partition_stop` when it stops;
3. calls :meth:`PartitionMixin.partition_refresh` where it used to list
   Ironic and walk its hash ring, and maps
   :class:`~ironic_partition.exception.PartitionNotReady` to its own
   "not ready" error in :meth:`PartitionMixin.partition_not_ready`.

On SIGHUP (oslo.service ``restart_method='mutate'``) the mixin's mutate
hook re-reads ``[ironic] partition_key`` and ``peer_list`` (also nova's
immutable ``peer_list``), and, when they changed, clears the ring and the
node cache; the next refresh lists the new partition. An invalid new value
is rejected with one log line and the old partition stays in force; so is
a changed ``[ironic] shard``, which needs a restart.
"""

import threading

from oslo_log import log as logging

from ironic_partition import conf as ip_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition import metrics
from ironic_partition.partition import partitioner
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)


class PartitionMixin(object):
    """Partition an Ironic fleet among the services of one role.

    The node cache is :attr:`partition_nodes`: a dict of node UUID to a
    slim, read-only :class:`~ironic_partition.ironic.baremetal.Node` record.
    """

    #: The membership role of the services sharing a ring.
    partition_role = membership_base.ROLE_NOVA_COMPUTE

    #: What a graceful stop does when ``[ironic_partition]
    #: hand_over_on_stop`` is unset: True releases the claims and leaves
    #: the membership, False keeps both for a restart.
    partition_hand_over_default = True

    #: Whether a SQLite membership or claims database may be used while
    #: ``[ironic] peer_list`` names other hosts (a warning), or is refused.
    partition_allow_local_database = True

    def partition_cadence(self, conf):
        """How this driver's consumer refreshes and acts on a result.

        :param conf: the service's ``ConfigOpts``.
        :returns: a :data:`~ironic_partition.settings.claims.Cadence`;
            the agent's (every ``refresh_interval``, told of a fence at once)
            here.
        """
        return claim_settings.agent_cadence(
            conf[partition_conf.GROUP].refresh_interval)

    def partition_outside_view(self, settings, membership):
        """Another view of the live peers, that the ring must respect.

        :param settings: the :class:`~ironic_partition.settings.Settings`.
        :param membership: the membership backend in use.
        :returns: an object with a membership backend's ``members()``
            (:class:`~ironic_partition.partition.partitioner.Partitioner`'s
            ``outside``), or None: the membership alone (here).
        """
        return None

    def partition_read_settings(self):
        """Read and validate every option from the configuration now.

        The one place the driver reads its configuration: at
        :meth:`partition_setup` and at each reload.

        :returns: a :class:`~ironic_partition.settings.Settings`.
        :raises ConfigurationError: naming the option and value.
        """
        conf = self.partition_conf
        return settings_mod.from_conf(conf,
                                      cadence=self.partition_cadence(conf))

    def partition_setup(self, conf, client=None, membership=None,
                        version=None, takeover=False):
        """Build the partitioner; validate the settings at once.

        :param conf: the service's ``ConfigOpts``; our options are
            registered on it (nova's ``[ironic]`` options are kept when
            present).
        :param client: an
            :class:`~ironic_partition.ironic.baremetal.IronicClient`; built
            from ``conf``'s ``[ironic]`` options by default.
        :param membership: a membership backend; loaded from
            ``[ironic_partition] membership_backend`` by default.
        :param version: this service's version, recorded by the database
            membership backend.
        :param takeover: at start, replace a live process holding this
            host name instead of refusing to start.
        :raises ConfigurationError: when the partition settings are
            invalid, naming the option and value (nova's ``[ironic]
            partition_key`` and ``conductor_group`` set to different
            values included).
        :raises MembershipError: when the backend cannot be loaded.
        :returns: None
        """
        ip_conf.register_opts(conf)
        # NOTE(ironic-partition): nova registers partition_key as a
        # deprecated name of conductor_group and silently uses one of two
        # conflicting values; read the files as written to refuse them.
        ip_conf.reread_immutable_options(conf, apply=False)
        self.partition_conf = conf
        settings = self.partition_read_settings()
        if client is None:
            client = settings_mod.ironic_client(conf)
        if membership is None:
            membership = membership_base.get_backend(
                settings, self.partition_role, version=version,
                takeover=takeover)
        self.partitioner = partitioner.Partitioner(
            settings, client, membership,
            allow_local_database=self.partition_allow_local_database,
            outside=self.partition_outside_view(settings, membership))
        #: This service's :class:`~ironic_partition.metrics.Metrics`;
        #: served once the partition starts, when ``metrics_port`` is set.
        self.partition_metrics = metrics.Metrics()
        self.partition_metrics.use(settings, self.partitioner.claims)
        self.partitioner.add_fence_listener(
            self.partition_metrics.fenced_now)
        #: The node cache: node UUID -> slim node record.
        self.partition_nodes = {}
        self._partition_started = False
        self._partition_stopped = False
        self._partition_joined = False
        self._partition_lock = threading.Lock()
        conf.register_mutate_hook(self._partition_mutated)

    @property
    def partition_membership(self):
        """The membership backend in use."""
        return self.partitioner.membership

    def partition_start(self):
        """Join the membership (start heartbeating); idempotent.

        Once the started partition was stopped, it stays stopped: a
        refresh that comes after the stop (nova calls ``cleanup_host``
        before its periodic tasks end) must not register this dying
        process again, nor restart its heartbeat and lease timer.

        :raises MembershipError: when the membership source is unusable.
        :raises PartitionNotReady: after :meth:`partition_stop`.
        :returns: None
        """
        with self._partition_lock:
            if self._partition_stopped:
                raise exception.PartitionNotReady(
                    reason='this service stopped its partition (it is '
                           'shutting down)', kind='stopped')
            if not self._partition_started:
                self._partition_serve_metrics()
                try:
                    self.partition_membership.start()
                    self._partition_joined = True
                    self.partitioner.start()
                except exception.DuplicateService:
                    self.partition_metrics.duplicate_refused()
                    raise
                self._partition_started = True

    def partition_stop(self):
        """Release this service's claims, then leave the membership; final.

        Call it once the driver stopped reporting nodes: peers take the
        nodes over at their next refresh, without waiting for a lease or
        ``service_down_time``. With ``[ironic_partition]
        hand_over_on_stop = False`` both are kept instead, for a restart
        that moves no node; unset, :attr:`partition_hand_over_default`
        decides. Never raises.

        :returns: None
        """
        with self._partition_lock:
            # NOTE(ironic-partition): the latch closes whether or not the
            # partition ever started: a start that was not ready (the
            # claims database down, a previous process's heartbeat) must
            # not register or claim once nova is stopping this process.
            self._partition_stopped = True
            self.partition_nodes = {}
            hand_over = self.partitioner.settings.hand_over_on_stop
            if hand_over is None:
                hand_over = self.partition_hand_over_default
            if self._partition_started:
                self._partition_started = False
                try:
                    self.partitioner.stop(release=hand_over)
                except Exception:
                    LOG.exception('Releasing the ownership claims failed')
            if self._partition_joined:
                # NOTE(ironic-partition): also after a start that joined
                # the membership and then failed: its heartbeat runs.
                self._partition_joined = False
                try:
                    self.partition_membership.stop(leave=hand_over)
                except Exception:
                    LOG.exception('Stopping the membership backend failed')
            self.partition_metrics.stop()

    def _partition_serve_metrics(self):
        settings = self.partitioner.settings
        if settings.metrics_port is not None:
            self.partition_metrics.serve(settings.metrics_host,
                                         settings.metrics_port)

    def partition_refuse(self, error):
        """Record that this refresh reports no node list; the error to raise.

        Every path of a driver that reports "not ready" goes through here,
        so that the metrics say so and why.

        :param error: the :class:`~ironic_partition.exception.
            PartitionNotReady`, or the error the driver is not ready for.
        :returns: what :meth:`partition_not_ready` makes of it.
        """
        self.partition_metrics.not_ready(error)
        return self.partition_not_ready(error)

    def partition_not_ready(self, error):
        """Turn a not-ready partition into the driver's own error.

        :param error: the :class:`~ironic_partition.exception.
            PartitionNotReady`.
        :returns: the exception to raise; ``error`` itself by default.
        """
        return error

    def partition_refresh(self, my_instances=(), instance_hosts=None):
        """Refresh the partition and the node cache.

        :param my_instances: the UUIDs of the instances this service owns;
            an iterable that is read only after Ironic has been listed (a
            generator can defer the query, as nova does, so an instance
            spawned during a long listing is not missed).
        :param instance_hosts: optional mapping of instance UUID to its
            owner's host, to report stranded nodes.
        :returns: the
            :class:`~ironic_partition.partition.refresh_result.RefreshResult`.
        :raises: what :meth:`partition_not_ready` returns, when Ironic or
            the membership is unavailable. The node cache then keeps the
            last good partition, for status reporting only.
        """
        try:
            self.partition_start()
            self._partition_serve_metrics()
            result = self.partitioner.refresh(my_instances=my_instances,
                                              instance_hosts=instance_hosts)
        except exception.PartitionNotReady as e:
            LOG.warning('Not reporting any node list this time (the last '
                        'good one had %(count)d nodes): %(err)s',
                        {'count': len(self.partition_nodes), 'err': e})
            raise self.partition_refuse(e) from e
        # NOTE(ironic-partition): the result's own dict, not a copy: the
        # records are read-only and a result is never changed.
        self.partition_nodes = result.nodes
        self.partition_metrics.refreshed(result)
        return result

    def partition_reload(self):
        """Apply the partition options now, as SIGHUP does.

        :returns: True when the settings changed (the ring and the node
            cache were cleared).
        """
        try:
            ip_conf.reread_immutable_options(self.partition_conf)
        except exception.ConfigurationError as e:
            LOG.error('Rejected the new partition settings, keeping the '
                      'current ones: %s', e)
            return False
        if not self.partitioner.reload_settings(
                self.partition_read_settings):
            return False
        self.partition_metrics.use(self.partitioner.settings,
                                   self.partitioner.claims)
        self.partition_nodes = {}
        self.partition_cache_cleared()
        return True

    def partition_cache_cleared(self):
        """Called after a settings change emptied the node cache.

        Drivers with caches of their own clear them here.

        :returns: None
        """

    def _partition_mutated(self, conf, changed):
        self.partition_reload()
