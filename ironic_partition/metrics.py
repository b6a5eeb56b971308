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

"""A service's state as Prometheus metrics.

A service (the nova driver inside nova-compute, ``ironic-partition
serve``) with ``[ironic_partition] metrics_port`` set serves
``/metrics`` on that port, from a registry of its own: whether it is
ready and why not, the nodes it reports, holds claims on and finds
stranded, what its last refresh cost and whether it listed Ironic in full,
its claim rounds, the lease time left, fences and duplicate-host
refusals. Every series is labelled with the service's ``host``,
``conductor_group`` and ``shard`` (``(unpartitioned)``, ``(default)``
and ``(none)`` stand for no group, Ironic's default group and no shard).

prometheus_client is used rather than oslo.metrics: oslo.metrics collects
oslo.messaging's RPC metrics in a daemon of its own, over a socket, while
these are a library's gauges inside a process that already runs, read by
a Prometheus server directly, as nova's and Ironic's operators scrape
their exporters. prometheus_client's server is a daemon thread and
imports no eventlet.

The gauges that change between refreshes (lease time left, fenced) are
read from the claims at scrape time, so a scrape never shows a stale
lease.

The same port answers two readiness paths, for container probes
(Kubernetes ``httpGet``), with ``200`` or ``503`` and the state in one
word (``serving``, ``standby``, ``not-ready``, ``starting``,
``stopped``):

* ``/ready``: 200 only while this process serves: its last refresh
  proved what it owns;
* ``/ready/standby``: 200 also while it stands by for another live
  process that holds its host name (a surge rollout's new pod, before
  the old one stops): it takes the host over at its first refresh after
  that process stops.
"""

import functools
import socket
import socketserver
import threading
import time
from wsgiref import simple_server

from oslo_log import log as logging
import prometheus_client as prom

from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: The labels of every series.
LABELS = ('host', 'conductor_group', 'shard')

#: The states the readiness paths tell.
STARTING, SERVING, STANDBY, NOT_READY, STOPPED = (
    'starting', 'serving', 'standby', 'not-ready', 'stopped')

#: Path -> the states it answers 200 for.
READY_PATHS = {'/ready': (SERVING,), '/ready/standby': (SERVING, STANDBY)}

#: Why a refresh was not ready, as a label: the kind of fault.
REASONS = ('ironic', 'membership', 'claims', 'identity', 'stopped',
           'other')


def label_values(settings):
    """The label values of a service's series.

    :param settings: the service's partition settings.
    :returns: a tuple in :data:`LABELS` order.
    """
    key = settings.partition_key
    group = ('(unpartitioned)' if key is None
             else '(default)' if key == '' else key)
    return (settings.host, group, settings.shard or '(none)')


def reason_of(error):
    """The kind of a not-ready fault, one of :data:`REASONS`.

    :param error: the :class:`~ironic_partition.exception.
        PartitionNotReady`, or the error a driver reports not ready for
        (the membership database at start, a duplicate host name).
    :returns: a string.
    """
    if isinstance(error, exception.PartitionNotReady):
        return error.kind
    if isinstance(error, exception.DuplicateService):
        return 'identity'
    if isinstance(error, exception.MembershipError):
        return 'membership'
    if isinstance(error, (exception.IronicUnavailable,
                          exception.IronicRequestError)):
        return 'ironic'
    return 'other'


