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

"""One refresh of a service's partition: the code path everything shares.

The nova driver mixin, the partition agent and the CLI all build a
:class:`Partitioner` and call :meth:`Partitioner.refresh`. A refresh:

1. lists the nodes of this service's conductor group from Ironic;
2. reads the live peers from the membership backend;
3. builds (or reuses) the ring of those peers;
4. applies :func:`ironic_partition.rules.partition`.

Faults fail closed: when Ironic cannot be listed, or the membership has
been unknown for longer than ``membership_stale_timeout``, the refresh
raises :class:`~ironic_partition.exception.PartitionNotReady` and the last
good result stays available for status reporting. It never returns an
empty or partial partition in place of an error.
"""

import dataclasses
import threading
import time

from oslo_log import log as logging

from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.ring import compute
from ironic_partition import rules

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class RefreshResult(object):
    """What one refresh found.

    :param settings: the :data:`~ironic_partition.conf.PartitionSettings`
        in force.
    :param membership: the membership the ring was built from.
    :param ownership: the :data:`~ironic_partition.rules.Ownership`.
    :param nodes: the managed nodes, by UUID (slim records).
    :param listed: how many nodes Ironic listed for the group.
    :param gained: UUIDs managed now and not at the previous refresh.
    :param lost: UUIDs managed at the previous refresh and not now.
    :param api_calls: Ironic API calls made.
    :param http_seconds: seconds spent in those calls.
    :param seconds: seconds the whole refresh took.
    """

    settings: object
    membership: object
    ownership: object
    nodes: dict
    listed: int
    gained: frozenset
    lost: frozenset
    api_calls: int
    http_seconds: float
    seconds: float

    @property
    def members(self):
        """The ring members, sorted."""
        return tuple(sorted(self.membership.live))


