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

Runs one refresh of
:class:`~ironic_partition.partition.partitioner.Partitioner` (the code path of
the nova driver and of the agent) with the membership read but not joined, and
prints: the settings, the peers (live, dead, never seen), the managed nodes,
and the stranded nodes (instances of peers that are not alive) with what to do
about them.
"""

from cliff import columns
from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.claims import db_clock
from ironic_partition.cmd import _args
from ironic_partition.cmd import _output
from ironic_partition.cmd import base as base_cmd
from ironic_partition.ironic import conductor_groups
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import instance_owners
from ironic_partition.partition import partitioner
from ironic_partition.partition import readonly
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def gather(conf, role, instance_hosts=None, progress=None, client=None):
    """Compute the nodes this host manages once, read-only.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role of this host's service.
    :param instance_hosts: instance UUID to host, or None.
    :param progress: a :class:`~ironic_partition.cmd._output.Progress`.
    :param client: the Ironic client; by default the one ``[ironic]``
        configures.
    :returns: a dict with ``settings``, ``conductors``, ``result`` (a
        :class:`~ironic_partition.partition.refresh_result.RefreshResult`),
        ``ring_mode``, ``stranded``, ``instance_hosts``, ``backend`` (its
        status dict), ``role``, ``claims`` (see :func:`read_claims`) and
        ``feed_problem`` (why Ironic's change feed cannot be used, read
        once after the listing, or None).
    :raises: the errors mapped by :func:`_errors.exit_code_for`.
    """
    progress = progress or _output.Progress(enabled=False)
    settings = settings_mod.from_conf(conf)
    if client is None:
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
        ``origin``, ``partition_key`` and ``database_clocks`` (what the
        service measured of the database nodes' clocks, or None); empty
        without a database.
    """
    db = getattr(getattr(membership, 'store', None), 'db', None)
    if db is None:
        return []
    down_time = membership.settings.service_down_time
    return [{'host': s.host, 'alive': s.alive,
             'incarnation': s.incarnation,
             'started_at': (s.started_at.isoformat()
                            if s.started_at is not None else None),
             'origin': s.origin, 'partition_key': s.partition_key,
             'database_clocks': s.database_clocks}
            for s in db.services.services(role, down_time).services]


#: The spread of a service's recorded database clocks worth a word in
#: ``status`` (the example alert's threshold, see the metrics page).
CLOCKS_WORTH_SHOWING = 0.5


def _clocks(levels):
    """The database clocks a service measured, when they differ.

    :param levels: ``{node: seconds}``, or None.
    :returns: ``'; database clocks: db3:3306 +6.002 s, ...'`` (highest
        first) when they spread over :data:`CLOCKS_WORTH_SHOWING`, else ''.
    """
    if db_clock.spread(levels) < CLOCKS_WORTH_SHOWING:
        return ''
    return '; ' + _('database clocks: %s') % db_clock.describe_levels(levels)


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

    :param part: the
        :class:`~ironic_partition.partition.partitioner.Partitioner`.
    :param result: its
        :class:`~ironic_partition.partition.refresh_result.RefreshResult`.
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
            'outside': {peer: list(by) for peer, by in
                        getattr(membership, 'counted_by', ())},
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


def advice(doc):
    """What the operator should do about what ``status`` found.

    :param doc: what :func:`to_dict` returned.
    :returns: a list of sentences, empty when nothing needs doing.
    """
    lines = []
    if doc['stranded']:
        owners = sorted({s['owner'] for s in doc['stranded'] if s['owner']})
        lines.append(_('Nobody manages the stranded nodes while '
                       '%(owners)s is not alive. Restart it; it takes '
                       'them back at its first refresh. If it is gone for '
                       'good, "ironic-partition recover %(first)s" (where '
                       'nova-manage runs, with nova\'s nova.conf as well) '
                       'proves it gone, fences it and moves its servers '
                       'to the suggested live hosts; it changes nothing '
                       'without --yes. nova\'s own procedure is "nova-manage '
                       'db ironic_compute_node_move --ironic-node-uuid NODE '
                       '--destination-host HOST" per node, after forcing '
                       'its compute service down.')
                     % {'owners': ', '.join(owners) or '?',
                        'first': owners[0] if owners else 'HOST'})
    elif doc['foreign_count'] and not doc['instance_owners_known']:
        lines.append(_('%d nodes have instances of other services. Pass '
                       '--instance-hosts to tell which belong to peers '
                       'that are not alive (stranded).')
                     % doc['foreign_count'])
    outside = doc['peers'].get('outside')
    if outside:
        lines.append(_('%(peers)s run nova\'s own driver, or this driver '
                       'with another [ironic_partition_database] '
                       'connection: up in nova\'s service group, they '
                       'never heartbeat %(db)s. Their share of the ring is '
                       'left to them (reported by them, claimed by '
                       'nobody). Finish switching their compute_driver, or '
                       'correct their connection; this goes away once '
                       'they heartbeat it.')
                     % {'peers': ', '.join(sorted(outside)),
                        'db': doc['membership_connection'] or '?'})
    conductors = doc.get('conductors')
    if conductors is not None and not conductors['alive']:
        lines.append(_('No conductor of conductor group %(group)s is alive '
                       '(%(dead)s): Ironic cannot deploy, power or clean '
                       'the %(n)d nodes of the group until one is. Start an '
                       'ironic-conductor with [conductor] conductor_group = '
                       '%(group)s.')
                     % {'group': doc['partition_key'] or '""',
                        'dead': (_('dead: %s') % ', '.join(
                            conductors['dead'])) if conductors['dead']
                        else _('none registered'),
                        'n': doc['listed']})
    if not doc['change_feed']['usable']:
        lines.append(_('Ironic\'s change feed is not usable, so every '
                       'refresh lists the group in full: %s')
                     % doc['change_feed']['problem'])
    return lines


