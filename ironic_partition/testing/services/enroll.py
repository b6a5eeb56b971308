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

"""Enroll fake-hardware nodes: through the API, or in bulk via the DB.

The API path uses openstacksdk (about 30 nodes/s against one API worker);
the bulk path inserts rows with Ironic's own models from a child process
and handles 10^4-10^5 nodes in seconds.
"""

from concurrent import futures
import itertools
import json
import logging
import subprocess
import sys

import openstack.connection

from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import ironic

LOG = logging.getLogger(__name__)

DEFAULT_RESOURCE_CLASS = 'baremetal'
DEFAULT_PROPERTIES = {'cpus': 8, 'memory_mb': 16384, 'local_gb': 100,
                      'cpu_arch': 'x86_64'}
DEFAULT_WORKERS = 8
PROVISION_TIMEOUT = 300


def connect(endpoint, api_version='1'):
    """Build an unauthenticated openstacksdk connection to the API.

    The SDK negotiates the highest microversion both sides support per
    resource, so ``node.conductor`` (1.49+) is available.

    :param endpoint: the API root, e.g. ``http://127.0.0.1:6385``.
    :param api_version: the baremetal API major version.
    :returns: an ``openstack.connection.Connection``.
    """
    return openstack.connection.Connection(
        auth_type='none',
        baremetal_endpoint_override=endpoint,
        baremetal_api_version=api_version)


def spread(count, groups):
    """Assign ``count`` nodes to ``groups`` round robin.

    :param count: how many nodes.
    :param groups: the group names (lower case; ``''`` is the default).
    :returns: a list of ``count`` group names.
    """
    groups = list(groups)
    if not groups:
        raise ValueError('At least one conductor group is needed')
    for group in groups:
        if group != group.lower():
            raise ValueError('Conductor group %r must be lower case'
                             % group)
    return list(itertools.islice(itertools.cycle(groups), count))


def _node_attrs(name, group, resource_class, properties):
    attrs = {
        'name': name,
        'driver': ironic.HARDWARE_TYPE,
        'resource_class': resource_class,
        'conductor_group': group,
        'properties': dict(properties),
    }
    for iface, iface_name in ironic.NODE_INTERFACES.items():
        attrs['%s_interface' % iface] = iface_name
    return attrs


def enroll_api(conn, count, groups, resource_class=DEFAULT_RESOURCE_CLASS,
               properties=None, name_prefix='api-node', start=0,
               workers=DEFAULT_WORKERS):
    """Create nodes through the API, several at a time.

    :param conn: an openstacksdk connection (see :func:`connect`).
    :param count: how many nodes.
    :param groups: conductor groups, assigned round robin.
    :param resource_class: the nodes' resource class.
    :param properties: the nodes' properties; a small default set if None.
    :param name_prefix: node names are ``<prefix>-<n>``.
    :param start: the first ``n``.
    :param workers: concurrent requests.
    :returns: a list of ``{'uuid', 'name', 'conductor_group'}`` dicts, in
        creation order.
    """
    properties = DEFAULT_PROPERTIES if properties is None else properties
    assigned = spread(count, groups)

    def create(index):
        attrs = _node_attrs('%s-%d' % (name_prefix, start + index),
                            assigned[index], resource_class, properties)
        node = conn.baremetal.create_node(**attrs)
        return {'uuid': node.id, 'name': node.name,
                'conductor_group': node.conductor_group}

    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(create, range(count)))


