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

"""``ironic-partition``: the operator command.

Usage::

    ironic-partition [--config-file FILE]... [--config-dir DIR] [--debug]
                     COMMAND [options]

It reads the same configuration files as the service it describes (for
example ``--config-file /etc/nova/nova.conf``). Commands:

``status``
    the nodes this host manages, its peers, the stranded nodes;
``ring``
    each ring member's node count and the balance; ``--conductors`` for
    Ironic's own conductor rings;
``simulate``
    an offline what-if of the ring: balance and moves when members leave
    or join, tooz-exact against balanced;
``check``
    validate a configuration against the live system, one line per
    problem;
``reserve``, ``release``
    reserve a node this host manages through an Ironic allocation,
    and release it (:mod:`ironic_partition.cmd.reserve`);
``serve``
    run the standalone partition agent;
``takeover``
    fence the live process holding a host name, so that a new one can
    start as that host (:mod:`ironic_partition.cmd.takeover`).

Each command module offers ``add_parsers(subparsers)``, and each parser
sets ``func``, a callable taking the parsed ``ConfigOpts`` and returning
the exit code. Errors are printed as one line on stderr, never as a
traceback (``--debug`` adds it); the exit codes are listed in
:data:`ironic_partition.cmd._errors.EXIT_CODES`.
"""

import logging as std_logging
import sys

from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import agent
from ironic_partition.cmd import check
from ironic_partition.cmd import reserve
from ironic_partition.cmd import ring
from ironic_partition.cmd import simulate
from ironic_partition.cmd import status
from ironic_partition.cmd import takeover
from ironic_partition import conf as ip_conf

LOG = logging.getLogger(__name__)

PROG = 'ironic-partition'

#: The modules whose ``add_parsers`` build the subcommands, in help order.
COMMAND_MODULES = (status, ring, simulate, check, reserve, agent, takeover)

# NOTE(ironic-partition): only the agent writes where the configuration
# says; every other command logs warnings to stderr only, so that a CLI
# run never writes into nova-compute's log file.
_LOG_OVERRIDES = {'log_file': None, 'log_dir': None, 'use_syslog': False,
                  'use_journal': False, 'use_eventlog': False,
                  'use_stderr': True}


def add_command_parsers(subparsers):
    """Add every subcommand (the ``SubCommandOpt`` handler).

    :param subparsers: the argparse subparsers.
    :returns: None
    """
    for module in COMMAND_MODULES:
        module.add_parsers(subparsers)


def register_cli_opts(conf):
    """Register every option ``ironic-partition`` reads.

    :param conf: an ``oslo_config.cfg.ConfigOpts``.
    :returns: None
    """
    logging.register_options(conf)
    ip_conf.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title=_('Commands'), dest='command',
        help=_('Run "ironic-partition COMMAND --help" for the options of '
               'a command.'),
        handler=add_command_parsers))


def _setup_logging(conf):
    if conf.command.name != 'serve':
        for name, value in _LOG_OVERRIDES.items():
            if name in conf:
                conf.set_override(name, value)
    else:
        conf.set_default('use_stderr', True)
    logging.setup(conf, 'ironic-partition', version=__version__)
    if conf.command.name != 'serve' and not conf.debug:
        std_logging.getLogger().setLevel(std_logging.WARNING)
        # NOTE(ironic-partition): stevedore warns about an unknown plugin
        # name before our error says the same in one line.
        std_logging.getLogger('stevedore').setLevel(std_logging.ERROR)


def _fail(command, exc, conf=None, err=None):
    err = err if err is not None else sys.stderr
    code = _errors.exit_code_for(exc)
    prefix = '%s %s' % (PROG, command) if command else PROG
    err.write('%s: error: %s\n' % (prefix,
                                   _errors.describe_error(exc, conf)))
    return code


def main(argv=None, conf=None):
    """Run ``ironic-partition``.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :param conf: the ``ConfigOpts`` to use, a new one by default.
    :returns: the exit code.
    """
    conf = conf if conf is not None else cfg.ConfigOpts()
    argv = sys.argv[1:] if argv is None else argv
    register_cli_opts(conf)
    try:
        conf(argv, project='ironic-partition', prog=PROG,
             version=__version__,
             description=_('Inspect, check, simulate and run the '
                           'partitioning of an Ironic fleet. %s')
             % _errors.exit_codes_epilog())
    except cfg.Error as e:
        return _fail(None, e)
    command = conf.command.name
    debug = False
    try:
        debug = conf.debug
        _setup_logging(conf)
        return conf.command.func(conf)
    except KeyboardInterrupt:
        sys.stderr.write('%s %s: interrupted\n' % (PROG, command))
        return _errors.EXIT_INTERRUPTED
    except Exception as e:
        if debug:
            LOG.exception('%s %s failed', PROG, command)
        return _fail(command, e, conf)


if __name__ == '__main__':
    sys.exit(main())
