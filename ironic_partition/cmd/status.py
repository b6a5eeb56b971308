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

"""``ironic-partition status``: the nodes this host manages, as its service
sees them.

Runs one refresh of :class:`~ironic_partition.partitioner.Partitioner`
(the code path of the nova driver and of the agent) with the membership
read but not joined, and prints: the settings, the peers (live, dead,
never seen), the managed nodes, and the stranded nodes (instances of
peers that are not alive) with what to do about them.
"""

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition import conductor_groups
from ironic_partition import instance_owners
from ironic_partition.membership import base as membership_base
from ironic_partition import partitioner
from ironic_partition import readonly
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def gather(conf, role, instance_hosts=None, progress=None):
    """Compute the nodes this host manages once, read-only.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role of this host's service.
    :param instance_hosts: instance UUID to host, or None.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :returns: a dict with ``settings``, ``conductors``, ``result`` (a
        :class:`~ironic_partition.refresh_result.RefreshResult`),
        ``ring_mode``, ``stranded``, ``instance_hosts``, ``backend`` (its
        status dict), ``role``, ``claims`` (see :func:`read_claims`) and
        ``feed_problem`` (why Ironic's change feed cannot be used, read
        once after the listing, or None).
    :raises: the errors mapped by :func:`_errors.exit_code_for`.
    """
    progress = progress or _output.Progress(enabled=False)
    settings = settings_mod.from_conf(conf)
    client = settings_mod.ironic_client(conf)
    membership = readonly.open_membership(settings, role)
    try:
        with progress.task(_('Listing Ironic conductors')):
            conductors = conductor_groups.check(client, settings.partition_key)
        # NOTE(ironic-partition): read-only: a CLI run must never take or
        # renew ownership claims in the name of this host.
        part = partitioner.Partitioner(settings, client, membership,
                                       claims=False)
        with progress.task(
                _('Listing nodes of group %s from Ironic')
                % _output.show_key(settings.partition_key),
                detail=_output.pages_detail(client)):
            result = part.refresh(
                my_instances=instance_owners.owned_by(instance_hosts,
                                                      settings.host),
                instance_hosts=instance_hosts)
        with progress.task(_('Reading Ironic\'s change feed')):
            feed_problem = part.index.check_feed()
        backend_status = membership.status()
        claims = read_claims(conf, membership, role, settings)
        services = read_services(membership, role)
    finally:
        readonly.close_membership(membership)
    stranded = _stranded(part, result, instance_hosts or {})
    return {'settings': settings, 'conductors': conductors,
            'result': result, 'ring_mode': part.rings.mode,
            'stranded': stranded, 'instance_hosts': instance_hosts or {},
            'backend': backend_status, 'role': role, 'claims': claims,
            'services': services, 'feed_problem': feed_problem}


def read_services(membership, role):
    """The process holding each host name of the role, when known.

    :param membership: the open membership backend.
    :param role: the service role.
    :returns: a list of dicts with ``host``, ``alive``, ``incarnation``
        (None once the process gave the name up), ``started_at``,
        ``origin`` and ``partition_key``; empty without a database.
    """
    db = getattr(getattr(membership, 'store', None), 'db', None)
    if db is None:
        return []
    down_time = membership.settings.service_down_time
    return [{'host': s.host, 'alive': s.alive,
             'incarnation': s.incarnation,
             'started_at': (s.started_at.isoformat()
                            if s.started_at is not None else None),
             'origin': s.origin, 'partition_key': s.partition_key}
            for s in db.services.services(role, down_time).services]


def read_claims(conf, membership, role, settings):
    """Summarise the ownership claims of this host's group and shard.

    Read-only; validity is decided by the database server's clock.

    :param conf: the ``ConfigOpts``.
    :param membership: the open membership backend (its database is
        used when it has one).
    :param role: the service role.
    :param settings: the partition settings.
    :returns: ``{'enabled': False}`` when claims are off, else a dict with
        ``as_of``, ``held`` (valid claims of this host), ``expires_in``
        (seconds until the first of them expires, by the server's clock),
        ``by_owner`` (owner -> valid claims) and ``expired`` (claims whose
        lease ran out, free to take).
    """
    mode = conf.ironic_partition.claims
    db = getattr(getattr(membership, 'store', None), 'db', None)
    if mode == 'off' or (mode == 'auto' and db is None):
        return {'enabled': False}
    own_db = db is None
    if own_db:
        db = settings_mod.database_settings(conf).connect()
    try:
        snapshot = db.claims.read_claims(role)
    finally:
        if own_db:
            db.dispose()
    key = settings.partition_key
    by_owner = {}
    expired = 0
    mine = []
    for claim in snapshot.claims:
        if claim.partition_key != key or (
                (claim.shard or None) != settings.shard):
            continue
        if not claim.valid or claim.owner is None:
            expired += 1
            continue
        by_owner[claim.owner] = by_owner.get(claim.owner, 0) + 1
        if claim.owner == settings.host:
            mine.append(claim.expires_at)
    expires_in = (min(mine) - snapshot.as_of).total_seconds() if mine \
        else None
    return {'enabled': True, 'as_of': snapshot.as_of.isoformat(),
            'held': len(mine),
            'expires_in': (round(expires_in, 1)
                           if expires_in is not None else None),
            'by_owner': dict(sorted(by_owner.items())),
            'expired': expired}


