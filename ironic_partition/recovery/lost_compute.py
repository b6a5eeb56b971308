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

"""Recover a lost compute's servers: prove it gone, fence it, move them.

A nova-compute lost for good keeps its servers (seed 003: an instance's
node stays with its service), and nobody else reports their nodes.
:class:`Recovery` gives them to the live computes of the partition, safely:

1. :meth:`Recovery.plan` proves, changing nothing, that the host cannot
   be serving: no live holder of its name and no heartbeat within
   ``service_down_time`` in the membership database, none of its claims
   valid (both by the database server's clock), and nova's service group
   has it down (or ``force``). It then maps each server's node to the
   live compute the ring gives it (plain ring over the live members of
   the partition, as for an instance-less node), or to the one
   destination asked for, each up in nova and live in the membership.
2. :meth:`Recovery.apply` fences the name for good (the services row
   names a new incarnation that no process runs as, marked down, its
   expired claims freed: :meth:`~ironic_partition.db.services.
   ServicesAPI.fence_dead`, which re-checks both proofs under the row
   lock), forces nova's service down (a process started again as the
   host waits, not ready, until an operator sets it up), then moves the
   servers through nova's own objects
   (:meth:`~ironic_partition.recovery.nova_records.NovaRecords.move`), at most
   ``workers`` at a time. Before each move the fence is checked again.

Every step is idempotent, so a second run finishes what an interrupted
one left: the fence and the forced-down flag are set again, servers
already moved are not on the host any more, and a move cut between its
two writes is finished.
"""

import collections
from concurrent import futures
import threading

from oslo_log import log as logging
from oslo_utils import uuidutils

from ironic_partition._i18n import _
from ironic_partition import conf as ip_conf
from ironic_partition.db import identity
from ironic_partition import exception
from ironic_partition.partition import readonly
from ironic_partition.ring import base as ring_base

LOG = logging.getLogger(__name__)

#: Servers moved at once by default, and at most (each move is four reads
#: and two writes on nova's cell database).
DEFAULT_WORKERS = 4
MAX_WORKERS = 16

#: One server of the plan: its UUID, name and node, where it goes, and
#: what happened (``'planned'`` in a dry run).
Row = collections.namedtuple(
    'Row', ['server', 'name', 'node', 'destination', 'result'])

PLANNED = 'planned'


def _key(value):
    return value.lower() if value is not None else None


def _show(key):
    return _('(none)') if key is None else repr(key)


