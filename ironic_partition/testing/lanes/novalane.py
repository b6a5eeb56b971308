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

"""What nova recorded, read from outside: the lane's observations.

* :class:`CellDatabase` reads nova's cell database (``compute_nodes``,
  ``services``).
* :class:`Placement` lists resource providers through placement's API.
* :class:`Recorder` polls both in a thread and records every deleted or
  recreated compute node row, every vanished or re-created resource
  provider and every change of a node's host (a move).
* :func:`parse_compute_log` and :func:`holds` turn a nova-compute log
  into the intervals during which that compute held each node; and
  :func:`double_held` measures the overlap between computes, and
  :func:`unheld` the time no compute held a node.

A compute *holds* a node from the resource-tracker run that reports it
("Final resource view: name=<node>", nova.compute.resource_tracker at
debug) until its next run that does not report it begins ("Running
periodic task ComputeManager.update_available_resource",
oslo_service.periodic_task at debug), or until it dies or stops (a run
that ends during a graceful stop, or is logged as the process is being
killed, holds until the process is gone). A run
that ends in "Virt driver is not ready." changes nothing: nova keeps what
it had. A run of our driver that got a node list (its "Refresh: managing
N of M nodes" line, with the run's request id) ends the holds of the
nodes it did not report even when it reported none, and an empty list
ends every hold as it is given: nova then updates none of them. Time
during which the process is stopped (SIGSTOP) counts as not held: a
stopped process cannot act; a node reported as the process was being
stopped (after the fixture's mark) is held again from SIGCONT, like the
others.
"""

import collections
import datetime
import json
import logging
import re
import threading
import time
import urllib.request

import sqlalchemy
import tooz.hashring

LOG = logging.getLogger(__name__)

PARTITIONS = 32

_TS_RE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ')
_FINAL_RE = re.compile(r'Final resource view: name=(\S+) ')
_RUN_RE = re.compile(
    r'Running periodic task ComputeManager\.update_available_resource')
_NOT_READY_RE = re.compile(r'Virt driver is not ready\.')
_MARK_RE = re.compile(r'^--- harness: (\w+).* at (\d+\.\d+)$')
_REQUEST_RE = re.compile(r' \[\S+ (req-[0-9a-f-]+) ')
#: Our driver's refresh result: nova got a node list (maybe empty).
_LISTED_RE = re.compile(r'ironic_partition\.partition\.partitioner \[\S+ '
                        r'(req-[0-9a-f-]+) [^\]]*\] Refresh: managing '
                        r'(\d+) of ')

Event = collections.namedtuple('Event', ['time', 'kind', 'node'])


def ring_owners(hosts, nodes, partitions=PARTITIONS):
    """Map nodes to their owner on tooz's ring, as nova builds it.

    :param hosts: the live members' host names.
    :param nodes: node UUIDs.
    :param partitions: partitions per member (nova: 32).
    :returns: ``{node: host}``.
    """
    ring = tooz.hashring.HashRing(set(h.lower() for h in hosts),
                                  partitions=partitions)
    owners = {}
    for node in nodes:
        (owner,) = ring.get_nodes(node.encode('utf-8'))
        owners[node] = owner
    return owners


def _log_time(stamp):
    # NOTE(ironic-partition): oslo.log writes local time without a zone.
    parsed = datetime.datetime.strptime(stamp, '%Y-%m-%d %H:%M:%S.%f')
    return time.mktime(parsed.timetuple()) + parsed.microsecond / 1e6


def parse_compute_log(path):
    """Read the lane's events from a nova-compute log.

    :param path: the log file (the fixture appends its own marks).
    :returns: a list of :class:`Event`, in file order; kinds are ``run``
        (with its request id as ``node``), ``final`` (with the node),
        ``listed`` or ``listed_none`` (our driver's refresh, with its
        request id; ``listed_none`` when it gave nova no node),
        ``not_ready`` and the fixture's marks
        (``start``, ``kill``, ``killed``, ``stop``, ``stopped``,
        ``pause``,
        ``resume``, ``sighup``, ``config``).
    """
    events = []
    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace').rstrip('\n')
            mark = _MARK_RE.match(line)
            if mark:
                events.append(Event(float(mark.group(2)), mark.group(1),
                                    None))
                continue
            stamp = _TS_RE.match(line)
            if not stamp:
                continue
            when = _log_time(stamp.group(1))
            final = _FINAL_RE.search(line)
            if final:
                events.append(Event(when, 'final', final.group(1)))
                continue
            if _RUN_RE.search(line):
                request = _REQUEST_RE.search(line)
                events.append(Event(when, 'run',
                                    request.group(1) if request else None))
                continue
            listed = _LISTED_RE.search(line)
            if listed:
                events.append(Event(
                    when, 'listed' if int(listed.group(2)) else 'listed_none',
                    listed.group(1)))
            elif _NOT_READY_RE.search(line):
                events.append(Event(when, 'not_ready', None))
    return events


