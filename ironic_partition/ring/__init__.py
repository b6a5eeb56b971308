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

"""The hash rings, and the providers that decide which one owns a node.

``hash_ring`` is the consistent hash ring, tooz-exact (a drop-in for
``tooz.hashring.HashRing``), and ``balanced_ring`` the opt-in ring with
bounded loads. Ownership providers are stevedore plugins in the
:data:`ironic_partition.ring.base.RING_PROVIDER_NAMESPACE` namespace, chosen
by ``[ironic_partition] ring_provider``; load the configured one with
:func:`ironic_partition.ring.base.from_settings`. Ironic's conductor rings
(:mod:`ironic_partition.ring.conductor`) are used directly by the CLI; they
map nodes to conductors and decide no ownership.
"""
