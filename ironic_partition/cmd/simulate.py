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

"""``ironic-partition simulate``: an offline what-if of the ring.

Needs no service. It builds the rings the services would build (the same
:class:`~ironic_partition.ring.compute.ComputeRingProvider`, ring partitions
and mode), for a set of nodes spread over conductor groups and members, then
applies an event (members leaving and/or joining) and reports the balance
before and after, and exactly which nodes move: the moves are
:func:`ironic_partition.ring.hash_ring.diff` of the two rings.

Node UUIDs are random but reproducible (``--seed``), or read from a file
(``--node-file``, one UUID per line). Members are named ``compute-1`` ...
(``<group>-compute-1`` ... with several groups), or given by name.

``--mode both`` (or ``--compare``) runs the tooz-exact mode and the
balanced mode on the same input.
"""

import collections
import random
import time
import uuid

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.cmd import _output
from ironic_partition.cmd import _stats
from ironic_partition.cmd import base as base_cmd
from ironic_partition import exception
from ironic_partition.ring import balanced_ring
from ironic_partition.ring import compute
from ironic_partition.ring import hash_ring

LOG = logging.getLogger(__name__)

DEFAULT_NODES = 10000
DEFAULT_MEMBERS = 3
#: ``--show flows`` lists at most this many flows (from -> to) per mode.
FLOW_LIMIT = 20


class _Mapped(object):
    """A ring whose mapping of one key list is computed once.

    :func:`hash_ring.diff` accepts anything with ``map_keys``; this lets
    the simulation count members' keys and diff the same mapping.

    :param ring: a hash ring.
    :param keys: the key list.
    """

    def __init__(self, ring, keys):
        self.ring = ring
        self.nodes = ring.nodes
        self._keys = keys
        self.owners = ring.map_keys(keys)

    def map_keys(self, keys):
        """Map keys, from the cache when they are the simulated ones.

        :param keys: a list of keys.
        :returns: a dict of key to member.
        """
        if len(keys) == len(self._keys) and keys == self._keys:
            return self.owners
        return self.ring.map_keys(keys)


def node_uuids(count, seed=0):
    """Reproducible random version-4 UUIDs.

    :param count: how many.
    :param seed: the random seed.
    :returns: a list of UUID strings.
    """
    rng = random.Random(seed)
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4))
            for _index in range(count)]


def read_node_file(path):
    """Read node UUIDs, one per line; blank lines and ``#`` comments skipped.

    :param path: the file.
    :returns: a list of strings, duplicates removed.
    :raises InvalidCommandInput: the file cannot be read or is empty.
    """
    try:
        with open(path) as stream:
            lines = [line.split('#', 1)[0].strip() for line in stream]
    except OSError as e:
        raise exception.InvalidCommandInput(
            option='--node-file', value=path, reason=e.strerror or e)
    nodes = list(dict.fromkeys(line for line in lines if line))
    if not nodes:
        raise exception.InvalidCommandInput(
            option='--node-file', value=path, reason=_('no node UUID in it'))
    return nodes


def group_names(count):
    """Names of simulated conductor groups.

    :param count: how many groups.
    :returns: a list of names.
    """
    return ['rack%d' % (index + 1) for index in range(count)]


def partition_names(groups, shards=0):
    """Names of simulated partitions: groups, or (group, shard) pairs.

    :param groups: how many conductor groups.
    :param shards: how many shards in each group; 0 for none.
    :returns: a list of names, ``rack1`` or ``rack1.shard1`` (a service
        of a shard shares only that shard's nodes of its group).
    """
    names = group_names(groups)
    if not shards:
        return names
    return ['%s.shard%d' % (group, index + 1)
            for group in names for index in range(shards)]


def member_names(group, count, start=1, single=True):
    """Names of simulated members of a group.

    :param group: the group name.
    :param count: how many.
    :param start: the first number.
    :param single: whether there is one group only (shorter names).
    :returns: a list of names.
    """
    prefix = 'compute-' if single else '%s-compute-' % group
    return ['%s%d' % (prefix, start + index) for index in range(count)]


