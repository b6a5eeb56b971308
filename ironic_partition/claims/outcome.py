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

"""What one claim round found: the record the claim manager returns."""

import dataclasses
import types


@dataclasses.dataclass(frozen=True)
class ClaimOutcome:
    """What one claim round found.

    :param reported: every node the service may report now: the ring
        nodes and the nodes of its own instances it holds a valid claim
        on.
    :param ring_reported: the ring (instance-less) nodes among them.
    :param held: nodes with a valid claim as of the last successful round
        (including nodes kept one more round before their release).
    :param claimed: nodes taken in this round.
    :param released: nodes released in this round.
    :param fenced: wanted nodes (ring or instance) withheld because no
        valid claim can be proven: the database could not be reached, or
        the lease ran out by the local clock.
    :param waiting: wanted nodes (ring or instance) withheld because
        another service, or the process this one took the host name over
        from, holds a valid claim on them (it releases them at its next
        refresh, or its lease runs out).
    :param ok: whether this round reached the database.
    :param error: what went wrong when it did not, else None.
    :param valid_until: the local monotonic instant until which the
        nodes in ``reported`` may be reported, or None when none may.
    :param epochs: node UUID to claim epoch, for the held nodes.
    :param seconds: how long the round took.
    :param statements: SQL statements the round issued.
    """

    reported: frozenset
    ring_reported: frozenset
    held: frozenset
    claimed: frozenset
    released: frozenset
    fenced: frozenset
    waiting: frozenset
    ok: bool
    error: str
    valid_until: float
    epochs: types.MappingProxyType
    seconds: float
    statements: int
