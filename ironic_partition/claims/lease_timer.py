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

"""The lease timer: claim renewals that never wait on anything else.

A :class:`~ironic_partition.claims.manager.ClaimManager` renews its claims at
every claim round, and a round runs at every refresh; a refresh may be slow (a
slow Ironic, a resource-tracker pass of minutes). The :class:`LeaseTimer`
renews the held claims every ``renew_interval`` seconds on a thread of its
own, whatever the refreshes do, and wakes at the fence to tell the
listeners at once. The deletion of long-unheld claim rows
(:class:`GarbageCollector`) runs on a second thread: a slow ``DELETE``
must never delay a renewal past the fence.

Both threads are daemons that stop at :meth:`LeaseTimer.stop`, and when
the main thread of the process has ended (a process that no longer serves
lets its claims lapse). They are plain threads, not a shared executor or
a periodic worker: neither may ever queue behind other work, and the lease
timer's next wake-up moves with the fence.
"""

import random
import threading

from oslo_log import log as logging

from ironic_partition.common import periodic
from ironic_partition.db import identity as identity_mod

LOG = logging.getLogger(__name__)

#: Claim rows whose lease ran out more than this many seconds ago (and at
#: least ten leases ago) are deleted (:meth:`GarbageCollector.collect`).
GC_AGE = 24 * 3600

#: Such rows are deleted at most once per this many seconds.
GC_INTERVAL = 600.0

#: The longest the garbage collection thread sleeps before it looks
#: whether a collection is due.
GC_POLL = 5.0


def notify(listeners, what):
    """Call every listener, logging and ignoring their errors.

    :param listeners: callables without arguments.
    :param what: what is told, for the log line (e.g. ``'A fence'``).
    :returns: None
    """
    for listener in list(listeners):
        try:
            listener()
        except Exception:
            LOG.exception('%s listener failed', what)


class GarbageCollector(object):
    """Deletes the claim rows of a role nobody held for a long time.

    Claim rows stay after a release, to keep their epoch; a fleet that
    loses nodes would keep their rows forever.

    :param manager: the :class:`~ironic_partition.claims.manager.ClaimManager`.
    :param database_errors: the exceptions that mean "the database failed".
    """

    def __init__(self, manager, database_errors):
        self._manager = manager
        self._errors = database_errors
        self._lock = threading.Lock()
        #: The local monotonic instant of the next collection.
        self.next_at = None

    @property
    def age(self):
        """Seconds after its lease ran out that a claim row is deleted.

        :data:`GC_AGE`, and at least ten leases: far longer than any
        process may act on a claim, so that no one still holds the epoch
        of a deleted row.
        """
        return max(GC_AGE, 10 * self._manager.lease_time)

    def _due_in(self, now):
        if self.next_at is None:
            # NOTE(ironic-partition): the first collection waits a random
            # part of the interval, so that services started together do
            # not all collect at once.
            self.next_at = now + GC_INTERVAL * random.uniform(0.1, 1.0)
        return self.next_at - now

    def wait(self):
        """Seconds to sleep before looking whether a collection is due.

        :returns: at most :data:`GC_POLL`, so that a stop and an injected
            clock are noticed soon.
        """
        with self._lock:
            due = self._due_in(self._manager.clock())
        return min(max(0.01, due), GC_POLL)

    def collect(self, now=None):
        """Delete old claim rows, at most every :data:`GC_INTERVAL`.

        Deletes, in chunks, the rows of the manager's role whose lease ran
        out more than :attr:`age` seconds ago. Never raises for a database
        fault.

        :param now: the monotonic time, the manager's clock by default.
        :returns: the number of rows deleted, or None when it was not time
            yet or the database failed.
        """
        manager = self._manager
        now = manager.clock() if now is None else now
        with self._lock:
            if self._due_in(now) > 0:
                return None
            self.next_at = now + GC_INTERVAL
        try:
            return manager.store.claims.collect_garbage(manager.role,
                                                        self.age)
        except self._errors as exc:
            LOG.warning('Could not delete the old claim rows in %(conn)s; '
                        'retrying in %(interval)d s: %(err)s',
                        {'conn': manager.store.masked_connection,
                         'interval': GC_INTERVAL, 'err': exc})
            return None


