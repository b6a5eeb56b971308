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

"""``ironic-partition reserve`` and ``release``: Ironic allocations.

``reserve RESOURCE_CLASS [--trait T]... [--name N] [--instance-uuid U]
[--timeout S]`` reserves one of the nodes this host manages, exactly as the
nova driver does: the allocation's candidates are the instance-less nodes
this host manages (computed read-only, as ``ironic-partition status``
shows them). ``release ALLOCATION`` or ``release --node NODE`` deletes
the allocation; releasing twice is harmless.

Both print one line on error and return a non-zero exit code:
:data:`EXIT_RESERVATION_FAILED` when no node matched, Ironic failed the
allocation or it timed out (in every case the allocation was deleted),
and the codes of :mod:`ironic_partition.cmd._errors` otherwise.
"""

import contextlib
import sys

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition import allocations
from ironic_partition.cmd import _args
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition import partitioner
from ironic_partition import readonly
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)

#: No node this host manages matched, Ironic failed the allocation, or it
#: did not become active in time; the allocation was deleted.
EXIT_RESERVATION_FAILED = 7


@contextlib.contextmanager
def open_partitioner(conf, role):
    """A read-only :class:`~ironic_partition.partitioner.Partitioner`.

    The membership is read without joining (no heartbeat) and no ownership
    claim is taken or renewed: a CLI run never acts as the service in
    whose name it computes the partition.

    :param conf: the parsed ``ConfigOpts``, ironic-partition's options
        registered.
    :param role: the membership role of the services sharing the ring.
    :returns: a context manager giving the partitioner; the membership is
        closed on exit.
    :raises: ConfigurationError, MembershipError (see
        :func:`ironic_partition.readonly.open_membership`).
    """
    settings = settings_mod.from_conf(conf)
    client = settings_mod.ironic_client(conf)
    membership = readonly.open_membership(settings, role)
    try:
        yield partitioner.Partitioner(settings, client, membership,
                                      claims=False)
    finally:
        readonly.close_membership(membership)


def exit_code_for(exc):
    """The exit code of a failed ``reserve`` or ``release``.

    :param exc: an exception.
    :returns: an exit code.
    """
    if isinstance(exc, exception.InvalidAllocationRequest):
        return _errors.EXIT_USAGE
    if isinstance(exc, (exception.AllocationsNotSupported,
                        exception.AllocationRequestRefused,
                        exception.ReleaseRefused)):
        return _errors.EXIT_IRONIC
    if isinstance(exc, exception.AllocationError):
        return EXIT_RESERVATION_FAILED
    return _errors.exit_code_for(exc)


def _fail(command, exc, conf, err=None):
    err = err if err is not None else sys.stderr
    LOG.debug('ironic-partition %s failed', command, exc_info=True)
    err.write('ironic-partition %s: error: %s\n' % (
        command, _errors.describe_error(exc, conf)))
    return exit_code_for(exc)


def _format(conf):
    return getattr(conf.command, 'format', None)


def run_reserve(conf, out=None, err=None):
    """Run ``ironic-partition reserve``.

    :param conf: the parsed ``ConfigOpts``.
    :param out: where to print, ``sys.stdout`` by default.
    :param err: where to print the error line, ``sys.stderr`` by default.
    :returns: the exit code.
    """
    args = conf.command
    try:
        with open_partitioner(conf, args.role) as part:
            reserver = allocations.Reserver(part.client, part)
            res = reserver.reserve(
                args.resource_class, traits=args.traits,
                name=args.allocation_name,
                instance_uuid=args.instance_uuid, timeout=args.timeout)
    except Exception as e:
        return _fail('reserve', e, conf, err)
    if _format(conf) == 'json':
        _output.emit_json(res.to_dict(), out)
    else:
        _output.write_lines(_output.format_fields([
            (_('node'), res.node_id),
            (_('allocation'), res.allocation_id),
            (_('instance_uuid'), res.instance_uuid),
            (_('name'), res.name),
            (_('resource_class'), res.resource_class),
            (_('traits'), ', '.join(res.traits) or None),
            (_('partition'), _output.show_key(res.partition_key)),
            (_('host'), res.host),
            (_('candidates'), res.candidates),
            (_('seconds'), '%.2f' % res.seconds),
        ]), out)
    return _errors.EXIT_OK


