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

``upgrade`` is idempotent, serialised across hosts by a server-side lock,
and safe while services heartbeat (it only adds schema objects).
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import _urls
from ironic_partition.cmd import _args
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import migration
from ironic_partition import exception
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)


def _upgrade(conf, out):
    connection = settings_mod.database_settings(conf).connect()
    try:
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
    finally:
        connection.dispose()
    head = migration.head_revision()
    out.write(_('current: %(cur)s\nhead: %(head)s\n') % {
        'cur': current or _('(none)'), 'head': head})
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
