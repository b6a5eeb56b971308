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

"""The ownership claims' settings: when claims are on, and their timing.

Part of the settings package (the one place settings are built); moved
from ``ironic_partition.claims.claim_settings``, which stays for a release
as a deprecated name of this module.

Checked from the service's :class:`~ironic_partition.settings.Settings`
against the consumer's cadence (how often it refreshes, and how long it
may act on a result after a fence), before any
:class:`~ironic_partition.claims.manager.ClaimManager` is built; see
:mod:`ironic_partition.claims.manager` for what the claims do and
``doc/source/admin/safety.rst`` for the timing argument.
"""

import collections
import math

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: The values of ``[ironic_partition] claims``.
MODE_AUTO = 'auto'
MODE_DATABASE = 'database'
MODE_OFF = 'off'

#: The fewest seconds between the lease timer's renewals.
MIN_RENEW_INTERVAL = 0.2

#: The claim options, validated, with the automatic values resolved.
#:
#: ``mode`` is the ``claims`` option; ``lease_time``, ``fencing_margin``
#: and ``renew_interval`` (how often the lease timer renews) are seconds
#: (floats).
ClaimSettings = collections.namedtuple(
    'ClaimSettings', ['mode', 'lease_time', 'fencing_margin',
                      'renew_interval'])

#: The longest a write may take once a claim check let it start, in
#: seconds: the timeout of a write under a claim the database proved
#: (:mod:`ironic_partition.claims.write_guard`), and so how long nova may
#: go on acting on a node after this service fenced itself.
WRITE_WINDOW = 10.0

#: nova's periodic spacing when ``update_resources_interval`` is 0
#: (oslo.service's ``DEFAULT_INTERVAL``).
NOVA_DEFAULT_INTERVAL = 60

#: How the consumer of a partition refreshes and acts on it.
#:
#: ``interval`` is the seconds between two refreshes (the agent's
#: ``refresh_interval``; nova's ``update_resources_interval``), and
#: ``hold`` how long the consumer may go on acting on a node after this
#: service fenced itself: 0 for a consumer told at once (the agent
#: rewrites its report); for nova the shorter of one interval (its next
#: resource-tracker run asks again) and :data:`WRITE_WINDOW` (every action
#: of nova on a node asks this driver first, and the writes that follow a
#: check end within that window). ``interval_option`` names the option
#: that sets ``interval``, for error messages. ``lease_floor`` is the
#: shortest lease allowed, in intervals: 2 for the agent, whose failover
#: bound (I2) and soak figures are stated for it; 0 for nova, whose lease
#: is set by the windows above (see ``doc/source/admin/safety.rst``).
Cadence = collections.namedtuple(
    'Cadence', ['interval', 'hold', 'interval_option', 'lease_floor'],
    defaults=(2,))


def agent_cadence(refresh_interval):
    """The cadence of a consumer refreshing every ``refresh_interval``.

    The one builder of an agent's cadence (nova-compute's is nova's
    ``update_resources_interval``, built where nova's options are read).

    :param refresh_interval: ``[ironic_partition] refresh_interval``.
    :returns: a :data:`Cadence` with no hold.
    """
    return Cadence(refresh_interval, 0,
                   '[ironic_partition] refresh_interval')


def nova_cadence(update_resources_interval):
    """The cadence of nova-compute's resource tracker.

    The one builder of nova's cadence (the driver's and the upgrade
    check's). nova asks this driver before each of its actions on a node:
    ``get_available_resource`` when its run reaches the node,
    ``node_is_available`` before a claim, ``prepare_for_spawn`` (the
    reservation, proven by the database within :data:`WRITE_WINDOW`)
    before a build. What it still does after a check that passed just
    before the fence is one node's writes, within that window; so the
    fence must come that long before the lease runs out, or one interval
    when that is shorter (the next run asks again).

    :param update_resources_interval: nova's ``[DEFAULT]
        update_resources_interval``; 0 or less means nova's default
        periodic spacing (a negative value disables the task, and then
        nothing refreshes at all: the default's arithmetic is kept).
    :returns: a :data:`Cadence`.
    """
    interval = update_resources_interval or 0
    if interval <= 0:
        interval = NOVA_DEFAULT_INTERVAL
    return Cadence(interval, min(interval, WRITE_WINDOW),
                   '[DEFAULT] update_resources_interval', lease_floor=0)


