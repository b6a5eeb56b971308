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

"""A write to a node under a claim the database proves, within a budget.

The local claim check
(:meth:`~ironic_partition.partition.partitioner.Partitioner. spawn_refusal`) is
judged by this host's clock against the last claim round; a write that follows
it can land much later (a paused process, a slow network, an API or proxy that
holds the request, retries). Before this service writes to a node that no
instance of its own holds yet (nova's reservation of a node for a build, the
``instance_uuid`` PATCH),
:class:`WriteGuard` bounds that window:

1. **Prove** (:meth:`WriteGuard.prove`): one statement reads this
   incarnation's claim on the node, while its services row still names
   it, and the database server's time. The write may start only with at
   least :attr:`~WriteGuard.budget` seconds left on the claim by the
   database's clock.
2. **Write within the proof** (:meth:`WriteGuard.time_left`): the write
   gets a timeout that ends before the claim can run out, by the lease
   clock (``CLOCK_BOOTTIME`` on Linux: a suspended or paused machine's
   time counts), and never more than :attr:`~WriteGuard.timeout`.
3. **Confirm** (:meth:`WriteGuard.confirm`): after the write, the same
   claim (same epoch) with time left. Otherwise, or when the write did
   not end in time, the caller undoes the write and the build is
   rescheduled.

Why the clocks can be compared: the proof's deadline is the lease clock
read *before* the statement was sent, plus the seconds the database said
the claim has left; the database's ``now()`` was read later than that, so
the deadline is early, never late, whatever the statement's latency. Two
clocks disciplined by NTP advance at the same rate to within 500 ppm;
:data:`RATE_SLACK` takes a thousandth of the time left off the deadline.
A peer takes a claim only once it ran out by the database's clock, so a
write that ends before the deadline landed while no peer could hold the
node.

The budget and the timeout are two figures. The *budget*
(:attr:`~WriteGuard.budget`) is what the claim must have left, by the
database's clock, for a write to start: half the fencing margin, at most
:data:`MAX_WRITE_TIMEOUT`. The *timeout* of the write is all the proven
time, up to :data:`MAX_WRITE_TIMEOUT` (:attr:`~WriteGuard.timeout`): the
deadline, not the budget, is what keeps the write inside the claim, so a
write may take every second the proof gives it. A compute that is not
fenced has at least the fencing margin left on its claims (it fences
itself that long before they run out), so a healthy compute always
starts with twice the budget and its write gets at least the margin, up
to 10 s: on nova's defaults (lease 60 s, margin 16 s) the budget is 8 s
and the timeout 10 s; in the short cadence of the test lanes (lease 10 s,
margin 5 s) the budget is 2.5 s and the timeout 5 to 10 s. (The timeout
used to be the budget, 2.5 s in that cadence: an Ironic PATCH on two
loaded cores outlasted it, and a build with one possible host failed
although its claim had seconds to spare.) That timeout is
:data:`~ironic_partition.settings.claims.WRITE_WINDOW`, the part
of nova's fencing margin that covers nova acting on a node after a check.

What this does not cover, and is documented: a write that the client
abandoned and that Ironic applies later still (a proxy holding the
request past its timeout) may land after the undo; nova's
``failed_spawn_cleanup`` then finds the node by the instance and clears
it, unless the write lands later still.
"""

import collections

from ironic_partition.claims import manager as claims_mod
from ironic_partition import exception
from ironic_partition.settings import claims as claim_settings

#: Longest timeout a write under a proven claim gets, in seconds.
MAX_WRITE_TIMEOUT = claim_settings.WRITE_WINDOW

#: The share of the time left taken off a deadline, for the rate
#: difference between the database's clock and the lease clock.
RATE_SLACK = 0.001

#: What :meth:`WriteGuard.prove` proved: the node, the claim's epoch and
#: the deadline on the lease clock before which a write lands under it.
Proof = collections.namedtuple('Proof', ['node_id', 'epoch', 'deadline'])


class WriteGuard(object):
    """Prove a claim before a write, and confirm it after.

    :param claims: the :class:`~ironic_partition.claims.manager.ClaimManager`.
    :param timeout: the longest a write may take, in seconds, when its
        proof allows it; :data:`MAX_WRITE_TIMEOUT` by default.
    """

    def __init__(self, claims, timeout=None):
        self.claims = claims
        #: Seconds a write may take at most, within its proof.
        self.timeout = float(MAX_WRITE_TIMEOUT if timeout is None
                             else timeout)
        #: Seconds a claim must have left, by the database's clock, for a
        #: write to start: half the fencing margin, at most the timeout.
        self.budget = min(self.timeout, claims.fencing_margin / 2.0)

    def _read(self, node_id):
        claims = self.claims
        try:
            return claims.store.claims.claim_left(
                claims.role, claims.host, node_id, claims.incarnation)
        except claims_mod.DATABASE_ERRORS as e:
            raise exception.ClaimNotProven(
                node_id, 'the claims database cannot be read: %s' % e)

    def prove(self, node_id):
        """Prove, in one statement, a claim with the budget left.

        :param node_id: the node to write to.
        :raises ClaimNotProven: no claim of this incarnation (or the host
            name lost), less than :attr:`budget` left, or the database
            could not be read.
        :returns: a :data:`Proof`.
        """
        before = self.claims.clock()
        found = self._read(node_id)
        if found is None:
            raise exception.ClaimNotProven(
                node_id, 'this process holds no claim on it in the claims '
                'database')
        epoch, left = found
        if left < self.budget:
            raise exception.ClaimNotProven(node_id, (
                'its claim has %.1f s left by the database\'s clock, less '
                'than the %.1f s a write may take'
                % (max(left, 0.0), self.budget)))
        return Proof(node_id, epoch, before + left * (1 - RATE_SLACK))

    def time_left(self, proof):
        """The timeout of a write under ``proof``, starting now.

        :param proof: a :data:`Proof`.
        :raises ClaimNotProven: the proof's time is already spent.
        :returns: seconds, at most :attr:`timeout`, ending before the
            proof's deadline.
        """
        left = proof.deadline - self.claims.clock()
        if left <= 0:
            raise exception.ClaimNotProven(proof.node_id, (
                'the proof of its claim was spent before the write began '
                '(%.1f s late)' % -left))
        return min(self.timeout, left)

    def confirm(self, proof, started):
        """Confirm, after a write, that it landed under the proven claim.

        :param proof: the :data:`Proof` the write was made under.
        :param started: the lease clock when the write began.
        :raises ClaimNotProven: the write ended after the proof's time,
            or the claim is no longer the proven one (another epoch, none,
            run out) or cannot be read: the write must be undone.
        :returns: None
        """
        ended = self.claims.clock()
        if ended > proof.deadline:
            raise exception.ClaimNotProven(proof.node_id, (
                'the write took %.1f s and ended after the time its proof '
                'allowed' % (ended - started)))
        found = self._read(proof.node_id)
        if found is None or found[0] != proof.epoch or found[1] <= 0:
            raise exception.ClaimNotProven(proof.node_id, (
                'its claim moved during the write (epoch %s proven, now %s)'
                % (proof.epoch, 'none' if found is None else
                   '%s, %.1f s left' % found)))
