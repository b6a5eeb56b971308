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

"""What every command shares, behind both front doors.

The commands are cliff commands (:class:`Command`, :class:`Lister`,
:class:`ShowOne`). The same classes run in two applications:

- ``ironic-partition`` (:mod:`ironic_partition.cmd.cli`), for hosts
  without the OpenStack client: Ironic is reached with the ``[ironic]``
  options of the configuration files;
- ``openstack baremetal partition ...``
  (:mod:`ironic_partition.cmd.osc_plugin`): osc-lib authenticates
  (``--os-cloud``, clouds.yaml, ``OS_*``), and the configuration files
  give only the partition settings and the database.

This base gives each command:

- ``--config-file`` and ``--config-dir`` (the files of the service the
  command describes, for example ``/etc/nova/nova.conf``), read into an
  ``oslo_config.cfg.ConfigOpts`` by :meth:`CommandBase.load_conf`;
- ``--role`` where :attr:`CommandBase.default_role` is set;
- the Ironic client of the front door (:meth:`CommandBase.ironic_client`);
- the error contract: an error is one line on stderr naming the option or
  value at fault, and the exit code that
  :func:`~ironic_partition.cmd._errors.exit_code_for` gives it
  (:data:`ironic_partition.cmd._errors.EXIT_CODES`); ``--debug`` adds the
  traceback.
"""

from cliff import columns
from cliff import command
from cliff import lister
from cliff import show
from oslo_config import cfg
from oslo_log import log as logging

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import _errors
from ironic_partition import conf as ip_conf
from ironic_partition.membership import base as membership_base

LOG = logging.getLogger(__name__)

#: The project name oslo.config looks up default configuration files by.
PROJECT = 'ironic-partition'

#: The name of the standalone application.
PROG = 'ironic-partition'


def add_config_arguments(parser, suppress_defaults=False):
    """Add ``--config-file`` and ``--config-dir``.

    :param parser: an argparse parser.
    :param suppress_defaults: leave the attributes unset when not given
        (for the application's global options, so that a command's own
        ones are not overwritten).
    :returns: None
    """
    parser.add_argument(
        '--config-file', dest='config_file', action='append',
        metavar='PATH', default=[],
        help=_('A configuration file to read (repeatable; later files '
               'override earlier ones): the one of the service this '
               'command describes, for example /etc/nova/nova.conf or '
               '/etc/ironic/ironic.conf.'))
    parser.add_argument(
        '--config-dir', dest='config_dir', action='append', metavar='DIR',
        default=[],
        help=_('A directory whose .conf files are read after the '
               'configuration files (repeatable).'))


def load_conf(config_files=(), config_dirs=(), debug=False, role=None):
    """Read the configuration files into a new ``ConfigOpts``.

    Without a file or a directory, oslo.config's default files of the
    ``ironic-partition`` project are read, where they exist.

    The service described is named as it names itself: for a nova-compute
    (``role`` ``nova-compute``), nova.conf's ``[DEFAULT] host`` is read as
    nova-compute reads it; for an agent, its own identity.

    :param config_files: paths.
    :param config_dirs: paths.
    :param debug: set ``[DEFAULT] debug``.
    :param role: the membership role of the service the files are for, or
        None (no service identity read).
    :returns: the parsed ``ConfigOpts``.
    :raises: oslo_config.cfg.Error (exit code 3).
    """
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    ip_conf.register_opts(conf)
    if role == membership_base.ROLE_NOVA_COMPUTE:
        ip_conf.register_nova_host_opt(conf)
    args = []
    for path in config_files:
        args += ['--config-file', path]
    for path in config_dirs:
        args += ['--config-dir', path]
    conf(args, project=PROJECT, prog=PROG, version=__version__)
    if role == membership_base.ROLE_NOVA_COMPUTE:
        ip_conf.follow_nova_service_down_time(conf)
    if debug:
        conf.set_override('debug', True)
    return conf


