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

"""The checks of ``ironic-partition check`` and of the upgrade check.

:func:`run_checks` validates a configuration against the system and
returns a document of problems, warnings, passed and skipped checks;
:mod:`ironic_partition.cmd.check` prints it and
:mod:`ironic_partition.cmd.upgrade_check` groups it. The checks:

``config``
    the options are valid and this host is in ``[ironic] peer_list``;
``database``
    the membership database is reachable and migrated;
``ironic``
    Ironic answers;
``group``
    the conductor group exists in Ironic and has alive conductors;
``case``
    config and Ironic agree on the case of names (partition_key against
    Ironic's group, peer_list against this host's name): ironic-partition
    ignores case, but nova's and Ironic's own code do not;
``peers``
    every peer has heartbeated at least once;
``shards``
    when shards are in use (``[ironic] shard`` is set, or nodes of the
    group have one), warns about nodes of the group without a shard (no
    service of a shard manages them), an empty configured shard, and
    shard names with upper-case letters (Ironic lower-cases the names it
    filters on).

With ``--inspection-config IRONIC_CONF``, two read-only audits against
the inspection hook's map (``[ironic_partition_inspection] map`` of that
file) run too:

``inspection-map``
    nodes whose conductor group or shard differs from the map (enrolled
    before the hook, by hand, or with an instance); warnings;
``inspection-served``
    nodes in a conductor group where no alive conductor serves their
    hardware type; problems.

With ``--compare-feed``:

``feed``
    the node index kept by Ironic's change feed equals a full listing of
    the partition (a problem when not); a warning says why the feed
    cannot be used, when it cannot (every refresh then lists in full).

Peers that heartbeated but are dead now are reported as warnings: they do
not change the exit code.
"""

import collections
import os

from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import ironic_checks
from ironic_partition import conf as ip_conf
from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import grants
from ironic_partition.db import migration
from ironic_partition import exception
from ironic_partition.ironic import conductor_groups
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import readonly
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)

#: One finding: ``check`` is the check's name, ``severity`` ``problem`` or
#: ``warning``.
Finding = collections.namedtuple('Finding', ['check', 'severity', 'message'])

CHECKS = ('config', 'database', 'privileges', 'duplicates', 'schema',
          'ironic', 'group', 'case', 'peers', 'shards')

#: The audits that ``--inspection-config`` adds.
INSPECTION_CHECKS = ('inspection-map', 'inspection-served')

#: The comparison that ``--compare-feed`` adds.
FEED_CHECKS = ('feed',)

#: The checks of the whole fleet that the upgrade check adds.
FLEET_CHECKS = ('coverage', 'served')


class _Report(object):
    def __init__(self):
        self.findings = []
        self.passed = []
        #: The services of the role in the membership database, when it
        #: keeps them (the ``database`` backend), else None.
        self.services = None

    def problem(self, check, message):
        self.findings.append(Finding(check, 'problem',
                                     exception.one_line(message)))

    def warning(self, check, message):
        self.findings.append(Finding(check, 'warning',
                                     exception.one_line(message)))

    def ok(self, check):
        if check not in self.passed and not any(
                f.check == check and f.severity == 'problem'
                for f in self.findings):
            self.passed.append(check)

    @property
    def problems(self):
        return [f for f in self.findings if f.severity == 'problem']


def _lenient_settings(conf):
    """Read what can be read of the settings when validation failed.

    :param conf: the ``ConfigOpts``.
    :returns: a :class:`~ironic_partition.settings.Settings` with what
        could be read (key and peers may be None / empty).
    """
    try:
        key = ip_conf.normalize_partition_key(_raw_partition_key(conf)[1])
    except (exception.ConfigurationError, cfg.Error, ValueError):
        key = None
    try:
        peers = ip_conf.normalize_peer_list(conf.ironic.peer_list)
    except (exception.ConfigurationError, cfg.Error, ValueError):
        peers = ()
    try:
        host = ip_conf.get_host(conf)
    except (cfg.Error, ValueError):
        host = None
    try:
        shard = ip_conf.normalize_shard(conf.ironic.shard)
    except (exception.ConfigurationError, cfg.Error, ValueError):
        shard = None
    return settings_mod.from_conf(
        conf, partition=ip_conf.PartitionSettings(key, peers, host, shard),
        lenient=True)


