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

"""Where nova's driver loader finds ironic-partition's driver.

nova 34 imports ``nova.virt.<compute_driver>``, so this module lets
nova.conf say::

    [DEFAULT]
    compute_driver = ironic_partition.IronicPartitionDriver

It holds no code: the driver is
:class:`ironic_partition.virt.nova_driver.IronicPartitionDriver`.
"""

from ironic_partition.virt import nova_driver

IronicPartitionDriver = nova_driver.IronicPartitionDriver

__all__ = ['IronicPartitionDriver']