class CommandBase(object):
    """The configuration, client and errors of every command.

    Mixed into cliff's command classes; see the module's docstring.
    """

    #: The default of ``--role``; None for a command without it.
    default_role = None
    #: Whether ``--config-file`` and ``--config-dir`` are offered.
    reads_config = True
    #: Maps an exception to an exit code; a command may widen it.
    exit_code_for = staticmethod(_errors.exit_code_for)
    #: Extra exit codes for the epilog: ``((code, text), ...)``.
    extra_exit_codes = ()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        if self.reads_config:
            add_config_arguments(parser)
        if self.default_role is not None:
            _args.add_role_argument(parser, self.default_role)
        parser.epilog = _errors.exit_codes_epilog(self.extra_exit_codes)
        return parser

    @property
    def debug(self):
        """Whether ``--debug`` was given to the application."""
        return bool(getattr(self.app_args, 'debug', False))

    def load_conf(self, parsed_args):
        """The configuration this command reads, loaded once.

        The application's own ``--config-file`` and ``--config-dir``
        (``ironic-partition --config-file F COMMAND``) come first, then
        the command's.

        :param parsed_args: the command's parsed arguments.
        :returns: the parsed ``ConfigOpts``.
        :raises: oslo_config.cfg.Error.
        """
        conf = getattr(self, '_conf', None)
        if conf is None:
            files = (list(getattr(self.app_args, 'config_file', None) or ())
                     + list(getattr(parsed_args, 'config_file', None)
                            or ()))
            dirs = (list(getattr(self.app_args, 'config_dir', None) or ())
                    + list(getattr(parsed_args, 'config_dir', None) or ()))
            conf = load_conf(files, dirs, debug=self.debug,
                             role=getattr(parsed_args, 'role', None))
            self._conf = conf
            setup = getattr(self.app, 'setup_logging', None)
            if setup is not None:
                setup(conf, self)
        return conf

    def ironic_client(self, conf, **kwargs):
        """The Ironic client of this front door.

        Inside ``openstack``, the session osc-lib authenticated (cloud,
        region and interface included); in ``ironic-partition``, the
        ``[ironic]`` options of the configuration files.

        :param conf: the command's ``ConfigOpts``.
        :param kwargs: more
            :class:`~ironic_partition.ironic.baremetal.IronicClient` arguments.
        :returns: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
        """
        manager = getattr(self.app, 'client_manager', None)
        if manager is not None:
            return manager.baremetal_partition.ironic_client(**kwargs)
        # NOTE(ironic-partition): imported here: the settings pull in
        # openstacksdk, which ``simulate`` and ``--help`` never need.
        from ironic_partition import settings as settings_mod
        return settings_mod.ironic_client(conf, **kwargs)

    def run(self, parsed_args):
        """Run the command under the error contract.

        :param parsed_args: the parsed arguments.
        :returns: the exit code.
        """
        self.exit_code = _errors.EXIT_OK
        try:
            code = super().run(parsed_args)
        except KeyboardInterrupt:
            self.app.stderr.write('%s: interrupted\n' % self.full_name)
            return _errors.EXIT_INTERRUPTED
        except Exception as e:
            if self.debug:
                LOG.exception('%s failed', self.full_name)
            self.app.stderr.write('%s: error: %s\n' % (
                self.full_name,
                _errors.describe_error(e, getattr(self, '_conf', None))))
            return self.exit_code_for(e)
        return code or self.exit_code

    @property
    def full_name(self):
        """The command as the operator typed it, for error lines."""
        name = getattr(self, 'cmd_name', None) or ''
        app = getattr(self.app, 'NAME', None) or PROG
        return ('%s %s' % (app, name)).strip()


class Command(CommandBase, command.Command):
    """A command that prints no listing; ``take_action`` returns the code."""


#: The formatters scripts read word by word: in them a list or a mapping
#: is printed flat (:func:`flat`), never as a Python repr.
FLAT_FORMATTERS = ('value', 'shell', 'csv')


