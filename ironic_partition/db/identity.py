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

"""One process, one identity: the incarnation that holds a host name.

A host name is what the ring, the peer list and the claims' owner column
use, and an operator can give the same one to two processes (a copy-pasted
``[DEFAULT] host``, a supervisor starting a new agent while the old one is
paused). Each service process therefore gets an *incarnation*: a random
UUID made at start. The ``ironic_partition_services`` row of (host, role)
names the one incarnation that holds the host name, and:

* a process registers its incarnation at start; while the row names
  another incarnation that is alive (a heartbeat within
  ``service_down_time`` by the database clock, and not provably gone on
  this machine), the newcomer refuses to start
  (:class:`~ironic_partition.exception.DuplicateService`), changing no row;
* an explicit takeover (``serve --takeover`` or ``ironic-partition
  takeover HOST``) replaces the incarnation in the row instead: the old
  process's heartbeats and claim renewals are all conditioned on its own
  incarnation, so they stop matching at once, and it stops reporting
  (:class:`~ironic_partition.exception.IdentityLost`);
* every claim write (renewal, acquisition) is conditioned on the row
  still naming the writer's incarnation, so a fenced process can neither
  renew nor take a claim, whatever its clock says;
* a restart adopts the claims of its host only when the previous
  incarnation gave them up (a graceful stop that kept them, which detaches
  them) or is provably gone (same machine, same boot and PID namespace, and
  its PID no longer runs the same process).
"""

import os
import socket
import threading
import time

from oslo_log import log as logging
from oslo_utils import uuidutils

from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: The version of :func:`liveness_token`'s layout.
TOKEN_VERSION = 'v1'


def _read(path):
    try:
        with open(path) as stream:
            return stream.read().strip()
    except OSError:
        return None


def _pid_namespace():
    try:
        return os.readlink('/proc/self/ns/pid')
    except OSError:
        return None


def _parse_start(stat):
    # NOTE(ironic-partition): the command name (field 2) may hold spaces
    # and parentheses; the fields after its last ')' are plain.
    fields = stat.rsplit(')', 1)[-1].split()
    if len(fields) < 20 or not fields[19].isdigit():
        raise ValueError('unexpected /proc stat layout')
    return fields[19]


def _start_time(pid):
    """The start time of a process, in clock ticks since boot, or None."""
    stat = _read('/proc/%d/stat' % pid)
    if stat is None:
        return None
    try:
        return _parse_start(stat)
    except ValueError:
        return None


