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

"""Options of the plugin's own ``[ironic_partition]`` group."""

from oslo_config import cfg

from ironic_partition._i18n import _

GROUP = 'ironic_partition'

opts = [
    cfg.StrOpt(
        'host',
        help=_('Name this service registers with, heartbeats as and is '
               'known by in peer_list and on the hash ring. Defaults to '
               '[DEFAULT] host where that option exists (nova-compute), '
               'else to this machine\'s host name. Compared ignoring '
               'case.')),
    cfg.StrOpt(
        'state_path',
        default='/var/lib/ironic-partition',
        help=_('Directory for local state, such as the embedded SQLite '
               'membership database used when '
               '[ironic_partition_database] connection is not set.')),
    cfg.StrOpt(
        'membership_backend',
        default='database',
        help=_('Where live peers come from, by entry-point name in the '
               'ironic_partition.membership namespace: "database" '
               '(heartbeats in the [ironic_partition_database] database, '
               'the default), "nova" (nova\'s own service group API, only '
               'inside nova-compute) or "static" (peer_list as written, '
               'with no liveness check).')),
    cfg.StrOpt(
        'ring_provider',
        default='compute',
        help=_('Which ring decides ownership, by entry-point name in the '
               'ironic_partition.ring_providers namespace. The one '
               'shipped is "compute": the ring of the live compute '
               'services of the partition, as nova builds it. Ironic\'s '
               'conductor ring is not a choice: it maps nodes to Ironic '
               'conductors, not to the services that report them ("'
               'ironic-partition ring --conductors" shows it). A name '
               'that is not installed stops the service at start with an '
               'error listing the installed providers.')),
    cfg.IntOpt(
        'partition_exponent',
        default=5,
        min=0,
        max=16,
        help=_('Each ring member gets 2**partition_exponent partitions. '
               'The default, 5, is what tooz, nova and Ironic use, so the '
               'node-to-host mapping is the same as theirs and adopting '
               'this plugin moves no node. Changing it moves nodes.')),
    cfg.StrOpt(
        'ring_mode',
        default='tooz',
        choices=[
            ('tooz', _('Bit-identical with tooz.hashring.HashRing, as used '
                       'by nova and Ironic. Adopting it moves no node.')),
            ('balanced', _('A better-balanced ring (opt-in). Switching to '
                           'it moves nodes: see "ironic-partition simulate" '
                           'for exactly which.')),
        ],
        help=_('How keys are placed on the ring. All services of one '
               'partition must use the same mode. The balanced mode is '
               'built on every node of the partition, so services that '
               'listed it before and after a node was enrolled or deleted '
               'disagree until both list again; it therefore needs '
               'ownership claims (see "claims") and is refused with '
               '[ironic] shard.')),
    cfg.IntOpt(
        'refresh_interval',
        default=30,
        min=1,
        help=_('Seconds between two refreshes of the node list, the '
               'membership and the ring in the partition agent '
               '("ironic-partition serve"). Not used inside nova-compute: '
               'there a refresh runs at each resource-tracker run, every '
               '[DEFAULT] update_resources_interval (60 s when unset), and '
               'that interval takes this option\'s place in the rules of '
               'lease_time and fencing_margin. Keep it at most half of '
               'service_down_time: a dead service\'s nodes are then '
               'reported again within service_down_time + 2 refresh '
               'intervals (see the safety guide).')),
    cfg.IntOpt(
        'full_resync_interval',
        default=300,
        min=0,
        help=_('Seconds between two full listings of this service\'s '
               'partition. In between, a refresh reads only the nodes '
               'Ironic changed or created since the last one (its change '
               'feed, ordered by updated_at and created_at). Ironic keeps '
               'no trace of a deleted node: a deleted node that carried no '
               'instance stays listed until the next full listing. 0 lists '
               'in full at every refresh, as nova does.')),
    cfg.IntOpt(
        'change_feed_overlap',
        default=60,
        min=1,
        help=_('Seconds of Ironic\'s change feed read again before the '
               'last watermark at each refresh. It covers transactions '
               'that committed out of order and clock differences between '
               'Ironic\'s API and conductor hosts, which stamp updated_at; '
               'keep it above the largest clock difference between them. '
               'The watermark follows Ironic\'s node timestamps and, on a '
               'quiet fleet, the Date header of the API\'s answers (its '
               'clock, or a proxy\'s in front of it); a Date ahead of this '
               'host\'s clock by more than this overlap is ignored, with '
               'a WARNING.')),
    cfg.IntOpt(
        'heartbeat_interval',
        default=10,
        min=1,
        help=_('Seconds between two heartbeats of this service in the '
               'membership database. Must be smaller than '
               'service_down_time.')),
    cfg.IntOpt(
        'service_down_time',
        default=60,
        min=1,
        help=_('Seconds after its last heartbeat (by the database server\'s '
               'clock) after which a peer counts as dead and its '
               'instance-less nodes are shared among the live peers. '
               'Shorter means faster failover and more churn on a slow '
               'database. Inside nova-compute, when unset, nova\'s own '
               '[DEFAULT] service_down_time (its service group\'s) is '
               'used, so that one value governs both.')),
    cfg.IntOpt(
        'membership_stale_timeout',
        default=300,
        min=0,
        help=_('Seconds for which the last known membership (and so the '
               'last known ring) is used while the membership source '
               'cannot be reached. After that the service reports "not '
               'ready" rather than guess; nova then skips resource-tracker '
               'runs but deletes nothing. 0 reports "not ready" at once.')),
    cfg.StrOpt(
        'claims',
        default='auto',
        choices=[
            ('auto', _('Claims are on when membership_backend is '
                       '"database", kept in that same database; off with '
                       'the "nova" and "static" backends.')),
            ('database', _('Claims are on whatever the membership backend, '
                           'kept in the [ironic_partition_database] '
                           'database, which every service of the '
                           'deployment must share.')),
            ('off', _('No claims: an instance-less node is reported as '
                      'soon as the ring gives it, so while services come '
                      'and go two of them may briefly report the same '
                      'node, as nova\'s own peer_list did.')),
        ],
        help=_('Whether a service reports a node only while it holds a '
               'lease (a claim) on it in the database. Claims guarantee '
               'that no two services ever report the same instance-less '
               'node, and no two processes of one host name (a takeover, '
               'a restart) any node, even across crashes, pauses and '
               'network cuts. Nodes with an instance are claimed only by '
               'the service owning the instance; without claims that '
               'service always reports them.')),
    cfg.IntOpt(
        'lease_time',
        min=1,
        help=_('Seconds a claim lasts, by the database server\'s clock, '
               'after each renewal. A timer of its own renews this '
               'service\'s claims every (lease_time - fencing_margin) / 3 '
               'seconds, whatever the refreshes do, so a listing slower '
               'than the lease lets no claim lapse. For the agent, must be '
               'at least twice refresh_interval. A claim of a dead service '
               'can be taken once its lease has run out, so its '
               'instance-less nodes are reported again after '
               'max(service_down_time, lease_time) + one interval '
               '(refresh_interval, or [DEFAULT] update_resources_interval '
               'inside nova-compute) at most. Unset, the largest of '
               'service_down_time, twice refresh_interval for the agent, '
               'and what leaves the lease timer room for three renewals '
               'before the fence: 60 s on the defaults, for the agent and '
               'inside nova-compute. With fencing_margin set alone, long '
               'enough to leave the lease timer as much time between the '
               'last renewal and the fence as the automatic values would '
               '(44 s inside nova-compute, 54 s for the agent, on the '
               'defaults).')),
    cfg.FloatOpt(
        'fencing_margin',
        min=0,
        help=_('Seconds before its lease runs out, by this host\'s '
               'lease clock (CLOCK_BOOTTIME on Linux, which counts the '
               'time a suspended machine stood still) counted from the '
               'start of the last '
               'successful renewal, at which a service that could not '
               'renew its claims stops reporting them (fences itself). It '
               'covers clock rate differences, steps of the database '
               'server\'s clock and the time the consumer may go on acting '
               'on a node after a check: inside nova-compute, the shorter '
               'of [DEFAULT] update_resources_interval and the 10 s a '
               'write under a checked claim may take (nova asks the driver '
               'before each action on a node), and it must be at least '
               'that. Must be smaller than lease_time minus 0.6 s, which '
               'leaves the lease timer time to renew. Unset, that hold (0 '
               'for the agent) plus a tenth of lease_time: 6 s for the '
               'agent and 16 s inside nova-compute, on the defaults.')),
    cfg.ListOpt(
        'forget_database_clocks',
        default=[],
        help=_('Database nodes, as "host:port" the way the services name '
               'them (@@hostname:@@port), whose clock this service does '
               'not take over from what its previous process measured '
               'when it starts. Each service keeps how far the clock of '
               'every database node it met runs ahead of the others\', '
               'across restarts, and refuses a difference the lease '
               'cannot cover until its claim rounds measure the nodes '
               'within it again; a node removed from the cluster for good '
               'can never be measured again. List it here and restart the '
               'service. A node that answers a claim round is measured '
               'anew whatever this says. Read at start.')),
    cfg.BoolOpt(
        'hand_over_on_stop',
        mutable=True,
        help=_('What a graceful stop (SIGTERM of the agent, nova-compute '
               'stopping) does with this service\'s instance-less nodes. '
               'Unset: False inside nova-compute (where every node move '
               'is a compute node rebalance), True for "ironic-partition '
               'serve". '
               'True: once it stopped reporting them, release its claims '
               'and leave the membership at once, so that peers take the '
               'nodes at their next refresh; a restart then moves each '
               'of them twice (away and back). False: keep both, like a '
               'crash would; a restart within service_down_time (and '
               'lease_time) takes its own nodes back without moving any, '
               'as nova\'s own hash ring does, while a service that stays '
               'stopped is taken over like a dead one, after '
               'max(service_down_time, lease_time) + refresh_interval. '
               'Nodes with an instance never move either way.')),
    cfg.IntOpt(
        'allocation_timeout',
        default=60,
        min=1,
        mutable=True,
        help=_('Seconds a reservation (an Ironic allocation restricted to '
               'this service\'s own nodes) may take to become active. '
               'When it runs out, the allocation is deleted and the '
               'reservation fails with a timeout error. Ironic usually '
               'answers in well under a second; it retries locked nodes '
               'for [conductor] node_locked_retry_attempts x '
               'node_locked_retry_interval seconds. Applied at start and '
               'on SIGHUP.')),
    cfg.PortOpt(
        'metrics_port',
        help=_('Serve this service\'s state as Prometheus metrics on '
               'http://<metrics_host>:<metrics_port>/metrics (the nova '
               'driver inside nova-compute, "ironic-partition serve"). '
               'Unset: no metrics are served. 0 takes a free port (tests). '
               'A port that cannot be bound (the previous process of a '
               'takeover still holds it) is logged as an ERROR and tried '
               'again at each refresh; the service runs on. The same port '
               'answers /ready (200 only while this process serves) and '
               '/ready/standby (200 also while it stands by for another '
               'live process holding its host name), for container '
               'probes. See the admin guide\'s metrics page for the '
               'series and example alert rules.')),
    cfg.HostAddressOpt(
        'metrics_host',
        default='127.0.0.1',
        help=_('The address the metrics are served on, when metrics_port '
               'is set. The metrics tell which nodes and claims a service '
               'holds, not secrets, but the endpoint has no '
               'authentication: listen on an address only the Prometheus '
               'server reaches.')),
]
