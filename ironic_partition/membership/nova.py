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

"""The ``nova`` membership backend: nova's own service group.

Inside nova-compute this asks nova which compute services are up, the way
nova's in-tree ironic driver builds its hash ring: the compute services
that have ironic compute nodes, checked with nova's service group API
(``service_is_up``), which nova-compute's own service heartbeat keeps
current. It needs no database of its own and sends no heartbeat.

Differences with nova's driver: host names are compared ignoring case, and
peers of the peer list that nova does not know are reported in
``never_seen``. Nova's service group decides liveness with the clock of the
host asking, not the database's; use the ``database`` backend when clocks
may be skewed.

nova is imported only when the backend is started, so loading this module
does not need nova.
"""

import threading
import types

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.membership import base

LOG = logging.getLogger(__name__)

#: The hypervisor type of the compute nodes of nova's ironic driver.
HYPERVISOR_TYPE = 'ironic'


def _load_nova():
    """Import the parts of nova this backend uses.

    :returns: a namespace with ``context``, ``exception``, ``objects``
        and ``servicegroup``.
    """
    from nova import context  # noqa: H302
    from nova import exception as nova_exception  # noqa: H302
    from nova import objects  # noqa: H302
    from nova import servicegroup  # noqa: H302
    return types.SimpleNamespace(context=context, exception=nova_exception,
                                 objects=objects, servicegroup=servicegroup)


class _Record:
    __slots__ = ('host', 'alive')

    def __init__(self, host, alive):
        self.host = host
        self.alive = alive


class NovaMembership(base.MembershipBackend):
    """Membership from nova's services table and service group API."""

    name = 'nova'

    def __init__(self, settings, role, version=None, takeover=False):
        super().__init__(settings, role, version=version, takeover=takeover)
        if role != base.ROLE_NOVA_COMPUTE:
            raise exception.BackendNotSupported(
                backend=self.name,
                reason=_('only nova-compute services are in nova\'s '
                         'service group, not %s services') % role)
        self._nova = None
        self._servicegroup_api = None
        self._lock = threading.Lock()
        self._last = None
        self._last_error = None
        #: Each host's name as nova's records spell it, by lower case.
        self._spelling = {}

    def start(self):
        """Import nova and build its service group API.

        :raises: BackendNotSupported when nova cannot be used.
        :returns: None
        """
        try:
            self._nova = _load_nova()
            self._servicegroup_api = self._nova.servicegroup.API()
        except Exception as exc:
            raise exception.BackendNotSupported(
                backend=self.name,
                reason=_('nova is not usable here (%s); this backend '
                         'works inside nova-compute only') % exc)

    def _records(self, peers):
        if self._nova is None:
            self.start()
        ctxt = self._nova.context.get_admin_context()
        services = self._nova.objects.ServiceList.get_all_computes_by_hv_type(
            ctxt, HYPERVISOR_TYPE)
        records = []
        for svc in services:
            name = ip_conf.normalize_host(svc.host)
            self._spelling[name] = svc.host
            # NOTE(ironic-partition): like nova, only check the liveness of
            # the services that can be members.
            if peers is not None and name not in peers:
                continue
            records.append(_Record(
                name, self._servicegroup_api.service_is_up(svc)))
        return records

    def members(self, partition_key=None, peer_list=None, shard=None):
        """Return the compute services that nova considers up.

        :param partition_key: the partition key, or None when unset.
        :param peer_list: host names allowed when ``partition_key`` or
            ``shard`` is set.
        :param shard: the shard, or None when unset; nova's records carry
            none, so only ``peer_list`` tells the shard's services.
        :raises: MembershipUnavailable when nova never answered.
        :returns: a :class:`base.Membership`; ``stale`` is True when nova
            could not be asked and the last answer is returned.
        """
        peers = (None if partition_key is None and shard is None
                 else (base.normalize_peers(peer_list) or frozenset()))
        try:
            records = self._records(peers)
        except Exception as exc:
            with self._lock:
                self._last_error = str(exc)
                last = self._last
            if last is None:
                raise exception.MembershipUnavailable(
                    role=self.role,
                    reason=_('nova\'s services could not be read: %s')
                    % exc)
            LOG.warning('Could not read the compute services from nova, '
                        'using the last known membership: %s', exc)
            stale = base.compute_membership(
                self.host, last[0], partition_key, peer_list, None,
                stale=True, shard=shard)
            return stale
        with self._lock:
            self._last = (records,)
            self._last_error = None
        return base.compute_membership(self.host, records, partition_key,
                                       peer_list, None, shard=shard)

    def compute_services(self, hosts):
        """Which of ``hosts`` nova has as nova-compute services at all.

        Any hypervisor type, enabled or not: a peer of the peer list that
        is not an Ironic compute up in nova may still be one nova knows
        (another hypervisor, or an Ironic compute without compute nodes
        yet), which is another mistake than a misspelt name.

        :param hosts: host names, lower case.
        :returns: a frozenset of those hosts, lower case.
        """
        if not hosts:
            return frozenset()
        if self._nova is None:
            self.start()
        ctxt = self._nova.context.get_admin_context()
        services = self._nova.objects.ServiceList.get_by_binary(
            ctxt, 'nova-compute', include_disabled=True)
        known = {ip_conf.normalize_host(svc.host) for svc in services}
        return frozenset(h for h in hosts if h in known)

    def compute_node_names(self, host):
        """The ``hypervisor_hostname`` of a host's compute nodes.

        For an Ironic compute, the UUIDs of the nodes it reports.

        :param host: the host name, as nova's records spell it or lower
            case (nova's query compares it as the database's collation
            does).
        :returns: a frozenset of lower-case names; empty when the host
            has no compute node.
        """
        if self._nova is None:
            self.start()
        ctxt = self._nova.context.get_admin_context()
        try:
            nodes = self._nova.objects.ComputeNodeList.get_all_by_host(
                ctxt, self._spelling.get(host, host))
        except self._nova.exception.ComputeHostNotFound:
            return frozenset()
        return frozenset((n.hypervisor_hostname or '').lower()
                         for n in nodes)

    def status(self):
        """Describe the backend.

        :returns: a dict.
        """
        result = super().status()
        with self._lock:
            result.update({'source': 'nova service group',
                           'started': self._nova is not None,
                           'stale': self._last_error is not None,
                           'last_error': self._last_error})
        return result