def _parse_event(option, value):
    """Parse ``--leave``/``--join``: a count, or comma-separated names.

    :param option: the option, for messages.
    :param value: the raw value, or None.
    :returns: ``(count, names)``; one of them is 0 / empty.
    :raises InvalidCommandInput: for a negative count or an empty name.
    """
    if value is None:
        return 0, []
    value = value.strip()
    if value.isdigit():
        return int(value), []
    if value.startswith('-') and value[1:].isdigit():
        raise exception.InvalidCommandInput(
            option=option, value=value,
            reason=_('a count must be 0 or more'))
    names = [name.strip().lower() for name in value.split(',')]
    if not all(names):
        raise exception.InvalidCommandInput(
            option=option, value=value,
            reason=_('expected a count or comma-separated member names'))
    return 0, names


def plan(nodes, groups, members, leave=None, join=None, shards=0):
    """Lay out the simulated fleet and the event.

    Nodes go to partitions (groups, or each group's shards) round robin.
    Counted leaves and joins apply to the first partition; named ones to
    the partition holding the name (a joining name goes to the first).

    :param nodes: the node UUIDs.
    :param groups: how many conductor groups.
    :param members: members per partition.
    :param leave: ``--leave``: a count or comma-separated names.
    :param join: ``--join``: a count or comma-separated names.
    :param shards: shards per group (``--shards``); 0 for none.
    :returns: a list of dicts, one per group, with ``group``, ``nodes``,
        ``before``, ``after``, ``leaving`` and ``joining``.
    :raises InvalidCommandInput: for an impossible event.
    """
    if groups < 1:
        raise exception.InvalidCommandInput(
            option='--groups', value=groups, reason=_('at least 1'))
    if members < 1:
        raise exception.InvalidCommandInput(
            option='--members', value=members, reason=_('at least 1'))
    if shards < 0:
        raise exception.InvalidCommandInput(
            option='--shards', value=shards, reason=_('0 or more'))
    names = partition_names(groups, shards)
    single = len(names) == 1
    layout = []
    for index, group in enumerate(names):
        layout.append({'group': group, 'nodes': nodes[index::len(names)],
                       'before': member_names(group, members, single=single),
                       'leaving': [], 'joining': []})
    leave_count, leave_names = _parse_event('--leave', leave)
    join_count, join_names = _parse_event('--join', join)
    first = layout[0]
    if leave_count > members:
        raise exception.InvalidCommandInput(
            option='--leave', value=leave,
            reason=_('only %d members per group') % members)
    if leave_count:
        first['leaving'] = first['before'][members - leave_count:]
    for name in leave_names:
        owner = [g for g in layout if name in g['before']]
        if not owner:
            raise exception.InvalidCommandInput(
                option='--leave', value=leave,
                reason=_('%(name)r is not a member; members are named like '
                         '%(example)s') % {'name': name,
                                           'example': first['before'][0]})
        owner[0]['leaving'].append(name)
    if join_count:
        first['joining'] = member_names(first['group'], join_count,
                                        start=members + 1, single=single)
    for name in join_names:
        if any(name in g['before'] for g in layout):
            raise exception.InvalidCommandInput(
                option='--join', value=join,
                reason=_('%r is a member already') % name)
        first['joining'].append(name)
    for entry in layout:
        gone = set(entry['leaving'])
        entry['after'] = ([m for m in entry['before'] if m not in gone]
                          + entry['joining'])
    return layout


