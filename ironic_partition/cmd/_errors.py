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

"""Exit codes, and the one line the CLI prints for an error.

Every ``ironic-partition`` subcommand exits with one of the ``EXIT_*``
codes (:data:`EXIT_CODES` documents them for ``--help`` and the docs) and
prints an error as one line without a traceback (:func:`describe_error`).
"""

import re

from oslo_config import cfg

from ironic_partition._i18n import _
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception

#: Success; ``check`` found no problem.
EXIT_OK = 0
#: ``check`` found at least one problem (one row each).
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
EXIT_REFUSED = 9
#: A bug: an unexpected error (rerun with ``--debug`` for the traceback).
EXIT_INTERNAL = 70
#: Interrupted (SIGINT, Ctrl-C).
EXIT_INTERRUPTED = 130

#: Exit codes and their meaning, for ``--help`` and the docs.
EXIT_CODES = (
    (EXIT_OK, _('success (check: no problem found)')),
    (EXIT_PROBLEMS, _('check found problems, one row each')),
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


def exit_codes_epilog(extra=()):
    """Describe the exit codes, for an argparse epilog.

    :param extra: more ``(code, text)`` pairs, for a command's own codes.
    :returns: a string.
    """
    codes = sorted(tuple(EXIT_CODES) + tuple(extra))
    return _('exit codes: ') + '; '.join(
        '%d %s' % (code, text) for code, text in codes)


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
    if isinstance(cause, exception.RecoveryRefused):
        return EXIT_REFUSED
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
    return exception.one_line(text)
