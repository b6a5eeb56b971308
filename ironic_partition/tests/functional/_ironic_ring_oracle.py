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

"""Ironic's own conductor ring, run in a child process as an oracle.

Ironic and nova both register options on oslo.config's global CONF (for
example ``[api] max_limit``), so they cannot be imported into one test
process. This module runs alone: it reads ``{"conductors": [...],
"nodes": [...], "use_groups": bool}`` as JSON on stdin, asks Ironic's
``HashRingManager`` where each node belongs, and prints ``{uuid:
conductor}`` as JSON. Only Ironic's database query for the alive
conductors is replaced, with the same conductors.
"""

import collections
import json
import sys
from unittest import mock

from ironic.common import hash_ring
from ironic import objects


def main():
    request = json.load(sys.stdin)
    use_groups = request['use_groups']
    by_key = collections.defaultdict(set)
    for cond in request['conductors']:
        if not cond['alive']:
            continue
        for driver in cond['drivers']:
            key = ('%s:%s' % (cond['conductor_group'].lower(), driver)
                   if use_groups else driver)
            by_key[key].add(cond['hostname'])
    objects.register_all()
    manager = hash_ring.HashRingManager(use_groups=use_groups, cache=False)
    with mock.patch.object(hash_ring.objects.Conductor,
                           'get_active_hardware_type_dict', autospec=True,
                           return_value=dict(by_key)), \
            mock.patch.object(hash_ring.context, 'get_admin_context',
                              autospec=True):
        result = {}
        for node in request['nodes']:
            ring = manager.get_ring(node['driver'], node['conductor_group'])
            result[node['uuid']] = ring.get_nodes(
                node['uuid'].encode('utf-8')).pop()
    json.dump(result, sys.stdout)


if __name__ == '__main__':
    main()