def line_time(line):
    """The time a nova log line was logged at.

    :param line: one line of a nova service's log.
    :returns: seconds since the epoch, or None for a line without a stamp
        (a continuation line).
    """
    stamp = _TS_RE.match(line)
    return _log_time(stamp.group(1)) if stamp else None


def holds(events, now=None):
    """Turn one compute's events into hold intervals per node.

    :param events: from :func:`parse_compute_log`.
    :param now: the end of observation; ``time.time()`` by default.
    :returns: ``{node: [(start, end), ...]}``.
    """
    now = time.time() if now is None else now
    result = collections.defaultdict(list)
    held = {}          # node -> start of the current hold
    reported = set()   # nodes reported by the current run
    request = None     # the current run's request id
    listed = False     # the current run got a node list from our driver
    paused_at = None
    suspended = set()

    def end(node, when):
        start = held.pop(node)
        if when > start:
            result[node].append((start, when))

    def end_all(when):
        for node in list(held):
            end(node, when)

    for event in events:
        if event.kind == 'final':
            reported.add(event.node)
            if paused_at is not None:
                # NOTE(ironic-partition): logged between the fixture's
                # mark and the signal: held again from SIGCONT.
                suspended.add(event.node)
            elif event.node not in held:
                held[event.node] = event.time
        elif event.kind in ('listed', 'listed_none'):
            if event.node is not None and event.node == request:
                listed = True
                if event.kind == 'listed_none':
                    # NOTE(ironic-partition): an empty list: nova updates
                    # none of the nodes from now on.
                    end_all(event.time)
        elif event.kind == 'not_ready':
            listed = False
        elif event.kind == 'run':
            # NOTE(ironic-partition): the previous run is complete; what
            # it did not report again is no longer held. A run that ended
            # "not ready" reported nothing and changed nothing.
            if reported or listed:
                for node in list(held):
                    if node not in reported:
                        end(node, event.time)
            reported = set()
            listed = False
            request = event.node
        elif event.kind in ('kill', 'killed', 'stop', 'stopped', 'start'):
            # NOTE(ironic-partition): a graceful stop may finish a
            # resource-tracker run after its 'stop' mark, and a process
            # may log a line between the 'kill' mark and the signal; what
            # it reported then is held until the process is gone
            # ('stopped', 'killed').
            end_all(event.time)
            reported = set()
            suspended = set()
            paused_at = None
        elif event.kind == 'pause':
            # NOTE(ironic-partition): a stopped process cannot act; what
            # it held is held again from SIGCONT until its next run.
            paused_at = event.time
            suspended = set(held)
            end_all(event.time)
        elif event.kind == 'resume' and paused_at is not None:
            for node in suspended:
                held.setdefault(node, event.time)
            suspended = set()
            paused_at = None
    if paused_at is None:
        end_all(now)
    return dict(result)


def double_held(per_compute):
    """Measure the time during which two computes held the same node.

    :param per_compute: ``{host: {node: [(start, end), ...]}}``.
    :returns: ``(node_seconds, {node: [(start, end, [hosts]), ...]})``
        where ``node_seconds`` sums, over nodes, the time held by more
        than one compute times the number of extra holders.
    """
    by_node = collections.defaultdict(list)
    for host, spans_of in per_compute.items():
        for node, spans in spans_of.items():
            for start, end in spans:
                by_node[node].append((start, 1, host))
                by_node[node].append((end, -1, host))
    total = 0.0
    overlaps = {}
    for node, points in by_node.items():
        points.sort(key=lambda p: (p[0], p[1]))
        holders = collections.Counter()
        last = None
        for when, delta, host in points:
            live = [h for h, n in holders.items() if n > 0]
            if last is not None and len(live) > 1 and when > last:
                total += (when - last) * (len(live) - 1)
                overlaps.setdefault(node, []).append(
                    (last, when, sorted(live)))
            holders[host] += delta
            last = when
    return total, overlaps


def unheld(per_compute, nodes, start, end):
    """Measure the time during which no compute held a node.

    :param per_compute: ``{host: {node: [(start, end), ...]}}``.
    :param nodes: the nodes to measure.
    :param start: the window's start (seconds since the epoch).
    :param end: its end.
    :returns: the node-seconds within ``[start, end]`` during which no
        compute held the node, summed over ``nodes``.
    """
    total = 0.0
    for node in nodes:
        spans = sorted((max(s, start), min(e, end))
                       for spans_of in per_compute.values()
                       for s, e in spans_of.get(node, ())
                       if e > start and s < end)
        covered, cursor = 0.0, start
        for s, e in spans:
            if e > cursor:
                covered += e - max(s, cursor)
                cursor = e
        total += (end - start) - covered
    return total


def rss_bytes(pids):
    """Sum the resident memory of processes.

    :param pids: pids; those gone are skipped.
    :returns: bytes.
    """
    total = 0
    for pid in set(pids):
        try:
            with open('/proc/%d/status' % pid) as stream:
                for line in stream:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return total


