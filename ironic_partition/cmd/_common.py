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

"""What every ``ironic-partition`` subcommand shares.

* exit codes and the mapping of errors to them (:func:`exit_code_for`);
* output: aligned tables, JSON (:func:`emit_json`), progress on a terminal
  only (:class:`Progress`);
* reading the live system the way the services do, without joining it:
  the Ironic client, the membership (read-only, no heartbeat) and the
  conductor groups (:func:`open_membership`, :func:`check_group`).
"""

import contextlib
import json
import os
import re
import sys
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
from sqlalchemy.engine import url as sa_url

from ironic_partition._i18n import _
from ironic_partition import conf as ip_conf
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception
from ironic_partition.membership import base as membership_base

LOG = logging.getLogger(__name__)

#: Success; ``check`` found no problem.
EXIT_OK = 0
#: ``check`` found at least one problem (one line each).
EXIT_PROBLEMS = 1
#: The command line is wrong (argparse's own code).
EXIT_USAGE = 2
#: The configuration is wrong: a file cannot be read or parsed, a value is
#: invalid, this host is not in ``peer_list``, the conductor group is
#: unknown to Ironic, a plugin name is unknown.
EXIT_CONFIG = 3
#: Ironic cannot be reached, failed, or refused a request.
EXIT_IRONIC = 4
#: The membership database cannot be reached, read, or is not migrated.
EXIT_DATABASE = 5
#: The partition could not be computed for another reason.
EXIT_NOT_READY = 6
#: Another live process holds this host name (``serve``), or a takeover
#: found none (``serve --takeover``, ``takeover``).
EXIT_DUPLICATE = 8
#: A bug: an unexpected error (rerun with ``--debug`` for the traceback).
EXIT_INTERNAL = 70
#: Interrupted (SIGINT, Ctrl-C).
EXIT_INTERRUPTED = 130

#: Exit codes and their meaning, for ``--help`` and the docs.
EXIT_CODES = (
    (EXIT_OK, _('success (check: no problem found)')),
    (EXIT_PROBLEMS, _('check found problems, one line each')),
    (EXIT_USAGE, _('invalid command line')),
    (EXIT_CONFIG, _('invalid configuration (file, value, peer_list, '
                    'unknown conductor group, plugin name)')),
    (EXIT_IRONIC, _('Ironic unreachable or refusing the request')),
    (EXIT_DATABASE, _('membership database unreachable, unreadable or '
                      'not migrated')),
    (EXIT_NOT_READY, _('the partition could not be computed')),
    (EXIT_DUPLICATE, _('another live process holds this host name, or a '
                       'takeover found none')),
    (EXIT_INTERNAL, _('unexpected internal error (rerun with --debug)')),
    (EXIT_INTERRUPTED, _('interrupted')),
)

#: The option groups whose values a value error may come from.
_OUR_GROUPS = (ironic_conf.GROUP, partition_conf.GROUP, database_conf.GROUP)

_LOCATION_RE = re.compile(
    r"from LocationInfo\(location=<[^>]*>, detail='([^']*)'\)")


def exit_codes_epilog():
    """Describe the exit codes, for an argparse epilog.

    :returns: a string.
    """
    return _('exit codes: ') + '; '.join(
        '%d %s' % (code, text) for code, text in EXIT_CODES)


def one_line(text):
    """Collapse a message to a single line.

    :param text: any object; its ``str()`` is used.
    :returns: the text with every run of blanks and newlines as one space.
    """
    return ' '.join(str(text).split())


def _cause(exc):
    """The error a ``PartitionNotReady`` wraps, if it wraps one.

    :param exc: an exception.
    :returns: the wrapped exception, or ``exc`` itself.
    """
    if isinstance(exc, exception.PartitionNotReady):
        reason = exc.kwargs.get('reason')
        if isinstance(reason, BaseException):
            return reason
    return exc


def exit_code_for(exc):
    """Map an error to the exit code documented for it.

    :param exc: an exception.
    :returns: one of the ``EXIT_*`` codes.
    """
    cause = _cause(exc)
    if isinstance(cause, (exception.MembershipBackendLoadError,
                          exception.BackendNotSupported,
                          exception.PluginLoadError,
                          exception.ConfigurationError,
                          exception.InvalidCommandInput,
                          cfg.Error)):
        return EXIT_CONFIG
    if isinstance(cause, (exception.IronicUnavailable,
                          exception.IronicRequestError)):
        return EXIT_IRONIC
    if isinstance(cause, (exception.DuplicateService,
                          exception.NothingToTakeOver)):
        return EXIT_DUPLICATE
    if isinstance(cause, exception.MembershipError):
        return EXIT_DATABASE
    if isinstance(cause, exception.IronicPartitionException):
        return EXIT_NOT_READY
    return EXIT_INTERNAL


