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

"""``ironic-partition takeover HOST``: fence a hung process's host name.

For a service that cannot take a flag at start (nova-compute): the live
process that holds HOST (for example one that hangs, or runs where it
should not) loses the name at once. It can no longer heartbeat, renew or
take a claim, and reports nothing from its next action on; its claims
expire after their lease, and the next process started as HOST takes
them then. Fails, changing nothing, when no live process holds HOST.
"""

from oslo_utils import uuidutils

from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition import conf as ip_conf
from ironic_partition import identity
from ironic_partition.membership import base as membership_base
from ironic_partition import readonly
from ironic_partition import settings as settings_mod


def run(conf):
    """Run ``ironic-partition takeover``.

    :param conf: the parsed ``ConfigOpts``.
    :returns: the exit code.
    """
    args = conf.command
    host = ip_conf.normalize_host(args.host)
    db = settings_mod.database_settings(conf).connect()
    readonly.check_database(db)
    fence = uuidutils.generate_uuid()
    result = db.services.register_service(
        host, args.role, fence, origin='ironic-partition takeover (%s)'
        % identity.origin(), liveness_token=None,
        service_down_time=conf.ironic_partition.service_down_time,
        takeover=True)
    # NOTE(ironic-partition): give the name up at once, keeping the row
    # alive: peers keep HOST in the ring until the next process takes it.
    db.services.release_service(host, args.role, fence, down=False)
    old = result.replaced
    _output.write_lines([
        _('Took host %(host)s (%(role)s) away from incarnation %(inc)s on '
          '%(origin)s (started at %(started)s). Its claims expire within '
          '[ironic_partition] lease_time; start the new process as '
          '%(host)s now.') % {
            'host': host, 'role': args.role, 'inc': old.incarnation,
            'origin': old.origin or '?',
            'started': (old.started_at.isoformat() if old.started_at
                        else '?')}])
    return _errors.EXIT_OK


def add_parsers(subparsers):
    """Add the ``takeover`` subcommand.

    :param subparsers: the argparse subparsers of ``ironic-partition``.
    :returns: None
    """
    parser = subparsers.add_parser(
        'takeover', help=_('Fence the live process that holds a host name, '
                           'so that a new one can start as that host.'),
        epilog=_errors.exit_codes_epilog())
    parser.add_argument('host', help=_('The host name to take over.'))
    _args.add_role_argument(parser, membership_base.ROLE_NOVA_COMPUTE)
    parser.set_defaults(func=run)