def _stranded(part, result, instance_hosts):
    """Describe each stranded node and where it could go.

    The instances come from the partitioner's node index, which the
    refresh filled: the group is listed once, never again for these.

    :param part: the :class:`~ironic_partition.partitioner.Partitioner`.
    :param result: its :class:`~ironic_partition.refresh_result.RefreshResult`.
    :param instance_hosts: instance UUID to host.
    :returns: a list of dicts with ``node``, ``instance``, ``owner`` and
        ``suggested_host`` (the live member the ring maps the node to).
    """
    stranded = result.ownership.stranded
    if not stranded:
        return []
    # NOTE(ironic-partition): a node with an instance is outside the key
    # set of a balanced ring, which then maps it like the plain ring.
    ring = part.rings.build_ring(result.members, keys=[])
    rows = []
    listed = part.index.nodes
    for uuid in stranded:
        node = listed.get(uuid)
        instance = node.instance_id if node is not None else None
        rows.append({'node': uuid, 'instance': instance,
                     'owner': instance_hosts.get(instance),
                     'suggested_host': ring.get_node(uuid)})
    return rows


def to_dict(data):
    """The JSON document of ``status``.

    :param data: what :func:`gather` returned.
    :returns: a JSON-serialisable dict.
    """
    settings = data['settings']
    result = data['result']
    own = result.ownership
    membership = result.membership
    groups = conductor_groups.by_group(data['conductors'])
    group = groups.get(settings.partition_key, {'alive': [], 'dead': []}) \
        if settings.partition_key is not None else None
    stranded = data['stranded']
    by_instance = frozenset(own.by_instance)
    return {
        'host': settings.host,
        'role': data['role'],
        'partition_key': settings.partition_key,
        'shard': settings.shard,
        'peer_list': list(settings.peer_list),
        'membership_backend': data['backend'].get('backend'),
        'membership_connection': data['backend'].get('connection'),
        'peers': {
            'live': sorted(membership.live),
            'dead': sorted(membership.dead),
            'never_seen': sorted(membership.never_seen),
            'stale': membership.stale,
            'as_of': (membership.as_of.isoformat()
                      if membership.as_of is not None else None),
        },
        'ring_members': list(result.members),
        'services': data.get('services', []),
        'ring_mode': data['ring_mode'],
        'conductors': group,
        'listed': result.metrics.listed,
        'managed': [
            {'uuid': uuid,
             'instance_uuid': result.nodes[uuid].instance_id,
             'provision_state': result.nodes[uuid].provision_state,
             'power_state': result.nodes[uuid].power_state,
             'maintenance': result.nodes[uuid].is_maintenance,
             'reason': 'instance' if uuid in by_instance else 'ring'}
            for uuid in own.managed],
        'managed_count': len(own.managed),
        'by_ring_count': len(own.by_ring),
        'by_instance_count': len(own.by_instance),
        'foreign_count': len(own.foreign),
        'stranded': stranded,
        'stranded_count': len(stranded),
        'instance_owners_known': bool(data['instance_hosts']),
        'claims': data['claims'],
        'change_feed': {'usable': data.get('feed_problem') is None,
                        'problem': data.get('feed_problem')},
        'api_calls': result.metrics.api_calls,
        'seconds': round(result.metrics.seconds, 3),
    }


def _advice(doc):
    lines = []
    if doc['stranded']:
        owners = sorted({s['owner'] for s in doc['stranded'] if s['owner']})
        lines.append(_('What to do: nobody manages these nodes while '
                       '%(owners)s is not alive. Restart it; it takes '
                       'them back at its first refresh. If it is gone for '
                       'good, force its compute service down ("openstack '
                       'compute service set --down %(first)s nova-compute") '
                       'and move each node to the suggested live host with '
                       '"nova-manage db ironic_compute_node_move '
                       '--ironic-node-uuid NODE --destination-host HOST".')
                     % {'owners': ', '.join(owners) or '?',
                        'first': owners[0] if owners else 'HOST'})
    elif doc['foreign_count'] and not doc['instance_owners_known']:
        lines.append(_('%d nodes have instances of other services. Pass '
                       '--instance-hosts to tell which belong to peers '
                       'that are not alive (stranded).')
                     % doc['foreign_count'])
    return lines


