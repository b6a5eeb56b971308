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

"""The command-line arguments several commands share."""

from ironic_partition._i18n import _
from ironic_partition import instance_owners
from ironic_partition.membership import base as membership_base


def add_role_argument(parser, default):
    """Add ``--role`` to a subcommand.

    :param parser: an argparse parser.
    :param default: the default role.
    :returns: None
    """
    parser.add_argument(
        '--role', choices=membership_base.ROLES, default=default,
        help=_('The role of the services sharing the ring: nova-compute '
               '(the nova driver), agent ("ironic-partition serve") or '
               'conductor (default: %(default)s).'))


def add_instance_hosts_argument(parser):
    """Add ``--instance-hosts FILE`` to a subcommand.

    :param parser: an argparse parser.
    :returns: None
    """
    parser.add_argument(
        instance_owners.OPTION, metavar='FILE',
        help=_('JSON file telling which host owns each instance: '
               '{"<instance uuid>": "<host>"}, or the output of '
               '"openstack server list --all-projects --long -c ID -c Host '
               '-f json". Nodes whose instance this host owns are managed '
               'by it; nodes whose instance belongs to a peer that is not '
               'alive are reported as stranded.'))
