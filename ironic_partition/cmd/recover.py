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

"""``ironic-partition recover HOST``: a lost compute's servers, moved.

See :mod:`ironic_partition.recovery.lost_compute` for what is proven and
changed, and the admin guide's "When a compute is lost".

Without ``--yes`` nothing changes (a dry run), on a terminal or not: the
command rewrites nova's records of many servers at once, so it never does
so from a pasted line or a script that did not say so. The plan it prints
is the one ``--yes`` carries out, checked again under the database's row
lock.
"""

from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition.cmd import base as base_cmd
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import readonly
from ironic_partition.recovery import lost_compute as recovery
from ironic_partition.recovery import nova_records
from ironic_partition import settings as settings_mod

COLUMNS = ('server', 'name', 'node', 'destination', 'result')


def _paths(command, parsed_args, name):
    return (list(getattr(command.app_args, name, None) or ()) +
            list(getattr(parsed_args, name, None) or ()))


class Recover(base_cmd.Lister):
    """Move a lost compute's servers to the live computes of its partition.

    Proves first, changing nothing, that HOST cannot be serving: no live
    process and no heartbeat within service_down_time in the membership
    database, none of its claims valid (by the database's clock), and
    nova's service group has it down. Then, with --yes only: fences the
    host name for good, forces its nova-compute service down (a process
    started again as HOST waits, not ready, until it is set up again),
    and moves each server, with its node's compute node record, to the
    compute the ring gives the node, through nova's own objects as
    "nova-manage db ironic_compute_node_move" does. One row per server.
    Idempotent: run it again to finish an interrupted recovery.

    Run it where nova-manage runs: the configuration files must give
    nova's [database] and the partition's settings (a compute's nova.conf
    of the same conductor group, and the nova.conf of nova-manage).
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE
    extra_exit_codes = (
        (_errors.EXIT_REFUSED,
         _('recover refused: the host may still be alive (a live process, '
           'a recent heartbeat, a valid claim, up in nova), or the host or '
           'the destination cannot be used; the message names which')),)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='HOST',
                            help=_('The lost compute\'s [DEFAULT] host.'))
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            '--dry-run', action='store_true',
            help=_('Check and print the plan; change nothing (the '
                   'default without --yes).'))
        mode.add_argument(
            '--yes', action='store_true',
            help=_('Carry the plan out: fence HOST, force it down in nova, '
                   'move its servers.'))
        parser.add_argument(
            '--destination', metavar='DEST',
            help=_('Move every server to this live compute of the '
                   'partition instead of the one the ring gives each '
                   'node.'))
        parser.add_argument(
            '--workers', type=int, default=recovery.DEFAULT_WORKERS,
            metavar='N',
            help=_('Servers moved at once (1 to %(max)d, default '
                   '%(default)d).') % {
                'max': recovery.MAX_WORKERS,
                'default': recovery.DEFAULT_WORKERS})
        parser.add_argument(
            '--force', action='store_true',
            help=_('Go on although nova\'s service group has HOST up: for '
                   'a nova-compute that still heartbeats nova while the '
                   'membership database proves it lost its name and its '
                   'claims (for example cut off from that database). '
                   'Every other check still applies.'))
        return parser

    def take_action(self, parsed_args):
        if parsed_args.role != membership_base.ROLE_NOVA_COMPUTE:
            raise exception.InvalidCommandInput(
                option='--role', value=parsed_args.role,
                reason=_('recover moves nova servers: only %s') %
                membership_base.ROLE_NOVA_COMPUTE)
        conf = self.load_conf(parsed_args)
        settings = settings_mod.from_conf(conf)
        records = nova_records.load(_paths(self, parsed_args, 'config_file'),
                                    _paths(self, parsed_args, 'config_dir'))
        membership = None
        try:
            membership = readonly.open_membership(settings, parsed_args.role)
            if getattr(membership, 'store', None) is None:
                raise exception.InvalidCommandInput(
                    option='[ironic_partition] membership_backend',
                    value=settings.membership_backend,
                    reason=_('recover proves a host gone from the '
                             'membership database: only "database"'))
            job = recovery.Recovery(
                settings, membership, records, parsed_args.role,
                parsed_args.host, destination=parsed_args.destination,
                force=parsed_args.force, workers=parsed_args.workers)
            with _output.Progress().task(_('Checking %s') % job.host):
                plan = job.plan()
            if not plan:
                self.app.stderr.write(_(
                    'nova has no server on %s: nothing to recover, nothing '
                    'changed.\n') % job.nova_host)
                return base_cmd.rows([], COLUMNS)
            if not parsed_args.yes:
                self.app.stderr.write(_(
                    'Dry run: nothing changed. Run again with --yes to '
                    'fence %(host)s and move these %(count)d servers.\n')
                    % {'host': job.nova_host, 'count': len(plan)})
                return base_cmd.rows([r._asdict() for r in plan], COLUMNS)
            progress = _output.Progress()

            def show(done, total):
                progress.show(_('Moving servers: %(done)d of %(total)d') %
                              {'done': done, 'total': total})

            try:
                moved = job.apply(plan, progress=show)
            finally:
                progress.clear()
            return base_cmd.rows([r._asdict() for r in moved], COLUMNS)
        finally:
            readonly.close_membership(membership)
            records.close()