def _find_bad_option(conf):
    """Find the option whose value does not parse.

    oslo.config's value errors name the option but not its group.

    :param conf: the ``ConfigOpts``.
    :returns: ``"[group] name"``, or None.
    """
    for group in _OUR_GROUPS:
        if group not in conf:
            continue
        for name in conf[group]:
            try:
                getattr(conf[group], name)
            except (cfg.Error, ValueError):
                return '[%s] %s' % (group, name)
            except Exception:
                continue
    return None


def describe_error(exc, conf=None):
    """Render an error as the one line the CLI prints.

    :param exc: an exception.
    :param conf: the ``ConfigOpts``, to name the group of a bad value.
    :returns: a single line without the trailing newline.
    """
    text = str(exc) or type(exc).__name__
    if isinstance(exc, cfg.ConfigSourceValueError):
        text = _LOCATION_RE.sub(r'in \1', text)
        where = _find_bad_option(conf) if conf is not None else None
        if where:
            text = _('invalid value for %(opt)s: %(err)s') % {
                'opt': where, 'err': text}
    elif isinstance(exc, cfg.Error):
        text = _('configuration error: %s') % text
    elif exit_code_for(exc) == EXIT_INTERNAL:
        text = _('unexpected error %(type)s: %(err)s (rerun with --debug '
                 'for the traceback)') % {'type': type(exc).__name__,
                                          'err': text}
    return one_line(text)