def resolve(settings):
    """Validate the claim options against the consumer's cadence.

    Claims are renewed by a timer of their own, so a refresh slower than
    the lease never lets them lapse. What the lease must cover is the
    consumer: it refreshes every ``cadence.interval`` seconds, and may go
    on acting on a node for ``cadence.hold`` seconds after this service
    fenced itself. Unset, ``fencing_margin`` is ``hold`` plus a tenth of
    the lease, and ``lease_time`` the largest of ``service_down_time``,
    ``cadence.lease_floor`` intervals, and what leaves the timer room to
    renew three times before the fence; with ``fencing_margin`` set alone,
    ``lease_time`` is long enough to leave the timer the room the
    automatic values would.

    :param settings: the service's :class:`~ironic_partition.settings.
        Settings` (``lease_time``, ``fencing_margin``,
        ``service_down_time``, ``claims_mode``, ``timing_chosen`` and the
        consumer's ``cadence``).
    :returns: a :data:`ClaimSettings`.
    :raises ConfigurationError: when ``lease_time`` is shorter than the
        consumer's floor (two refresh intervals of the agent), or
        ``fencing_margin`` is shorter
        than the consumer's hold or leaves the timer no time to renew; the
        message names the options.
    """
    cadence = settings.cadence
    down = settings.service_down_time
    interval, hold = cadence.interval, cadence.hold
    lease = settings.lease_time
    margin = settings.fencing_margin
    least = cadence.lease_floor * interval
    if lease is None:
        lease = max(down, least, int(math.ceil((hold + 3.0) / 0.9)))
        if margin is not None:
            # NOTE(ironic-partition): a margin set alone keeps the room
            # the automatic values leave the lease timer between the last
            # renewal and the fence (44 s on nova's defaults): a margin
            # copied from older defaults (72 s) must not leave a database
            # hiccup of a few seconds to fence the service.
            room = lease - (hold + lease / 10.0)
            lease = max(lease, int(math.ceil(margin + room)))
    elif lease < least:
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='lease_time', value=lease,
            reason=_(
                'it must be at least twice %(option)s (%(interval)s), i.e. '
                'at least %(min)s: a lease shorter than two refreshes of '
                'the consumer leaves no time to hand a node over before it '
                'is reported elsewhere')
            % {'option': cadence.interval_option, 'interval': interval,
               'min': least})
    if margin is None:
        margin = hold + lease / 10.0
    elif margin < hold:
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='fencing_margin',
            value=margin, reason=_(
                'it must be at least %(hold)s s, the shorter of %(option)s '
                '(%(interval)s) and the %(window)s s a write checked '
                'against its claim may take: the consumer may go on acting '
                'on a node that long after this service fenced itself, so '
                'the fence must come at least that long before the lease '
                'runs out')
            % {'option': cadence.interval_option, 'hold': hold,
               'interval': interval, 'window': WRITE_WINDOW})
    if lease - margin < 3 * MIN_RENEW_INTERVAL:
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='fencing_margin',
            value=margin, reason=_(
                'it must be smaller than [ironic_partition] lease_time '
                '(%(lease)s) minus %(min)s s, or the lease timer would have '
                'no time to renew the claims before the fence')
            % {'lease': lease, 'min': 3 * MIN_RENEW_INTERVAL})
    renew = max(MIN_RENEW_INTERVAL, (lease - margin) / 3.0)
    result = ClaimSettings(settings.claims_mode, float(lease), float(margin),
                           float(renew))
    warning = slow_return_warning(settings, result)
    if warning is not None:
        LOG.warning('%s', warning)
    return result


