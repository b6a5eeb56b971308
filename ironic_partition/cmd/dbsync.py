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

"""``ironic-partition-dbsync``: manage the membership database schema.

Usage::

    ironic-partition-dbsync --config-file /etc/nova/nova.conf upgrade
    ironic-partition-dbsync --config-file /etc/nova/nova.conf version
    ironic-partition-dbsync --config-file /etc/nova/nova.conf grants \\
        --user ironic_partition_service

``upgrade`` is idempotent, serialised across hosts by a server-side lock,
and safe while services heartbeat: every migration only adds, so services
of the previous version keep running (see the upgrade guide). It refuses a
schema newer than this code knows.
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import _urls
from ironic_partition.cmd import _args
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import grants
from ironic_partition.db import migration
from ironic_partition import exception
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def _upgrade(conf, out):
    connection = settings_mod.database_settings(conf).connect()
    try:
        current = connection.schema_revision()
        if current is not None and current not in \
                migration.known_revisions():
            # NOTE(ironic-partition): alembic would only say it cannot
            # locate the revision.
            contract = migration.read_contract(connection.engine)
            raise exception.DatabaseAheadOfDbsync(
                current=current, expected=migration.head_revision(),
                upgraded_by=contract and contract.upgraded_by)
        before, after = connection.upgrade_from(conf.command.revision)
    finally:
        connection.dispose()
    if before == after:
        out.write(_('Membership database %(conn)s already at revision '
                    '%(rev)s.\n') % {
                        'conn': connection.masked_connection, 'rev': after})
    else:
        out.write(_('Upgraded membership database %(conn)s from revision '
                    '%(before)s to %(after)s.\n') % {
                        'conn': connection.masked_connection,
                        'before': before or _('(none)'), 'after': after})
    return 0


def _version(conf, out):
    connection = settings_mod.database_settings(conf).connect()
    try:
        current = connection.schema_revision()
        contract = (migration.read_contract(connection.engine)
                    if current is not None else None)
    finally:
        connection.dispose()
    head = migration.head_revision()
    out.write(_('current: %(cur)s\nhead: %(head)s\n') % {
        'cur': current or _('(none)'), 'head': head})
    if contract is not None:
        # NOTE(ironic-partition): the schema's contract, from 0006 on.
        out.write(_('oldest code: %(oldest)s\nupgraded by: %(by)s\n') % {
            'oldest': contract.oldest_code_revision,
            'by': contract.upgraded_by or _('(unknown)')})
    return 0


def _grants(conf, out):
    connection = settings_mod.database_settings(conf).connect()
    try:
        dialect = connection.dialect
        database = connection.engine.url.database
        # NOTE(ironic-partition): what this schema has: a schema not yet
        # upgraded gets no GRANT on a table it lacks (which would fail).
        present = (grants.tables_present(connection)
                   if dialect != 'sqlite' else None)
    finally:
        connection.dispose()
    for statement in grants.service_grants(dialect, database,
                                           conf.command.user,
                                           conf.command.host,
                                           present=present):
        out.write(statement + '\n')
    return 0


def _add_command_parsers(subparsers):
    parser = subparsers.add_parser(
        'upgrade', help=_('Create or upgrade the membership database '
                          'schema (idempotent).'))
    parser.add_argument('--revision', default='head',
                        help=_('Target revision (default: head).'))
    parser.set_defaults(func=_upgrade)
    parser = subparsers.add_parser(
        'version', help=_('Print the schema revision of the membership '
                          'database and the newest one this code knows.'))
    parser.set_defaults(func=_version)
    parser = subparsers.add_parser(
        'grants', help=_('Print the GRANT statements giving a database '
                         'user the service role: what nova-compute, the '
                         'agent and the inspection hook need, and no more '
                         '(run them as the schema owner, after upgrade).'))
    parser.add_argument('--user', required=True,
                        help=_('The services\' database user (it must '
                               'exist).'))
    parser.add_argument('--host', default='%',
                        help=_('MariaDB/MySQL: the user\'s host part '
                               '(default: %%).'))
    parser.set_defaults(func=_grants)


def register_cli_opts(conf):
    """Register the options this command reads.

    :param conf: an ``oslo_config.cfg.ConfigOpts``.
    :returns: None
    """
    conf.register_opts(partition_conf.opts, group=partition_conf.GROUP)
    database_conf.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title=_('Commands'),
        help=_('Available commands'), handler=_add_command_parsers))


def main(argv=None, conf=None, out=None):
    """Run ``ironic-partition-dbsync``.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :param conf: the ``ConfigOpts`` to use, a new one by default.
    :param out: where to print, ``sys.stdout`` by default.
    :returns: the exit status (0 on success).
    """
    conf = conf if conf is not None else cfg.ConfigOpts()
    out = out if out is not None else sys.stdout
    argv = sys.argv[1:] if argv is None else argv
    logging.register_options(conf)
    register_cli_opts(conf)
    error = _args.parse_script_args(conf, argv, 'ironic-partition-dbsync',
                                    'ironic-partition', 1)
    if error is not None:
        return error
    # NOTE(ironic-partition): stdout carries the result only; what the
    # migrations log goes to stderr.
    _args.log_to_stderr(conf, 'ironic-partition')
    try:
        return conf.command.func(conf, out)
    except Exception as exc:
        LOG.debug('dbsync failed', exc_info=True)
        hint = exception.missing_driver_hint(exc)
        if hint is None and grants.permission_denied(exc):
            hint = _('the user of [ironic_partition_database] connection '
                     'may not change the schema: ironic-partition-dbsync '
                     'needs the schema owner\'s connection (the services\' '
                     'user has only what "ironic-partition-dbsync grants" '
                     'prints)')
        sys.stderr.write(_('ironic-partition-dbsync %(cmd)s failed for '
                           '%(conn)s: %(err)s%(hint)s\n') % {
                               'cmd': conf.command.name,
                               'conn': _urls.mask(
                                   conf.ironic_partition_database.connection),
                               'err': exc,
                               'hint': '. %s' % hint if hint else ''})
        return 1


if __name__ == '__main__':
    sys.exit(main())
