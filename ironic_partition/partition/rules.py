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

"""Which nodes a service manages: seed 003's three rules, in one place.

A service manages:

* every node whose instance it owns;
* every instance-less node that the ring maps to it;
* never a node whose instance belongs to another service.

:func:`partition` is a pure function of its inputs. The nova driver, the
partition agent, the CLI and the tests all call it, so they cannot
disagree.
"""

import collections

#: The outcome of :func:`partition`, each field a tuple of node UUIDs in
#: the order the nodes were given.
#:
#: ``managed``
#:     What this service reports: ``by_instance`` followed by ``by_ring``.
#: ``by_instance``
#:     Nodes whose instance this service owns (rule 1).
#: ``by_ring``
#:     Instance-less nodes the ring maps to this service (rule 2).
#: ``foreign``
#:     Nodes with an instance this service does not own (rule 3).
#: ``stranded``
#:     The part of ``foreign`` whose instance's owner is known and is not
#:     alive (in any partition): nobody manages them until that service
#:     returns. A node whose owner is alive elsewhere (its conductor group
#:     changed while it carried the instance) is managed by that owner.
Ownership = collections.namedtuple(
    'Ownership',
    ['managed', 'by_instance', 'by_ring', 'foreign', 'stranded'])


def ring_owners(ring, node_ids):
    """Map node UUIDs to their ring owner.

    Uses the ring's bulk lookup (``map_keys``) where it has one; the key
    of a node is its UUID encoded as UTF-8, as in nova.

    :param ring: a hash ring with ``get_nodes(bytes)``.
    :param node_ids: node UUID strings.
    :returns: a dict of UUID to the member owning it (``None`` on an
        empty ring).
    """
    bulk = getattr(ring, 'map_keys', None)
    if bulk is not None:
        owners = bulk(node_ids)
        return {uuid: owners.get(uuid) for uuid in node_ids}
    result = {}
    for uuid in node_ids:
        members = ring.get_nodes(uuid.encode('utf-8'))
        result[uuid] = next(iter(members), None)
    return result


def partition(nodes, ring, host, my_instances, instance_hosts=None,
              alive_hosts=None, owners_fn=ring_owners):
    """Decide which of ``nodes`` this service manages.

    :param nodes: node records with ``id`` (or ``uuid``) and
        ``instance_id`` (or ``instance_uuid``) attributes.
    :param ring: the ring of live members, with ``get_nodes(bytes)``;
        member names are lower-case host names.
    :param host: this service's host name (compared ignoring case).
    :param my_instances: UUIDs of the instances this service owns.
    :param instance_hosts: optional mapping of instance UUID to the host
        that owns it, to tell stranded nodes from merely foreign ones.
    :param alive_hosts: lower-case names of every live service of the
        role, in any partition; by default the ring's members.
    :param owners_fn: :func:`ring_owners` or a function like it that
        returns a mapping with (at least) the given UUIDs, e.g. one that
        remembers the owners of a ring it has seen.
    :returns: an :data:`Ownership`.
    """
    host = host.lower()
    my_instances = frozenset(my_instances)
    by_instance, free, foreign = [], [], []
    for node in nodes:
        uuid = _node_id(node)
        instance = _instance_id(node)
        if instance is None:
            free.append(uuid)
        elif instance in my_instances:
            by_instance.append(uuid)
        else:
            foreign.append((uuid, instance))
    owners = owners_fn(ring, free)
    by_ring = [uuid for uuid in free if owners[uuid] == host]
    members = (frozenset(alive_hosts) if alive_hosts is not None
               else frozenset(getattr(ring, 'nodes', ())))
    stranded = []
    if instance_hosts:
        for uuid, instance in foreign:
            owner = instance_hosts.get(instance)
            if owner is not None and owner.lower() not in members:
                stranded.append(uuid)
    return Ownership(tuple(by_instance + by_ring), tuple(by_instance),
                     tuple(by_ring), tuple(u for u, _i in foreign),
                     tuple(stranded))


def _node_id(node):
    value = getattr(node, 'id', None)
    return value if value is not None else node.uuid


def _instance_id(node):
    try:
        return node.instance_id
    except AttributeError:
        return node.instance_uuid
