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
from ironic_partition.cmd import base as base_cmd
from ironic_partition import conf as ip_conf
from ironic_partition.db import identity
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import readonly
from ironic_partition import settings as settings_mod


class Takeover(base_cmd.ShowOne):
    """Fence the live process holding a host name, for a new one.

    The process loses the name at once: it can no longer heartbeat, renew
    or take a claim, and reports nothing from its next action on. Its
    claims expire within ``[ironic_partition] lease_time``; the next
    process started as HOST takes them then. Fails, changing nothing, when
    no live process holds HOST. Prints the process that was fenced.
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='HOST',
                            help=_('The host name to take over.'))
        return parser

    def take_action(self, parsed_args):
        conf = self.load_conf(parsed_args)
        host = ip_conf.normalize_host(parsed_args.host)
        role = parsed_args.role
        db = settings_mod.database_settings(conf).connect()
        try:
            readonly.check_database(db)
            fence = uuidutils.generate_uuid()
            result = db.services.register_service(
                host, role, fence, origin='ironic-partition takeover (%s)'
                % identity.origin(), liveness_token=None,
                service_down_time=conf.ironic_partition.service_down_time,
                takeover=True)
            # NOTE(ironic-partition): give the name up at once, keeping
            # the row alive: peers keep HOST in the ring until the next
            # process takes it.
            db.services.release_service(host, role, fence, down=False)
        finally:
            db.dispose()
        old = result.replaced
        return base_cmd.record({
            'host': host,
            'role': role,
            'fenced_incarnation': old.incarnation,
            'fenced_origin': old.origin,
            'fenced_started_at': (old.started_at.isoformat()
                                  if old.started_at else None),
            'next_step': _('Its claims expire within [ironic_partition] '
                           'lease_time; start the new process as %s now.')
            % host,
        })