def slow_return_warning(settings, claims):
    """What to warn of when a dead service's nodes come back late, or None.

    Only timings the operator chose are worth a warning; on our defaults
    the takeover time is ours, and documented (admin/nova-compute).

    :param settings: the :class:`~ironic_partition.settings.Settings` the
        claims were resolved from.
    :param claims: their :data:`ClaimSettings`.
    :returns: the warning, one sentence, or None.
    """
    cadence = settings.cadence
    down = settings.service_down_time
    lease = int(claims.lease_time) if claims.lease_time.is_integer() \
        else claims.lease_time
    if not settings.timing_chosen or lease < down + cadence.interval:
        return None
    return _('[ironic_partition] lease_time (%(lease)s) is not shorter than '
             'service_down_time (%(down)s) plus %(option)s (%(interval)s): '
             'the nodes of a dead service are reported again only after up '
             'to %(bound)s s plus one refresh') % {
                 'lease': lease, 'down': down,
                 'option': cadence.interval_option,
                 'interval': cadence.interval,
                 'bound': lease + cadence.interval}


def wanted(mode, store):
    """Tell whether claims are on for a ``claims`` mode and a store.

    :param mode: ``[ironic_partition] claims``.
    :param store: the membership backend's :class:`~ironic_partition.db.
        store.Store`, or None when it keeps no database.
    :returns: True when claims are on: ``claims = database``, or
        ``claims = auto`` with a membership backend that keeps a database
        (the ``database`` backend).
    """
    if mode == MODE_OFF:
        return False
    if mode == MODE_DATABASE:
        return True
    return store is not None


def local_database_error(connection, why, sharers, alternative=None):
    """The error refusing a SQLite claims database that others need.

    :param connection: the claims' :class:`~ironic_partition.db.store.
        Store` (or its connection).
    :param why: what makes a local database unsafe here (a clause).
    :param sharers: who must share the database instead (a noun phrase).
    :param alternative: another way out, or None.
    :returns: a ``ConfigurationError`` naming ``[ironic_partition_database]
        connection``.
    """
    reason = _('it is a SQLite database, which only this host can reach, '
               'while %(why)s. Set [ironic_partition_database] connection '
               'to a MySQL/MariaDB or PostgreSQL database that %(who)s '
               'shares (and run "ironic-partition-dbsync upgrade" once)'
               ) % {'why': why, 'who': sharers}
    if alternative:
        reason = _('%(reason)s, or %(alternative)s') % {
            'reason': reason, 'alternative': alternative}
    return exception.ConfigurationError(
        group=database_conf.GROUP, option='connection',
        value=connection.masked_connection, reason=reason)


def check_shared_database(peer_list, connection, host, allow_local):
    """Refuse, or warn about, a SQLite database shared by several hosts.

    :param peer_list: ``[ironic] peer_list``.
    :param connection: the claims' :class:`~ironic_partition.db.store.
        Store` (or its connection), on SQLite.
    :param host: this service's host name.
    :param allow_local: False raises instead of warning.
    :raises ConfigurationError: naming ``[ironic_partition_database]
        connection`` and the peers, when not allowed.
    :returns: None
    """
    peers = [p.strip().lower() for p in peer_list or () if p.strip()]
    others = sorted(set(peers) - {host.lower()})
    if not others:
        return
    if not allow_local:
        raise local_database_error(
            connection,
            _('[ironic] peer_list names other hosts (%s): each service '
              'would see only itself alive and report every node of the '
              'group') % ', '.join(others),
            _('every service in peer_list'))
    LOG.warning('Ownership claims are kept in the SQLite database %(db)s '
                'while [ironic] peer_list names other hosts (%(others)s): '
                'claims protect nothing across hosts unless every service '
                'shares that file or a server database in '
                '[ironic_partition_database] connection',
                {'db': connection.masked_connection,
                 'others': ', '.join(others)})
