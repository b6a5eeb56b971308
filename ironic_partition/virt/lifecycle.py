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

"""The nova driver's process lifecycle: start, join, wait, stop.

What :class:`~ironic_partition.virt.nova_driver.IronicPartitionDriver`
decides about its own process, apart from nova's calls on nodes: the
check that refuses a start (a local claims database beside other
computes), the join that waits
instead of failing (a silent database, a previous holder of the host
name, a service nova has forced down), the hold of nova-compute's start
while other processes hand its nodes back, and the stops it makes
itself (its host name taken over, or another compute serving a local
database). A mixin of the driver, which keeps the order of nova's calls
(``init_host``, the refreshes, ``cleanup_host``); each policy here has
its unit tests (``tests/unit/virt/test_nova_driver``).
"""

import datetime
import os
import signal
import time

import nova.conf
from nova import exception as nova_exception
from nova import objects
from nova.servicegroup import api as servicegroup
from oslo_log import log as logging
from oslo_utils import timeutils

from ironic_partition._i18n import _
from ironic_partition import exception
from ironic_partition.membership import nova as nova_membership
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF

#: Seconds between two refreshes while nova-compute's start waits for the
#: nodes that other processes hand back (:meth:`LifecyclePolicy.
#: _await_handover`).
HANDOVER_POLL = 2.0


class WaitForRival(exception.PartitionNotReady):
    """A compute started with this one may serve first: wait."""

    def __init__(self, reason):
        super().__init__(reason=reason, kind='membership')


def _rivals_error(store, hosts):
    """The error refusing a local claims database beside other computes.

    :param store: the claims database's store.
    :param hosts: the other Ironic computes up in nova.
    :returns: a ``ConfigurationError``.
    """
    return claim_settings.local_database_error(
        store,
        _('neither [ironic] conductor_group nor shard is set and other '
          'nova-compute services with Ironic nodes are up (%s): the ring '
          'spans them all, but each service would see only itself alive '
          'and report every node') % ', '.join(sorted(hosts)),
        _('every compute'),
        _('give each compute its own conductor group or shard'))