def _raw_partition_key(conf):
    group = conf[ironic_conf.GROUP]
    for name in ('partition_key', 'conductor_group'):
        try:
            value = getattr(group, name)
        except (cfg.NoSuchOptError, cfg.Error, ValueError):
            continue
        if value is not None:
            return name, value
    return None, None


def _raw_host(conf):
    host = conf.ironic_partition.host
    if host:
        return '[ironic_partition] host', host
    if 'host' in conf and conf.host:
        return '[DEFAULT] host', conf.host
    return None, None


def _check_config(conf, report):
    try:
        settings = settings_mod.from_conf(conf)
    except (exception.ConfigurationError, cfg.Error, ValueError) as e:
        report.problem('config', _errors.describe_error(e, conf))
        return _lenient_settings(conf)
    report.ok('config')
    return settings


def _check_database(conf, settings, role, report):
    """Check the membership source; return its membership or None."""
    if not settings.host:
        return None
    local = _local_database_error(settings, role)
    if local is not None:
        report.problem('database', _errors.describe_error(local, conf))
        # NOTE(ironic-partition): the row failed; an existing file is still
        # read (read-only) for the peers' check, a missing one is not
        # blamed a second time.
        path = readonly.sqlite_file(settings.database.connection)
        if path is None or not os.path.exists(path):
            return None
    try:
        backend = readonly.open_membership(settings, role)
    except exception.IronicPartitionException as e:
        if local is None:
            report.problem('database', e)
        return None
    try:
        membership = readonly.read_members(backend, settings)
        db = getattr(getattr(backend, 'store', None), 'db', None)
        if db is not None:
            if local is None:
                report.ok('database')
            _check_privileges(db, report)
            _check_duplicates(db, role, report)
            report.services = db.services.services(
                role, conf[partition_conf.GROUP].service_down_time).services
            _check_schema(db, report.services, report)
    except exception.IronicPartitionException as e:
        if local is None:
            report.problem('database', e)
        return None
    finally:
        readonly.close_membership(backend)
    if local is None:
        report.ok('database')
    return membership


def _local_database_error(settings, role):
    """The refusal nova-compute would give this SQLite database, or None.

    nova-compute refuses a SQLite claims database while ``[ironic]
    peer_list`` names other hosts (at start, before the file is used), so
    the check says the same, whether or not the file exists yet.
    """
    database = getattr(settings, 'database', None)
    if (role != membership_base.ROLE_NOVA_COMPUTE or database is None or
            settings.membership_backend != 'database'):
        return None
    connection = database.connect()
    if connection.dialect != 'sqlite':
        return None
    try:
        claim_settings.check_shared_database(
            settings.peer_list, connection, settings.host, False)
    except exception.ConfigurationError as e:
        return e
    return None


def _check_privileges(db, report):
    """Check the service's database user has its grants, and no more.

    A running service needs what ``ironic-partition-dbsync grants``
    prints (a problem when a right is missing); a user that can also
    create, drop or alter tables (the schema owner, a superuser) lets one
    compromised or misconfigured service destroy what every service
    relies on (a warning).
    """
    missing = grants.missing_rights(db)
    if missing:
        report.problem('privileges', _(
            'The user of [ironic_partition_database] connection (%(conn)s) '
            'lacks %(missing)s, which every service needs: run the '
            'statements "ironic-partition-dbsync grants --user USER" '
            'prints, as an administrator') % {
                'conn': db.masked_connection, 'missing': ', '.join(missing)})
    rights = grants.schema_rights(db)
    if rights:
        report.warning('privileges', _(
            'The user of [ironic_partition_database] connection (%(conn)s) '
            'has more rights than a running service needs: %(rights)s. '
            'Give the services a user with only the grants '
            '"ironic-partition-dbsync grants --user USER" prints, and keep '
            'the schema owner for ironic-partition-dbsync') % {
                'conn': db.masked_connection, 'rights': ', '.join(rights)})
    else:
        report.ok('privileges')


