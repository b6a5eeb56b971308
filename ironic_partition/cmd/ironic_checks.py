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

"""The rows of ``check`` and of the upgrade check that read Ironic.

:func:`ironic_partition.cmd.checks.run_checks` runs them after the rows
that read the configuration and the claims database: ``ironic`` (its
conductors answer), ``group``, ``shards``, the inspection audit, the
change feed against a full listing, and the fleet's coverage. Each takes
the run's report and adds its findings to it.
"""

import collections

from oslo_config import cfg

from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition import exception
from ironic_partition.inspection import audit as inspection_audit
from ironic_partition.ironic import conductor_groups
from ironic_partition.ironic import node_index
from ironic_partition import settings as settings_mod

#: A resync interval no check waits for: its second refresh reads the
#: change feed.
_NEVER_RESYNC = 10 ** 9


def check_ironic(conf, report, client=None):
    try:
        if client is None:
            client = settings_mod.ironic_client(conf)
        conductors = client.list_conductors()
    except exception.IronicPartitionException as e:
        report.problem('ironic', e)
        return client, None
    report.ok('ironic')
    return client, conductors


def check_group(client, conductors, settings, report):
    key = settings.partition_key
    if key is None:
        report.ok('group')
        return
    groups = conductor_groups.by_group(conductors)
    if key not in groups:
        report.problem('group', exception.UnknownConductorGroup(
            group=key, endpoint=client.endpoint,
            known=conductor_groups.known_text(groups)))
        return
    if not groups[key]['alive']:
        report.problem('group', _(
            'Conductor group %(group)s has no alive conductor (dead: '
            '%(dead)s): Ironic manages none of its nodes. Start or repair '
            'an ironic-conductor with [conductor] conductor_group = '
            '%(group)s.') % {'group': _output.show_key(key),
                             'dead': ', '.join(groups[key]['dead'])})
        return
    report.ok('group')


def check_inspection(client, conductors, path, report):
    """Audit the nodes against the inspection hook's map (read-only)."""
    try:
        pmap, default_group = inspection_audit.load_map(path)
    except (exception.IronicPartitionException, cfg.Error,
            ValueError) as e:
        report.problem('inspection-map', _(
            'Cannot read the inspection map from %(path)s: %(err)s') % {
                'path': path, 'err': _errors.describe_error(e)})
        return
    try:
        nodes = client.list_node_dicts(
            inspection_audit.NODE_FIELDS,
            microversion=inspection_audit.MICROVERSION)
    except exception.IronicPartitionException as e:
        report.problem('inspection-map', e)
        return
    for finding in inspection_audit.audit(pmap, nodes, conductors,
                                          default_group):
        if finding.kind == 'served':
            report.problem('inspection-served', finding.message)
        else:
            report.warning('inspection-map', finding.message)
    report.ok('inspection-map')
    report.ok('inspection-served')


def check_shards(client, settings, report):
    """Warn about nodes a sharded deployment leaves out.

    :param client: the Ironic client.
    :param settings: the partition settings.
    :param report: the :class:`_Report`.
    :returns: None
    """
    key = settings.partition_key
    try:
        nodes = client.list_nodes(conductor_group=key,
                                  fields=('uuid', 'shard'))
    except exception.IronicPartitionException as e:
        if settings.shard is not None:
            report.problem('shards', e)
        # NOTE(ironic-partition): without a shard configured, an Ironic
        # older than API 1.82 (no shards at all) is no problem.
        return
    shards = collections.Counter(n.shard for n in nodes)
    if settings.shard is None and not set(shards) - {None}:
        report.ok('shards')
        return
    where = (_('the whole fleet') if key is None
             else _('conductor group %s') % _output.show_key(key))
    if shards[None]:
        report.warning('shards', _(
            '%(count)d of the %(total)d nodes of %(where)s have no shard: '
            'no service with [ironic] shard set lists them, so no one '
            'manages them unless a service without a shard does. Set '
            'their shard (openstack baremetal node set --shard <name>).')
            % {'count': shards[None], 'total': len(nodes), 'where': where})
    if settings.shard is not None:
        _check_own_shard(client, settings, shards, where, report)
    upper = sorted(s for s in shards if s is not None and s != s.lower())
    if upper:
        report.warning('shards', _(
            'Shard names %(names)s have upper-case letters: Ironic '
            'lower-cases the shard it filters nodes on, so on a '
            'case-sensitive database (PostgreSQL) their nodes are never '
            'listed by shard. Rename them in lower case.') % {
                'names': ', '.join(repr(s) for s in upper)})
    report.ok('shards')


def _check_own_shard(client, settings, shards, where, report):
    """Fail a shard under which the service would manage nothing.

    Asked as the service asks (Ironic's own shard filter, which compares
    as the database does), not by comparing names here: a node in
    ``ShardA`` is listed for ``[ironic] shard = sharda`` on MySQL and not
    on PostgreSQL.
    """
    try:
        listed = client.list_nodes(conductor_group=settings.partition_key,
                                   fields=('uuid',), shard=settings.shard)
    except exception.IronicPartitionException as e:
        report.problem('shards', e)
        return
    if len(listed):
        return
    known = sorted(s for s in shards if s is not None)
    near = [s for s in known if s.lower() == settings.shard]
    report.problem('shards', _(
        'Ironic lists no node of %(where)s in [ironic] shard %(shard)r (the '
        'query this service makes): it would manage nothing. %(why)sShards '
        'there: %(known)s.') % {
            'where': where, 'shard': settings.shard,
            'why': (_('Nodes are in %s, which Ironic\'s filter does not '
                      'match on this database: rename the shard in lower '
                      'case. ') % ', '.join(repr(s) for s in near)
                    if near else ''),
            'known': ', '.join(repr(s) for s in known) or '-'})