class Partitioner(object):
    """Computes and caches which nodes this service manages.

    :param conf: a ``ConfigOpts`` with ironic-partition's options
        registered; the partition settings are validated at once.
    :param client: an :class:`~ironic_partition.ironic.IronicClient`.
    :param membership: a started
        :class:`~ironic_partition.membership.base.MembershipBackend`.
    :param clock: a monotonic clock, for the staleness bound.
    :raises ConfigurationError: when the settings are invalid at start.
    """

    def __init__(self, conf, client, membership, clock=time.monotonic):
        self.conf = conf
        self.client = client
        self.membership = membership
        self._clock = clock
        self._lock = threading.Lock()
        self._settings = ip_conf.validate(conf)
        self._live = frozenset()
        group = conf.ironic_partition
        self.rings = compute.ComputeRingProvider(
            members_fn=lambda key: self._live,
            partitions=2 ** group.partition_exponent,
            mode=group.ring_mode)
        self._stale_since = None
        self._announce = False
        #: The last successful :class:`RefreshResult`, or ``None``.
        self.last_result = None

    @property
    def settings(self):
        """The partition settings in force."""
        return self._settings

    def register_mutate_hook(self):
        """Re-read the partition settings when the config is mutated.

        oslo.service calls the hook on SIGHUP for services started with
        ``restart_method='mutate'``.
        """
        self.conf.register_mutate_hook(self._mutate_hook)

    def _mutate_hook(self, conf, changed):
        self.reload_settings()

    def reload_settings(self):
        """Apply new partition settings, or keep the old ones if invalid.

        Logs one line with the old and new values. The next refresh uses
        the new settings and logs the new node count.

        :returns: ``True`` when the settings changed.
        """
        old = self._settings
        try:
            new = ip_conf.get_settings(self.conf)
        except (exception.ConfigurationError, ValueError) as e:
            LOG.error('Rejected the new partition settings, keeping '
                      'partition_key=%(key)r peer_list=%(peers)s: %(err)s',
                      {'key': old.partition_key,
                       'peers': ','.join(old.peer_list), 'err': e})
            return False
        if new == old:
            return False
        with self._lock:
            self._settings = new
            self.rings.reset()
            self.client.reset()
            self.membership.partition_key = new.partition_key
            self._announce = True
        LOG.info('Partition settings changed: partition_key %(ok)r -> '
                 '%(nk)r, peer_list [%(op)s] -> [%(np)s]; the next refresh '
                 'applies them',
                 {'ok': old.partition_key, 'nk': new.partition_key,
                  'op': ','.join(old.peer_list),
                  'np': ','.join(new.peer_list)})
        return True

    def _read_membership(self, settings):
        peers = settings.peer_list if settings.partition_key is not None \
            else None
        membership = self.membership.members(settings.partition_key, peers)
        if not membership.stale:
            self._stale_since = None
            return membership
        now = self._clock()
        if self._stale_since is None:
            self._stale_since = now
        timeout = self.conf.ironic_partition.membership_stale_timeout
        age = now - self._stale_since
        if age >= timeout:
            raise exception.PartitionNotReady(
                reason='the membership source has been unreachable for '
                       '%d s ([ironic_partition] membership_stale_timeout '
                       'is %d s)' % (age, timeout))
        LOG.warning('Membership source unreachable for %(age)d s; using '
                    'the last known members %(members)s for up to '
                    '%(left)d s more',
                    {'age': age, 'members': sorted(membership.live),
                     'left': timeout - age})
        return membership

    def refresh(self, my_instances=(), instance_hosts=None):
        """Compute the partition now.

        :param my_instances: UUIDs of the instances this service owns.
        :param instance_hosts: optional mapping of instance UUID to the
            host owning it, to report stranded nodes.
        :returns: a :class:`RefreshResult`.
        :raises PartitionNotReady: Ironic or the membership is unavailable;
            the previous result is kept in :attr:`last_result`.
        """
        start = self._clock()
        with self._lock:
            settings = self._settings
            try:
                nodes = self.client.list_nodes(
                    conductor_group=settings.partition_key)
            except (exception.IronicUnavailable,
                    exception.IronicRequestError) as e:
                raise exception.PartitionNotReady(reason=e)
            membership = self._read_membership(settings)
            self._live = frozenset(membership.live)
            # NOTE(ironic-partition): only a balanced ring depends on the
            # key set; don't build it on every refresh for nothing.
            keys = ([n.id for n in nodes if n.instance_id is None]
                    if self.rings.mode == 'balanced' else None)
            ring = self.rings.get_ring(settings.partition_key, keys=keys)
            ownership = rules.partition(nodes, ring, settings.host,
                                        my_instances, instance_hosts)
            managed = frozenset(ownership.managed)
            by_id = {n.id: n for n in nodes if n.id in managed}
            previous = (frozenset(self.last_result.nodes)
                        if self.last_result is not None else frozenset())
            result = RefreshResult(
                settings=settings, membership=membership,
                ownership=ownership, nodes=by_id, listed=len(nodes),
                gained=managed - previous, lost=previous - managed,
                api_calls=self.client.last_calls,
                http_seconds=self.client.last_http_seconds,
                seconds=self._clock() - start)
            self.last_result = result
            announce, self._announce = self._announce, False
        self._log(result, announce)
        return result

    @staticmethod
    def _log(result, announce):
        own = result.ownership
        params = {'managed': len(result.nodes), 'listed': result.listed,
                  'key': result.settings.partition_key,
                  'members': ','.join(result.members),
                  'gained': len(result.gained), 'lost': len(result.lost),
                  'inst': len(own.by_instance), 'stranded': len(own.stranded),
                  'secs': result.seconds}
        if announce:
            LOG.info('Now managing %(managed)d of %(listed)d nodes of '
                     'partition %(key)r with members %(members)s', params)
        LOG.info('Refresh: managing %(managed)d of %(listed)d nodes of '
                 'partition %(key)r (%(inst)d with our instances); gained '
                 '%(gained)d, lost %(lost)d, stranded %(stranded)d; '
                 'members %(members)s; %(secs).2f s', params)
