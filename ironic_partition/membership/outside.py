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

"""The peers another view has up and the membership misses.

Inside nova-compute, nova's own service group (read as nova's
``IronicDriver`` builds its ring) is a second view of the live peers. A
peer it has up that does not heartbeat the membership database runs
nova's own driver (a rolling switch of ``compute_driver``, a rollback)
or ours against another claims database: it reports its share of nova's
ring whatever this service does, so it is a ring member here too
(:func:`~ironic_partition.membership.base.with_outside`). This module
reads that view at each refresh, merges it, and says so once per change.
"""

from oslo_log import log as logging

from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.membership import base

LOG = logging.getLogger(__name__)


class OutsideView(object):
    """Merge another view of the live peers into each membership read.

    :param view: an object with a membership backend's ``members()``
        (:class:`~ironic_partition.membership.nova.NovaMembership`).
    :param where: the membership database, masked, for log lines; None
        when there is none.
    """

    def __init__(self, view, where=None):
        self.view = view
        self.where = where or '(none)'
        self._said = (frozenset(), frozenset())
        #: Peers of the peer list that nova has as compute services
        #: without any Ironic compute node.
        self.non_ironic = frozenset()
        #: Peers counted from outside whose Ironic compute nodes are all
        #: outside this partition: ``{peer: how many}``.
        self.misplaced = {}

    def merge(self, membership, settings, peers, node_ids=None):
        """Add the peers the view has up and ``membership`` misses.

        :param membership: this service's :class:`~ironic_partition.
            membership.base.Membership`.
        :param settings: the :class:`~ironic_partition.settings.Settings`
            in force.
        :param peers: the peer list the membership was read with, or
            None (unpartitioned).
        :param node_ids: this partition's nodes, a collection of their
            UUIDs (Ironic's lower-case form; a mapping keyed by them will
            do), to tell a peer that serves another partition; None does
            not tell.
        :raises PartitionNotReady: the view never answered.
        :returns: the merged :class:`~ironic_partition.membership.base.
            Membership`.
        """
        kwargs = ({'shard': settings.shard}
                  if settings.shard is not None else {})
        try:
            seen = self.view.members(settings.partition_key, peers, **kwargs)
        except exception.MembershipError as e:
            raise exception.PartitionNotReady(kind='membership', reason=(
                "nova's service group cannot be read, so the peers that "
                "do not heartbeat the membership database are unknown: %s"
                % e))
        merged = base.with_outside(membership, seen)
        said, self._said = self._said, (merged.outside, merged.never_seen)
        self._say(merged, settings, *said)
        self._look_closer(merged, settings, node_ids, *said)
        return merged

    def _look_closer(self, membership, settings, node_ids, outside,
                     never_seen):
        """Name two mistakes that nova's ring alone does not tell apart.

        A peer of the peer list that nova has as a compute service of
        another hypervisor type (or with no Ironic node yet) is not a
        misspelt name; a peer counted from outside whose Ironic compute
        nodes are all outside this partition serves another conductor
        group or shard, and its share here is reported by nobody (as with
        nova's own ring, which counts it too). Asked of nova once per
        change, a look-up per new peer; a failed look-up only loses the
        finer message.
        """
        key = ip_conf.describe_partition(settings.partition)
        if membership.never_seen != never_seen:
            self.non_ironic = self._ask('compute_services',
                                        membership.never_seen)
            if self.non_ironic:
                LOG.warning(
                    '[ironic] peer_list names %(peers)s: nova has them as '
                    'nova-compute services, but without any Ironic compute '
                    'node (another hypervisor type, or an Ironic compute '
                    'that has not reported yet). They get no share of '
                    'partition %(key)s; remove them from [ironic] '
                    'peer_list unless they are Ironic computes.',
                    {'peers': ', '.join(sorted(self.non_ironic)),
                     'key': key})
        self.misplaced = {peer: count for peer, count in
                          self.misplaced.items()
                          if peer in membership.outside}
        if node_ids is None or settings.partition_key is None:
            return
        for peer in sorted(membership.outside - outside):
            names = self._ask('compute_node_names', peer)
            if names and not any(name in node_ids for name in names):
                self.misplaced[peer] = len(names)
                LOG.warning(
                    'Counting %(peer)s in the ring of partition %(key)s, '
                    'as nova\'s own driver does (it is in [ironic] '
                    'peer_list and up in nova\'s service group), but none '
                    'of its %(count)d Ironic compute nodes is in that '
                    'partition: it serves another conductor group or '
                    'shard. Its share of %(key)s is reported by nobody '
                    'until it leaves [ironic] peer_list here, or its '
                    '[ironic] conductor_group is corrected.',
                    {'peer': peer, 'key': key, 'count': len(names)})

    def _ask(self, method, arg):
        ask = getattr(self.view, method, None)
        if ask is None:
            return frozenset()
        try:
            return ask(arg)
        except Exception as e:
            LOG.debug('Could not ask nova %s(%s): %s', method, arg, e)
            return frozenset()

    def _say(self, membership, settings, outside, never_seen):
        """Log what the view adds, once per change."""
        key = ip_conf.describe_partition(settings.partition)
        if membership.outside != outside:
            if membership.outside:
                LOG.warning(
                    'Counting %(peers)s in the ring of partition %(key)s: '
                    'up in nova\'s service group as Ironic computes, but '
                    'absent from the membership database %(db)s (they run '
                    'nova\'s own driver, or this driver with another '
                    '[ironic_partition_database] connection). Their share '
                    'of the nodes is left to them, as nova\'s own ring '
                    'does; until they heartbeat %(db)s this service '
                    'neither claims nor reports it.',
                    {'peers': ', '.join(sorted(membership.outside)),
                     'key': key, 'db': self.where})
            else:
                LOG.info('Every peer that nova\'s service group has up in '
                         'partition %(key)s heartbeats the membership '
                         'database', {'key': key})
        if membership.never_seen and membership.never_seen != never_seen:
            LOG.warning(
                '[ironic] peer_list names %(peers)s, which neither nova '
                '(no nova-compute service with Ironic compute nodes on '
                'that host) nor the membership database %(db)s knows: '
                'check the spelling; they get no share of partition '
                '%(key)s until they run',
                {'peers': ', '.join(sorted(membership.never_seen)),
                 'db': self.where, 'key': key})