class CellDatabase(object):
    """nova's cell database, read with plain SQL.

    :param url: its SQLAlchemy URL.
    """

    def __init__(self, url):
        self.engine = sqlalchemy.create_engine(
            url, poolclass=sqlalchemy.pool.NullPool)

    def close(self):
        """Dispose of the engine.

        :returns: None
        """
        self.engine.dispose()

    def compute_nodes(self):
        """Every compute node row, deleted ones included.

        :returns: a list of dicts (``id``, ``uuid``, ``host``,
            ``hypervisor_hostname``, ``deleted``).
        """
        with self.engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(
                'SELECT id, uuid, host, hypervisor_hostname, deleted '
                'FROM compute_nodes')).mappings().all()
        return [dict(r) for r in rows]

    def services(self):
        """The non-deleted nova-compute services.

        :returns: a list of dicts (``host``, ``last_seen_up``,
            ``updated_at``, ``disabled``).
        """
        with self.engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(
                "SELECT host, last_seen_up, updated_at, disabled "
                "FROM services WHERE deleted = 0 AND "
                "`binary` = 'nova-compute'".replace(
                    '`', '"' if self.engine.name == 'postgresql' else '`')
            )).mappings().all()
        return [dict(r) for r in rows]


class Placement(object):
    """placement's API, with the noauth2 admin token.

    :param endpoint: its root URL.
    :param token: the token (``admin`` under noauth2).
    """

    def __init__(self, endpoint, token='admin'):
        self.endpoint = endpoint.rstrip('/')
        self.token = token

    def resource_providers(self):
        """List every resource provider.

        :returns: ``{name: uuid}``.
        :raises: OSError when placement does not answer.
        """
        req = urllib.request.Request(
            self.endpoint + '/resource_providers', headers={
                'X-Auth-Token': self.token,
                'OpenStack-API-Version': 'placement 1.14',
                'Accept': 'application/json'})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.loads(resp.read().decode('utf-8'))
        return {rp['name']: rp['uuid'] for rp in body['resource_providers']}


class Recorder(object):
    """Poll nova's cell database and placement, and record changes.

    :param cell_url: the cell database URL.
    :param placement_endpoint: placement's root URL.
    :param interval: seconds between polls.
    """

    def __init__(self, cell_url, placement_endpoint, interval=0.5):
        self.cell = CellDatabase(cell_url)
        self.placement = Placement(placement_endpoint)
        self.interval = interval
        self.lock = threading.Lock()
        self.rows = {}            # row id -> last row
        self.row_ids = collections.defaultdict(set)   # node -> row ids
        self.providers = {}       # node -> provider uuid
        self.deleted_rows = []    # (time, row)
        self.recreated_rows = []  # (time, node, old ids, new id)
        self.vanished_providers = []   # (time, node, uuid)
        self.changed_providers = []    # (time, node, old, new)
        self.moves = []           # (time, node, old host, new host)
        self.errors = 0
        self.polls = 0
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        """Poll once, then keep polling in a daemon thread.

        :returns: None
        """
        self.poll()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self):
        """Stop polling.

        :returns: None
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.cell.close()

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:
                self.errors += 1
                LOG.debug('Recorder poll failed', exc_info=True)

    def poll(self):
        """Read both sources once and record what changed.

        :returns: None
        """
        now = time.time()
        rows = self.cell.compute_nodes()
        providers = self.placement.resource_providers()
        with self.lock:
            self.polls += 1
            seen = set()
            for row in rows:
                seen.add(row['id'])
                node = row['hypervisor_hostname']
                old = self.rows.get(row['id'])
                if row['deleted'] and (old is None or not old['deleted']):
                    self.deleted_rows.append((now, row))
                if (row['id'] not in self.row_ids[node] and
                        self.row_ids[node]):
                    self.recreated_rows.append(
                        (now, node, sorted(self.row_ids[node]), row['id']))
                self.row_ids[node].add(row['id'])
                if (old is not None and not row['deleted'] and
                        old['host'] != row['host']):
                    self.moves.append((now, node, old['host'], row['host']))
                self.rows[row['id']] = row
            for row_id in set(self.rows) - seen:
                row = self.rows.pop(row_id)
                self.deleted_rows.append((now, dict(row, purged=True)))
            for node, uuid in list(self.providers.items()):
                if node not in providers:
                    self.vanished_providers.append((now, node, uuid))
                elif providers[node] != uuid:
                    self.changed_providers.append(
                        (now, node, uuid, providers[node]))
            self.providers.update(providers)
            self.current_providers = providers

    def hosts_of(self):
        """The non-deleted rows' host per node, as last polled.

        :returns: ``{node: [hosts]}``.
        """
        with self.lock:
            result = collections.defaultdict(list)
            for row in self.rows.values():
                if not row['deleted']:
                    result[row['hypervisor_hostname']].append(row['host'])
            return dict(result)

    def damage(self):
        """Everything destructive recorded so far.

        :returns: a dict of lists; all empty when nothing was destroyed.
        """
        with self.lock:
            return {
                'deleted_rows': list(self.deleted_rows),
                'recreated_rows': list(self.recreated_rows),
                'vanished_providers': list(self.vanished_providers),
                'changed_providers': list(self.changed_providers),
            }
