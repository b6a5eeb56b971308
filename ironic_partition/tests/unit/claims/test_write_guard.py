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

"""A write proven by the database's clock, with injected clocks."""

from oslo_db import exception as db_exc

from ironic_partition.claims import write_guard
from ironic_partition import exception
from ironic_partition.tests.unit.claims import test_manager as test_claims

NODE, NODE_B = test_claims._ids(2)


class TestWriteGuard(test_claims.ClaimsTestCase):

    def setUp(self):
        super().setUp()
        # A 120 s lease with a 72 s margin: budget and timeout 10 s.
        self.cn1 = self.manager('cn1', lease=120, margin=72)
        self.cn1.round([NODE])
        self.guard = write_guard.WriteGuard(self.cn1)

    def test_budget_on_novas_defaults(self):
        self.assertEqual(10.0, self.guard.timeout)
        self.assertEqual(10.0, self.guard.budget)
        # nova's defaults (lease 60 s, margin 16 s): a claim must have
        # half the margin left for a write to start, and a compute that
        # is not fenced has the whole margin left, twice that.
        novas = write_guard.WriteGuard(self.manager('cn8', lease=60,
                                                    margin=16))
        self.assertEqual(8.0, novas.budget)
        self.assertEqual(10.0, novas.timeout)
        # The short cadence of the lanes: the budget is half the margin,
        # the write may take all the proven time, up to 10 s.
        short = write_guard.WriteGuard(self.manager('cn9', lease=10,
                                                    margin=5))
        self.assertEqual(2.5, short.budget)
        self.assertEqual(10.0, short.timeout)

    def test_write_gets_all_the_proven_time(self):
        # Short cadence: a fresh claim has about the lease left; the
        # write's timeout is what the proof allows, not the budget. An
        # Ironic PATCH of 4 s on a loaded machine fits.
        cn9 = self.manager('cn9', lease=10, margin=5)
        cn9.round([NODE_B])
        guard = write_guard.WriteGuard(cn9)
        proof = guard.prove(NODE_B)
        self.assertAlmostEqual(10 * 0.999, guard.time_left(proof))
        self.clock.now += 4
        self.db_clock.now += 4
        self.assertAlmostEqual(10 * 0.999 - 4, guard.time_left(proof))
        guard.confirm(proof, self.clock.now - 4)

    def test_timeout_never_passes_the_proof(self):
        # 3 s left by the database's clock: above the 2.5 s budget, so
        # the write starts, with 3 s, not 10.
        cn9 = self.manager('cn9', lease=10, margin=5)
        cn9.round([NODE_B])
        guard = write_guard.WriteGuard(cn9)
        self.db_clock.now += 7
        proof = guard.prove(NODE_B)
        self.assertAlmostEqual(3 * 0.999, guard.time_left(proof))

    def test_proof_reads_the_database_clock_in_one_statement(self):
        before = self.db.stats['claim_statements']
        proof = self.guard.prove(NODE)
        self.assertEqual(1, self.db.stats['claim_statements'] - before)
        self.assertEqual(1, proof.epoch)
        # The deadline: the lease clock before the statement, plus what
        # the database says is left, less a thousandth.
        self.assertAlmostEqual(self.clock.now + 120 * 0.999, proof.deadline)
        self.assertEqual(10.0, self.guard.time_left(proof))

    def test_half_a_second_left_is_refused(self):
        # The local check still passes (the host clock stopped: a paused
        # VM), while the database's clock says 0.5 s are left.
        self.db_clock.now += 119.5
        self.assertEqual({NODE}, self.cn1.reportable([NODE]))
        e = self.assertRaises(exception.ClaimNotProven,
                              self.guard.prove, NODE)
        self.assertIn("its claim has 0.5 s left by the database's clock, "
                      "less than the 10.0 s a write may take", str(e))

    def test_no_claim_or_another_owner_is_refused(self):
        e = self.assertRaises(exception.ClaimNotProven, self.guard.prove,
                              test_claims._ids(1, start=5)[0])
        self.assertIn('this process holds no claim on it', str(e))
        # cn1's lease ran out by the database's clock; cn2 took the node.
        self.db_clock.now += 121
        self.manager('cn2').round([NODE])
        e = self.assertRaises(exception.ClaimNotProven, self.guard.prove,
                              NODE)
        self.assertIn('this process holds no claim on it', str(e))

    def test_database_down_is_refused(self):
        self.db.fail = db_exc.DBConnectionError('gone')
        e = self.assertRaises(exception.ClaimNotProven, self.guard.prove,
                              NODE)
        self.assertIn('the claims database cannot be read: gone', str(e))

    def test_write_past_the_fence_while_a_peer_takes_it_is_not_confirmed(
            self):
        # The write stalls (a paused process, a proxy holding the PATCH)
        # past the lease; cn2 takes the node meanwhile. The write ended
        # after the proof's time: it must be undone, whatever the claim
        # says now.
        proof = self.guard.prove(NODE)
        started = self.clock.now
        self.advance(125)
        self.manager('cn2').round([NODE])
        self.assertEqual('cn2', self.db.owner(NODE))
        e = self.assertRaises(exception.ClaimNotProven,
                              self.guard.confirm, proof, started)
        self.assertIn('the write took 125.0 s and ended after the time its '
                      'proof allowed', str(e))

    def test_claim_moved_during_a_prompt_write_is_not_confirmed(self):
        # The write was quick by the lease clock, yet the claim is not the
        # proven one any more (released and taken again: a new epoch).
        proof = self.guard.prove(NODE)
        self.cn1.stop(release=True)
        self.manager('cn2').round([NODE])
        e = self.assertRaises(exception.ClaimNotProven,
                              self.guard.confirm, proof, self.clock.now)
        self.assertIn('its claim moved during the write (epoch 1 proven, '
                      'now none)', str(e))

    def test_prompt_write_under_the_claim_is_confirmed(self):
        proof = self.guard.prove(NODE)
        started = self.clock.now
        self.advance(0.2)
        self.assertIsNone(self.guard.confirm(proof, started))

    def test_proof_spent_before_the_write_is_refused(self):
        proof = self.guard.prove(NODE)
        self.clock.now += 119.9
        e = self.assertRaises(exception.ClaimNotProven,
                              self.guard.time_left, proof)
        self.assertIn('the proof of its claim was spent before the write '
                      'began', str(e))
        # Nearly spent: the timeout ends at the deadline, not later.
        proof = self.guard.prove(NODE)
        self.clock.now = proof.deadline - 3
        self.assertAlmostEqual(3, self.guard.time_left(proof))