class LeaseTimer(object):
    """Renews a claim manager's claims, and collects old rows, on threads.

    :param manager: the :class:`~ironic_partition.claims.manager.ClaimManager`.
    :param database_errors: the exceptions that mean "the database failed".
    """

    def __init__(self, manager, database_errors):
        self._manager = manager
        self._errors = database_errors
        self._renewals = periodic.Periodic('ironic-partition-leases',
                                           self._renew, self._wait)
        self.gc = GarbageCollector(manager, database_errors)
        self._collections = periodic.Periodic('ironic-partition-claims-gc',
                                              self._collect, self.gc.wait)
        self._fence_listeners = []
        self._renew_listeners = []

    def add_fence_listener(self, listener):
        """Call ``listener()`` from the timer when the fence falls.

        A consumer that can stop reporting at once (the agent rewrites its
        report) registers here, so that it never goes on reporting a node
        past the fence until its next refresh.

        :param listener: a callable without arguments; its errors are
            logged and ignored.
        :returns: None
        """
        self._fence_listeners.append(listener)

    def add_renew_listener(self, listener):
        """Call ``listener()`` from the timer after each renewal.

        A consumer that publishes how long its report stays valid (the
        agent's ``valid_for``) registers here, so that the published
        validity follows the claims' instead of running out between two
        slow listings.

        :param listener: a callable without arguments; its errors are
            logged and ignored.
        :returns: None
        """
        self._renew_listeners.append(listener)

    @property
    def thread(self):
        """The renewal thread, or None when stopped."""
        return self._renewals.thread

    def start(self):
        """Start both threads, unless they run. Idempotent.

        :returns: None
        """
        self._renewals.start()
        self._collections.start()

    def stop(self):
        """Stop both threads; wait for the renewal thread to end.

        :returns: None
        """
        self._renewals.stop(self._manager.renew_interval + 5)
        # NOTE(ironic-partition): a DELETE under way is not waited for
        # long; it touches only rows nobody holds.
        self._collections.stop(1)

    def _wait(self):
        manager = self._manager
        now = manager.clock()
        until = manager.valid_until
        wait = manager.renew_interval
        if until is not None and now < until:
            # NOTE(ironic-partition): wake at the fence too, so listeners
            # hear of it at once rather than at the next renewal.
            wait = min(wait, until - now + 0.001)
        return max(0.01, wait)

    def _renew(self):
        manager = self._manager
        if identity_mod.process_exiting():
            # NOTE(ironic-partition): see the heartbeat loop: a process
            # that no longer serves lets its claims lapse.
            LOG.warning('The main thread of this process ended: no '
                        'more claim renewals for %s; the claims lapse '
                        'after their lease', manager.host)
            return False
        if manager.owns_identity:
            self._beat()
        was_fenced = manager.fenced()
        renewed = (manager.valid_until is not None and
                   manager.keepalive())
        if manager.fenced() and not was_fenced:
            notify(self._fence_listeners, 'A fence')
        elif renewed:
            notify(self._renew_listeners, 'A renewal')

    def _beat(self):
        # NOTE(ironic-partition): no membership backend heartbeats this
        # process's identity (claims with the nova or static backend);
        # the lease timer does, so that a duplicate is refused for as long
        # as this process runs.
        manager = self._manager
        identity = manager.identity
        if not identity.registered or identity.lost:
            return
        try:
            identity.beat()
        except Exception as exc:
            if manager.forget_if_identity_lost(exc):
                return
            if not isinstance(exc, self._errors):
                raise
            LOG.debug('Identity heartbeat of %(host)s failed: %(err)s',
                      {'host': manager.host, 'err': exc})

    def _collect(self):
        if identity_mod.process_exiting():
            return False
        self.gc.collect()