def simulate_group(entry, mode, points, load_factor, keep_moves=False):
    """Build the before and after rings of one group and diff them.

    :param entry: one item of :func:`plan`.
    :param mode: ``tooz`` or ``balanced``.
    :param points: ring partitions (points) per member.
    :param load_factor: the balanced mode's bound.
    :param keep_moves: return every moved node, not just the counts.
    :returns: a dict with the counts per member before and after, the
        balance figures, the moves and the flows between members.
    """
    keys = entry['nodes']
    provider = compute.ComputeRingProvider(
        members=entry['before'], partitions=points, mode=mode,
        load_factor=load_factor)
    ring_keys = keys if mode == 'balanced' else None
    before = _Mapped(provider.build_ring(entry['before'], ring_keys), keys)
    after = _Mapped(provider.build_ring(entry['after'], ring_keys), keys)
    moves = hash_ring.diff(keys, before, after)
    changed = set(entry['leaving']) | set(entry['joining'])
    flows = collections.Counter(moves.values())
    between_stayers = sum(
        count for (old, new), count in flows.items()
        if old not in changed and new not in changed)
    counts_before = _stats.count_by_member(before.owners, entry['before'])
    counts_after = _stats.count_by_member(after.owners, entry['after'])
    result = {
        'group': entry['group'],
        'nodes': len(keys),
        'members_before': len(entry['before']),
        'members_after': len(entry['after']),
        'leaving': entry['leaving'],
        'joining': entry['joining'],
        'counts_before': counts_before,
        'counts_after': counts_after,
        'balance_before': _stats.balance(counts_before),
        'balance_after': _stats.balance(counts_after),
        'moved': len(moves),
        'moved_with_changed_members': len(moves) - between_stayers,
        'moved_between_staying_members': between_stayers,
        'flows': [{'from': old, 'to': new, 'nodes': count}
                  for (old, new), count in sorted(
                      flows.items(), key=lambda i: (-i[1], str(i[0])))],
    }
    if keep_moves:
        result['moves'] = [{'node': key, 'from': old, 'to': new}
                           for key, (old, new) in moves.items()]
    return result


def simulate(nodes, groups, members, leave=None, join=None,
             modes=('tooz',), points=hash_ring.DEFAULT_PARTITION_NUMBER,
             load_factor=balanced_ring.DEFAULT_LOAD_FACTOR, keep_moves=False,
             progress=None, shards=0):
    """Run the whole simulation.

    :param nodes: the node UUIDs.
    :param groups: how many conductor groups.
    :param members: members per group.
    :param leave: a count or comma-separated member names, or None.
    :param join: a count or comma-separated member names, or None.
    :param modes: the ring modes to run.
    :param points: ring partitions (points) per member.
    :param load_factor: the balanced mode's bound.
    :param keep_moves: list every moved node.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :param shards: shards per group; 0 for none.
    :returns: a JSON-serialisable dict.
    """
    progress = progress or _output.Progress(enabled=False)
    start = time.monotonic()
    layout = plan(nodes, groups, members, leave, join, shards=shards)
    runs = []
    for mode in modes:
        mode_start = time.monotonic()
        results = []
        for entry in layout:
            with progress.task(_('%(mode)s ring of %(group)s: %(nodes)d '
                                 'nodes, %(members)d members') % {
                                     'mode': mode, 'group': entry['group'],
                                     'nodes': len(entry['nodes']),
                                     'members': len(entry['before'])}):
                results.append(simulate_group(entry, mode, points,
                                              load_factor, keep_moves))
        totals_before = {}
        totals_after = {}
        for res in results:
            totals_before.update(res['counts_before'])
            totals_after.update(res['counts_after'])
        runs.append({
            'mode': mode,
            'groups': results,
            'moved': sum(r['moved'] for r in results),
            'moved_between_staying_members': sum(
                r['moved_between_staying_members'] for r in results),
            'balance_before': _stats.balance(totals_before),
            'balance_after': _stats.balance(totals_after),
            'seconds': round(time.monotonic() - mode_start, 3),
        })
    return {
        'nodes': len(nodes),
        'groups': groups,
        'shards_per_group': shards,
        'members_per_group': members,
        'partitions_per_member': points,
        'load_factor': load_factor,
        'event': {'leaving': [m for e in layout for m in e['leaving']],
                  'joining': [m for e in layout for m in e['joining']]},
        'runs': runs,
        'seconds': round(time.monotonic() - start, 3),
    }


