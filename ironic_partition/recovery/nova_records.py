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

"""nova's records of a lost compute, read and moved with nova's own code.

For ``ironic-partition recover``, which runs where ``nova-manage`` runs:
the configuration files give nova's cell database (``[database]
connection``), and nova's objects do every read and write, as
``nova-manage db ironic_compute_node_move`` does: a server's compute node
record goes to the destination service, then the server's ``host``. Its
node (``instance.node``, the Ironic node UUID), its placement provider
and allocation stay as they are. Never raw SQL on nova's databases.

nova is imported by :func:`load` only, so loading this module does not
need nova.
"""

import collections
import types

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: nova's binary of a compute service.
BINARY = 'nova-compute'

#: A compute service as nova sees it: ``host`` as nova spells it, ``up``
#: by nova's service group (a forced-down service is never up),
#: ``last_seen`` its last heartbeat in nova (or None).
ComputeService = collections.namedtuple(
    'ComputeService', ['host', 'id', 'up', 'forced_down', 'disabled',
                       'last_seen'])

#: A server (nova instance) of a host: ``node`` is its Ironic node UUID.
Server = collections.namedtuple(
    'Server', ['uuid', 'name', 'node', 'host', 'vm_state', 'task_state'])

#: What :meth:`NovaRecords.move` did: ``'moved'``, ``'finished'`` (the
#: compute node record had moved before, the server now), or
#: ``'already'`` (the server is not on the source host any more).
MOVED = 'moved'
FINISHED = 'finished'
ALREADY = 'already'


def _import_nova():
    from nova import config  # noqa: H302
    from nova import context  # noqa: H302
    from nova import exception as nova_exception  # noqa: H302
    from nova import objects  # noqa: H302
    from nova import rpc  # noqa: H302
    from nova import servicegroup  # noqa: H302
    import nova.conf  # noqa: H302,H306
    return types.SimpleNamespace(
        config=config, context=context, exception=nova_exception,
        objects=objects, rpc=rpc, servicegroup=servicegroup,
        CONF=nova.conf.CONF)


def load(config_files=(), config_dirs=()):
    """Read nova's configuration as nova-manage does, and open its records.

    :param config_files: the configuration files (nova.conf).
    :param config_dirs: configuration directories.
    :returns: a :class:`NovaRecords`.
    :raises ConfigurationError: nova is not installed here, or the files
        set no ``[database] connection``.
    """
    try:
        nova = _import_nova()
    except ImportError as e:
        raise exception.ConfigurationError(
            _('recover moves servers with nova\'s own code, as nova-manage '
              'does, and nova cannot be imported here (%s): run it where '
              'nova-manage runs') % e)
    argv = ['ironic-partition']
    for path in config_files:
        argv += ['--config-file', path]
    for path in config_dirs:
        argv += ['--config-dir', path]
    # NOTE(ironic-partition): as nova-manage: RPC is initialised for the
    # notification nova sends when a service is forced down.
    nova.config.parse_args(argv)
    if not nova.CONF.database.connection:
        raise exception.ConfigurationError(
            _('[database] connection is not set in %s: recover changes '
              'nova\'s cell database as "nova-manage db '
              'ironic_compute_node_move" does; pass the nova.conf that '
              'nova-manage reads too (--config-file, repeatable)')
            % (', '.join(config_files) or _('the configuration files')))
    nova.objects.register_all()
    return NovaRecords(nova)


class NovaRecords(object):
    """nova's services, servers and compute nodes, through its objects.

    :param nova: the namespace :func:`_import_nova` returns (a fake in
        unit tests).
    """

    def __init__(self, nova):
        self._nova = nova
        self._servicegroup = nova.servicegroup.API()

    def _ctxt(self):
        return self._nova.context.get_admin_context()

    def close(self):
        """Release nova's RPC transport; never raises.

        :returns: None
        """
        try:
            self._nova.rpc.cleanup()
        except Exception:
            LOG.debug('Ignoring an error releasing nova\'s RPC',
                      exc_info=True)

    def _service(self, ctxt, host):
        services = self._nova.objects.ServiceList.get_by_binary(
            ctxt, BINARY, include_disabled=True)
        matches = [s for s in services if s.host.lower() == host.lower()]
        return matches[0] if matches else None

    def compute_service(self, host):
        """A compute service, its host name compared ignoring case.

        :param host: the host name.
        :returns: a :data:`ComputeService`, or None when nova has none.
        """
        service = self._service(self._ctxt(), host)
        if service is None:
            return None
        return ComputeService(
            host=service.host, id=service.id,
            up=bool(self._servicegroup.service_is_up(service)),
            forced_down=bool(service.forced_down),
            disabled=bool(service.disabled),
            last_seen=service.last_seen_up)

    def servers(self, host):
        """The servers nova has on a host (not deleted).

        :param host: the host name as nova spells it.
        :returns: a list of :data:`Server`, sorted by UUID.
        """
        found = self._nova.objects.InstanceList.get_by_host(
            self._ctxt(), host, expected_attrs=[])
        return sorted((Server(uuid=i.uuid, name=i.display_name, node=i.node,
                              host=i.host, vm_state=i.vm_state,
                              task_state=i.task_state)
                       for i in found), key=lambda s: s.uuid)

    def force_down(self, host):
        """Mark a compute service forced down, as the compute API does.

        :param host: the host name as nova spells it.
        :returns: True when it was changed, False when it already was.
        """
        service = self._service(self._ctxt(), host)
        if service.forced_down:
            return False
        service.forced_down = True
        service.save()
        return True

    def move(self, server, source, destination):
        """Move one server and its node's record to another compute.

        What ``nova-manage db ironic_compute_node_move`` changes, in its
        order (the compute node record, then the server), idempotent: a
        step already done is not done again, so a move interrupted
        between the two is finished by the next call.

        :param server: the server's UUID.
        :param source: the lost host, as nova spells it.
        :param destination: the destination host, as nova spells it.
        :returns: :data:`MOVED`, :data:`FINISHED` or :data:`ALREADY`.
        :raises RecoveryRefused: the destination is forced down, or the
            node carries several servers of the source.
        """
        nova = self._nova
        ctxt = self._ctxt()
        instance = nova.objects.Instance.get_by_uuid(ctxt, server,
                                                     expected_attrs=[])
        if (instance.host or '').lower() != source.lower():
            return ALREADY
        target = nova.objects.Service.get_by_compute_host(ctxt, destination)
        if target.forced_down:
            raise exception.RecoveryRefused(
                host=source, reason=_('the destination %s is forced down in '
                                      'nova') % destination,
                changed=_('Servers moved before this one stay moved.'))
        others = nova.objects.InstanceList.get_by_host_and_node(
            ctxt, instance.host, instance.node, expected_attrs=[])
        if len(others) > 1:
            raise exception.RecoveryRefused(
                host=source, reason=_('node %(node)s carries %(count)d '
                                      'servers in nova (%(servers)s): '
                                      'delete those Ironic does not set '
                                      'on the node first') % {
                    'node': instance.node, 'count': len(others),
                    'servers': ', '.join(sorted(i.uuid for i in others))},
                changed=_('Servers moved before this one stay moved.'))
        result = MOVED
        try:
            node = nova.objects.ComputeNode.get_by_uuid(ctxt, instance.node)
        except nova.exception.NotFound:
            node = None
        if node is not None and node.host.lower() == source.lower():
            node.service_id = target.id
            node.host = target.host
            node.save()
        elif node is not None and node.host == target.host:
            result = FINISHED
        instance.host = target.host
        instance.save()
        return result