def _check_schema(db, services, report):
    """Say what a rolling upgrade left: a newer schema, mixed versions.

    A schema older than this code, or newer than it may run against, is
    a ``database`` problem already (the membership could not be opened).
    """
    found = len(report.findings)
    current = db.schema_revision()
    head = migration.head_revision()
    if current != head:
        contract = migration.read_contract(db.engine)
        report.warning('schema', _(
            'The membership database is at schema revision %(cur)s '
            '(upgraded by ironic-partition %(by)s), newer than this host\'s '
            'ironic-partition %(version)s (revisions up to %(head)s): its '
            'later migrations only add, so this version runs, but upgrade '
            'ironic-partition on this host') % {
                'cur': current, 'head': head, 'version': __version__,
                'by': (contract and contract.upgraded_by) or
                _('an unknown version')})
    versions = collections.defaultdict(list)
    for service in services:
        if service.alive:
            versions[service.version or _('(unknown)')].append(service.host)
    if len(versions) > 1:
        report.warning('schema', _(
            'The live services run %(count)d versions of ironic-partition: '
            '%(versions)s. A rolling upgrade is under way: finish it (every '
            'service on the new version) before the next '
            '"ironic-partition-dbsync upgrade"') % {
                'count': len(versions),
                'versions': '; '.join(
                    '%s on %s' % (version, ', '.join(sorted(hosts)))
                    for version, hosts in sorted(versions.items()))})
    if len(report.findings) == found:
        report.ok('schema')


def _check_duplicates(db, role, report):
    """Report claims held by an incarnation that lost its host name.

    Such claims belong to a process that another one with the same host
    name replaced (a takeover), or that runs as a duplicate: they are
    never renewed and expire within the lease.
    """
    holders = {s.host: s.incarnation
               for s in db.services.services(role, 0).services}
    stray = {}
    for claim in db.claims.read_claims(role).claims:
        if (claim.valid and claim.incarnation is not None
                and claim.owner is not None
                and holders.get(claim.owner) != claim.incarnation):
            stray.setdefault((claim.owner, claim.incarnation), 0)
            stray[(claim.owner, claim.incarnation)] += 1
    for (host, incarnation), count in sorted(stray.items()):
        report.problem('duplicates', _(
            'host %(host)s: %(n)d valid claims are held by incarnation '
            '%(inc)s, which no longer holds the host name (now %(now)s): '
            'a duplicate process with the same host name, or a takeover in '
            'progress; they are never renewed and expire within '
            '[ironic_partition] lease_time') % {
                'host': host, 'n': count, 'inc': incarnation,
                'now': holders.get(host) or _('nobody')})
    if not stray:
        report.ok('duplicates')


def _check_case(conf, settings, conductors, report):
    option, raw_key = _raw_partition_key(conf)
    if raw_key is not None and raw_key != raw_key.lower():
        where = (_('Ironic\'s conductor group %r') % raw_key.lower()
                 if conductors is not None and raw_key.lower() in
                 conductor_groups.by_group(conductors)
                 else _('Ironic\'s lower-case group names'))
        report.problem('case', _(
            '[ironic] %(opt)s %(raw)r differs in case from %(where)s: '
            'ironic-partition ignores case, but nova\'s and Ironic\'s own '
            'code compare it as written. Write %(low)r.') % {
                'opt': option, 'raw': raw_key, 'where': where,
                'low': raw_key.lower()})
    source, raw_host = _raw_host(conf)
    try:
        peers = list(conf.ironic.peer_list or ())
    except (cfg.Error, ValueError):
        peers = []
    for peer in peers:
        peer = peer.strip()
        if raw_host and peer.lower() == raw_host.lower() and peer != raw_host:
            report.problem('case', _(
                '[ironic] peer_list entry %(peer)r differs in case from '
                'this host\'s name %(host)r (%(src)s): ironic-partition '
                'ignores case, but nova\'s own driver does not. Write it '
                'as %(host)r.') % {
                    'peer': peer, 'host': raw_host, 'src': source})
        elif peer != peer.lower() and not (raw_host and peer.lower()
                                           == raw_host.lower()):
            report.warning('case', _(
                '[ironic] peer_list entry %(peer)r is not lower case; '
                'services register lower-cased names (%(low)r).') % {
                    'peer': peer, 'low': peer.lower()})
    report.ok('case')


