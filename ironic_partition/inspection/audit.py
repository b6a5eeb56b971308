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

"""Audit Ironic's nodes against the inspection hook's map (read-only).

Pure: it takes the node and conductor lists (read by ``ironic-partition
check`` through :class:`~ironic_partition.ironic.baremetal.IronicClient`) and
returns findings. No Ironic import.
"""

import collections

from oslo_config import cfg

from ironic_partition._i18n import _
from ironic_partition.conf import inspection as inspection_conf
from ironic_partition.inspection import mapping
from ironic_partition import names

#: The node fields the audit reads.
# NOTE(ironic-partition): not allocation_uuid: Ironic 39 answers HTTP 500
# to fields=allocation_uuid. An active allocation sets instance_uuid.
NODE_FIELDS = ('uuid', 'name', 'driver', 'conductor_group', 'shard',
               'driver_info', 'driver_internal_info', 'instance_uuid')

#: The first API version with ``shard`` (1.82).
MICROVERSION = '1.82'

#: Where the hook records what it matched (see the hook module).
INTERNAL_KEY = 'ironic_partition'

#: ``kind`` is ``map`` (group or shard differ from the map) or ``served``
#: (no alive conductor of the node's group serves its hardware type).
AuditFinding = collections.namedtuple('AuditFinding',
                                      ['kind', 'node', 'message'])


def load_map(path):
    """Read the map from an ironic.conf, as the hook reads it.

    :param path: the configuration file of ironic-conductor.
    :returns: ``(PartitionMap, default_conductor_group)``.
    :raises: InvalidPartitionMap, or oslo.config errors for an unreadable
        file or value.
    """
    conf = cfg.ConfigOpts()
    inspection_conf.register_opts(conf)
    # NOTE(ironic-partition): Ironic's own option, read from the same file
    # on a private ConfigOpts; everything else in the file is ignored.
    conf.register_opt(cfg.StrOpt('default_conductor_group', default=''))
    conf(args=[], default_config_files=[path], project='ironic',
         use_env=False)
    return (mapping.PartitionMap(conf[inspection_conf.GROUP].map),
            conf.default_conductor_group or '')


def node_match(pmap, node):
    """The map's entry for a node, from what Ironic stores about it.

    What the hook matched at the last inspection (kept in
    ``driver_internal_info``) comes first, then the BMC address in
    ``driver_info`` (the node may never have been inspected).

    :param pmap: a :class:`~ironic_partition.inspection.mapping.PartitionMap`.
    :param node: a node dict with the :data:`NODE_FIELDS`.
    :returns: a ``Match`` or None.
    """
    recorded = (node.get('driver_internal_info') or {}).get(INTERNAL_KEY)
    addresses, switches = [], []
    if isinstance(recorded, dict) and recorded.get('matched_value'):
        source = 'last inspection, %s' % recorded.get('matched_by')
        if mapping.parse_ip(recorded['matched_value']) is not None:
            addresses.append((source, recorded['matched_value']))
        else:
            switches.append((source, recorded['matched_value']))
    addresses += mapping.driver_info_addresses(node.get('driver_info'))
    match, _why = pmap.lookup(addresses, switches)
    return match


def served_keys(conductors):
    """The ``(group, hardware type)`` pairs an alive conductor serves.

    :param conductors: dicts from ``IronicClient.list_conductors``.
    :returns: a set.
    """
    return {(c['conductor_group'], driver) for c in conductors
            if c['alive'] for driver in c['drivers']}


def _name(node):
    if node.get('name'):
        return '%s (%s)' % (node['uuid'], node['name'])
    return node['uuid']


def _show(group):
    return repr(group) if group else _('the default group ""')


#: Past this many nodes of one (group, hardware type) without an alive
#: conductor, one finding says how many and names the first few.
SUMMARY_AFTER = 5


def _unserved(nodes, served):
    """The ``served`` findings: per node for a few, else per group."""
    unserved = collections.OrderedDict()
    for node in nodes:
        key = ((node.get('conductor_group') or '').lower(),
               node.get('driver'))
        if key not in served:
            unserved.setdefault(key, []).append(node)
    findings = []
    for (group, driver), stranded in unserved.items():
        if len(stranded) <= SUMMARY_AFTER:
            findings.extend(AuditFinding('served', node['uuid'], _(
                'Node %(node)s is in conductor group %(group)s, where no '
                'alive conductor serves its hardware type %(hw)r: Ironic '
                'cannot manage it. Start such a conductor, or move the '
                'node.') % {'node': _name(node), 'group': _show(group),
                            'hw': driver}) for node in stranded)
            continue
        findings.append(AuditFinding('served', stranded[0]['uuid'], _(
            '%(count)d nodes are in conductor group %(group)s, where no '
            'alive conductor serves their hardware type %(hw)r: Ironic '
            'cannot manage them (the first: %(first)s). Start such a '
            'conductor, or move the nodes.') % {
                'count': len(stranded), 'group': _show(group), 'hw': driver,
                'first': ', '.join(_name(n)
                                   for n in stranded[:SUMMARY_AFTER])}))
    return findings


def audit(pmap, nodes, conductors, default_group=''):
    """Compare nodes with the map and with the alive conductors.

    :param pmap: the map.
    :param nodes: node dicts with the :data:`NODE_FIELDS`.
    :param conductors: dicts from ``IronicClient.list_conductors``.
    :param default_group: Ironic's ``[DEFAULT] default_conductor_group``.
    :returns: a list of :data:`AuditFinding`: the ``served`` ones first
        (one per node, or one per group and hardware type past
        :data:`SUMMARY_AFTER` nodes), then the ``map`` ones in node order.
    """
    findings = _unserved(nodes, served_keys(conductors))
    for node in nodes:
        group = (node.get('conductor_group') or '').lower()
        match = node_match(pmap, node) if pmap else None
        if match is None:
            continue
        entry = match.entry
        shard = node.get('shard') or None
        wrong_group = names.key(group) != entry.group
        wrong_shard = (entry.shard is not None and
                       names.key(shard) != entry.shard)
        if not (wrong_group or wrong_shard):
            continue
        if node.get('instance_uuid') or node.get('allocation_uuid'):
            why = _('it has an instance or allocation, which the hook '
                    'never moves')
        elif wrong_group and group not in ('', default_group.lower()):
            why = _('its group looks set by hand or before the hook')
        else:
            why = _('it was enrolled before the hook, or not inspected '
                    'since')
        what = []
        if wrong_group:
            what.append(_('group %(is)s, the map says %(map)s') % {
                'is': _show(group), 'map': _show(entry.group)})
        if wrong_shard:
            what.append(_('shard %(is)r, the map says %(map)r (a shard '
                          'is never changed by the hook)') % {
                              'is': shard, 'map': entry.shard})
        findings.append(AuditFinding('map', node['uuid'], _(
            'Node %(node)s differs from the inspection map: %(what)s '
            '(entry %(entry)r, matched by %(src)s %(val)s); %(why)s.') % {
                'node': _name(node), 'what': '; '.join(what),
                'entry': entry.text, 'src': match.source,
                'val': match.value, 'why': why}))
    return findings
