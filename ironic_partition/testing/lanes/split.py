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

"""The split the agents' reports must show, by the rules and the ring.

Used by the demo and the fault tests to judge a set of agents' report
files: every node managed by exactly the agent the rules and the tooz
ring give it, none by two, none whose instance's owner is not live.
"""

import collections

from ironic_partition.ring import hash_ring


def expected_split(nodes, members_by_group, instance_owner):
    """Who should manage each node, by the rules and the tooz ring.

    :param nodes: dicts with ``uuid``, ``conductor_group`` and
        ``instance`` (None or an instance UUID).
    :param members_by_group: group -> the live agents sharing it.
    :param instance_owner: instance UUID -> agent.
    :returns: node UUID -> the agent that should manage it, or None for
        a node nobody may manage (its instance's owner is not live).
    """
    result = {}
    for group, members in members_by_group.items():
        in_group = [n for n in nodes if n['conductor_group'] == group]
        ring = hash_ring.HashRing(sorted(members))
        free = [n['uuid'] for n in in_group if n['instance'] is None]
        owners = ring.map_keys(free) if members else {}
        for node in in_group:
            if node['instance'] is None:
                result[node['uuid']] = owners.get(node['uuid'])
            else:
                owner = instance_owner.get(node['instance'])
                result[node['uuid']] = owner if owner in members else None
    return result


def check_split(reports, nodes, members_by_group, instance_owner):
    """Compare the agents' reports with the expected split.

    :param reports: agent -> its report document.
    :param nodes: as for :func:`expected_split`.
    :param members_by_group: group -> the live agents sharing it.
    :param instance_owner: instance UUID -> agent.
    :returns: a list of problems, empty when the split is exact: every
        node managed by exactly the agent expected, none by two, none
        that nobody may manage.
    """
    expected = expected_split(nodes, members_by_group, instance_owner)
    live = {a for members in members_by_group.values() for a in members}
    managers = collections.defaultdict(set)
    problems = []
    for agent in sorted(live):
        report = reports.get(agent)
        if report is None:
            problems.append('%s has written no report' % agent)
            continue
        if not report.get('ready'):
            problems.append('%s is not ready: %s' % (agent,
                                                     report.get('reason')))
        for uuid_ in report.get('managed', ()):
            managers[uuid_].add(agent)
    for uuid_, want in sorted(expected.items()):
        have = managers.get(uuid_, set())
        if len(have) > 1:
            problems.append('node %s is managed by %s at once'
                            % (uuid_, ', '.join(sorted(have))))
        elif want is None and have:
            problems.append('node %s is managed by %s but its instance '
                            'owner is not live' % (uuid_, have.pop()))
        elif want is not None and have != {want}:
            problems.append('node %s should be managed by %s, not by %s'
                            % (uuid_, want, ', '.join(sorted(have))
                               or 'nobody'))
    return problems
