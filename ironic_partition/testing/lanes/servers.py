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

"""Servers as nova, placement and Ironic recorded them, read from outside.

For the lane that boots servers (:class:`~.nova_api.NovaAPIFixture`):
:class:`ServerRecords` reads the servers API, the cell database's
``instances``, placement's allocations and Ironic's nodes, and
:meth:`ServerRecords.problems` lists every disagreement between them
that a safe deployment never shows: a node carrying two servers, an
instance whose node Ironic does not give it, an allocation that is not
exactly one unit on the server's own node, or one left for a server that
is gone.
"""

import collections
import logging

import sqlalchemy

LOG = logging.getLogger(__name__)

#: placement's API version for the allocations of a consumer.
PLACEMENT_VERSION = 'placement 1.28'

#: Server states a build ends in. A built server can be SHUTOFF: nova's
#: power-state sync stops it when Ironic's fake power interface reports
#: the node powered off.
FINAL_STATES = ('ACTIVE', 'SHUTOFF', 'ERROR')

Instance = collections.namedtuple(
    'Instance', ['uuid', 'host', 'node', 'vm_state', 'task_state',
                 'deleted'])


class ServerRecords(object):
    """nova's, placement's and Ironic's records of the servers.

    :param cell_url: nova's cell database URL.
    :param conn: an openstacksdk connection to nova and placement
        (:meth:`~.nova_api.NovaAPIFixture.connection`).
    :param ironic: an openstacksdk connection to Ironic.
    """

    def __init__(self, cell_url, conn, ironic):
        self.engine = sqlalchemy.create_engine(
            cell_url, poolclass=sqlalchemy.pool.NullPool)
        self.conn = conn
        self.ironic = ironic

    def close(self):
        """Dispose of the database engine.

        :returns: None
        """
        self.engine.dispose()

    # -- the sources --------------------------------------------------

    def instances(self, uuids=None):
        """The cell database's instances, deleted ones included.

        :param uuids: only these; all by default.
        :returns: ``{uuid: Instance}``.
        """
        query = ('SELECT uuid, host, node, vm_state, task_state, deleted '
                 'FROM instances')
        with self.engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(query)).all()
        wanted = None if uuids is None else set(uuids)
        return {row[0]: Instance(row[0], row[1], row[2], row[3], row[4],
                                 bool(row[5]))
                for row in rows if wanted is None or row[0] in wanted}

    def compute_nodes(self, host):
        """The nodes a compute service has a live compute node row for.

        :param host: the compute's host name.
        :returns: a set of node UUIDs (a node's provider has its UUID).
        """
        query = ('SELECT hypervisor_hostname FROM compute_nodes '
                 'WHERE host = :host AND deleted = 0')
        with self.engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(query), {'host': host}).all()
        return {row[0] for row in rows}

    def allocations(self, consumer):
        """placement's allocations of one consumer.

        :param consumer: a server ID.
        :returns: ``{provider UUID: {resource class: amount}}``.
        """
        resp = self.conn.placement.get(
            '/allocations/%s' % consumer,
            headers={'OpenStack-API-Version': PLACEMENT_VERSION})
        resp.raise_for_status()
        return {rp: dict(alloc['resources'])
                for rp, alloc in resp.json()['allocations'].items()}

    def usages(self):
        """The non-zero usages of every resource provider.

        :returns: ``{provider name: {resource class: amount}}``.
        """
        result = {}
        for rp in self.conn.placement.resource_providers():
            resp = self.conn.placement.get(
                '/resource_providers/%s/usages' % rp.id,
                headers={'OpenStack-API-Version': PLACEMENT_VERSION})
            resp.raise_for_status()
            used = {rc: n for rc, n in resp.json()['usages'].items() if n}
            if used:
                result[rp.name] = used
        return result

    def nodes(self):
        """Ironic's nodes.

        :returns: ``{uuid: openstacksdk Node}``.
        """
        return {n.id: n for n in self.ironic.baremetal.nodes(
            fields=['uuid', 'instance_uuid', 'provision_state',
                    'maintenance', 'conductor_group', 'last_error',
                    'power_state'])}

    def nodes_available(self):
        """Tell whether every node is ``available`` without an instance.

        :returns: True or False.
        """
        return all(n.provision_state == 'available' and not n.instance_id
                   for n in self.nodes().values())

    # -- the checks ---------------------------------------------------

    def problems(self, uuids, resource_class):
        """Every disagreement between the records of some servers.

        :param uuids: the server IDs the test created (deleted or not).
        :param resource_class: placement's class of the flavor
            (``CUSTOM_BAREMETAL``).
        :returns: a list of sentences; empty when all agree.
        """
        found = []
        instances = self.instances(uuids)
        nodes = self.nodes()
        per_node = collections.defaultdict(list)
        for inst in instances.values():
            if not inst.deleted and inst.node:
                per_node[inst.node].append(inst.uuid)
        for node, carried in per_node.items():
            if len(carried) > 1:
                found.append('node %s carries %d servers: %s'
                             % (node, len(carried), sorted(carried)))
        on_node = {n.instance_id: n.id for n in nodes.values()
                   if n.instance_id}
        for uuid in uuids:
            inst = instances.get(uuid)
            allocs = self.allocations(uuid)
            if inst is None or inst.deleted:
                if allocs:
                    found.append('server %s is gone but has allocations '
                                 '%s' % (uuid, allocs))
                continue
            if inst.vm_state in ('active', 'stopped'):
                if on_node.get(uuid) != inst.node:
                    found.append('server %s is on node %s for nova, on %s '
                                 'for Ironic' % (uuid, inst.node,
                                                 on_node.get(uuid)))
                if allocs != {inst.node: {resource_class: 1}}:
                    found.append('server %s on node %s has allocations %s'
                                 % (uuid, inst.node, allocs))
            elif inst.vm_state == 'error' and allocs and (
                    len(allocs) != 1 or
                    list(allocs.values()) != [{resource_class: 1}] or
                    (inst.node and set(allocs) != {inst.node})):
                # NOTE(ironic-partition): nova keeps an ERROR server's
                # allocation until it is deleted; a build interrupted
                # before its claim has no node yet, its allocation stays
                # on the node it was scheduled to.
                found.append('server %s in ERROR on node %s has '
                             'allocations %s' % (uuid, inst.node, allocs))
        return found
