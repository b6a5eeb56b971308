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

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import base as base_cmd
from ironic_partition import exception
from ironic_partition.ironic import allocations
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import partitioner
from ironic_partition.partition import readonly
from ironic_partition import settings as settings_mod

LOG = logging.getLogger(__name__)

#: No node this host manages matched, Ironic failed the allocation, or it
#: did not become active in time; the allocation was deleted.
EXIT_RESERVATION_FAILED = 7


@contextlib.contextmanager
def open_partitioner(conf, role, client=None):
    """A read-only partitioner (:mod:`ironic_partition.partition`).

    The membership is read without joining (no heartbeat) and no ownership
    claim is taken or renewed: a CLI run never acts as the service in
    whose name it computes the partition.

    :param conf: the parsed ``ConfigOpts``, ironic-partition's options
        registered.
    :param role: the membership role of the services sharing the ring.
    :param client: the Ironic client; by default the one ``[ironic]``
        configures.
    :returns: a context manager giving the partitioner; the membership is
        closed on exit.
    :raises: ConfigurationError, MembershipError (see
        :func:`ironic_partition.partition.readonly.open_membership`).
    """
    settings = settings_mod.from_conf(conf)
    if client is None:
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


#: The exit code this module adds, for the epilog.
EXTRA_EXIT_CODES = ((EXIT_RESERVATION_FAILED, _(
    'no node matched, Ironic failed the allocation, or it timed out (the '
    'allocation was deleted)')),)


class Reserve(base_cmd.ShowOne):
    """Reserve a node of this host's partition (an Ironic allocation).

    The allocation's candidates are the instance-less nodes this host
    manages, computed read-only as ``status`` shows them, exactly as the
    nova driver does. Prints the reservation.
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE
    exit_code_for = staticmethod(exit_code_for)
    extra_exit_codes = EXTRA_EXIT_CODES

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'resource_class', metavar='RESOURCE_CLASS',
            help=_('The node resource class, as Ironic stores it (e.g. '
                   'baremetal).'))
        parser.add_argument(
            '--trait', dest='traits', action='append', metavar='TRAIT',
            help=_('A trait the node must have: a custom trait (such as '
                   'CUSTOM_GPU) or a standard trait. Repeat for several.'))
        parser.add_argument(
            '--name', dest='allocation_name', metavar='NAME',
            help=_('A unique name for the allocation.'))
        parser.add_argument(
            '--instance-uuid', dest='instance_uuid', metavar='UUID',
            help=_('The instance the node is for: the allocation\'s UUID '
                   'and the node\'s instance_uuid (random by default).'))
        parser.add_argument(
            '--timeout', type=_timeout, metavar='SECONDS',
            help=_('Seconds to wait for the allocation (default: '
                   '[ironic_partition] allocation_timeout).'))
        return parser

    def take_action(self, parsed_args):
        conf = self.load_conf(parsed_args)
        with open_partitioner(conf, parsed_args.role,
                              client=self.ironic_client(conf)) as part:
            reserver = allocations.Reserver(part.client, part)
            res = reserver.reserve(
                parsed_args.resource_class, traits=parsed_args.traits,
                name=parsed_args.allocation_name,
                instance_uuid=parsed_args.instance_uuid,
                timeout=parsed_args.timeout)
        return base_cmd.record(res.to_dict())


class Release(base_cmd.ShowOne):
    """Delete an allocation, by UUID, name or node.

    Releasing twice is harmless. Prints whether an allocation was
    released: ``released`` is false when there was none (already
    released, or the node has none).
    """

    exit_code_for = staticmethod(exit_code_for)
    extra_exit_codes = EXTRA_EXIT_CODES

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'allocation', nargs='?', metavar='ALLOCATION',
            help=_('The allocation\'s UUID (the instance UUID) or name.'))
        parser.add_argument(
            '--node', metavar='NODE',
            help=_('Release the allocation of this node (UUID or name) '
                   'instead.'))
        return parser

    def take_action(self, parsed_args):
        if (parsed_args.allocation is None) == (parsed_args.node is None):
            raise exception.InvalidAllocationRequest(
                field='ALLOCATION / --node',
                value=[parsed_args.allocation, parsed_args.node],
                allowed=_('give either ALLOCATION (a UUID or name) or '
                          '--node, not both and not neither'))
        conf = self.load_conf(parsed_args)
        reserver = allocations.Reserver(self.ironic_client(conf), None)
        released = reserver.release(allocation=parsed_args.allocation,
                                    node=parsed_args.node)
        return base_cmd.record({
            'released': released is not None,
            'allocation': released.id if released else None,
            'node': released.node_id if released else None,
            'target': parsed_args.allocation or parsed_args.node})


def _timeout(value):
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if seconds < 0:
        raise ValueError(value)
    return seconds