def _running_start(pid):
    """The start time of a running process, or None when none runs.

    Only proof counts as absence: ``kill(pid, 0)`` answering "no such
    process". A PID that exists but cannot be read (``/proc`` mounted
    with ``hidepid``, another user, a security module) raises instead:
    that process may be the one we ask about.

    :param pid: a PID of this PID namespace.
    :returns: its start time (clock ticks since boot), or None.
    :raises OSError: or ``ValueError`` when it runs but cannot be read.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        # NOTE(ironic-partition): it exists, as another user's process.
        pass
    with open('/proc/%d/stat' % pid) as stream:
        return _parse_start(stream.read())


def liveness_token(pid=None):
    """What tells, on this machine, whether a process still runs.

    :param pid: the process, this one by default.
    :returns: a string: the layout version, the boot id, the PID
        namespace, the PID and the process's start time; parts that
        cannot be read are ``-``.
    """
    pid = os.getpid() if pid is None else pid
    parts = [TOKEN_VERSION,
             _read('/proc/sys/kernel/random/boot_id') or '-',
             _pid_namespace() or '-', str(pid), _start_time(pid) or '-']
    return ' '.join(p.replace(' ', '_') for p in parts)


def provably_gone(token):
    """Whether the process a token describes is certainly not running.

    Only a process of this machine's boot and PID namespace can be checked;
    for any other (another machine, another container) the answer is
    False: it may still run.

    :param token: a :func:`liveness_token` string, or None.
    :returns: True when that process is gone (its PID runs nothing, or a
        process started at another time); False when it may run,
        including when its PID runs a process this one cannot read.
    """
    if not token:
        return False
    parts = token.split(' ')
    if len(parts) != 5 or parts[0] != TOKEN_VERSION or '-' in parts[1:3]:
        return False
    mine = liveness_token().split(' ')
    if parts[1:3] != mine[1:3]:
        return False
    try:
        pid = int(parts[3])
    except ValueError:
        return False
    try:
        started = _running_start(pid)
    except (OSError, ValueError) as e:
        LOG.warning('Cannot tell whether process %(pid)d still runs '
                    '(%(err)s); it may, so it is not taken for gone',
                    {'pid': pid, 'err': e})
        return False
    if started is None:
        return True
    # NOTE(ironic-partition): a token whose start time could not be read
    # cannot prove that this PID runs another process now.
    return parts[4] != '-' and started != parts[4]


def process_exiting():
    """Whether this process is shutting down: its main thread has ended.

    Python then waits only for the remaining non-daemon threads before it
    exits. A service whose main thread ended no longer serves (nova's
    periodic tasks and RPC server are gone, or going), even if a thread of
    its own keeps the process alive: it must stop proving it is alive.

    :returns: a bool.
    """
    return not threading.main_thread().is_alive()


def origin():
    """Where this process runs, for people: machine name and PID.

    :returns: a string such as ``compute-1.example.org pid 4242``.
    """
    return '%s pid %d' % (socket.gethostname(), os.getpid())


class Identity(object):
    """This process's hold on its host name in the shared database.

    :param db: an :class:`ironic_partition.db.api.Connection`.
    :param host: this service's host name (stored lower-cased).
    :param role: this service's role.
    :param service_down_time: seconds after its last heartbeat after which
        a holder counts as dead, by the database clock.
    :param takeover: replace a live holder instead of refusing to start.
    """

    def __init__(self, db, host, role, service_down_time, takeover=False):
        self.db = db
        self.host = host.lower()
        self.role = role
        self.service_down_time = service_down_time
        self.takeover = takeover
        #: This process's incarnation, a random UUID.
        self.incarnation = uuidutils.generate_uuid()
        #: The incarnation whose claims this one may adopt (the previous
        #: holder, provably gone), or None.
        self.adoptable = None
        #: What the previous processes of this host name measured of the
        #: database nodes' clocks (``{node: seconds}``), read when this
        #: one registered; None when nothing.
        self.inherited_clocks = None
        #: What this process measured of them, recorded with each
        #: heartbeat once set (:meth:`note_claim_round`).
        self.database_clocks = None
        self.registered = False
        self._lost = None
        self._claims_node = None
        self._claims_node_at = None

    @property
    def lost(self):
        """Why this process lost its host name, or None while it holds it."""
        return self._lost

    def check(self):
        """Raise when this process no longer holds its host name.

        :raises IdentityLost: after a takeover by another incarnation.
        :returns: None
        """
        if self._lost is not None:
            raise exception.IdentityLost(
                incarnation=self.incarnation, host=self.host,
                role=self.role, reason=self._lost)

    def register(self, partition_key=None, version=None, shard=None):
        """Take the host name for this incarnation; idempotent.

        :param partition_key: recorded in the row.
        :param version: recorded in the row.
        :param shard: recorded in the row.
        :raises DuplicateService: another live process holds the name
            (nothing is written).
        :raises NothingToTakeOver: a takeover was asked and no live
            process holds the name (nothing is written).
        :returns: None
        """
        if self.registered:
            return
        result = self.db.services.register_service(
            self.host, self.role, self.incarnation,
            origin=origin(), liveness_token=liveness_token(),
            partition_key=partition_key, shard=shard, version=version,
            service_down_time=self.service_down_time,
            takeover=self.takeover, gone=provably_gone)
        self.adoptable = result.adoptable
        self.inherited_clocks = result.database_clocks
        self.registered = True
        if result.replaced is not None:
            LOG.warning('Took over host %(host)s (%(role)s) from '
                        'incarnation %(old)s on %(origin)s: that process '
                        'can no longer heartbeat, renew or take a claim, '
                        'and its claims are taken over once their lease '
                        'runs out', {'host': self.host, 'role': self.role,
                                     'old': result.replaced.incarnation,
                                     'origin': result.replaced.origin})
        LOG.info('Registered as host %(host)s (%(role)s), incarnation '
                 '%(inc)s', {'host': self.host, 'role': self.role,
                             'inc': self.incarnation})

    def note_claim_round(self, node, database_clocks):
        """Record what the last claim round saw, for the next heartbeats.

        :param node: the database node that answered it, or None.
        :param database_clocks: the clock levels measured so far
            (:meth:`~ironic_partition.claims.db_clock.ClockWatch.levels`),
            or None to keep what the row holds.
        :returns: None
        """
        self._claims_node = node
        self._claims_node_at = time.monotonic()
        if database_clocks:
            self.database_clocks = database_clocks

    def claims_node(self, now=None):
        """The database node of a recent claim round, or None.

        A round older than twice ``service_down_time`` (Ironic down, only
        renewals running) says nothing about where the claim statements
        go now.

        :param now: the monotonic time, now by default.
        :returns: ``host:port``, or None.
        """
        at = self._claims_node_at
        now = time.monotonic() if now is None else now
        if at is None or now - at > 2 * self.service_down_time:
            return None
        return self._claims_node

    def beat(self, partition_key=None, version=None, shard=None,
             outside_peers=None):
        """Heartbeat, only while this incarnation holds the host name.

        :param outside_peers: the peers this service counts from nova's
            service group, recorded for ``status`` and ``check``.

        :raises IdentityLost: when another incarnation took it over.
        :raises: database errors, for the caller's retry logic.
        :returns: None
        """
        self.check()
        if not self.db.services.beat(
                self.host, self.role, self.incarnation,
                partition_key=partition_key, version=version, shard=shard,
                outside_peers=outside_peers, claims_node=self.claims_node(),
                database_clocks=self.database_clocks):
            self.mark_lost(self.db.services.describe_holder(self.host,
                                                            self.role))
            self.check()

    def mark_lost(self, reason):
        """Record that this process lost its host name; never raises.

        :param reason: why, for the logs and errors.
        :returns: None
        """
        if self._lost is None:
            self._lost = reason
            LOG.error('This process (incarnation %(inc)s) lost host '
                      '%(host)s (%(role)s): %(reason)s. It reports no node '
                      'any more.', {'inc': self.incarnation,
                                    'host': self.host, 'role': self.role,
                                    'reason': reason})

    def release(self, leave=True):
        """Give the host name up (graceful stop); never raises.

        :param leave: True also marks the service down at once, so peers
            rebalance now; False keeps it alive until ``service_down_time``
            and detaches its claims for the next incarnation to adopt.
        :returns: None
        """
        if not self.registered or self._lost is not None:
            return
        try:
            self.db.services.release_service(
                self.host, self.role, self.incarnation, down=leave)
            self.registered = False
        except Exception as exc:
            LOG.warning('Could not give up host %(host)s (%(role)s) in '
                        '%(conn)s; a restart may have to wait '
                        'service_down_time (%(down)s s): %(err)s',
                        {'host': self.host, 'role': self.role,
                         'conn': self.db.masked_connection,
                         'down': self.service_down_time, 'err': exc})