def check_feed(client, conf, settings, report, compare=True):
    """Check that the change feed can be used, and compare it.

    Lists the partition in full and reads Ironic's change feed once, as a
    refresh does: a feed that cannot be used is a warning (every refresh
    then lists in full). With ``compare``, lists in full again: the two
    node sets must be the same. A node changed between the listings
    differs too; run the check again before acting on one difference.

    :param client: the Ironic client.
    :param conf: the ``ConfigOpts``.
    :param settings: the partition settings.
    :param report: the :class:`_Report`.
    :param compare: also compare with a second full listing.
    :returns: None
    """
    overlap = conf.ironic_partition.change_feed_overlap
    key, shard = settings.partition_key, settings.shard
    fed = node_index.NodeIndex(client, _NEVER_RESYNC, overlap)
    truth = node_index.NodeIndex(client, _NEVER_RESYNC, overlap)
    try:
        fed.refresh(key, shard)
        update = fed.refresh(key, shard)
        if compare:
            truth.refresh(key, shard)
    except exception.IronicPartitionException as e:
        report.problem('feed', e)
        return
    if update.full:
        report.warning('feed', _(
            'Ironic\'s change feed cannot be used here, so every refresh '
            'lists the partition in full: %s') % (fed.feed_problem or
                                                  update.reason))
        return
    if not compare:
        report.ok('feed')
        return
    differ = sorted(
        u for u in set(fed.nodes) | set(truth.nodes)
        if fed.nodes.get(u) != truth.nodes.get(u))
    if differ:
        report.problem('feed', _(
            'The change feed and a full listing disagree on %(n)d nodes '
            '(%(sample)s): a refresh between two full listings would not '
            'see what Ironic lists. Lower [ironic_partition] '
            'full_resync_interval to 0 (list in full at every refresh) '
            'and report it.') % {
                'n': len(differ), 'sample': ', '.join(differ[:5])})
        return
    report.ok('feed')


def _serves(service, group, shard):
    # NOTE(ironic-partition): what a compute lists: its conductor group
    # (every group when unset), and within it its shard (every shard when
    # unset).
    return ((service.partition_key is None or
             service.partition_key.lower() == group) and
            (service.shard is None or
             (shard is not None and service.shard.lower() == shard)))


def check_fleet(client, conductors, role, report, keeps_services=True,
                new_deployment=False):
    """Check that every node of the fleet can be managed.

    Lists every node once (its group, shard and hardware type): each
    (conductor group, shard) with nodes must be listed by a live service
    of the role (when the membership database keeps the services), a
    group should not mix nodes with and without a shard, and an alive
    conductor of the node's group must serve its hardware type.

    :param client: the Ironic client.
    :param conductors: Ironic's conductors.
    :param role: the membership role.
    :param report: the :class:`_Report`.
    :param keeps_services: whether the membership backend keeps the
        services (the ``database`` backend): without their list, the
        coverage is said not checked.
    :param new_deployment: no service has run yet: whether live services
        list every group is not checked.
    :returns: None
    """
    try:
        nodes = client.list_node_dicts(
            inspection_audit.NODE_FIELDS,
            microversion=inspection_audit.MICROVERSION)
    except exception.IronicPartitionException as e:
        report.problem('coverage', e)
        return
    for finding in inspection_audit.audit(None, nodes, conductors):
        if finding.kind == 'served':
            report.problem('served', finding.message)
    report.ok('served')
    parts = collections.Counter(
        ((n.get('conductor_group') or '').lower(),
         (n.get('shard') or '').lower() or None) for n in nodes)
    groups = collections.defaultdict(dict)
    for (group, shard), count in parts.items():
        groups[group][shard] = count
    for group, shards in sorted(groups.items()):
        unsharded = shards.get(None, 0)
        if unsharded and len(shards) > 1:
            report.warning('coverage', _(
                'Conductor group %(group)r has %(with)d nodes with a shard '
                'and %(without)d without: a compute with [ironic] shard '
                'set never lists the nodes without one. Give every node of '
                'the group a shard, or none.') % {
                    'group': group, 'with': sum(shards.values()) - unsharded,
                    'without': unsharded})
    if new_deployment:
        # NOTE(ironic-partition): no service runs yet, so none lists
        # anything: coverage is checked once they run.
        pass
    elif report.services is None and keeps_services:
        # NOTE(ironic-partition): never a Success that was not checked.
        report.warning('coverage', _(
            'Not checked whether a live %(role)s service lists each '
            'conductor group and shard: the services in the membership '
            'database could not be read (see the membership database '
            'check).') % {'role': role})
    elif report.services is not None:
        live = [s for s in report.services if s.alive]
        for (group, shard), count in sorted(
                parts.items(), key=lambda kv: (kv[0][0], kv[0][1] or '')):
            if not any(_serves(s, group, shard) for s in live):
                where = (_('conductor group %r') % group if shard is None
                         else _('conductor group %(group)r, shard '
                                '%(shard)r') % {'group': group,
                                                'shard': shard})
                report.warning('coverage', _(
                    '%(n)d nodes in %(where)s are listed by no live '
                    '%(role)s service: nothing can place servers on them. '
                    'Start one with [ironic] partition_key (and shard) '
                    'set for them, or move the nodes.') % {
                        'n': count, 'where': where, 'role': role})
    report.ok('coverage')