class Metrics(object):
    """The series of one service, on a registry of its own.

    :param registry: a ``prometheus_client.CollectorRegistry``; a new one
        by default.
    """

    def __init__(self, registry=None):
        self.registry = (registry if registry is not None
                         else prom.CollectorRegistry())
        self._labels = None
        self._claims = None
        self._server = None
        self._bind_failed = False
        #: What the readiness paths tell: one of the states above.
        self.state = STARTING
        gauge = functools.partial(prom.Gauge, labelnames=LABELS,
                                  registry=self.registry)
        counter = functools.partial(prom.Counter, labelnames=LABELS,
                                    registry=self.registry)
        self.ready = gauge(
            'ironic_partition_ready',
            '1 while the last refresh proved what this service owns, 0 '
            'while it reports no node list ("Virt driver is not ready").')
        self.not_ready_reason = prom.Gauge(
            'ironic_partition_not_ready_reason',
            '1 for the kind of fault that made the last refresh not ready.',
            LABELS + ('reason',), registry=self.registry)
        self.not_ready_refreshes = prom.Counter(
            'ironic_partition_not_ready_refreshes',
            'Refreshes that reported no node list, by kind of fault.',
            LABELS + ('reason',), registry=self.registry)
        self.last_ready = gauge(
            'ironic_partition_last_ready_refresh_timestamp_seconds',
            'When the last ready refresh ended (Unix time).')
        self.nodes_reported = gauge(
            'ironic_partition_nodes_reported',
            'Nodes this service reports: those of the last ready '
            'refresh, 0 while it is not ready or fenced.')
        self.nodes_claimed = gauge(
            'ironic_partition_nodes_claimed',
            'Nodes this service held a valid claim on after the last '
            'claim round, 0 while it is not ready or fenced.')
        self.nodes_stranded = gauge(
            'ironic_partition_nodes_stranded',
            'Nodes of the partition whose instance\'s owner is dead: '
            'nobody reports them until it returns.')
        self.refresh_seconds = gauge(
            'ironic_partition_refresh_seconds',
            'How long the last ready refresh took.')
        self.refresh_full = gauge(
            'ironic_partition_refresh_full_listing',
            '1 when the last ready refresh listed Ironic in full, 0 when '
            'the change feed was enough.')
        self.refreshes = prom.Counter(
            'ironic_partition_refreshes',
            'Ready refreshes, by how Ironic was read (full or feed).',
            LABELS + ('listing',), registry=self.registry)
        self.date_ahead = gauge(
            'ironic_partition_change_feed_date_ahead_seconds',
            'How far the Ironic API\'s Date header was ahead of this '
            'host\'s clock when the change feed last ignored it (more than '
            '[ironic_partition] change_feed_overlap); 0 while it is '
            'trusted.')
        self.ironic_calls = gauge(
            'ironic_partition_refresh_ironic_calls',
            'Ironic API calls the last ready refresh made.')
        self.claim_round_seconds = gauge(
            'ironic_partition_claim_round_seconds',
            'How long the last claim round took.')
        self.lease_left = gauge(
            'ironic_partition_lease_seconds_left',
            'Seconds until this service fences itself unless its claims '
            'are renewed (0 when fenced, absent without claims).')
        self.fenced = gauge(
            'ironic_partition_fenced',
            '1 while this service\'s claims ran out: it reports no node, '
            'instance nodes included.')
        self.fences = counter(
            'ironic_partition_fences',
            'Times this service fenced itself.')
        self.clock_difference = gauge(
            'ironic_partition_database_clock_difference_seconds',
            'The largest difference between the clocks of the claims '
            'database seen across claim rounds (Galera failovers between '
            'nodes whose clocks differ); the fencing margin is widened to '
            'cover it (absent without claims).')
        self.fencing_margin = gauge(
            'ironic_partition_fencing_margin_seconds',
            'The fencing margin in force: the configured one, or wider '
            'after a database clock step (absent without claims).')
        self.peers_outside = prom.Gauge(
            'ironic_partition_peer_outside_membership',
            '1 for each peer counted in the ring because nova\'s service '
            'group has it up while it does not heartbeat the membership '
            'database (nova\'s own driver, or another claims database): '
            'its share is left to it.',
            LABELS + ('peer',), registry=self.registry)
        self.duplicate_refusals = counter(
            'ironic_partition_duplicate_host_refusals',
            'Starts refused because another live process holds this '
            'host name.')

    # -- labels ---------------------------------------------------------

    def use(self, settings, claims=None):
        """Label every series with these settings (at start, on SIGHUP).

        Series of the previous labels are removed, so that a service that
        moved to another group does not go on showing the old one.

        :param settings: the service's settings.
        :param claims: the
            :class:`~ironic_partition.claims.manager.ClaimManager`, or None
            without claims.
        :returns: None
        """
        labels = label_values(settings)
        if labels == self._labels and claims is self._claims:
            return
        for metric in self._all():
            metric.clear()
        self._labels = labels
        self._claims = claims
        self.ready.labels(*labels).set(0)
        self.fences.labels(*labels)
        self.duplicate_refusals.labels(*labels)
        # NOTE(ironic-partition): every series a dashboard sums or rates
        # exists from the start, at 0, not from its first event.
        self.nodes_reported.labels(*labels).set(0)
        for reason in REASONS:
            self.not_ready_refreshes.labels(*labels, reason)
        if claims is not None:
            self.nodes_claimed.labels(*labels).set(0)
        if claims is not None:
            self.lease_left.labels(*labels).set_function(self._lease_left)
            self.fenced.labels(*labels).set_function(
                lambda: float(claims.fenced()))
            self.clock_difference.labels(*labels).set_function(
                lambda: claims.clock_watch.difference)
            self.fencing_margin.labels(*labels).set_function(
                claims.clock_watch.margin)

    def _all(self):
        return (self.ready, self.not_ready_reason, self.not_ready_refreshes,
                self.last_ready, self.nodes_reported, self.nodes_claimed,
                self.nodes_stranded, self.refresh_seconds, self.refresh_full,
                self.refreshes, self.ironic_calls, self.date_ahead,
                self.claim_round_seconds,
                self.lease_left, self.fenced, self.fences,
                self.clock_difference, self.fencing_margin,
                self.duplicate_refusals, self.peers_outside)

    def _lease_left(self):
        claims = self._claims
        until = claims.valid_until
        if until is None:
            return 0.0
        return max(0.0, until - claims.clock())

    # -- events ---------------------------------------------------------

    def refreshed(self, result):
        """Record a ready refresh.

        :param result: the :class:`~ironic_partition.partition.refresh_result.
            RefreshResult`.
        :returns: None
        """
        labels = self._labels
        metrics = result.metrics
        self.state = SERVING
        self.ready.labels(*labels).set(1)
        self.not_ready_reason.clear()
        self.last_ready.labels(*labels).set(time.time())
        self.nodes_reported.labels(*labels).set(len(result.nodes))
        self.nodes_stranded.labels(*labels).set(
            len(result.ownership.stranded))
        if result.claims is not None:
            self.nodes_claimed.labels(*labels).set(len(result.claims.held))
            self.claim_round_seconds.labels(*labels).set(
                result.claims.seconds)
        self.refresh_seconds.labels(*labels).set(metrics.seconds)
        self.refresh_full.labels(*labels).set(float(metrics.full))
        self.refreshes.labels(*labels, 'full' if metrics.full
                              else 'feed').inc()
        self.ironic_calls.labels(*labels).set(metrics.api_calls)
        self.date_ahead.labels(*labels).set(metrics.date_ahead)
        self.peers_outside.clear()
        for peer in sorted(getattr(result.membership, 'outside', ())):
            self.peers_outside.labels(*labels, peer).set(1)

    def not_ready(self, error):
        """Record a refresh that reported no node list.

        :param error: the :class:`~ironic_partition.exception.
            PartitionNotReady`.
        :returns: None
        """
        labels = self._labels
        reason = reason_of(error)
        self.state = (STANDBY if isinstance(error, exception.DuplicateService)
                      else NOT_READY)
        self.ready.labels(*labels).set(0)
        self._reports_nothing(labels)
        self.not_ready_reason.clear()
        self.not_ready_reason.labels(*labels, reason).set(1)
        self.not_ready_refreshes.labels(*labels, reason).inc()

    def _reports_nothing(self, labels):
        # NOTE(ironic-partition): not ready or fenced, this service reports
        # no node and its claims prove nothing: a dashboard summing these
        # over a group must not count nodes nobody reports.
        self.nodes_reported.labels(*labels).set(0)
        if self._claims is not None:
            self.nodes_claimed.labels(*labels).set(0)

    def fenced_now(self):
        """Count a fence (from the lease timer).

        :returns: None
        """
        self.fences.labels(*self._labels).inc()
        self._reports_nothing(self._labels)

    def duplicate_refused(self):
        """Count a start refused for a duplicate host name.

        :returns: None
        """
        self.duplicate_refusals.labels(*self._labels).inc()

    # -- the endpoint ---------------------------------------------------

    def serve(self, host, port):
        """Serve ``/metrics`` on a daemon thread, unless it is served.

        Metrics never cost the service its availability: an address that
        cannot be bound (the previous process of a takeover still holds
        it) is logged once, as an ERROR naming the option, and tried again
        at the next call.

        :param host: the address to listen on.
        :param port: the TCP port.
        :returns: the port served (the one bound when ``port`` is 0), or
            None when it could not be bound.
        """
        if self._server is None:
            try:
                self._server = self._start_server(host, port)
            except OSError as e:
                if not self._bind_failed:
                    LOG.error('Cannot serve the metrics on %(host)s:%(port)s '
                              '([ironic_partition] metrics_host and '
                              'metrics_port): %(err)s; trying again at '
                              'each refresh',
                              {'host': host, 'port': port,
                               'err': e.strerror or e})
                self._bind_failed = True
                return None
            if self._bind_failed:
                LOG.info('Serving the metrics on %(host)s:%(port)s now',
                         {'host': host, 'port': port})
            self._bind_failed = False
        return self._server.server_port

    def _app(self):
        metrics_app = prom.make_wsgi_app(self.registry)

        def app(environ, start_response):
            wanted = READY_PATHS.get(environ.get('PATH_INFO'))
            if wanted is None:
                return metrics_app(environ, start_response)
            state = self.state
            start_response('200 OK' if state in wanted
                           else '503 Service Unavailable',
                           [('Content-Type', 'text/plain; charset=utf-8')])
            return [('%s\n' % state).encode()]
        return app

    def _start_server(self, host, port):
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

        class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
            address_family = family
            daemon_threads = True

        server = simple_server.make_server(host, port, self._app(), Server,
                                           handler_class=_QuietHandler)
        threading.Thread(target=server.serve_forever, daemon=True,
                         name='ironic-partition-metrics').start()
        return server

    def stop(self):
        """Stop serving; never raises.

        :returns: None
        """
        self.state = STOPPED
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


class _QuietHandler(simple_server.WSGIRequestHandler):
    """No access log line per scrape or probe."""

    def log_message(self, format, *args):
        pass