class Recovery(object):
    """One ``recover`` of one host; see the module's docstring.

    :param settings: the :class:`~ironic_partition.settings.Settings` of
        the partition's computes (their nova.conf).
    :param membership: the membership backend
        (:func:`ironic_partition.partition.readonly.open_membership`), with a
        database.
    :param records: a
        :class:`~ironic_partition.recovery.nova_records.NovaRecords`.
    :param role: the membership role (``nova-compute``).
    :param host: the lost host.
    :param destination: move every server there instead of by the ring.
    :param force: go on while nova's service group has the host up.
    :param workers: servers moved at once.
    """

    def __init__(self, settings, membership, records, role, host,
                 destination=None, force=False, workers=DEFAULT_WORKERS):
        if not 1 <= workers <= MAX_WORKERS:
            raise exception.InvalidCommandInput(
                option='--workers', value=workers,
                reason=_('must be from 1 to %d') % MAX_WORKERS)
        self.settings = settings
        self.membership = membership
        self.db = membership.store.db
        self.records = records
        self.role = role
        self.host = ip_conf.normalize_host(host)
        self.destination = (ip_conf.normalize_host(destination)
                            if destination else None)
        self.force = force
        self.workers = workers
        #: The host as nova spells it, once :meth:`plan` found it.
        self.nova_host = None
        self.fence = None

    def _refuse(self, reason, changed=None):
        raise exception.RecoveryRefused(host=self.host, reason=reason,
                                        changed=changed)

    # -- proving the host gone, changing nothing -------------------------

    def _row(self, snapshot):
        for record in snapshot.services:
            if record.host == self.host:
                return record
        return None

    def _check_membership(self, snapshot, row):
        down_time = self.settings.service_down_time
        if row is None:
            self._refuse(_('no %(role)s of that name ever heartbeat the '
                           'membership database. recover moves the servers '
                           'of computes that ran this driver; for one that '
                           'ran nova\'s own, use "nova-manage db '
                           'ironic_compute_node_move"') % {'role': self.role})
        mine = (_key(self.settings.partition_key), self.settings.shard)
        theirs = (_key(row.partition_key), row.shard)
        if mine != theirs:
            self._refuse(_('it serves conductor group %(group)s and shard '
                           '%(shard)s, and these configuration files '
                           'describe conductor group %(mine)s and shard '
                           '%(mshard)s: run recover with the nova.conf of a '
                           'compute of its partition') % {
                'group': _show(row.partition_key), 'shard': _show(row.shard),
                'mine': _show(self.settings.partition_key),
                'mshard': _show(self.settings.shard)})
        if row.alive:
            self._refuse(_('it is alive in the membership database: '
                           'incarnation %(inc)s on %(origin)s heartbeat it '
                           '%(age).1f s ago (database clock). Stop that '
                           'process first; if it hangs, "ironic-partition '
                           'takeover %(host)s" fences it') % {
                'inc': row.incarnation, 'origin': row.origin or '?',
                'host': self.host,
                'age': (snapshot.as_of - row.last_seen).total_seconds()})
        age = (snapshot.as_of - row.last_seen).total_seconds()
        if age < down_time:
            self._refuse(_('its last heartbeat was %(age).1f s ago '
                           '(database clock), within [ironic_partition] '
                           'service_down_time (%(down)d s): it stopped '
                           'moments ago and may be restarting. Run again '
                           'in %(wait).0f s') % {
                'age': age, 'down': down_time, 'wait': down_time - age})
        claims = self.db.claims.read_claims(self.role, owner=self.host)
        valid = [c for c in claims.claims if c.valid]
        if valid:
            left = max((c.expires_at - claims.as_of).total_seconds()
                       for c in valid)
            self._refuse(_('%(count)d of its claims are still valid, for '
                           'up to %(left).1f s (database clock): a process '
                           'of it may still report their nodes. Run again '
                           'then') % {'count': len(valid), 'left': left})

    def _check_nova(self):
        service = self.records.compute_service(self.host)
        if service is None:
            self._refuse(_('nova has no nova-compute service of that name'))
        self.nova_host = service.host
        if service.up and not self.force:
            self._refuse(_('nova\'s service group has it up (last '
                           'heartbeat %s): a nova-compute runs as that '
                           'host. Stop it; if nova\'s view is stale while '
                           'the membership database proves the host gone, '
                           'pass --force') % (service.last_seen or '?'))
        return service

    def _destinations(self, snapshot):
        """The live computes that may take servers, by lower-case name."""
        membership = readonly.read_members(self.membership, self.settings)
        alive = {r.host for r in snapshot.services if r.alive}
        counted = dict(getattr(membership, 'counted_by', ()))
        # NOTE(ironic-partition): the configuration's own host is always
        # in its live set; here it counts only when it is proven alive.
        live = sorted(h for h in membership.live
                      if h != self.host and (h in alive or h in counted))
        usable = {}
        refused = {}
        for host in live:
            service = self.records.compute_service(host)
            if service is None or not service.up or service.forced_down:
                refused[host] = service
            else:
                usable[host] = service
        return live, usable, refused

    def plan(self):
        """Prove the host gone and map its servers; change nothing.

        :returns: a list of :data:`Row` (``result`` ``'planned'``), empty
            when nova has no server on the host.
        :raises RecoveryRefused: naming the check that failed.
        """
        snapshot = self.db.services.services(
            self.role, self.settings.service_down_time)
        row = self._row(snapshot)
        if row is None and self.records.compute_service(self.host) is None:
            self._refuse(_('neither nova nor the membership database knows '
                           'a compute of that name'))
        self._check_membership(snapshot, row)
        self._check_nova()
        servers = self.records.servers(self.nova_host)
        if not servers:
            return []
        live, usable, refused = self._destinations(snapshot)
        if self.destination is not None:
            if self.destination == self.host:
                self._refuse(_('the destination is the host itself'))
            if self.destination not in usable:
                self._refuse(self._why_not(self.destination, live, refused))
            targets = {s.uuid: self.destination for s in servers}
        else:
            if not live:
                self._refuse(_('no live compute of its partition can take '
                               'its servers: start one first'))
            ring = ring_base.from_settings(
                self.settings, lambda key: live,
                claims=True).build_ring(live, keys=[])
            targets = {s.uuid: ring.get_node(s.node) for s in servers}
            for target in sorted(set(targets.values())):
                if target not in usable:
                    self._refuse(self._why_not(target, live, refused))
        return [Row(server=s.uuid, name=s.name, node=s.node,
                    destination=usable[targets[s.uuid]].host,
                    result=PLANNED) for s in servers]

    def _why_not(self, host, live, refused):
        if host not in live:
            return _('the destination %(host)s is not a live compute of '
                     'its partition in the membership database (live: '
                     '%(live)s)') % {'host': host,
                                     'live': ', '.join(live) or _('none')}
        service = refused.get(host)
        if service is None:
            return _('the destination %s has no nova-compute service in '
                     'nova') % host
        if service.forced_down:
            return _('the destination %s is forced down in nova') % host
        return _('the destination %(host)s is down in nova\'s service '
                 'group (last heartbeat %(seen)s)') % {
            'host': host, 'seen': service.last_seen or '?'}

    # -- fencing and moving ---------------------------------------------

    def _check_fenced(self, moved):
        if self.db.services.holder(self.host, self.role) == self.fence:
            return
        self._refuse(
            _('a process took the host name during the recovery (%s)')
            % self.db.services.describe_holder(self.host, self.role),
            changed=_('%d servers were moved before; run recover again '
                      'once that process is stopped') % moved)

    def apply(self, rows, progress=None):
        """Fence the host, force it down in nova, move the servers.

        :param rows: what :meth:`plan` returned (not empty).
        :param progress: called with ``(done, total)`` after each server.
        :returns: the rows with ``result`` ``moved``, ``finished`` or
            ``already`` (:mod:`ironic_partition.recovery.nova_records`).
        :raises RecoveryRefused: the fence could not be proven (nothing
            changed), or a process took the name back half-way (what
            moved stays moved; a new run finishes).
        """
        self.fence = uuidutils.generate_uuid()
        replaced = self.db.services.fence_dead(
            self.host, self.role, self.fence,
            origin='ironic-partition recover (%s)' % identity.origin(),
            service_down_time=self.settings.service_down_time)
        LOG.info('Fenced host %(host)s for good in the membership '
                 'database (its incarnation %(old)s replaced by %(new)s)',
                 {'host': self.host, 'old': replaced.incarnation,
                  'new': self.fence})
        if self.records.force_down(self.nova_host):
            LOG.info('Forced nova-compute service %s down in nova',
                     self.nova_host)
        self._check_fenced(0)
        done = []
        lock = threading.Lock()
        # NOTE(ironic-partition): set on the first error or interrupt: no
        # move begins after it.
        stop = threading.Event()

        def move(row):
            if stop.is_set():
                return
            with lock:
                count = len(done)
            try:
                self._check_fenced(count)
                result = self.records.move(row.server, self.nova_host,
                                           row.destination)
            except BaseException:
                stop.set()
                raise
            LOG.info('Server %(server)s (node %(node)s): %(result)s from '
                     '%(host)s to %(dest)s',
                     {'server': row.server, 'node': row.node,
                      'result': result, 'host': self.nova_host,
                      'dest': row.destination})
            with lock:
                done.append(row._replace(result=result))
                if progress is not None:
                    progress(len(done), len(rows))

        pool = futures.ThreadPoolExecutor(self.workers)
        pending = [pool.submit(move, row) for row in rows]
        errors = []
        try:
            for future in pending:
                try:
                    future.result()
                except futures.CancelledError:
                    continue
                except Exception as e:
                    stop.set()
                    errors.append(e)
        except BaseException:
            stop.set()
            raise
        finally:
            # NOTE(ironic-partition): on an error or Ctrl-C, the moves not
            # begun are dropped; those under way finish (a few statements
            # each), and a new run does the rest.
            pool.shutdown(wait=True, cancel_futures=True)
        if errors:
            LOG.error('Recovery of %(host)s stopped after %(done)d of '
                      '%(total)d servers; run recover again to finish',
                      {'host': self.host, 'done': len(done),
                       'total': len(rows)})
            raise errors[0]
        return sorted(done, key=lambda r: r.server)