def spread_shards(count, groups, shards):
    """Assign ``count`` nodes to shards, across the groups of :func:`spread`.

    Node ``i`` gets ``shards[(i // len(groups)) % len(shards)]``, so that
    with :func:`spread` every (group, shard) pair occurs once ``count``
    reaches ``len(groups) * len(shards)``.

    :param count: how many nodes.
    :param groups: the group names given to :func:`spread`.
    :param shards: shard names; ``None`` in it means no shard.
    :returns: a list of ``count`` shard names (or ``None``).
    """
    shards = list(shards)
    if not shards:
        raise ValueError('At least one shard (or None) is needed')
    width = max(len(list(groups)), 1)
    return [shards[(i // width) % len(shards)] for i in range(count)]


def bulk_enroll(config_file, count, groups,
                resource_class=DEFAULT_RESOURCE_CLASS, properties=None,
                name_prefix='node', start=0, provision_state='enroll',
                python=None, timeout=600, shards=None):
    """Insert nodes straight into Ironic's database.

    The rows are what the API would have stored for a fake-hardware node;
    ``provision_state='available'`` (with power off) skips manage/provide.

    :param config_file: an Ironic configuration file with the
        ``[database] connection`` (the fixture's ``config_file``).
    :param count: how many nodes.
    :param groups: conductor groups, assigned round robin.
    :param resource_class: the nodes' resource class.
    :param properties: the nodes' properties; a small default set if None.
    :param name_prefix: node names are ``<prefix>-<n>``; names are unique
        in Ironic, so vary it (or ``start``) between calls.
    :param start: the first ``n``.
    :param provision_state: ``enroll``, ``manageable`` or ``available``.
    :param python: the interpreter with Ironic; ``sys.executable``.
    :param timeout: seconds allowed for the insert.
    :param shards: Ironic shards (``None`` in it: no shard), assigned by
        :func:`spread_shards`; None (the default) sets no shard at all.
    :returns: a list of ``{'uuid', 'name', 'conductor_group', 'shard'}``
        dicts.
    :raises: HarnessError when the child fails.
    """
    if provision_state not in ('enroll', 'manageable', 'available'):
        raise ValueError('Unsupported initial state %r' % provision_state)
    properties = DEFAULT_PROPERTIES if properties is None else properties
    assigned = spread(count, groups)
    sharded = (spread_shards(count, groups, shards) if shards is not None
               else [None] * count)
    spec = {
        'groups': assigned,
        'shards': sharded,
        'driver': ironic.HARDWARE_TYPE,
        'resource_class': resource_class,
        'properties': properties,
        'name_prefix': name_prefix,
        'start': start,
        'provision_state': provision_state,
        'interfaces': dict(ironic.NODE_INTERFACES),
    }
    argv = [python or sys.executable, '-m',
            'ironic_partition.testing.services._bulk',
            '--config-file', config_file]
    proc = subprocess.run(argv, input=json.dumps(spec).encode(),
                          capture_output=True, timeout=timeout)
    if proc.returncode:
        raise harness_process.HarnessError(
            'Bulk enrollment failed (%s): %s' % (
                proc.returncode,
                proc.stderr.decode('utf-8', 'replace')[-4000:]))
    uuids = json.loads(proc.stdout.decode('utf-8'))
    LOG.info('Inserted %d nodes', len(uuids))
    return [{'uuid': node_uuid, 'name': '%s-%d' % (name_prefix, start + i),
             'conductor_group': assigned[i], 'shard': sharded[i]}
            for i, node_uuid in enumerate(uuids)]


def _ident(node):
    return node['uuid'] if isinstance(node, dict) else getattr(
        node, 'id', node)


def make_available(conn, nodes, workers=DEFAULT_WORKERS,
                   timeout=PROVISION_TIMEOUT):
    """Move nodes from ``enroll`` (or ``manageable``) to ``available``.

    :param conn: an openstacksdk connection.
    :param nodes: node UUIDs, names, SDK nodes or enroll dicts.
    :param workers: concurrent requests.
    :param timeout: seconds allowed per node and transition.
    :returns: a list of the nodes' UUIDs.
    """
    def provide(node):
        ident = _ident(node)
        current = conn.baremetal.get_node(ident)
        if current.provision_state == 'enroll':
            conn.baremetal.set_node_provision_state(
                ident, 'manage', wait=True, timeout=timeout)
        if current.provision_state != 'available':
            conn.baremetal.set_node_provision_state(
                ident, 'provide', wait=True, timeout=timeout)
        return current.id

    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(provide, nodes))


def set_instance_uuid(conn, node, instance_uuid):
    """Associate a node with an instance, as nova does.

    :param conn: an openstacksdk connection.
    :param node: a node UUID, name, SDK node or enroll dict.
    :param instance_uuid: the instance UUID.
    :returns: the updated SDK node.
    """
    return conn.baremetal.patch_node(_ident(node), [
        {'op': 'add', 'path': '/instance_uuid', 'value': instance_uuid}])


def clear_instance_uuid(conn, node):
    """Remove a node's instance association.

    :param conn: an openstacksdk connection.
    :param node: a node UUID, name, SDK node or enroll dict.
    :returns: the updated SDK node.
    """
    return conn.baremetal.patch_node(_ident(node), [
        {'op': 'remove', 'path': '/instance_uuid'}])


def node_conductors(conn, **filters):
    """Map nodes to the conductor the API says manages them.

    Uses the full node list (no ``fields``): Ironic 39 answers HTTP 500 to
    ``fields=[..., 'conductor']``.

    :param conn: an openstacksdk connection.
    :param filters: server-side filters for ``conn.baremetal.nodes``, e.g.
        ``conductor_group='rack1'``.
    :returns: ``{node_uuid: conductor_hostname}``.
    """
    return {node.id: node.conductor
            for node in conn.baremetal.nodes(details=True, **filters)}
