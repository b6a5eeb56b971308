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

"""Whether the live services write through one database node.

Every heartbeat records in the service's row the database node that ran
it (``host:port`` of the MariaDB or MySQL server,
:class:`~ironic_partition.db.models.server_node`), and the node that
answered the service's last claim round (``claims_database_node``; a
failed round, or one older than twice ``service_down_time``, is not
recorded). On a Galera cluster behind HAProxy with one active server and
the others ``backup``, all the services write through the same node,
except:

* during a failover, until every service's connections have moved;
* after the failed node returns: HAProxy sends new connections to it,
  while the connections opened during the failover stay on the backup
  (unless HAProxy has ``on-marked-up shutdown-backup-sessions``), for as
  long as the pool keeps them (oslo.db's ``connection_recycle_time``, an
  hour by default).

With ``balance roundrobin`` and no ``backup`` server, the services write
through several nodes all the time. That is not supported: leases are
judged by the clock of whichever node a statement lands on, and the
clock watch (:mod:`ironic_partition.claims.db_clock`) of each service sees only
the nodes it used itself.

:class:`WriterWatch` tells the cases apart. When the live services' rows
name more than one node, the service closes its pooled connections, so
that its next ones go where HAProxy sends new connections now; every
service does the same when it notices, and the failback case heals
within a refresh and a heartbeat. If the live services still write
through several nodes ``settle`` seconds after the first sighting,
HAProxy itself spreads the connections: :meth:`WriterWatch.observe`
returns the problem, and the service is not ready until they have
written through one node for ``settle`` seconds in a row. It closes its
connections again every ``settle`` seconds meanwhile, so that a
corrected HAProxy configuration is taken up without a restart.
"""

import collections

from ironic_partition._i18n import _

#: What :meth:`WriterWatch.observe` decided: ``reconnect`` asks the
#: caller to close its pooled connections; ``problem`` is a sentence when
#: the services must not go on, else None.
Verdict = collections.namedtuple('Verdict', ['reconnect', 'problem'])


def writers(services):
    """Group the live services by the database node they write through.

    A service counts under the node of its last heartbeat and under the
    node of its last claim round: a front end that spreads connections
    may send the two to different nodes.

    :param services: :data:`~ironic_partition.db.services.ServiceRecord`
        rows.
    :returns: ``{node: [host, ...]}``, sorted; services whose node is not
        known are left out.
    """
    nodes = collections.defaultdict(set)
    for service in services:
        if not service.alive:
            continue
        for node in (getattr(service, 'database_node', None),
                     getattr(service, 'claims_database_node', None)):
            if node:
                nodes[node].add(service.host)
    return {node: sorted(hosts) for node, hosts in sorted(nodes.items())}


def describe(nodes):
    """Say which services write through which node.

    :param nodes: what :func:`writers` returns.
    :returns: a string such as ``db1:3306 (cn1, cn2); db2:3306 (cn3)``.
    """
    return '; '.join('%s (%s)' % (node, ', '.join(hosts))
                     for node, hosts in sorted(nodes.items()))


class WriterWatch(object):
    """Several database nodes taking the services' writes, over time.

    An *episode* begins at the first reading that shows several nodes and
    ends once the readings have shown one node for ``settle`` seconds in a
    row, or when the database fails the service (:meth:`reset`). An
    episode that has lasted ``settle`` seconds with several nodes still
    shown is a problem until it ends: a load balancer that spreads
    connections shows one node now and then, and readiness must not flap
    with it.

    :param settle: seconds the services may write through several nodes
        before it is a problem: long enough for every service to notice,
        reconnect and heartbeat again (twice ``service_down_time``).
    """

    def __init__(self, settle):
        self.settle = float(settle)
        #: When the current episode began (caller's clock), or None.
        self.since = None
        self._agreed = None
        self._reconnected = None
        self._failing = False
        #: The last grouping seen (:func:`writers`).
        self.nodes = {}

    def reset(self):
        """End the episode: the database failed this service meanwhile.

        An outage breaks every connection, the services' included: the
        rows read before it say nothing about where the connections opened
        after it go. The next several-node reading starts a new episode
        (and reconnects), instead of being judged against one that began
        before the outage.

        :returns: None
        """
        self.since = self._agreed = self._reconnected = None
        self._failing = False

    def observe(self, services, now):
        """Judge one reading of the services rows.

        :param services: the rows of this role.
        :param now: the caller's monotonic time.
        :returns: a :data:`Verdict`.
        """
        nodes = writers(services)
        self.nodes = nodes
        reconnect = False
        if len(nodes) > 1:
            self._agreed = None
            if self.since is None:
                self.since = self._reconnected = now
                reconnect = True
            elif now - self._reconnected >= self.settle:
                self._reconnected = now
                reconnect = True
            if now - self.since >= self.settle:
                self._failing = True
        elif self.since is not None:
            if self._agreed is None:
                self._agreed = now
            if now - self._agreed >= self.settle:
                self.since = self._agreed = self._reconnected = None
                self._failing = False
        if not self._failing:
            return Verdict(reconnect, None)
        return Verdict(reconnect, _(
            'the live services have written through several database '
            'nodes at once for %(age).0f s (last seen: %(nodes)s). '
            'Several Galera nodes take writes (HAProxy with "balance '
            'roundrobin", or without "backup" on all servers but one), '
            'which is not supported; configure HAProxy with one active '
            'server and the others "backup"') % {
                'age': now - self.since,
                'nodes': describe(nodes) or _('one node')})