def run_rows(doc):
    """One row per ring mode: the balance before and after, the moves.

    :param doc: what :func:`simulate` returned.
    :returns: a list of dicts.
    """
    rows = []
    for run in doc['runs']:
        before, after = run['balance_before'], run['balance_after']
        rows.append({
            'mode': run['mode'],
            'nodes': doc['nodes'],
            'members_before': before['members'],
            'members_after': after['members'],
            'fair_before': before['fair'],
            'fair_after': after['fair'],
            'max_over_fair_before': before['max_over_fair'],
            'max_over_fair_after': after['max_over_fair'],
            'stddev_before': before['stddev'],
            'stddev_after': after['stddev'],
            'moved': run['moved'],
            'moved_percent': _output.percent(run['moved'], doc['nodes']),
            'moved_between_staying_members':
                run['moved_between_staying_members'],
            'seconds': run['seconds'],
        })
    return rows


def flow_rows(doc, top=None):
    """One row per flow of nodes between two members, largest first.

    :param doc: what :func:`simulate` returned.
    :param top: at most this many flows per mode; None for all.
    :returns: a list of dicts.
    """
    rows = []
    for run in doc['runs']:
        flows = sorted((f for g in run['groups'] for f in g['flows']),
                       key=lambda f: -f['nodes'])
        if top is not None:
            flows = flows[:max(0, top)]
        rows += [{'mode': run['mode'], 'from': f['from'], 'to': f['to'],
                  'nodes': f['nodes']} for f in flows]
    return rows


def member_rows(doc):
    """One row per member and mode: its nodes before and after.

    :param doc: what :func:`simulate` returned.
    :returns: a list of dicts.
    """
    rows = []
    for run in doc['runs']:
        for group in run['groups']:
            names = sorted(set(group['counts_before'])
                           | set(group['counts_after']))
            rows += [{'mode': run['mode'], 'group': group['group'],
                      'member': name,
                      'before': group['counts_before'].get(name),
                      'after': group['counts_after'].get(name)}
                     for name in names]
    return rows


def move_rows(doc):
    """One row per moved node and mode.

    :param doc: what :func:`simulate` returned with ``keep_moves``.
    :returns: a list of dicts.
    """
    return [dict(m, mode=run['mode']) for run in doc['runs']
            for group in run['groups'] for m in group.get('moves', ())]


#: What ``--show`` lists: the rows and their columns.
VIEWS = {
    'runs': (run_rows, ('mode', 'nodes', 'members_before', 'members_after',
                        'fair_before', 'fair_after', 'max_over_fair_before',
                        'max_over_fair_after', 'stddev_before',
                        'stddev_after', 'moved', 'moved_percent',
                        'moved_between_staying_members', 'seconds')),
    'flows': (flow_rows, ('mode', 'from', 'to', 'nodes')),
    'members': (member_rows, ('mode', 'group', 'member', 'before',
                              'after')),
    'moves': (move_rows, ('mode', 'node', 'from', 'to')),
}


def _options(conf, args):
    """Validate the options against the configuration's defaults.

    :param conf: the ``ConfigOpts``.
    :param args: the parsed arguments.
    :returns: ``(modes, points)``.
    :raises: InvalidCommandInput.
    """
    group = conf.ironic_partition
    if args.compare or args.mode == 'both':
        modes = ('tooz', 'balanced')
    else:
        modes = (args.mode or group.ring_mode,)
    exponent = (args.partition_exponent if args.partition_exponent
                is not None else group.partition_exponent)
    if not 0 <= exponent <= 16:
        raise exception.InvalidCommandInput(
            option='--partition-exponent', value=exponent,
            reason=_('between 0 and 16'))
    if args.load_factor < 1:
        raise exception.InvalidCommandInput(
            option='--load-factor', value=args.load_factor,
            reason=_('1 or more'))
    if args.nodes < 0:
        raise exception.InvalidCommandInput(
            option='--nodes', value=args.nodes, reason=_('0 or more'))
    return modes, 2 ** exponent