class PeersColumn(columns.FormattableColumn):
    """The peers: a line each in a table, the document in JSON and YAML.

    A line gives the peer's state and the process holding its name.

    The value is ``(peers, services, peer_list, host)``.
    """

    def human_readable(self):
        peers, services, peer_list, host = self._value
        holders = {s['host']: s for s in services or ()}
        names = (set(peers['live']) | set(peers['dead'])
                 | set(peers['never_seen']) | set(peer_list))
        outside = peers.get('outside') or {}
        lines = []
        for name in sorted(names):
            if name in outside:
                state = _('live in nova, outside the membership database '
                          '(counted by %s)') % ', '.join(outside[name])
            elif name in peers['live']:
                state = _('live')
            elif name in peers['dead']:
                state = _('dead')
            else:
                state = _('never seen')
            if name == host:
                state += _(' (this host)')
            holder = holders.get(name)
            process = ''
            if holder is not None:
                process = ('; ' + _('%(origin)s since %(started)s') % {
                    'origin': holder['origin'] or '?',
                    'started': holder['started_at'] or '?'}
                    if holder['incarnation'] else
                    '; ' + _('name given up'))
                process += _clocks(holder.get('database_clocks'))
            lines.append('%s: %s%s' % (name, state, process))
        if peers['stale']:
            lines.append(_('STALE: the membership source is unreachable'))
        return '\n'.join(lines) or '-'

    def machine_readable(self):
        return self._value[0]


class ManagedColumn(base_cmd.RecordsColumn):
    """The managed nodes: their count in a table unless ``--long``."""

    full = False

    def human_readable(self):
        if self.full:
            return '\n'.join(
                '%s %s%s' % (n['uuid'], n['reason'],
                             ' instance=%s' % n['instance_uuid']
                             if n['instance_uuid'] else '')
                for n in self._value) or '-'
        return _('%d nodes (--long lists them)') % len(self._value)


class LongManagedColumn(ManagedColumn):
    full = True


class Status(base_cmd.ShowOne):
    """Show the nodes this host manages, its peers and the stranded nodes.

    The settings in force, the peers (live, dead, never seen) and the
    process holding each host name, the managed nodes (by the ring and by
    own instance), the stranded nodes (instances of peers that are not
    alive) with the live host the ring suggests for each, the ownership
    claims and whether Ironic's change feed works. Read-only: it joins no
    membership and takes no claim.
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _args.add_instance_hosts_argument(parser)
        parser.add_argument('--long', action='store_true',
                            help=_('List every managed node in the table '
                                   '(JSON and YAML always list them).'))
        return parser

    def take_action(self, parsed_args):
        conf = self.load_conf(parsed_args)
        instance_hosts = instance_owners.load(parsed_args.instance_hosts)
        data = gather(conf, parsed_args.role, instance_hosts,
                      _output.Progress(), client=self.ironic_client(conf))
        return present(to_dict(data), long_listing=parsed_args.long)


def present(doc, long_listing=False):
    """The ``status`` record: the document's keys as the columns.

    :param doc: what :func:`to_dict` returned.
    :param long_listing: list every managed node in a table.
    :returns: ``(columns, values)`` for cliff's ``ShowOne``.
    """
    doc = dict(doc, advice=advice(doc))
    doc['peers'] = (doc['peers'], doc['services'], doc['peer_list'],
                    doc['host'])
    return base_cmd.record(doc, {
        'peers': PeersColumn,
        'managed': LongManagedColumn if long_listing else ManagedColumn,
        'advice': base_cmd.LinesColumn,
        'ring_members': base_cmd.ListColumn,
        'peer_list': base_cmd.ListColumn,
    })
