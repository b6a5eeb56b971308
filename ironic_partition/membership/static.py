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

"""The ``static`` membership backend: the peer list as written.

No liveness is checked: every host in the peer list counts as alive, plus
this service. A dead peer keeps its share of the nodes until the peer list
is changed, so this suits tests and deployments with an external
orchestrator only.
"""

from oslo_log import log as logging

from ironic_partition.membership import base

LOG = logging.getLogger(__name__)


class StaticMembership(base.MembershipBackend):
    """Membership taken from the peer list, without liveness."""

    name = 'static'

    def start(self):
        """Nothing to join.

        :returns: None
        """
        LOG.info('Static membership for %(host)s (%(role)s): peers are '
                 'taken from the peer list without any liveness check',
                 {'host': self.host, 'role': self.role})

    def members(self, partition_key=None, peer_list=None, shard=None):
        """Return the peer list plus this service, all considered live.

        :param partition_key: unused; kept for the interface.
        :param shard: unused; kept for the interface.
        :param peer_list: host names, or None for this service alone.
        :returns: a :class:`base.Membership`.
        """
        live = set(base.normalize_peers(peer_list) or ())
        live.add(self.host)
        return base.Membership(live=frozenset(live))