def emit_json(data, out=None):
    """Print a document as indented, key-sorted JSON.

    :param data: a JSON-serialisable object.
    :param out: the stream; ``sys.stdout`` by default.
    :returns: None
    """
    out = out if out is not None else sys.stdout
    json.dump(data, out, indent=2, sort_keys=True, default=str)
    out.write('\n')


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_table(headers, rows, indent=''):
    """Lay out rows as an aligned text table.

    Numbers are right-aligned, everything else left-aligned; ``None`` is
    shown as ``-``.

    :param headers: the column titles.
    :param rows: a list of sequences, one value per column.
    :param indent: a prefix for every line.
    :returns: a list of lines.
    """
    cells = [[('-' if v is None else str(v)) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, value in enumerate(row):
            widths[index] = max(widths[index], len(value))
    lines = [indent + '  '.join(h.ljust(w) for h, w in
                                zip(headers, widths)).rstrip(),
             indent + '  '.join('-' * w for w in widths)]
    for raw, row in zip(rows, cells):
        parts = []
        for value, text, width in zip(raw, row, widths):
            parts.append(text.rjust(width) if _is_number(value)
                         else text.ljust(width))
        lines.append(indent + '  '.join(parts).rstrip())
    return lines


def format_fields(pairs, indent=''):
    """Lay out ``(name, value)`` pairs as two aligned columns.

    :param pairs: a sequence of ``(name, value)``.
    :param indent: a prefix for every line.
    :returns: a list of lines.
    """
    width = max((len(name) for name, _value in pairs), default=0)
    return ['%s%s  %s' % (indent, name.ljust(width),
                          '-' if value is None else value)
            for name, value in pairs]


def write_lines(lines, out=None):
    """Print lines.

    :param lines: an iterable of strings without newlines.
    :param out: the stream; ``sys.stdout`` by default.
    :returns: None
    """
    out = out if out is not None else sys.stdout
    for line in lines:
        out.write(line + '\n')


def show_key(key):
    """Show a partition key for people: ``""`` is the default group.

    :param key: None, ``""`` or a group name.
    :returns: a string.
    """
    if key is None:
        return _('(unset: partitioning off)')
    if key == '':
        return _('"" (the default group)')
    return key


def show_shard(shard):
    """Show a shard for people.

    :param shard: None or a shard name.
    :returns: a string.
    """
    if shard is None:
        return _('(unset: every shard)')
    return shard


def read_members(backend, settings):
    """Read the membership of a partition, shard included.

    :param backend: a membership backend.
    :param settings: the :data:`~ironic_partition.conf.PartitionSettings`.
    :returns: a :class:`~ironic_partition.membership.base.Membership`.
    """
    peers = settings.peer_list if ip_conf.is_partitioned(settings) else None
    extra = {'shard': settings.shard} if settings.shard is not None else {}
    return backend.members(settings.partition_key, peers, **extra)


def percent(part, whole):
    """A percentage, 0 when ``whole`` is 0.

    :param part: a number.
    :param whole: a number.
    :returns: a float rounded to 0.1.
    """
    return round(100.0 * part / whole, 1) if whole else 0.0


class Progress(object):
    """Progress messages on a terminal; nothing when output is piped.

    Messages overwrite each other on one line of ``stream`` (stderr by
    default) and are erased when the work is done, so they never mix with
    the command's output.

    :param stream: where to write; ``sys.stderr`` by default.
    :param enabled: force on or off; by default on when ``stream`` is a
        terminal.
    :param interval: seconds between two updates of a running task.
    """

    def __init__(self, stream=None, enabled=None, interval=0.2):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, 'isatty', None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.interval = interval
        self._shown = False
        self._lock = threading.Lock()

    def show(self, text):
        """Replace the progress line with ``text``.

        :param text: one line.
        :returns: None
        """
        if not self.enabled:
            return
        with self._lock:
            self.stream.write('\r\x1b[K' + text)
            self.stream.flush()
            self._shown = True

    def clear(self):
        """Erase the progress line.

        :returns: None
        """
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                self.stream.write('\r\x1b[K')
                self.stream.flush()
                self._shown = False

    @contextlib.contextmanager
    def task(self, text, detail=None):
        """Show ``text`` with the elapsed time while the block runs.

        :param text: what is being done.
        :param detail: an optional callable returning a short status
            (e.g. pages read so far), polled at each update.
        :returns: a context manager.
        """
        if not self.enabled:
            yield
            return
        stop = threading.Event()
        start = time.monotonic()

        def update():
            extra = ''
            if detail is not None:
                try:
                    extra = detail() or ''
                except Exception:
                    extra = ''
            self.show('%s%s (%.1f s)' % (
                text, ': ' + extra if extra else '',
                time.monotonic() - start))

        def run():
            while not stop.wait(self.interval):
                update()

        update()
        thread = threading.Thread(target=run, name='progress', daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.clear()


def pages_detail(client):
    """A progress detail reading how many pages a client has fetched.

    :param client: an :class:`~ironic_partition.baremetal.IronicClient`.
    :returns: a callable for :meth:`Progress.task`.
    """
    def detail():
        calls = client.last_calls
        if not calls:
            return ''
        return _('%(pages)d pages, up to %(nodes)d nodes') % {
            'pages': calls, 'nodes': calls * client.page_size}
    return detail


def load_instance_hosts(path):
    """Read which host owns each instance.

    Accepts a JSON object ``{"<instance uuid>": "<host>"}``, or the list
    that ``openstack server list --all-projects --long -f json -c ID -c
    Host`` prints (``[{"ID": ..., "Host": ...}]``).

    :param path: the file, or None.
    :returns: a dict of instance UUID to lower-cased host, or None when
        ``path`` is None.
    :raises InvalidCommandInput: naming the option and the file.
    """
    if path is None:
        return None
    option = '--instance-hosts'
    try:
        with open(path) as stream:
            data = json.load(stream)
    except OSError as e:
        raise exception.InvalidCommandInput(
            option=option, value=path, reason=e.strerror or e)
    except ValueError as e:
        raise exception.InvalidCommandInput(
            option=option, value=path,
            reason=_('not JSON (%s)') % one_line(e))
    result = {}
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        try:
            items = [((row.get('ID') or row.get('id')),
                      (row.get('Host') or row.get('host')))
                     for row in data]
        except AttributeError:
            items = [(None, None)]
    else:
        items = [(None, None)]
    for instance, host in items:
        if not isinstance(instance, str) or not instance:
            raise exception.InvalidCommandInput(
                option=option, value=path,
                reason=_('expected {"<instance uuid>": "<host>"} or the '
                         'JSON list of "openstack server list --long -c ID '
                         '-c Host -f json"'))
        if isinstance(host, str) and host.strip():
            result[instance] = host.strip().lower()
    return result


def my_instances(instance_hosts, host):
    """The instances a host owns.

    :param instance_hosts: instance UUID to host, or None.
    :param host: the lower-cased host.
    :returns: a frozenset of instance UUIDs.
    """
    if not instance_hosts:
        return frozenset()
    return frozenset(i for i, h in instance_hosts.items() if h == host)


def _sqlite_file(connection):
    try:
        url = sa_url.make_url(connection)
    except Exception:
        return None
    if url.get_backend_name() != 'sqlite':
        return None
    path = url.database
    if not path or path == ':memory:' or path.startswith('file:'):
        return None
    return os.path.abspath(path)


def check_database(db):
    """Check, without writing, that a membership database is usable.

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :returns: the schema revision.
    :raises DatabaseConnectionFailed: it cannot be reached (an SQLite file
        that does not exist counts: no service has used it yet).
    :raises DatabaseNotMigrated: its schema is missing or old.
    :raises DatabaseTooNew: its schema is newer than this code.
    """
    path = _sqlite_file(db.connection)
    if path is not None and not os.path.exists(path):
        raise exception.DatabaseConnectionFailed(
            connection=db.masked_connection,
            reason=_('the SQLite file %s does not exist: no service has '
                     'used this membership database yet (services create '
                     'it when they start)') % path)
    try:
        db.check()
        return db.ensure_schema(upgrade=False)
    except exception.MembershipError:
        raise
    except Exception as e:
        raise exception.DatabaseConnectionFailed(
            connection=db.masked_connection,
            reason='%s: %s' % (type(e).__name__, one_line(e)))


def open_membership(conf, settings, role):
    """Open the configured membership backend read-only.

    Nothing joins: the database backend is checked and read but sends no
    heartbeat, so a CLI run never looks like a live service.

    :param conf: the ``ConfigOpts``.
    :param settings: the :data:`~ironic_partition.conf.PartitionSettings`.
    :param role: the role whose services to read.
    :returns: a membership backend whose ``members()`` can be called.
    :raises MembershipError: the backend cannot be loaded or read.
    """
    name = conf.ironic_partition.membership_backend
    if name == 'nova':
        raise exception.BackendNotSupported(
            backend=name,
            reason=_('nova\'s service group can only be read inside '
                     'nova-compute; the CLI reads the "database" and '
                     '"static" backends ([ironic_partition] '
                     'membership_backend)'))
    extra = {'shard': settings.shard} if settings.shard is not None else {}
    backend = membership_base.get_backend(
        name, conf, settings.host, role,
        partition_key=settings.partition_key, **extra)
    store = getattr(backend, 'store', None)
    if store is not None:
        check_database(store.db)
    else:
        backend.start()
    return backend


def close_membership(backend):
    """Release what :func:`open_membership` opened; never raises.

    :param backend: the backend, or None.
    :returns: None
    """
    if backend is None:
        return
    store = getattr(backend, 'store', None)
    try:
        if store is not None:
            store.dispose()
        else:
            backend.stop()
    except Exception:
        LOG.debug('Ignoring an error while closing the membership',
                  exc_info=True)


def conductor_groups(conductors):
    """Summarise conductors by group.

    :param conductors: dicts from
        :meth:`~ironic_partition.baremetal.IronicClient.list_conductors`.
    :returns: a dict of group to ``{'alive': [...], 'dead': [...]}``,
        host names sorted.
    """
    groups = {}
    for cond in conductors:
        entry = groups.setdefault(cond['conductor_group'],
                                  {'alive': [], 'dead': []})
        entry['alive' if cond['alive'] else 'dead'].append(cond['hostname'])
    for entry in groups.values():
        entry['alive'].sort()
        entry['dead'].sort()
    return groups


def known_groups_text(groups):
    """List conductor groups for a message.

    :param groups: an iterable of group names.
    :returns: a string.
    """
    names = sorted(groups)
    if not names:
        return _('none (no conductor is registered)')
    return ', '.join('""' if g == '' else repr(g) for g in names)


def check_group(client, key, conductors=None):
    """Check that a partition key names a conductor group of Ironic.

    :param client: an :class:`~ironic_partition.baremetal.IronicClient`.
    :param key: the normalised partition key; None skips the check.
    :param conductors: the conductors if already listed.
    :returns: the conductors (listed when not given).
    :raises UnknownConductorGroup: no conductor ever registered in it.
    :raises IronicUnavailable: Ironic cannot be reached.
    """
    if conductors is None:
        conductors = client.list_conductors()
    if key is None:
        return conductors
    groups = conductor_groups(conductors)
    if key not in groups:
        raise exception.UnknownConductorGroup(
            group=key, endpoint=client.endpoint,
            known=known_groups_text(groups))
    return conductors


def add_format_argument(parser):
    """Add ``--format {table,json}`` to a subcommand.

    :param parser: an argparse parser.
    :returns: None
    """
    parser.add_argument(
        '--format', choices=('table', 'json'), default='table',
        help=_('Output format: aligned tables for people (default) or '
               'JSON for scripts.'))


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
        '--instance-hosts', metavar='FILE',
        help=_('JSON file telling which host owns each instance: '
               '{"<instance uuid>": "<host>"}, or the output of '
               '"openstack server list --all-projects --long -c ID -c Host '
               '-f json". Nodes whose instance this host owns are managed '
               'by it; nodes whose instance belongs to a peer that is not '
               'alive are reported as stranded.'))