class Simulate(base_cmd.Lister):
    """Offline what-if: balance and node moves when members leave or join.

    Builds the rings the services would build for generated (or listed)
    nodes spread over conductor groups and members, applies the event and
    lists, by ``--show``: each ring mode's balance before and after and
    the nodes moved (``runs``, the default), the largest flows of nodes
    between two members (``flows``), every member's nodes before and
    after (``members``), or every moved node (``moves``). Needs no
    service.
    """

    # NOTE(ironic-partition): inside the OpenStack client, no cloud is
    # needed: nothing is asked of any service.
    auth_required = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--nodes', type=int, default=DEFAULT_NODES,
                            help=_('Number of nodes (default: '
                                   '%(default)s).'))
        parser.add_argument('--node-file', metavar='FILE',
                            help=_('Read node UUIDs from FILE, one per '
                                   'line, instead of generating --nodes of '
                                   'them.'))
        parser.add_argument('--seed', type=int, default=0,
                            help=_('Seed of the generated node UUIDs '
                                   '(default: %(default)s).'))
        parser.add_argument('--members', type=int, default=DEFAULT_MEMBERS,
                            help=_('Ring members per conductor group '
                                   '(default: %(default)s).'))
        parser.add_argument('--groups', type=int, default=1,
                            help=_('Conductor groups; nodes are spread over '
                                   'them round robin (default: '
                                   '%(default)s).'))
        parser.add_argument('--shards', type=int, default=0,
                            help=_('Ironic shards per conductor group: each '
                                   '(group, shard) pair is a partition with '
                                   'its own ring and --members members, as '
                                   'with [ironic] shard and peer_list '
                                   '(default: %(default)s, no shards).'))
        parser.add_argument('--leave', metavar='COUNT|NAMES',
                            help=_('Members leaving: a count (the last '
                                   'members of the first group) or '
                                   'comma-separated names such as '
                                   'compute-3.'))
        parser.add_argument('--join', metavar='COUNT|NAMES',
                            help=_('Members joining the first group: a '
                                   'count or comma-separated names.'))
        parser.add_argument('--mode', choices=('tooz', 'balanced', 'both'),
                            help=_('Ring mode (default: [ironic_partition] '
                                   'ring_mode).'))
        parser.add_argument('--compare', action='store_true',
                            help=_('Same as --mode both: compare tooz-exact '
                                   'with balanced.'))
        parser.add_argument('--partition-exponent', type=int,
                            help=_('Points per member are 2 to the power N '
                                   '(default: [ironic_partition] '
                                   'partition_exponent).'))
        parser.add_argument('--load-factor', type=float,
                            default=balanced_ring.DEFAULT_LOAD_FACTOR,
                            help=_('Largest load relative to the fair share '
                                   'in balanced mode (default: '
                                   '%(default)s).'))
        parser.add_argument('--show', choices=sorted(VIEWS), default='runs',
                            help=_('What to list: runs (the default), '
                                   'flows, members or moves.'))
        parser.add_argument('--top', type=int, default=FLOW_LIMIT,
                            help=_('With --show flows, the N largest flows '
                                   'per mode (default: %(default)s; 0 for '
                                   'all).'))
        return parser

    def take_action(self, parsed_args):
        args = parsed_args
        conf = self.load_conf(args)
        modes, points = _options(conf, args)
        progress = _output.Progress()
        if args.node_file:
            nodes = read_node_file(args.node_file)
        else:
            with progress.task(_('Generating %d node UUIDs') % args.nodes):
                nodes = node_uuids(args.nodes, args.seed)
        doc = simulate(nodes, args.groups, args.members, args.leave,
                       args.join, modes=modes, points=points,
                       load_factor=args.load_factor,
                       keep_moves=args.show == 'moves', progress=progress,
                       shards=args.shards)
        build, names = VIEWS[args.show]
        if args.show == 'flows':
            records = build(doc, args.top or None)
        else:
            records = build(doc)
        LOG.debug('Simulated in %.2f s', doc['seconds'])
        return base_cmd.rows(records, names)
