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

"""The Galera fixture's wait for a cluster that lost its primary component.

The nodes' answers are faked: a cluster split into non-primary parts
cannot be produced on purpose (it was seen once, under CI load).
"""

from unittest import mock

import fixtures

from ironic_partition.testing.services import galera
from ironic_partition.tests import base


def _status(cluster, committed, size='1'):
    return {'wsrep_ready': 'OFF', 'wsrep_cluster_status': cluster,
            'wsrep_local_state_comment': 'Initialized',
            'wsrep_cluster_size': size,
            'wsrep_last_committed': str(committed)}


SYNCED = {'wsrep_ready': 'ON', 'wsrep_cluster_status': 'Primary',
          'wsrep_local_state_comment': 'Synced', 'wsrep_cluster_size': '3'}


class TestLostPrimary(base.TestCase):

    def setUp(self):
        super().setUp()
        self.fixture = galera.GaleraFixture(timeout=60)
        self.clock = [100.0]
        # NOTE(ironic-partition): the fixture and wait_for share the time
        # module: a fake clock that sleeping advances.
        self.useFixture(fixtures.MockPatch('time.monotonic',
                                           lambda: self.clock[0]))
        self.useFixture(fixtures.MockPatch(
            'time.sleep', lambda seconds: self.clock.__setitem__(
                0, self.clock[0] + seconds)))
        self.fixture._check = lambda alive: None
        self.fixture.haproxy = mock.Mock(running=lambda: False)
        self.execute = self.useFixture(fixtures.MockPatchObject(
            self.fixture, 'execute')).mock

    def test_no_primary_for_the_grace_bootstraps_the_most_advanced(self):
        split = {0: _status('non-Primary', 270, '2'),
                 1: _status('non-Primary', 274),
                 2: _status('non-Primary', 274, '2')}
        bootstrapped = []

        def status(index):
            if bootstrapped:
                return dict(SYNCED)
            return split[index]

        def execute(sql, index):
            bootstrapped.append((sql, index))
        self.fixture.status = status
        self.execute.side_effect = execute
        start = self.clock[0]
        self.fixture.wait_for_cluster([0, 1, 2])
        # node1 and node2 committed the most; node1 on a tie.
        self.assertEqual(
            [("SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'", 1)],
            bootstrapped)
        self.assertEqual(1, self.fixture.primary_bootstraps)
        self.assertGreaterEqual(self.clock[0] - start,
                                galera.LOST_PRIMARY_GRACE)

    def test_a_primary_component_forming_is_waited_for(self):
        # Two nodes primary, the third still joining: never bootstrapped.
        answers = iter([{0: dict(SYNCED, wsrep_cluster_size='2'),
                         1: dict(SYNCED, wsrep_cluster_size='2'),
                         2: _status('non-Primary', 1)}] * 200 +
                       [{0: SYNCED, 1: SYNCED, 2: SYNCED}] * 3)
        current = {}

        def status(index):
            if index == 0:
                current.clear()
                current.update(next(answers))
            return current[index]
        self.fixture.status = status
        self.fixture.wait_for_cluster([0, 1, 2])
        self.execute.assert_not_called()
        self.assertEqual(0, self.fixture.primary_bootstraps)