class LifecyclePolicy(object):
    """The driver's decisions about its own process (a mixin).

    Expects the driver's ``partitioner``, ``partition_conf``,
    ``servicegroup_api``, ``node_cache``, ``_refresh_cache``,
    ``partition_start`` and the state its ``__init__`` sets
    (``_nova_host``, ``_stopping``, ``_reported``, ``_first_check``,
    ``_started_at``, ``_heartbeat_seen``, ``_handover_over``).
    """

    def _await_handover(self):
        """Hold nova-compute's start until other processes hand back nodes.

        A compute that restarts finds the nodes the ring gives it claimed
        by the peers that took them over while it was away, or by its
        previous process: they let them go at their next refresh, or when
        their lease runs out. nova starts taking the builds queued for
        this host as soon as ``init_host`` returns; each one for such a
        node would be refused ("Attempt to claim resources ... on unknown
        node") and rescheduled to the alternates the scheduler chose with
        this host, often this host's other nodes, refused alike, until
        "Exceeded maximum number of retries" (4 to 6 of 30 builds in
        ``servers_bench``'s burst with a compute killed and restarted,
        none with nova's own driver, whose restarted compute serves them).

        So, while the one reason not to report is claims held by other
        processes, refresh every :data:`HANDOVER_POLL` seconds, for at
        most ``lease_time`` plus one interval (a lease runs out, a peer's
        next run lets go). nova's service heartbeat starts after
        ``init_host``: meanwhile the scheduler sends no new build here,
        while this service's membership heartbeat runs and the peers hand
        over. Any other reason (Ironic, the database, the time out) ends
        the wait: nova starts as before, this service not ready until its
        refreshes say otherwise.

        :returns: None
        """
        claims = self.partitioner.claims
        if claims is None:
            return
        limit = claims.lease_time + self.partitioner.cadence.interval
        deadline = time.monotonic() + limit
        waited = False
        while True:
            try:
                self._refresh_cache()
            except nova_exception.VirtDriverNotReady as e:
                cause = e.__cause__
                waiting = (isinstance(cause, exception.PartitionNotReady)
                           and cause.kwargs.get('waiting'))
                if not waiting:
                    return
            except Exception:
                # NOTE(ironic-partition): the wait is a courtesy to the
                # builds queued here; nova's own start handles the rest.
                LOG.warning('Not waiting for a handover at start: the '
                            'refresh failed', exc_info=True)
                return
            else:
                # NOTE(ironic-partition): ready with a part of its share
                # (its instance nodes adopted, the rest still held by
                # peers) is not enough either.
                outcome = self.partitioner.last_result.claims
                waiting = len(outcome.waiting) if outcome else 0
                if not waiting:
                    if waited:
                        LOG.info('Other processes handed the nodes back: '
                                 'starting with %d nodes',
                                 len(self.node_cache))
                    return
            if time.monotonic() >= deadline:
                LOG.warning('Starting while other processes still hold '
                            '%(n)d of the nodes the ring gives this host, '
                            'after %(limit).0f s: builds queued for them '
                            'are refused and rescheduled',
                            {'n': waiting, 'limit': limit})
                return
            if not waited:
                waited = True
                LOG.info('Holding the start of nova-compute until other '
                         'processes hand back %(n)d nodes (at most '
                         '%(limit).0f s): builds queued for this host wait '
                         'instead of being refused',
                         {'n': waiting, 'limit': limit})
            if self._handover_over.wait(
                    min(HANDOVER_POLL, deadline - time.monotonic())):
                return

    def _stop_if_replaced(self):
        """Stop this nova-compute once another process took its host over.

        After ``ironic-partition takeover HOST`` and a new nova-compute for
        the same host, this (old, fenced) process reports no node and
        refuses every build (nova reschedules them), but it would still
        take its share of the host's RPC messages and keep nova's resource
        tracker's old view. It stops itself the way an operator would,
        with SIGTERM: nova's graceful stop, which leaves the new process's
        host name, membership and claims alone. Once only.

        :returns: None
        """
        identity = self.partitioner.identity
        if identity is None or not identity.lost or self._stopping:
            return
        self._stopping = True
        LOG.error('Another process took host %(host)s over (%(reason)s): '
                  'stopping this nova-compute (SIGTERM to itself); the new '
                  'process serves the host', {'host': self._nova_host,
                                              'reason': identity.lost})
        self._terminate_self()

    def _stop_refused(self, error):
        """Stop this nova-compute: another compute serves the fleet.

        Computes started at the same moment on a SQLite claims database
        all pass ``init_host``; the one with the lowest service id serves
        and the others, refused here, stop the way an operator would
        (SIGTERM: nova's graceful stop), as they would have at start.
        Once only.

        :param error: the ``ConfigurationError``.
        :returns: None
        """
        if self._stopping:
            return
        self._stopping = True
        LOG.error('Stopping this nova-compute (SIGTERM to itself), as it '
                  'would have refused to start: %s', error)
        self._terminate_self()

    def _terminate_self(self):
        """Send this process SIGTERM (nova's graceful stop).

        :returns: None
        """
        os.kill(os.getpid(), signal.SIGTERM)

    def _forced_down_error(self, ctxt):
        """Wait, not joined, while nova has this service forced down.

        ``ironic-partition recover`` forces a lost compute's service down
        before moving its servers away: a process started again under
        that name must not join the ring (and claim a share of nodes)
        behind the operator's back. It reports no node list until an
        operator sets the service up again. Checked only until this
        process has joined: forcing down a running compute (nova's
        evacuation procedure) does not make it leave.

        :param ctxt: an admin context.
        :returns: a ``PartitionNotReady``, or None.
        """
        if self._partition_started:
            return None
        service = self._own_service(ctxt)
        if service is None or not service.forced_down:
            return None
        LOG.warning('Not ready: nova has this compute service forced down '
                    '(by "ironic-partition recover %(host)s" after it was '
                    'lost, or by an operator): it does not join the '
                    'partition nor report any node until it is set up '
                    'again ("openstack compute service set --up %(host)s '
                    'nova-compute")', {'host': self._nova_host})
        return exception.PartitionNotReady(
            reason='nova has compute service %s forced down'
            % self._nova_host, kind='membership')

    def _partition_join(self):
        """Join the membership; a silent database or holder waits.

        nova's own driver needs no claims database: one that cannot be
        reached must not stop nova-compute, nor the management of the
        servers it runs (power, consoles, deletes go to Ironic directly).
        This service then reports no node list, *not ready*, so nova's
        resource tracker skips its runs, and joins at the first refresh
        the database answers. Likewise while another process holds this
        host name with a recent heartbeat (the previous incarnation of a
        container restarted in a new PID namespace cannot be proven gone):
        not ready until its heartbeat is older than ``service_down_time``.
        Every other start-up error (schema, settings) stays fatal.

        :returns: the ``DatabaseConnectionFailed`` or ``DuplicateService``,
            or None once joined.
        """
        try:
            self.partition_start()
        except exception.PartitionNotReady as e:
            return e
        except exception.DatabaseConnectionFailed as e:
            LOG.warning('Not ready: the membership and claims database '
                        'does not answer; this service reports no node '
                        'list (its servers keep working through nova) and '
                        'joins when it answers: %s', e)
            return e
        except exception.DuplicateService as e:
            # NOTE(ironic-partition): a container restarted after a crash
            # runs in a new PID namespace (or on another machine): its
            # previous process is never provably gone, only silent. Wait
            # for its heartbeat to be older than service_down_time instead
            # of exiting into a restart loop.
            LOG.error('Not ready: %(err)s This service reports no node '
                      'list and joins once that process\'s last heartbeat '
                      'is older than [ironic_partition] service_down_time '
                      '(%(down)s s): after a restart in a new container or '
                      'PID namespace, that is the previous process. If it '
                      'still runs, two services share this host name.',
                      {'err': e, 'down': self.partition_conf.
                       ironic_partition.service_down_time})
            return e
        return None

    def _local_database_error(self, ctxt, starting=False):
        """Refuse a local claims database unless this compute is alone.

        With neither ``[ironic] conductor_group`` nor ``shard`` (nova's
        unpartitioned HA), the ring spans every live Ironic compute. On a
        SQLite claims database only this host can reach, each compute sees
        only itself alive and reports every node. The live Ironic computes
        are asked of nova's service group, as nova's own driver builds its
        ring (services that never reported an Ironic compute node are not
        counted, as in nova's ring), and a compute that looks down but
        wrote one of its compute nodes lately counts as live
        (:meth:`_liveness`).

        At start (``init_host``, before nova creates or updates this
        service's record) any live one refuses this compute. Computes
        started at the same moment all pass that check; once this service
        has its record they are told apart so that exactly one serves:

        * before its first report, a compute waits for its own first
          heartbeat in nova's service group (a restarted compute is up in
          nova only from its first heartbeat, sent
          ``INITIAL_REPORTING_DELAY`` seconds after it starts), then one
          ``report_interval`` (every compute started with it is then up in
          nova), and waits while a compute with a lower service id (nova
          gives ids in the order records are created) is up in nova with
          no compute node at all: it is in its first pass, and may be
          about to report; one with an Ironic compute node refuses it
          (both told from one read of its compute nodes);
        * a compute that has not reported yet is refused by a live Ironic
          compute with a lower id, or by one with a higher id that is
          reporting (it wrote its compute nodes within
          ``service_down_time``);
        * a compute that reports is refused only by a reporting one with a
          lower id (both checked before the other was visible).

        :param ctxt: an admin context.
        :param starting: True in ``init_host``.
        :returns: a ``ConfigurationError`` naming ``[ironic_partition_
            database] connection`` and the other computes, a
            :class:`WaitForRival`, or None.
        """
        store = self.partitioner.store
        settings = self.partitioner.settings
        if (store is None or store.dialect != 'sqlite' or
                settings.partition_key is not None or
                settings.shard is not None):
            return None
        me = {self._nova_host.lower(), settings.host.lower()}
        live = {}
        for svc in objects.ServiceList.get_all_computes_by_hv_type(
                ctxt, nova_membership.HYPERVISOR_TYPE):
            if svc.host.lower() in me:
                continue
            up, reporting = self._liveness(ctxt, svc)
            if up or reporting:
                live[svc.host.lower()] = (svc, reporting)
        own = None if starting else self._own_service(ctxt)
        mine = own.id if own is not None else None
        if mine is not None:
            live = {host: (svc, reporting)
                    for host, (svc, reporting) in live.items()
                    if (svc.id < mine and (reporting or not self._reported))
                    or (svc.id > mine and reporting and not self._reported)}
        if live:
            return _rivals_error(store, live)
        if starting or self._reported:
            return None
        if mine is None:
            # NOTE(ironic-partition): nova creates a new service's record
            # after init_host, whose own listing (list_instance_uuids)
            # comes here first: without a record this compute cannot be
            # told apart from computes started with it yet.
            return WaitForRival(
                'this compute has no service record in nova yet (nova '
                'creates it after init_host): with a SQLite claims database '
                '([ironic_partition_database] connection) and no conductor '
                'group nor shard only one compute may serve, and which one '
                'is told by the records')
        if self._first_check is None:
            self._first_check = time.monotonic()
        if self._heartbeat_seen is None:
            if not self._heartbeat_since_start(own):
                return WaitForRival(
                    'this compute waits for its first heartbeat in nova\'s '
                    'service group (nova sends it %s s after the service '
                    'starts, %.0f s so far) before its first report: '
                    'computes restarted with it are only up in nova from '
                    'theirs. With a SQLite claims database '
                    '([ironic_partition_database] connection) and no '
                    'conductor group nor shard only one compute may serve'
                    % (servicegroup.INITIAL_REPORTING_DELAY,
                       time.monotonic() - self._first_check))
            self._heartbeat_seen = time.monotonic()
        waited = time.monotonic() - self._heartbeat_seen
        if waited < CONF.report_interval:
            return WaitForRival(
                'this compute waits one [DEFAULT] report_interval (%s s, '
                '%.0f s so far) after its first heartbeat before its first '
                'report, so that computes started with it are up in nova\'s '
                'service group: with a SQLite claims database '
                '([ironic_partition_database] connection) and no conductor '
                'group nor shard only one compute may serve'
                % (CONF.report_interval, waited))
        # NOTE(ironic-partition): a compute up in nova with no compute node
        # at all is in its first resource-tracker pass (an Ironic compute
        # about to report, or any other starting one): one with a lower id
        # would win, so wait for its first node or for it to go down. One
        # read of its compute nodes tells both: with an Ironic one it
        # serves already, and refuses this compute. (Read apart, the check
        # above could miss its first node, and this one see it: both
        # computes served.)
        fresh, serving = [], []
        for svc in objects.ServiceList.get_by_binary(
                ctxt, 'nova-compute', include_disabled=True):
            if (svc.host.lower() in me or svc.id >= mine or
                    not self.servicegroup_api.service_is_up(svc)):
                continue
            nodes = self._compute_nodes(ctxt, svc.host)
            if not nodes:
                fresh.append(svc.host.lower())
            elif any(n.hypervisor_type == nova_membership.HYPERVISOR_TYPE
                     for n in nodes):
                serving.append(svc.host.lower())
        if serving:
            return _rivals_error(store, serving)
        if fresh:
            fresh.sort()
            return WaitForRival(
                'nova-compute services up in nova with a lower service id '
                'than this one (%s) have no compute node yet: with a SQLite '
                'claims database ([ironic_partition_database] connection) '
                'and no conductor group nor shard only one compute may '
                'serve, so this one waits for them to report (it is then '
                'refused), to turn out not to be Ironic computes, or to go '
                'down' % ', '.join(fresh))
        return None

    @staticmethod
    def _compute_nodes(ctxt, host):
        """A compute service's compute node records (none: empty)."""
        try:
            return objects.ComputeNodeList.get_all_by_host(ctxt, host)
        except nova_exception.ComputeHostNotFound:
            return []

    def _own_service(self, ctxt):
        """This service's record in nova, or None before it has one."""
        try:
            return objects.Service.get_by_compute_host(ctxt, self._nova_host)
        except nova_exception.ComputeHostNotFound:
            return None

    def _heartbeat_since_start(self, service):
        """Whether nova's service group has heard from this process.

        A restarted nova-compute keeps its record, and is up in nova only
        from its first heartbeat, sent ``INITIAL_REPORTING_DELAY`` seconds
        after it starts: until this process's own first heartbeat, a
        compute restarted with it may not be visible yet. With nova's
        database driver the heartbeat is ``last_seen_up``, stamped by this
        host's clock like :attr:`_started_at`; with another driver, the
        service group's own answer.

        :param service: this service's nova ``Service``.
        :returns: a bool.
        """
        if CONF.servicegroup_driver == 'db':
            seen = service.last_seen_up
            if seen is None:
                return False
            if seen.tzinfo is None:
                seen = seen.replace(tzinfo=datetime.timezone.utc)
            return seen >= self._started_at
        return self.servicegroup_api.service_is_up(service)

    def _liveness(self, ctxt, service):
        """Whether another compute service is up, and reports: fail closed.

        nova's service group says "down" for a nova-compute that has not
        sent its first heartbeat yet: it joins the service group only
        after its first resource-tracker pass, which takes minutes with
        many nodes, while its record looks as old as its creation or its
        last run. A service that wrote any of its compute nodes within
        ``service_down_time`` (each pass saves each one) reports, and
        counts as running whatever the service group says.

        :param ctxt: an admin context.
        :param service: a nova ``Service``.
        :returns: ``(up, reporting)``, two bools.
        """
        up = self.servicegroup_api.service_is_up(service)
        since = timeutils.utcnow(with_timezone=True) - datetime.timedelta(
            seconds=CONF.service_down_time)
        nodes = objects.ComputeNodeList.get_all_by_host(ctxt, service.host)
        reporting = any(
            (node.updated_at or node.created_at) is not None and
            (node.updated_at or node.created_at) >= since for node in nodes)
        return up, reporting
