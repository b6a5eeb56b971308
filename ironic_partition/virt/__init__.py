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

"""What nova-compute loads: the virt driver and its parts.

``nova_driver`` is nova 34's ``IronicDriver`` with the partitioning (nova
imports it through the ``nova.virt.ironic_partition`` shim); ``mixin``
gives any driver a partitioner, its settings and their SIGHUP reload;
``lifecycle`` holds the driver's decisions about its own process (start,
join, the wait for a handover, stop); ``reservation`` makes nova's
reservation of a node a write the claims database proved; ``tracking``
checks each node of nova's resource-tracker pass again inside nova's lock.
"""
