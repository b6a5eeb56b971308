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

"""Options of the inspection hook, in ``[ironic_partition_inspection]``.

These options live in ironic.conf, read by ironic-conductor when it loads
the ``ironic-partition`` inspection hook. ``ironic-partition check
--inspection-config`` reads the same group from the file it is given.
Nothing is registered at import: the hook calls :func:`register_opts` on
Ironic's configuration when it is loaded.
"""

import copy

from oslo_config import cfg

from ironic_partition._i18n import _

GROUP = 'ironic_partition_inspection'

ON_REFUSAL_KEEP = 'keep'
ON_REFUSAL_FAIL = 'fail'

opts = [
    cfg.MultiStrOpt(
        'map',
        default=[],
        sample_default=['cidr=10.0.1.0/24,group=rack1,shard=rack1',
                        'cidr=2001:db8:2::/64,group=rack2',
                        'switch=tor-r2,group=rack2'],
        help=_('One map entry per line: where a node is (its BMC address, '
               'or the switch its NICs see over LLDP) and the conductor '
               'group (and optionally the shard) it belongs to. An entry '
               'is comma-separated key=value pairs: exactly one of '
               '"cidr=<IPv4 or IPv6 network>" or "switch=<LLDP system '
               'name or chassis ID>", then "group=<conductor group>" '
               '(empty for the default group) and optionally '
               '"shard=<shard>", both with the rules of nova\'s [ironic] '
               'partition_key and shard options and written to the node '
               'in lower case. The BMC address is the primary key: '
               'switch entries are used only for a node whose BMC address '
               'matches no cidr entry, and need the "parse-lldp" hook to '
               'run before this one. Networks may not overlap and a switch '
               'may appear once, so every node matches at most one '
               'entry.')),
    cfg.BoolOpt(
        'overwrite_explicit_group',
        default=False,
        help=_('Move a node whose conductor group was set by someone else '
               '(neither the default group nor the group this hook set '
               'last). By default such a group is an operator\'s choice '
               'and is kept.')),
    cfg.StrOpt(
        'on_refusal',
        default=ON_REFUSAL_KEEP,
        choices=[
            (ON_REFUSAL_KEEP, _('Leave the node in its group, log an '
                                'ERROR and let inspection succeed.')),
            (ON_REFUSAL_FAIL, _('Leave the node in its group and fail '
                                'the inspection with the same message.')),
        ],
        help=_('What to do when the map sends a node to a conductor group '
               'in which no alive conductor serves the node\'s hardware '
               'type (Ironic could not manage it there). The node never '
               'moves in that case.')),
]


def register_opts(conf):
    """Register the hook's options on ``conf``.

    :param conf: an oslo.config ``ConfigOpts`` (Ironic's global one inside
        ironic-conductor).
    :returns: None
    """
    conf.register_opts(opts, group=GROUP)


def list_opts():
    """The hook's options, for oslo-config-generator and the docs.

    Registered as the ``ironic_partition.inspection`` entry point of the
    ``oslo.config.opts`` namespace: add ``--namespace
    ironic_partition.inspection`` to Ironic's sample generator.

    :returns: a list of ``(group name, [options])`` tuples.
    """
    return [(GROUP, copy.deepcopy(opts))]