def flat(value):
    """A value as one line a script can split, for ``-f value|shell|csv``.

    A list is comma-joined (``a1,a2``), a mapping ``key=value`` pairs
    joined by ``;`` (its lists comma-joined), a list of mappings those
    joined by spaces, None empty; anything else is left as it is.

    :param value: a cell: a ``FormattableColumn`` or a plain value.
    :returns: a string, or the value unchanged.
    """
    if isinstance(value, columns.FormattableColumn):
        value = value.machine_readable()
    if value is None:
        return ''
    if isinstance(value, dict):
        return ';'.join('%s=%s' % (k, _flat_item(v))
                        for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if any(isinstance(v, dict) for v in items):
            return ' '.join(flat(v) for v in items)
        return ','.join(_flat_item(v) for v in items)
    return value


def _flat_item(value):
    if isinstance(value, dict):
        return '{%s}' % flat(value)
    return str(flat(value))


class Lister(CommandBase, lister.Lister):
    """A command that prints rows.

    ``take_action`` returns ``(columns, rows)``; it may set
    ``self.exit_code``.
    """

    def produce_output(self, parsed_args, column_names, data):
        if parsed_args.formatter in FLAT_FORMATTERS:
            data = [tuple(flat(cell) for cell in row) for row in data]
        return super().produce_output(parsed_args, column_names, data)


class ShowOne(CommandBase, show.ShowOne):
    """A command that prints one record.

    ``take_action`` returns ``(columns, values)``; it may set
    ``self.exit_code``.
    """

    def produce_output(self, parsed_args, column_names, data):
        if parsed_args.formatter in FLAT_FORMATTERS:
            data = tuple(flat(cell) for cell in data)
        return super().produce_output(parsed_args, column_names, data)


def none_as_dash(value):
    """How a missing value looks in a table.

    :param value: any value.
    :returns: ``-`` for None, else the value.
    """
    return '-' if value is None else value


class ListColumn(columns.FormattableColumn):
    """A list: comma-separated in a table, the list in JSON and YAML."""

    def human_readable(self):
        return ', '.join(str(v) for v in self._value or ()) or '-'

    def machine_readable(self):
        return list(self._value or ())


class LinesColumn(ListColumn):
    """A list of lines: one per line in a table."""

    def human_readable(self):
        return '\n'.join(str(v) for v in self._value or ()) or '-'


class DictColumn(columns.FormattableColumn):
    """A mapping: ``key=value`` pairs in a table, the mapping in JSON."""

    def human_readable(self):
        return format_mapping(self._value)

    def machine_readable(self):
        return self._value


class RecordsColumn(columns.FormattableColumn):
    """A list of mappings: one line of ``key=value`` pairs per record."""

    def human_readable(self):
        return '\n'.join(format_mapping(v) for v in self._value or ()) or '-'

    def machine_readable(self):
        return list(self._value or ())


def format_mapping(value):
    """A mapping as ``key=value`` pairs, nested lists comma-joined.

    :param value: a dict or None.
    :returns: a string.
    """
    if not value:
        return '-'
    parts = []
    for key, item in value.items():
        if isinstance(item, (list, tuple)):
            item = ','.join(str(v) for v in item) or '-'
        elif isinstance(item, dict):
            item = '{%s}' % format_mapping(item)
        parts.append('%s=%s' % (key, none_as_dash(item)))
    return ', '.join(parts)


def record(doc, formatters=None):
    """A ``ShowOne`` result from a document, its keys as the columns.

    :param doc: a dict.
    :param formatters: column name to a ``FormattableColumn`` class; other
        lists and dicts get :class:`ListColumn` and :class:`DictColumn`.
    :returns: ``(columns, values)``.
    """
    formatters = formatters or {}
    names = tuple(doc)
    values = []
    for name in names:
        value = doc[name]
        kind = formatters.get(name)
        if kind is None and isinstance(value, dict):
            kind = DictColumn
        elif kind is None and isinstance(value, (list, tuple)):
            kind = (RecordsColumn if value and isinstance(value[0], dict)
                    else ListColumn)
        values.append(kind(value) if kind is not None else value)
    return names, tuple(values)


def rows(records, names, formatters=None):
    """A ``Lister`` result from a list of dicts.

    :param records: dicts.
    :param names: the keys to show, in order (the column names).
    :param formatters: column name to a ``FormattableColumn`` class.
    :returns: ``(columns, rows)``.
    """
    formatters = formatters or {}
    out = []
    for item in records:
        row = []
        for name in names:
            value = item.get(name)
            kind = formatters.get(name)
            row.append(kind(value) if kind is not None else value)
        out.append(tuple(row))
    return tuple(names), out
