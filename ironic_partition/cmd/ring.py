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
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition.cmd import _stats
from ironic_partition import conductor_groups
from ironic_partition import instance_owners
from ironic_partition.membership import base as membership_base
from ironic_partition import readonly
from ironic_partition.ring import base as ring_base
from ironic_partition.ring import conductor
from ironic_partition import rules
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def compute_ring(conf, role, instance_hosts=None, progress=None):
    """Build the ring of this host's group and count each member's nodes.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role.
    :param instance_hosts: instance UUID to host, or None.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :returns: a JSON-serialisable dict.
    """
    progress = progress or _output.Progress(enabled=False)
    settings = settings_mod.from_conf(conf)
    key = settings.partition_key
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


def render_compute(doc):
    """The human report of the compute ring.

    :param doc: what :func:`compute_ring` returned.
    :returns: a list of lines.
    """
    stats = doc['balance']
    key = _output.show_key(doc['partition_key'])
    if doc.get('shard') is not None:
        key = _('%(key)s, shard %(shard)s') % {'key': key,
                                               'shard': doc['shard']}
    lines = [_('Ring of partition %(key)s (%(mode)s, %(parts)d points per '
               'member): %(listed)d nodes, %(ring)d on the ring, %(inst)d '
               'with instances') % {
                   'key': key,
                   'mode': doc['ring_mode'],
                   'parts': doc['partitions_per_member'],
                   'listed': doc['listed'], 'ring': doc['ring_nodes'],
                   'inst': doc['instance_nodes']}]
    headers = [_('MEMBER'), _('NODES'), _('SHARE'), _('VS FAIR')]
    with_instances = any(m['instance_nodes'] is not None
                         for m in doc['members'])
    if with_instances:
        headers.append(_('INSTANCES'))
    rows = []
    for m in doc['members']:
        row = [m['member'] + (' *' if m['this_host'] else ''),
               m['ring_nodes'], '%.1f%%' % m['share_percent'], m['vs_fair']]
        if with_instances:
            row.append(m['instance_nodes'])
        rows.append(row)
    lines += _output.format_table(headers, rows, '  ')
    if stats['members']:
        lines.append(_('Balance: fair share %(fair)s, min %(min)d, max '
                       '%(max)d (max/fair %(ratio).3f), stddev %(sd)s') % {
                           'fair': stats['fair'], 'min': stats['min'],
                           'max': stats['max'],
                           'ratio': stats['max_over_fair'] or 0,
                           'sd': stats['stddev']})
    away = doc['not_on_ring']
    if away['dead'] or away['never_seen']:
        lines.append(_('Peers not on the ring: %s') % ', '.join(
            ['%s (%s)' % (h, _('dead')) for h in away['dead']]
            + ['%s (%s)' % (h, _('never seen'))
               for h in away['never_seen']]))
    if doc['membership_stale']:
        lines.append(_('WARNING: the membership source is unreachable; '
                       'these are the last known members.'))
    lines.append(_('* this host'))
    return lines


def conductor_rings(conf, group=None, progress=None):
    """Count the nodes each Ironic conductor gets from Ironic's rings.

    :param conf: the ``ConfigOpts``.
    :param group: only this conductor group, or every group.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :returns: a JSON-serialisable dict.
    """
    progress = progress or _output.Progress(enabled=False)
    client = settings_mod.ironic_client(conf)
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


def render_conductors(doc):
    """The human report of ``ring --conductors``.

    :param doc: what :func:`conductor_rings` returned.
    :returns: a list of lines.
    """
    lines = [_('%(nodes)d nodes, %(conds)d conductors') % {
        'nodes': doc['nodes'], 'conds': doc['conductors']}]
    for entry in doc['groups']:
        lines.append('')
        lines.append(_('Conductor group %(group)s: %(nodes)d nodes, '
                       '%(alive)d alive and %(dead)d dead conductors') % {
                           'group': _output.show_key(entry['conductor_group']),
                           'nodes': entry['nodes'],
                           'alive': len(entry['alive']),
                           'dead': len(entry['dead'])})
        rows = [(c['hostname'], _('alive'), c['nodes'],
                 '%.1f%%' % c['share_percent'])
                for c in entry['conductors']]
        rows += [(h, _('dead'), 0, '-') for h in entry['dead']]
        lines += _output.format_table(
            (_('CONDUCTOR'), _('STATE'), _('NODES'), _('SHARE')), rows,
            '  ')
        if entry['unmapped_nodes']:
            lines.append(_('  %d nodes have no alive conductor for their '
                           'group and hardware type') %
                         entry['unmapped_nodes'])
    return lines


def run(conf):
    """Run ``ironic-partition ring``.

    :param conf: the parsed ``ConfigOpts``.
    :returns: the exit code.
    """
    args = conf.command
    progress = _output.Progress()
    if args.conductors:
        doc = conductor_rings(conf, args.group, progress)
        lines = render_conductors(doc)
    else:
        instance_hosts = instance_owners.load(args.instance_hosts)
        doc = compute_ring(conf, args.role, instance_hosts, progress)
        lines = render_compute(doc)
    if args.format == 'json':
        _output.emit_json(doc)
    else:
        _output.write_lines(lines)
    return _errors.EXIT_OK


def add_parsers(subparsers):
    """Add the ``ring`` subcommand.

    :param subparsers: the argparse subparsers of ``ironic-partition``.
    :returns: None
    """
    parser = subparsers.add_parser(
        'ring', help=_('Show each ring member\'s node count and the '
                       'balance.'),
        epilog=_errors.exit_codes_epilog())
    _args.add_format_argument(parser)
    _args.add_role_argument(parser, membership_base.ROLE_NOVA_COMPUTE)
    _args.add_instance_hosts_argument(parser)
    parser.add_argument(
        '--conductors', action='store_true',
        help=_('Show Ironic\'s conductor groups, their alive conductors '
               'and the nodes each conductor gets, instead of the compute '
               'ring.'))
    parser.add_argument(
        '--group', metavar='GROUP',
        help=_('With --conductors, only this conductor group ("" is the '
               'default group).'))
    parser.set_defaults(func=run)
