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

"""``ironic-partition ring``: who owns how many nodes, and how evenly.

The default view is the compute ring of this host's conductor group (and
shard): the live members (as the membership backend reports them,
read-only), the nodes of the conductor group, and each member's share of
the instance-less nodes, built with the same ring provider
(``[ironic_partition] ring_provider``) and rules as the services.

``--conductors`` shows Ironic's own rings instead: every conductor group,
its alive and dead conductors and the node count each alive conductor
gets from :class:`~ironic_partition.ring.conductor.ConductorRingProvider`.
"""

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import _output
from ironic_partition.cmd import _stats
from ironic_partition.cmd import base as base_cmd
from ironic_partition.ironic import conductor_groups
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import instance_owners
from ironic_partition.partition import readonly
from ironic_partition.partition import rules
from ironic_partition.ring import base as ring_base
from ironic_partition.ring import conductor
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def compute_ring(conf, role, instance_hosts=None, progress=None,
                 client=None):
    """Build the ring of this host's group and count each member's nodes.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role.
    :param instance_hosts: instance UUID to host, or None.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :param client: the Ironic client; by default the one ``[ironic]``
        configures.
    :returns: a JSON-serialisable dict.
    """
    progress = progress or _output.Progress(enabled=False)
    settings = settings_mod.from_conf(conf)
    key = settings.partition_key
    if client is None:
        client = settings_mod.ironic_client(conf)
    backend = readonly.open_membership(settings, role)
    try:
        with progress.task(_('Listing Ironic conductors')):
            conductor_groups.check(client, key)
        with progress.task(_('Listing nodes of group %s from Ironic')
                           % _output.show_key(key),
                           detail=_output.pages_detail(client)):
            nodes = client.list_nodes(conductor_group=key,
                                      shard=settings.shard)
        membership = readonly.read_members(backend, settings)
        claims = settings.claims_wanted(backend.store)
    finally:
        readonly.close_membership(backend)
    provider = ring_base.from_settings(settings,
                                       lambda key: membership.live,
                                       claims=claims)
    free = [n.id for n in nodes if n.instance_id is None]
    with progress.task(_('Mapping %d nodes on the ring') % len(free)):
        ring = provider.get_ring(key, keys=provider.ring_keys(nodes, key))
        owners = rules.ring_owners(ring, free)
    counts = _stats.count_by_member(owners, membership.live)
    stats = _stats.balance(counts)
    instances = {}
    for node in nodes:
        if node.instance_id is not None:
            owner = (instance_hosts or {}).get(node.instance_id)
            instances[owner] = instances.get(owner, 0) + 1
    members = []
    for member, count in counts.items():
        members.append({
            'member': member,
            'ring_nodes': count,
            'share_percent': _output.percent(count, len(free)),
            'vs_fair': _stats.deviation(count, stats['fair']),
            'instance_nodes': instances.get(member, 0)
            if instance_hosts else None,
            'this_host': member == settings.host,
        })
    return {
        'host': settings.host,
        'role': role,
        'partition_key': key,
        'shard': settings.shard,
        'ring_mode': provider.mode,
        'partitions_per_member': provider.partitions,
        'listed': len(nodes),
        'ring_nodes': len(free),
        'instance_nodes': len(nodes) - len(free),
        'members': members,
        'balance': stats,
        'not_on_ring': {'dead': sorted(membership.dead),
                        'never_seen': sorted(membership.never_seen)},
        'membership_stale': membership.stale,
    }