def render(doc, long_listing=False):
    """The human report of ``status``.

    :param doc: what :func:`to_dict` returned.
    :param long_listing: list every managed node.
    :returns: a list of lines.
    """
    peers = doc['peers']
    fields = [
        (_('Host'), doc['host']),
        (_('Role'), doc['role']),
        (_('Partition key'), _output.show_key(doc['partition_key'])),
    ]
    if doc.get('shard') is not None:
        fields.append((_('Shard'), _output.show_shard(doc['shard'])))
    fields += [
        (_('Peer list'), ', '.join(doc['peer_list']) or '-'),
        (_('Membership'), '%s %s' % (
            doc['membership_backend'],
            doc['membership_connection'] or '')),
        (_('Ring'), _('%(mode)s, members %(members)s') % {
            'mode': doc['ring_mode'],
            'members': ', '.join(doc['ring_members'])}),
    ]
    if doc['conductors'] is not None:
        fields.append((_('Conductors'), _(
            '%(alive)d alive, %(dead)d dead in this group') % {
                'alive': len(doc['conductors']['alive']),
                'dead': len(doc['conductors']['dead'])}))
    lines = _output.format_fields(fields)
    lines.append('')
    rows = []
    services = {s['host']: s for s in doc.get('services') or ()}
    names = set(peers['live']) | set(peers['dead']) | set(
        peers['never_seen']) | set(doc['peer_list'])
    for name in sorted(names):
        if name in peers['live']:
            state = _('live')
        elif name in peers['dead']:
            state = _('dead')
        else:
            state = _('never seen')
        if name == doc['host']:
            state += _(' (this host)')
        holder = services.get(name)
        process = '-'
        if holder is not None:
            process = (_('%(origin)s since %(started)s') % {
                'origin': holder['origin'] or '?',
                'started': holder['started_at'] or '?'}
                if holder['incarnation'] else _('(name given up)'))
        rows.append((name, state, process))
    lines.append(_('Peers%s') % (_(' (STALE: membership source '
                                   'unreachable)') if peers['stale']
                                 else ''))
    lines += _output.format_table((_('HOST'), _('STATE'), _('PROCESS')),
                                  rows, '  ')
    lines.append('')
    lines.append(_('Nodes'))
    lines += _output.format_fields([
        (_('listed in the group'), doc['listed']),
        (_('managed by this host'), _(
            '%(all)d (%(ring)d by the ring, %(inst)d by own instance)') % {
                'all': doc['managed_count'], 'ring': doc['by_ring_count'],
                'inst': doc['by_instance_count']}),
        (_('instances of others'), doc['foreign_count']),
        (_('stranded'), doc['stranded_count']),
        (_('change feed'), _('usable: refreshes read what changed')
         if doc['change_feed']['usable'] else
         _('NOT usable, every refresh lists in full: %s')
         % doc['change_feed']['problem']),
    ], '  ')
    claims = doc['claims']
    lines.append('')
    if claims['enabled']:
        lines.append(_('Claims (by the database clock)'))
        lines += _output.format_fields([
            (_('held by this host'), _(
                '%(held)d, the first expiring in %(left)s s') % {
                    'held': claims['held'],
                    'left': ('-' if claims['expires_in'] is None
                             else claims['expires_in'])}),
            (_('by owner'), ', '.join(
                '%s=%d' % item for item in claims['by_owner'].items())
             or '-'),
            (_('expired (free to take)'), claims['expired']),
        ], '  ')
    else:
        lines.append(_('Claims: off ([ironic_partition] claims)'))
    if long_listing and doc['managed']:
        lines.append('')
        lines.append(_('Managed nodes'))
        lines += _output.format_table(
            (_('UUID'), _('BY'), _('INSTANCE'), _('PROVISION STATE'),
             _('POWER'), _('MAINT')),
            [(n['uuid'], n['reason'], n['instance_uuid'],
              n['provision_state'], n['power_state'],
              _('yes') if n['maintenance'] else _('no'))
             for n in doc['managed']], '  ')
    if doc['stranded']:
        lines.append('')
        lines.append(_('Stranded nodes (their instance belongs to a peer '
                       'that is not alive)'))
        lines += _output.format_table(
            (_('NODE'), _('INSTANCE'), _('OWNER'), _('SUGGESTED HOST')),
            [(s['node'], s['instance'], s['owner'], s['suggested_host'])
             for s in doc['stranded']], '  ')
    advice = _advice(doc)
    if advice:
        lines.append('')
        lines += advice
    return lines


def run(conf):
    """Run ``ironic-partition status``.

    :param conf: the parsed ``ConfigOpts``.
    :returns: the exit code.
    """
    args = conf.command
    instance_hosts = instance_owners.load(args.instance_hosts)
    data = gather(conf, args.role, instance_hosts, _output.Progress())
    doc = to_dict(data)
    if args.format == 'json':
        _output.emit_json(doc)
    else:
        _output.write_lines(render(doc, long_listing=args.long))
    return _errors.EXIT_OK


def add_parsers(subparsers):
    """Add the ``status`` subcommand.

    :param subparsers: the argparse subparsers of ``ironic-partition``.
    :returns: None
    """
    parser = subparsers.add_parser(
        'status', help=_('Show the nodes this host manages, its peers and '
                         'the stranded nodes.'),
        epilog=_errors.exit_codes_epilog())
    _args.add_format_argument(parser)
    _args.add_role_argument(parser, membership_base.ROLE_NOVA_COMPUTE)
    _args.add_instance_hosts_argument(parser)
    parser.add_argument('--long', action='store_true',
                        help=_('List every managed node.'))
    parser.set_defaults(func=run)
