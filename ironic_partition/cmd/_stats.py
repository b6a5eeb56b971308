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

"""Balance figures of a ring, shared by ``ring`` and ``simulate``."""

import collections
import math


def count_by_member(owners, members):
    """Count the keys each member owns.

    :param owners: a mapping of key to member (``None`` for no member).
    :param members: every member, so that members owning nothing count 0.
    :returns: a dict of member to count, members sorted.
    """
    counts = collections.Counter(owners.values())
    counts.pop(None, None)
    result = {member: 0 for member in sorted(members)}
    for member, count in counts.items():
        result[member] = count
    return dict(sorted(result.items()))


def balance(counts):
    """Describe how evenly keys are spread over members.

    :param counts: a dict of member to key count.
    :returns: a dict with ``members``, ``keys``, ``fair`` (the mean),
        ``min``, ``max``, ``stddev``, ``max_over_fair`` and
        ``min_over_fair`` (ratios to the mean, 1.0 is perfect) and
        ``spread_percent`` (``(max - min) / fair`` in percent).
    """
    values = list(counts.values())
    members = len(values)
    keys = sum(values)
    if not members:
        return {'members': 0, 'keys': keys, 'fair': None, 'min': None,
                'max': None, 'stddev': None, 'max_over_fair': None,
                'min_over_fair': None, 'spread_percent': None}
    fair = keys / members
    low, high = min(values), max(values)
    stddev = math.sqrt(sum((v - fair) ** 2 for v in values) / members)
    return {
        'members': members,
        'keys': keys,
        'fair': round(fair, 2),
        'min': low,
        'max': high,
        'stddev': round(stddev, 2),
        'max_over_fair': round(high / fair, 4) if fair else None,
        'min_over_fair': round(low / fair, 4) if fair else None,
        'spread_percent': round(100.0 * (high - low) / fair, 1)
        if fair else None,
    }


def deviation(count, fair):
    """A member's count relative to the fair share, as ``+x.x%``.

    :param count: the member's count.
    :param fair: the fair share (mean), or None.
    :returns: a string.
    """
    if not fair:
        return '-'
    return '%+.1f%%' % (100.0 * (count - fair) / fair)