def _check_peers(settings, membership, report, new_deployment=False,
                 adopting=False):
    if membership is None:
        return
    # NOTE(ironic-partition): before the first service of a new deployment
    # starts, no peer has heartbeated yet: that is expected, not a fault.
    # During a rolling adoption, a peer still on nova's own driver never
    # does: nova-compute counts it from nova's service group.
    never = () if new_deployment else sorted(membership.never_seen)
    for peer, by in getattr(membership, 'counted_by', ()):
        finding = report.warning if adopting else report.problem
        finding('peers', _(
            'Peer %(peer)r is up in nova\'s service group but never '
            'heartbeats the membership database: %(by)s count it in the '
            'ring and leave its share of the nodes to it. It runs nova\'s '
            'own driver (%(when)s), or this driver with another '
            '[ironic_partition_database] connection (correct it).') % {
                'peer': peer, 'by': ', '.join(by),
                'when': (_('expected during a rolling switch, --adopting')
                         if adopting else _('finish the switch, or pass '
                                            '--adopting while it lasts'))})
    if adopting:
        for peer in never:
            report.warning('peers', _(
                'Peer %(peer)r in [ironic] peer_list has never heartbeated '
                'in the membership database: taken to run nova\'s own '
                'driver (--adopting). nova-compute with ironic-partition '
                'counts it in the ring while nova\'s service group has it '
                'up, and leaves its share of the nodes to it; if it is not '
                'an Ironic compute up in nova, its share is reported by '
                'nobody. Run the check without --adopting once every '
                'compute runs ironic-partition.') % {'peer': peer})
        never = ()
    for peer in never:
        report.problem('peers', _(
            'Peer %(peer)r in [ironic] peer_list has never heartbeated in '
            'the membership database: it is not running, runs with another '
            'membership database or role, or registers under another name '
            '(check its [ironic_partition] host).') % {'peer': peer})
    for peer in sorted(membership.dead):
        report.warning('peers', _(
            'Peer %(peer)r is not alive (no heartbeat within '
            '[ironic_partition] service_down_time); its share of the '
            'nodes is managed by the live peers until it returns.') % {
                'peer': peer})
    if membership.stale:
        report.problem('peers', _('The membership source is unreachable; '
                                  'only the last known members are '
                                  'known.'))
    report.ok('peers')


def run_checks(conf, role, inspection_config=None, compare_feed=False,
               feed_usable=False, fleet=False, client=None,
               new_deployment=False, adopting=False):
    """Run every check.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role.
    :param inspection_config: an ironic.conf with the inspection hook's
        map, to audit the nodes against it; None skips the audit.
    :param compare_feed: also compare the change feed with a full listing
        (two full listings of the partition).
    :param feed_usable: also check that the change feed can be used (one
        full listing of the partition); implied by ``compare_feed``.
    :param fleet: also check that every conductor group and shard with
        nodes is served (one listing of every node).
    :param client: the Ironic client; by default the one ``[ironic]``
        configures.
    :param new_deployment: before the first service of the role has
        started: peers that never heartbeated, and groups no live service
        lists, are expected, not findings.
    :param adopting: during a rolling switch from nova's own driver: a
        peer that never heartbeated is taken to run nova's driver (a
        warning that says so), not a problem.
    :returns: a dict with ``problems``, ``warnings``, ``passed`` and the
        settings read.
    """
    report = _Report()
    settings = _check_config(conf, report)
    membership = _check_database(conf, settings, role, report)
    client, conductors = ironic_checks.check_ironic(conf, report, client)
    if conductors is not None:
        ironic_checks.check_group(client, conductors, settings, report)
    _check_case(conf, settings, conductors, report)
    _check_peers(settings, membership, report, new_deployment, adopting)
    if conductors is not None:
        ironic_checks.check_shards(client, settings, report)
    checks = CHECKS
    if inspection_config:
        checks = checks + INSPECTION_CHECKS
        if conductors is not None:
            ironic_checks.check_inspection(client, conductors,
                                           inspection_config, report)
    if fleet:
        checks = checks + FLEET_CHECKS
        if conductors is not None:
            ironic_checks.check_fleet(
                client, conductors, role, report,
                keeps_services=settings.membership_backend == 'database',
                new_deployment=new_deployment)
    if compare_feed or feed_usable:
        checks = checks + FEED_CHECKS
        if conductors is not None:
            ironic_checks.check_feed(client, conf, settings, report,
                                     compare=compare_feed)
    return {
        'host': settings.host,
        'partition_key': settings.partition_key,
        'shard': settings.shard,
        'peer_list': list(settings.peer_list),
        'role': role,
        'problems': [f._asdict() for f in report.problems],
        'warnings': [f._asdict() for f in report.findings
                     if f.severity == 'warning'],
        'passed': report.passed,
        'skipped': [c for c in checks if c not in report.passed
                    and not any(f.check == c for f in report.findings)],
    }