def conductor_rings(client, group=None, progress=None):
    """Count the nodes each Ironic conductor gets from Ironic's rings.

    :param client: the Ironic client.
    :param group: only this conductor group, or every group.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :returns: a JSON-serialisable dict.
    """
    progress = progress or _output.Progress(enabled=False)
    with progress.task(_('Listing Ironic conductors')):
        conductors = client.list_conductors()
    if group is not None:
        group = group.lower()
        conductor_groups.check(client, group, conductors)
    with progress.task(_('Listing nodes from Ironic'),
                       detail=_output.pages_detail(client)):
        nodes = client.list_nodes(conductor_group=group)
    provider = conductor.ConductorRingProvider(conductors=conductors)
    mapping = provider.map_nodes(nodes, ignore_unknown=True)
    groups = conductor_groups.by_group(conductors)
    for node in nodes:
        groups.setdefault((node.conductor_group or '').lower(),
                          {'alive': [], 'dead': []})
    result = []
    for name in sorted(groups):
        if group is not None and name != group:
            continue
        members = groups[name]
        in_group = [n for n in nodes
                    if (n.conductor_group or '').lower() == name]
        owners = {n.id: mapping.get(n.id) for n in in_group}
        counts = _stats.count_by_member(owners, members['alive'])
        result.append({
            'conductor_group': name,
            'nodes': len(in_group),
            'unmapped_nodes': sum(1 for o in owners.values() if o is None),
            'alive': members['alive'],
            'dead': members['dead'],
            'conductors': [{'hostname': h, 'nodes': c,
                            'share_percent': _output.percent(c, len(in_group))}
                           for h, c in counts.items()],
            'balance': _stats.balance(counts),
        })
    return {'groups': result, 'conductors': len(conductors),
            'nodes': len(nodes)}


def member_rows(doc):
    """The compute ring's rows: live members, then the peers off it.

    :param doc: what :func:`compute_ring` returned.
    :returns: a list of dicts.
    """
    rows = [dict(m, state=_('live')) for m in doc['members']]
    away = doc['not_on_ring']
    for state, names in ((_('dead'), away['dead']),
                         (_('never seen'), away['never_seen'])):
        rows += [{'member': name, 'state': state, 'ring_nodes': 0,
                  'share_percent': 0.0, 'vs_fair': None,
                  'instance_nodes': None,
                  'this_host': name == doc['host']} for name in names]
    return rows


def conductor_rows(doc):
    """The conductor rings' rows: one per conductor of each group.

    A group whose nodes no alive conductor can take gets one more row.

    :param doc: what :func:`conductor_rings` returned.
    :returns: a list of dicts.
    """
    rows = []
    for entry in doc['groups']:
        group = entry['conductor_group']
        rows += [{'conductor_group': group, 'conductor': c['hostname'],
                  'state': _('alive'), 'nodes': c['nodes'],
                  'share_percent': c['share_percent']}
                 for c in entry['conductors']]
        rows += [{'conductor_group': group, 'conductor': name,
                  'state': _('dead'), 'nodes': 0, 'share_percent': 0.0}
                 for name in entry['dead']]
        if entry['unmapped_nodes'] or not entry['conductors']:
            rows.append({'conductor_group': group, 'conductor': None,
                         'state': _('no alive conductor'),
                         'nodes': entry['unmapped_nodes'],
                         'share_percent': _output.percent(
                             entry['unmapped_nodes'], entry['nodes'])})
    return rows


MEMBER_COLUMNS = ('member', 'state', 'ring_nodes', 'share_percent',
                  'vs_fair', 'instance_nodes', 'this_host')
CONDUCTOR_COLUMNS = ('conductor_group', 'conductor', 'state', 'nodes',
                     'share_percent')


class Ring(base_cmd.Lister):
    """Show each ring member's node count and share of the ring.

    By default the compute ring of this host's conductor group (and
    shard): one row per live member with the instance-less nodes the ring
    gives it, then the peers that are not on the ring (dead, never seen).
    With ``--conductors``, Ironic's own rings: one row per conductor of
    each conductor group, with the nodes it gets.
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _args.add_instance_hosts_argument(parser)
        parser.add_argument(
            '--conductors', action='store_true',
            help=_('Show Ironic\'s conductor groups, their conductors and '
                   'the nodes each alive conductor gets, instead of the '
                   'compute ring.'))
        parser.add_argument(
            '--group', metavar='GROUP',
            help=_('With --conductors, only this conductor group ("" is '
                   'the default group).'))
        return parser

    def take_action(self, parsed_args):
        conf = self.load_conf(parsed_args)
        client = self.ironic_client(conf)
        progress = _output.Progress()
        if parsed_args.conductors:
            doc = conductor_rings(client, parsed_args.group, progress)
            return base_cmd.rows(conductor_rows(doc), CONDUCTOR_COLUMNS)
        instance_hosts = instance_owners.load(parsed_args.instance_hosts)
        doc = compute_ring(conf, parsed_args.role, instance_hosts, progress,
                           client=client)
        if doc['membership_stale']:
            LOG.warning('The membership source is unreachable; these are '
                        'the last known members.')
        return base_cmd.rows(member_rows(doc), MEMBER_COLUMNS)