def run_release(conf, out=None, err=None):
    """Run ``ironic-partition release``.

    :param conf: the parsed ``ConfigOpts``.
    :param out: where to print, ``sys.stdout`` by default.
    :param err: where to print the error line, ``sys.stderr`` by default.
    :returns: the exit code.
    """
    args = conf.command
    try:
        if (args.allocation is None) == (args.node is None):
            raise exception.InvalidCommandInput(
                option='ALLOCATION / --node',
                value=[args.allocation, args.node],
                reason=_('give either an allocation (UUID or name) or '
                         '--node, not both and not neither'))
        reserver = allocations.Reserver(
            settings_mod.ironic_client(conf), None)
        released = reserver.release(allocation=args.allocation,
                                    node=args.node)
    except exception.InvalidCommandInput as e:
        _fail('release', e, conf, err)
        return _errors.EXIT_USAGE
    except Exception as e:
        return _fail('release', e, conf, err)
    target = args.allocation or args.node
    if _format(conf) == 'json':
        _output.emit_json({
            'released': released is not None,
            'allocation': released.id if released else None,
            'node': released.node_id if released else None,
            'target': target}, out)
    elif released is not None:
        _output.write_lines([_('Released allocation %(id)s of node '
                               '%(node)s.') % {'id': released.id,
                                               'node': released.node_id}],
                            out)
    elif args.node is not None:
        _output.write_lines([_('Nothing to release: node %s has no '
                               'allocation.') % target], out)
    else:
        _output.write_lines([_('Nothing to release: allocation %s does not '
                               'exist (already released).') % target], out)
    return _errors.EXIT_OK


def _timeout(value):
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if seconds < 0:
        raise ValueError(value)
    return seconds


def add_parsers(subparsers):
    """Add the ``reserve`` and ``release`` subcommands.

    :param subparsers: the argparse subparsers of ``ironic-partition``.
    :returns: None
    """
    epilog = _('%(codes)s; %(mine)d no node matched, Ironic failed the '
               'allocation, or it timed out (the allocation was deleted)') % {
        'codes': _errors.exit_codes_epilog(),
        'mine': EXIT_RESERVATION_FAILED}
    parser = subparsers.add_parser(
        'reserve',
        help=_('Reserve one node of this host\'s partition through an '
               'Ironic allocation restricted to the nodes it manages.'),
        epilog=epilog)
    parser.add_argument(
        'resource_class', metavar='RESOURCE_CLASS',
        help=_('The node resource class, as Ironic stores it (e.g. '
               'baremetal).'))
    parser.add_argument(
        '--trait', dest='traits', action='append', metavar='TRAIT',
        help=_('A trait the node must have: CUSTOM_* or a standard trait. '
               'Repeat for several.'))
    # NOTE(ironic-partition): not dest="name": oslo.config's SubCommandOpt
    # keeps the subcommand's own name in conf.command.name.
    parser.add_argument(
        '--name', dest='allocation_name', metavar='NAME',
        help=_('A unique name for the allocation.'))
    parser.add_argument(
        '--instance-uuid', dest='instance_uuid', metavar='UUID',
        help=_('The instance the node is for: the allocation\'s UUID and '
               'the node\'s instance_uuid (random by default).'))
    parser.add_argument(
        '--timeout', type=_timeout, metavar='SECONDS',
        help=_('Seconds to wait for the allocation (default: '
               '[ironic_partition] allocation_timeout).'))
    _args.add_format_argument(parser)
    _args.add_role_argument(parser, membership_base.ROLE_NOVA_COMPUTE)
    parser.set_defaults(func=run_reserve)

    parser = subparsers.add_parser(
        'release',
        help=_('Delete an allocation (by UUID or name, or by its node); '
               'releasing twice is harmless.'),
        epilog=epilog)
    parser.add_argument(
        'allocation', nargs='?', metavar='ALLOCATION',
        help=_('The allocation\'s UUID (the instance UUID) or name.'))
    parser.add_argument(
        '--node', metavar='NODE',
        help=_('Release the allocation of this node (UUID or name) '
               'instead.'))
    _args.add_format_argument(parser)
    parser.set_defaults(func=run_release)
