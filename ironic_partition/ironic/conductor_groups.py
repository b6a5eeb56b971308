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

"""Ironic's conductor groups: which exist, and whether a key names one.

A partition key (``[ironic] partition_key``) is the name of a conductor
group. These helpers read the conductors Ironic lists and refuse a key
that no conductor ever registered in. The CLI, the agent and any consumer
of :mod:`ironic_partition.ironic.baremetal` share them; nothing here talks to
Ironic except through the client it is given.
"""

from ironic_partition._i18n import _
from ironic_partition import exception


def by_group(conductors):
    """Summarise conductors by conductor group.

    :param conductors: dicts from
        :meth:`~ironic_partition.ironic.baremetal.IronicClient.list_conductors`.
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


def known_text(groups):
    """List conductor groups for a message.

    :param groups: an iterable of group names.
    :returns: a string; ``""`` stands for the default group.
    """
    names = sorted(groups)
    if not names:
        return _('none (no conductor is registered)')
    return ', '.join('""' if g == '' else repr(g) for g in names)


def check(client, key, conductors=None):
    """Check that a partition key names a conductor group of Ironic.

    :param client: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
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
    groups = by_group(conductors)
    if key not in groups:
        raise exception.UnknownConductorGroup(
            group=key, endpoint=client.endpoint, known=known_text(groups))
    return conductors
