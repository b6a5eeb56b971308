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

import sys

from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import instance_owners


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


def parse_script_args(conf, argv, prog, project, error_code):
    """Parse a console script's arguments; one line and a code on error.

    :param conf: the ``ConfigOpts``, its options registered.
    :param argv: the arguments.
    :param prog: the script's name, for the error line.
    :param project: the oslo.config project.
    :param error_code: the documented code of a file that is missing or
        does not parse, or of a bad argument.
    :returns: None, or ``error_code`` when the arguments cannot be used.
    """
    try:
        conf(argv, project=project, prog=prog)
    except cfg.Error as e:
        sys.stderr.write('%s: %s\n' % (prog, _errors.describe_error(e, conf)))
        return error_code
    except SystemExit as e:
        if not e.code:
            raise
        # NOTE(ironic-partition): argparse already printed its one line
        # (an unknown --role, a missing command).
        return error_code
    return None


def log_to_stderr(conf, project):
    """Set up logging on stderr only, whatever the files say.

    stdout carries the script's result; what it logs never goes to the
    service's log file or syslog.

    :param conf: the parsed ``ConfigOpts``.
    :param project: the oslo.log project.
    :returns: None
    """
    for name, value in (('use_stderr', True), ('log_file', None),
                        ('log_dir', None), ('use_syslog', False),
                        ('use_journal', False)):
        conf.set_override(name, value)
    logging.setup(conf, project)
