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

"""What the inspection hook does with one node: a pure function.

:func:`decide` takes what the hook read (the node's fields, the map's
match, whether a group serves the node's hardware type) and returns a
:data:`Decision`; the hook applies it. No Ironic import, no I/O.
"""

import collections

from ironic_partition._i18n import _
from ironic_partition import names

#: The node moves to the map's group.
MOVED = 'moved'
#: The node already is in the map's group.
UNCHANGED = 'unchanged'
#: The node's group was set explicitly, and is kept.
KEPT = 'kept'
#: No alive conductor of the map's group serves the node's hardware type:
#: nothing changes.
REFUSED = 'refused'
#: The hook does not touch the node (instance, allocation, no match).
SKIPPED = 'skipped'

SHARD_SET = 'set'
SHARD_KEPT = 'kept'
SHARD_UNCHANGED = 'unchanged'
SHARD_NONE = 'none'

#: ``action`` (one of the constants above), ``group_from``, ``group_to``
#: (the group after the hook), ``shard_action``, ``shard`` (the shard after
#: the hook), ``reason`` (a sentence), ``match`` (the mapping ``Match`` or
#: None).
Decision = collections.namedtuple('Decision', [
    'action', 'group_from', 'group_to', 'shard_action', 'shard_from',
    'shard', 'reason', 'match'])


def _norm(group):
    return (group or '').lower()


def is_explicit_group(group, default_group, recorded_group):
    """Tell whether a node's group was chosen by someone else.

    The default group (``''`` or ``[DEFAULT] default_conductor_group``),
    where new and auto-discovered nodes land, is not a choice; neither is
    the group this hook set last (recorded in ``driver_internal_info``).
    Any other group is.

    :param group: the node's conductor group.
    :param default_group: Ironic's ``[DEFAULT] default_conductor_group``.
    :param recorded_group: the group the hook set last, or None.
    :returns: True or False.
    """
    group = _norm(group)
    if group in ('', _norm(default_group)):
        return False
    return recorded_group is None or group != _norm(recorded_group)


def decide(node, match, served, default_group='',
           overwrite_explicit=False, no_match_reason=None):
    """Decide the group and shard of one inspected node.

    :param node: a dict with ``uuid``, ``driver``, ``conductor_group``,
        ``shard``, ``instance_uuid``, ``allocation_id`` and
        ``recorded_group`` (what the hook set last, or None).
    :param match: the map's ``Match`` for the node, or None.
    :param served: a callable ``(group, hardware_type) -> bool``: whether
        an alive conductor of the group serves the hardware type. Called
        only when the node would move.
    :param default_group: Ironic's ``[DEFAULT] default_conductor_group``.
    :param overwrite_explicit: move a node out of an explicit group too.
    :param no_match_reason: why ``match`` is None, for the record.
    :returns: a :data:`Decision`.
    """
    current = node.get('conductor_group') or ''
    shard = node.get('shard') or None
    if node.get('instance_uuid') or node.get('allocation_id'):
        return Decision(SKIPPED, current, current, SHARD_NONE, shard, shard,
                        _('the node has instance %(inst)s / allocation '
                          '%(alloc)s; it is never moved') % {
                              'inst': node.get('instance_uuid'),
                              'alloc': node.get('allocation_id')},
                        match)
    if match is None:
        return Decision(SKIPPED, current, current, SHARD_NONE, shard, shard,
                        no_match_reason or _('no map entry matches'), None)
    entry = match.entry
    target = entry.group
    if _norm(current) == _norm(target):
        action, group_to = UNCHANGED, current
        reason = _('already in group %r') % target
    elif (not overwrite_explicit and is_explicit_group(
            current, default_group, node.get('recorded_group'))):
        action, group_to = KEPT, current
        reason = _('group %(cur)r was set explicitly (not the default '
                   'group, not set by this hook); the map says %(to)r') % {
                       'cur': current, 'to': target}
    elif not served(target, node.get('driver')):
        return Decision(REFUSED, current, current, SHARD_NONE, shard, shard,
                        _('no alive conductor in group %(group)r serves '
                          'hardware type %(hw)r') % {
                              'group': target, 'hw': node.get('driver')},
                        match)
    else:
        action, group_to = MOVED, target
        reason = _('%(src)s %(val)s matches %(entry)r') % {
            'src': match.source, 'val': match.value, 'entry': entry.text}

    if entry.shard is None:
        shard_action, shard_to = SHARD_NONE, shard
    elif shard is None:
        shard_action, shard_to = SHARD_SET, entry.shard
    elif names.key(shard) == entry.shard:
        shard_action, shard_to = SHARD_UNCHANGED, shard
    else:
        # NOTE(ironic-partition): a shard never changes once set: nova
        # services and networking agents are configured per shard.
        shard_action, shard_to = SHARD_KEPT, shard
    return Decision(action, current, group_to, shard_action, shard,
                    shard_to, reason, match)


def record(decision):
    """The decision as stored in ``plugin_data['ironic_partition']``.

    :param decision: a :data:`Decision`.
    :returns: a JSON-serialisable dict.
    """
    match = decision.match
    return {
        'action': decision.action,
        'group_from': decision.group_from,
        'group_to': decision.group_to,
        'shard_action': decision.shard_action,
        'shard_from': decision.shard_from,
        'shard': decision.shard,
        'reason': decision.reason,
        'entry': match.entry.text if match else None,
        'matched_by': match.source if match else None,
        'matched_value': match.value if match else None,
    }
