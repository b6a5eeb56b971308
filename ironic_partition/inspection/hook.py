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

"""The ``ironic-partition`` inspection hook, loaded by ironic-conductor.

The only module of ironic-partition that imports ``ironic``: nothing else
imports it, so nova-compute never needs Ironic installed. It is the
``ironic-partition`` entry point of the ``ironic.inspection.hooks``
namespace; enable it in ironic.conf with::

    [inspector]
    hooks = $default_hooks,ironic-partition

It runs for every inspected node (auto-discovered ones included), under
the node's exclusive lock, after Ironic's own hooks: it finds the node's
entry in ``[ironic_partition_inspection] map`` and moves the node to that
conductor group (and sets its shard once), unless the node has an
instance or an allocation, its group was set explicitly, or no alive
conductor of the group serves its hardware type.
"""

import functools

from ironic.common import exception as ironic_exception
from ironic.drivers.modules.inspector.hooks import base
from ironic import objects
from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition.conf import inspection as inspection_conf
from ironic_partition.inspection import decision as decision_mod
from ironic_partition.inspection import mapping

LOG = logging.getLogger(__name__)

# NOTE(ironic-partition): Ironic registers its options on the global
# configuration; so does this hook, when it is loaded.
CONF = cfg.CONF

#: Where the hook records what it set, in the node's driver_internal_info
#: (which only Ironic itself writes).
INTERNAL_KEY = 'ironic_partition'

#: Where the hook records its decision, in the stored plugin_data.
PLUGIN_DATA_KEY = 'ironic_partition'

#: The hook that stores the LLDP fields the switch entries need.
LLDP_HOOK = 'parse-lldp'


class PartitionHook(base.InspectionHook):
    """Put an inspected node into the conductor group of its location.

    Loading fails (and the conductor does not start) when the map is
    invalid; with switch entries, ``parse-lldp`` must be enabled before
    this hook.
    """

    def __init__(self):
        inspection_conf.register_opts(CONF)
        group = CONF[inspection_conf.GROUP]
        self.map = mapping.PartitionMap(group.map)
        # NOTE(ironic-partition): read now so that an invalid value stops
        # the conductor at start, not the first inspection.
        self.on_refusal = group.on_refusal
        self.overwrite_explicit = group.overwrite_explicit_group
        self.dependencies = [LLDP_HOOK] if self.map.uses_lldp else []
        LOG.info('ironic-partition inspection hook loaded: %(n)d map '
                 'entries (%(nets)d networks, %(sw)d switches), '
                 'overwrite_explicit_group=%(ow)s, on_refusal=%(ref)s',
                 {'n': len(self.map), 'nets': len(self.map.networks),
                  'sw': len(self.map.switches), 'ow': self.overwrite_explicit,
                  'ref': self.on_refusal})
        if not self.map:
            LOG.warning('[%s] map is empty: the ironic-partition '
                        'inspection hook moves no node',
                        inspection_conf.GROUP)

    @staticmethod
    def _served(context, group, hardware_type):
        # NOTE(ironic-partition): the same "<group>:<hardware type>" keys
        # Ironic's hash ring is built from, read from the database now:
        # the ring manager's cache may be older than heartbeat_timeout.
        keys = objects.Conductor.get_active_hardware_type_dict(
            context, use_groups=True)
        return bool(keys.get('%s:%s' % (group, hardware_type)))

    def __call__(self, task, inventory, plugin_data):
        """Decide and apply the node's group and shard.

        :param task: the TaskManager, with an exclusive lock on the node.
        :param inventory: the inventory (not modified).
        :param plugin_data: the plugin data; the decision is stored in
            ``plugin_data['ironic_partition']``.
        :returns: None
        :raises: HardwareInspectionFailure on refusal when
            ``on_refusal = fail``.
        """
        node = task.node
        recorded = (node.driver_internal_info or {}).get(INTERNAL_KEY) or {}
        addresses = (mapping.inventory_addresses(inventory)
                     + mapping.driver_info_addresses(node.driver_info))
        switches = mapping.lldp_switches(plugin_data)
        match, why = self.map.lookup(addresses, switches)
        decision = decision_mod.decide(
            {'uuid': node.uuid, 'driver': node.driver,
             'conductor_group': node.conductor_group, 'shard': node.shard,
             'instance_uuid': node.instance_uuid,
             'allocation_id': node.allocation_id,
             'recorded_group': recorded.get('group')},
            match, functools.partial(self._served, task.context),
            default_group=CONF.default_conductor_group,
            overwrite_explicit=self.overwrite_explicit,
            no_match_reason=why)
        plugin_data[PLUGIN_DATA_KEY] = decision_mod.record(decision)

        if decision.action == decision_mod.SKIPPED:
            LOG.debug('ironic-partition: node %(node)s left as it is: '
                      '%(why)s', {'node': node.uuid,
                                  'why': decision.reason})
            return
        # NOTE(ironic-partition): what matched is kept with the node, so
        # that "ironic-partition check" can audit nodes whose BMC address
        # is not in driver_info (auto-discovered ones).
        node.set_driver_internal_info(INTERNAL_KEY, {
            'group': (decision.group_to
                      if decision.action == decision_mod.MOVED
                      else recorded.get('group')),
            'entry': match.entry.text,
            'matched_by': match.source,
            'matched_value': match.value,
        })
        if decision.action == decision_mod.REFUSED:
            node.save()
            LOG.error('ironic-partition: not moving node %(node)s from '
                      'conductor group %(from)r to %(group)r: no alive '
                      'conductor in group %(group)r serves hardware type '
                      '%(hw)s (map entry %(entry)r matched by %(src)s '
                      '%(val)s). The node stays where it is.',
                      {'node': node.uuid, 'from': decision.group_from,
                       'group': match.entry.group, 'hw': node.driver,
                       'entry': match.entry.text, 'src': match.source,
                       'val': match.value})
            if self.on_refusal == inspection_conf.ON_REFUSAL_FAIL:
                raise ironic_exception.HardwareInspectionFailure(
                    error='ironic-partition: %s' % decision.reason)
            return

        if decision.action == decision_mod.MOVED:
            node.conductor_group = decision.group_to
        if decision.shard_action == decision_mod.SHARD_SET:
            node.shard = decision.shard
        node.save()
        if decision.action == decision_mod.MOVED:
            LOG.info('ironic-partition: moved node %(node)s from conductor '
                     'group %(from)r to %(to)r (%(why)s); shard %(shard)s '
                     '(%(shard_action)s)',
                     {'node': node.uuid, 'from': decision.group_from,
                      'to': decision.group_to, 'why': decision.reason,
                      'shard': decision.shard,
                      'shard_action': decision.shard_action})
        else:
            LOG.debug('ironic-partition: node %(node)s stays in group '
                      '%(group)r (%(action)s: %(why)s); shard %(shard)s '
                      '(%(shard_action)s)',
                      {'node': node.uuid, 'group': decision.group_to,
                       'action': decision.action, 'why': decision.reason,
                       'shard': decision.shard,
                       'shard_action': decision.shard_action})
