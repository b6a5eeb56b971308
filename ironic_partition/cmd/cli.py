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

"""``ironic-partition``: the operator command, a cliff application.

Usage::

    ironic-partition [--config-file FILE]... [--config-dir DIR] [--debug]
                     COMMAND [options]

It reads the same configuration files as the service it describes (for
example ``--config-file /etc/nova/nova.conf``), before the command or
after it. The commands are the entry points of the
``ironic_partition.cli`` namespace; the same classes are the
``openstack baremetal partition`` commands of the OpenStack client
(:mod:`ironic_partition.cmd.osc_plugin`), except ``serve``, which runs a
service, not a request.

Every listing takes cliff's formatters (``-f table|json|yaml|value|csv``,
``-c COLUMN``, ``--sort-column`` for lists). Errors are printed as one
line on stderr, never as a traceback (``--debug`` adds it); the exit codes
are listed in :data:`ironic_partition.cmd._errors.EXIT_CODES`.
"""

import logging as std_logging
import sys

from cliff import app
from cliff import commandmanager
from oslo_log import log as logging

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import base

LOG = logging.getLogger(__name__)

PROG = base.PROG

#: The entry point namespace of the commands.
NAMESPACE = 'ironic_partition.cli'

#: The commands that run a service: they log where the configuration
#: says; every other command logs warnings to stderr only, so that a CLI
#: run never writes into nova-compute's log file.
SERVICE_COMMANDS = frozenset(['serve'])

_LOG_OVERRIDES = {'log_file': None, 'log_dir': None, 'use_syslog': False,
                  'use_journal': False, 'use_eventlog': False,
                  'use_stderr': True}


class IronicPartitionApp(app.App):
    """The ``ironic-partition`` application."""

    NAME = PROG

    def __init__(self, **kwargs):
        super().__init__(
            description=_('Inspect, check, simulate and run the '
                          'partitioning of an Ironic fleet. %s')
            % _errors.exit_codes_epilog(),
            version=__version__,
            command_manager=commandmanager.CommandManager(NAMESPACE),
            deferred_help=True, **kwargs)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        base.add_config_arguments(parser)
        return parser

    def configure_logging(self):
        # NOTE(ironic-partition): oslo.log is set up by the command, once
        # its configuration files are read (setup_logging); until then
        # only errors reach stderr.
        std_logging.getLogger().setLevel(std_logging.WARNING)

    def interact(self):
        # NOTE(ironic-partition): no interactive shell: without a command,
        # print the usage and fail as a usage error.
        self.parser.print_usage(self.stderr)
        self.stderr.write(_('%s: error: a command is required (see '
                            '"%s --help")\n') % (PROG, PROG))
        sys.exit(_errors.EXIT_USAGE)

    def setup_logging(self, conf, cmd):
        """Set oslo.log up for a command, from its configuration.

        :param conf: the command's ``ConfigOpts``.
        :param cmd: the command.
        :returns: None
        """
        service = getattr(cmd, 'cmd_name', None) in SERVICE_COMMANDS
        if self.options.log_file:
            conf.set_override('log_file', self.options.log_file)
        if not service:
            for name, value in _LOG_OVERRIDES.items():
                if name in conf and not (name == 'log_file'
                                         and self.options.log_file):
                    conf.set_override(name, value)
        else:
            conf.set_default('use_stderr', True)
        logging.setup(conf, PROG, version=__version__)
        if not service and not conf.debug:
            std_logging.getLogger().setLevel(std_logging.WARNING)
            # NOTE(ironic-partition): stevedore warns about an unknown
            # plugin name before our error says the same in one line.
            std_logging.getLogger('stevedore').setLevel(std_logging.ERROR)


def main(argv=None):
    """Run ``ironic-partition``.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :returns: the exit code.
    """
    argv = sys.argv[1:] if argv is None else argv
    return IronicPartitionApp().run(list(argv))


if __name__ == '__main__':
    sys.exit(main())
