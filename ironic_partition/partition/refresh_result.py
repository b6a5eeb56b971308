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

"""What one refresh of a partitioner found, and what it cost.

The records every consumer of a
:class:`~ironic_partition.partition.partitioner.Partitioner` reads; the
claim round's :class:`~ironic_partition.claims.outcome.ClaimOutcome` is
one of them.
"""

import dataclasses

from oslo_log import log as logging

from ironic_partition import conf as ip_conf

# NOTE(ironic-partition): the refresh lines keep the logger they always
# had, for operators' log filters.
LOG = logging.getLogger('ironic_partition.partition.partitioner')


@dataclasses.dataclass(frozen=True)
class RefreshMetrics(object):
    """What one refresh cost.

    :param listed: nodes of the partition (and of this service's
        instances outside it) the rules saw.
    :param full: True when Ironic was listed in full, False when only its
        change feed was read.
    :param changed: node records the change feed applied (the nodes
        listed, for a full listing).
    :param api_calls: Ironic API calls made.
    :param http_seconds: seconds spent in those calls.
    :param seconds: seconds the whole refresh took.
    :param claim_seconds: seconds the claim round took.
    :param instance_lookups: ``GET /v1/nodes?instance_uuid=`` look-ups
        made for this service's instances the listing did not show (part
        of ``api_calls``).
    :param date_ahead: seconds the Ironic API's ``Date`` was ahead of
        this host's clock when the change feed last ignored it, 0 while
        it is trusted.
    """

    listed: int
    full: bool
    changed: int
    api_calls: int
    http_seconds: float
    seconds: float
    claim_seconds: float = 0.0
    instance_lookups: int = 0
    date_ahead: float = 0.0


_NO_CLAIMS = frozenset()


@dataclasses.dataclass(frozen=True)
class RefreshResult(object):
    """What one refresh found.

    :param settings: the :data:`~ironic_partition.conf.PartitionSettings`
        in force.
    :param membership: the membership the ring was built from.
    :param ring_ownership: the
        :data:`~ironic_partition.partition.rules.Ownership` the rules decided.
    :param ownership: the same, with ``by_ring``, ``by_instance`` (and
        ``managed``) cut down to the nodes this service holds claims on;
        equal to ``ring_ownership`` when claims are off.
    :param nodes: the managed nodes, by UUID (slim records).
    :param gained: UUIDs managed now and not at the previous refresh.
    :param lost: UUIDs managed at the previous refresh and not now.
    :param claims: the
        :class:`~ironic_partition.claims.outcome.ClaimOutcome` of
        this refresh's claim round, or None when claims are off.
    :param metrics: the :class:`RefreshMetrics`.
    """

    settings: object
    membership: object
    ring_ownership: object
    ownership: object
    nodes: dict
    gained: frozenset
    lost: frozenset
    claims: object
    metrics: RefreshMetrics

    @property
    def members(self):
        """The ring members, sorted."""
        return tuple(sorted(self.membership.live))

    @property
    def claimed(self):
        """UUIDs whose claim was taken in this refresh."""
        return self.claims.claimed if self.claims else _NO_CLAIMS

    @property
    def released(self):
        """UUIDs whose claim was released in this refresh."""
        return self.claims.released if self.claims else _NO_CLAIMS

    @property
    def fenced(self):
        """Wanted nodes not reported: no valid claim could be proven."""
        return self.claims.fenced if self.claims else _NO_CLAIMS

    @property
    def waiting(self):
        """Wanted nodes not reported: another process holds their claim.

        Ring nodes, and nodes of this service's own instances (after a
        takeover, until the previous process's lease runs out).
        """
        return self.claims.waiting if self.claims else _NO_CLAIMS

    @property
    def valid_until(self):
        """Until when (monotonic) the claimed nodes may be reported.

        None when claims are off (no limit) or no claimed node is
        reported.
        """
        if not self.claims or not self.claims.reported:
            return None
        return self.claims.valid_until

    def warn_overrun(self, cadence):
        """Warn when the refresh took longer than the consumer's interval.

        :param cadence: the consumer's :data:`~ironic_partition.settings.
            claims.Cadence`.
        :returns: None
        """
        result = self
        # NOTE(ironic-partition): the I2 bound (safety.rst) and the lease
        # both assume a refresh ends within refresh_interval; say so when
        # it does not, with the figures an operator needs to act.
        interval = cadence.interval
        if result.metrics.seconds <= interval:
            return
        option = cadence.interval_option
        LOG.warning('Refresh took %(secs).1f s (Ironic %(http).1f s), '
                    'longer than %(option)s (%(interval)s s): nodes of a '
                    'failed service may stay unreported longer than '
                    'service_down_time + 2 x that interval. The claims are '
                    'renewed by a timer of their own and do not lapse. '
                    'Raise %(option)s or reduce the load on the Ironic '
                    'API.',
                    {'secs': result.metrics.seconds,
                     'http': result.metrics.http_seconds,
                     'interval': interval, 'option': option})

    def log(self, announce):
        """Log the refresh: one INFO line, and one more when ``announce``.

        :param announce: also say what is managed now (the first refresh,
            and the first after new settings).
        :returns: None
        """
        result = self
        own = result.ownership
        metrics = result.metrics
        params = {'managed': len(result.nodes), 'listed': metrics.listed,
                  'key': ip_conf.describe_partition(result.settings),
                  'members': ','.join(result.members),
                  'gained': len(result.gained), 'lost': len(result.lost),
                  'inst': len(own.by_instance), 'stranded': len(own.stranded),
                  'released': len(result.released),
                  'fenced': len(result.fenced),
                  'claimed': len(result.claimed),
                  'waiting': len(result.waiting),
                  'how': 'listed in full' if metrics.full else
                  '%d changes' % metrics.changed,
                  'secs': metrics.seconds}
        if announce:
            LOG.info('Now managing %(managed)d of %(listed)d nodes of '
                     'partition %(key)s with members %(members)s', params)
        LOG.info('Refresh: managing %(managed)d of %(listed)d nodes of '
                 'partition %(key)s (%(inst)d with our instances); gained '
                 '%(gained)d, lost %(lost)d, claimed %(claimed)d, released '
                 '%(released)d, waiting %(waiting)d, fenced %(fenced)d, '
                 'stranded %(stranded)d; members %(members)s; '
                 '%(how)s, %(secs).2f s', params)
