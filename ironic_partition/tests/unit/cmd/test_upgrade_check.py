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

"""``ironic-partition-status upgrade check``: the rows and their codes.

The checks behind the rows are ``ironic-partition check``'s (tested in
``test_commands`` and, against a real Ironic, in the functional tests);
here ``run_checks`` answers what a test says.
"""

import io
import json
import os
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from ironic_partition.cmd import checks
from ironic_partition.cmd import dbsync
from ironic_partition.cmd import ironic_checks
from ironic_partition.cmd import upgrade_check
from ironic_partition.db import services as services_db
from ironic_partition.tests import base

SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
FAILURE = upgradecheck.Code.FAILURE

ALL = (list(checks.CHECKS) + list(checks.FLEET_CHECKS)
       + list(checks.FEED_CHECKS))


def _doc(problems=(), warnings=(), skipped=()):
    found = {c for c, _m in problems} | {c for c, _m in warnings}
    return {
        'problems': [{'check': c, 'severity': 'problem', 'message': m}
                     for c, m in problems],
        'warnings': [{'check': c, 'severity': 'warning', 'message': m}
                     for c, m in warnings],
        'passed': [c for c in ALL if c not in found and c not in skipped],
    }


class TestUpgradeCheck(base.TestCase):

    def run_main(self, doc, *args):
        conf = cfg.ConfigOpts()
        out = io.StringIO()
        with mock.patch.object(checks, 'run_checks', autospec=True,
                               return_value=doc) as run_checks, \
                mock.patch('sys.stdout', out):
            code = upgrade_check.main(
                list(args) + ['upgrade', 'check', '--json'], conf=conf)
        rows = {c['check']: (c['result'], c['details'])
                for c in json.loads(out.getvalue())['checks']}
        return code, rows, run_checks

    def test_all_pass(self):
        code, rows, run_checks = self.run_main(_doc())
        self.assertEqual(SUCCESS, code)
        self.assertEqual(
            ['Configuration', 'Claim timing',
             'Membership and claims database',
             'Ironic and the conductor group',
             'Conductor groups and shards served', 'Shards', 'Change feed'],
            list(rows))
        self.assertEqual({SUCCESS}, {r for r, _d in rows.values()})
        # The checks ran once, for nova-compute by default, with the
        # change feed's usability (one full listing), not the comparison.
        run_checks.assert_called_once_with(
            mock.ANY, 'nova-compute', feed_usable=True, fleet=True,
            new_deployment=False, adopting=False)
        # nova's default cadence: 60 s, so a 60 s lease.
        self.assertIn('lease_time 60', rows['Claim timing'][1])
        self.assertIn('[DEFAULT] update_resources_interval is 60 s',
                      rows['Claim timing'][1])

    def test_a_problem_fails_its_row_and_a_warning_warns(self):
        code, rows, _r = self.run_main(_doc(
            problems=[('duplicates', 'two processes hold cn1')],
            warnings=[('feed', 'the feed cannot be used: x')]))
        self.assertEqual(FAILURE, code)
        self.assertEqual((FAILURE, 'two processes hold cn1'),
                         rows['Membership and claims database'])
        self.assertEqual((WARNING, 'the feed cannot be used: x'),
                         rows['Change feed'])
        self.assertEqual(SUCCESS, rows['Configuration'][0])

    def test_warnings_alone_exit_1(self):
        code, rows, _r = self.run_main(_doc(
            warnings=[('shards', 'upper case')]))
        self.assertEqual(WARNING, code)
        self.assertEqual(WARNING, rows['Shards'][0])

    def test_a_row_nothing_could_check_is_a_warning(self):
        code, rows, _r = self.run_main(_doc(
            problems=[('ironic', 'Ironic at x is unavailable')],
            skipped=['group', 'shards', 'feed', 'coverage', 'served']))
        self.assertEqual(FAILURE, code)
        self.assertEqual(FAILURE, rows['Ironic and the conductor group'][0])
        self.assertEqual((WARNING, 'Not checked: it needs what failed '
                          'above.'), rows['Shards'])

    def test_a_margin_shorter_than_novas_hold_fails(self):
        conf_file = self.create_tempfiles(
            [('nova', '[DEFAULT]\nupdate_resources_interval = 300\n'
                      '[ironic_partition]\nfencing_margin = 5\n')])[0]
        code, rows, _r = self.run_main(_doc(), '--config-file', conf_file)
        self.assertEqual(FAILURE, code)
        result, details = rows['Claim timing']
        self.assertEqual(FAILURE, result)
        self.assertIn('fencing_margin', details)
        self.assertIn('at least 10.0 s', details)
        self.assertIn('[DEFAULT] update_resources_interval (300)', details)

    def test_a_lease_shorter_than_two_nova_periods_is_allowed(self):
        conf_file = self.create_tempfiles(
            [('nova', '[DEFAULT]\nupdate_resources_interval = 300\n'
                      '[ironic_partition]\nlease_time = 400\n')])[0]
        code, rows, _r = self.run_main(_doc(), '--config-file', conf_file)
        result, details = rows['Claim timing']
        self.assertNotEqual(FAILURE, result)
        self.assertIn('lease_time 400', details)

    def test_the_agent_role_uses_the_refresh_interval(self):
        code, rows, run_checks = self.run_main(_doc(), '--role', 'agent')
        self.assertEqual(SUCCESS, code)
        run_checks.assert_called_once_with(mock.ANY, 'agent',
                                           feed_usable=True, fleet=True,
                                           new_deployment=False,
                                           adopting=False)
        self.assertIn('[ironic_partition] refresh_interval is',
                      rows['Claim timing'][1])

    def test_new_deployment_mode(self):
        code, rows, run_checks = self.run_main(_doc(), '--new-deployment')
        self.assertEqual(SUCCESS, code)
        run_checks.assert_called_once_with(
            mock.ANY, 'nova-compute', feed_usable=True, fleet=True,
            new_deployment=True, adopting=False)


class _FleetClient(object):
    def __init__(self, nodes):
        self.nodes = nodes

    def list_node_dicts(self, fields, microversion=None, **filters):
        return [dict(n) for n in self.nodes]


def _node(i, group, shard=None, driver='fake-hardware'):
    return {'uuid': 'node-%02d' % i, 'name': None, 'driver': driver,
            'conductor_group': group, 'shard': shard}


def _service(host, key=None, shard=None, alive=True):
    return services_db.ServiceRecord(
        host=host, role='nova-compute', partition_key=key, version=None,
        created_at=None, last_seen=None, down=not alive, alive=alive,
        incarnation=1, shard=shard)


CONDUCTORS = [
    {'hostname': 'c1', 'conductor_group': 'rack1', 'alive': True,
     'drivers': ['fake-hardware']},
    {'hostname': 'c2', 'conductor_group': 'rack2', 'alive': True,
     'drivers': ['fake-hardware']},
]


class TestFleetCheck(base.TestCase):

    def fleet(self, nodes, services):
        report = checks._Report()
        report.services = services
        ironic_checks.check_fleet(_FleetClient(nodes), CONDUCTORS,
                                  'nova-compute', report)
        return report

    def test_every_group_and_shard_served(self):
        nodes = [_node(0, 'rack1'), _node(1, 'rack2', 'S1'),
                 _node(2, 'rack2', 's1')]
        report = self.fleet(nodes, [_service('cn1', 'rack1'),
                                    _service('cn2', 'RACK2', 's1')])
        self.assertEqual([], report.findings)
        self.assertEqual(['served', 'coverage'], report.passed)

    def test_a_group_no_live_compute_lists(self):
        nodes = [_node(0, 'rack1'), _node(1, 'rack2'), _node(2, 'rack2')]
        report = self.fleet(nodes, [_service('cn1', 'rack1'),
                                    _service('cn2', 'rack2', alive=False)])
        [finding] = report.findings
        self.assertEqual(('coverage', 'warning'),
                         (finding.check, finding.severity))
        self.assertIn("2 nodes in conductor group 'rack2' are listed by no "
                      "live nova-compute service", finding.message)

    def test_a_shard_no_compute_lists(self):
        # The compute of rack1 lists shard s1 only.
        nodes = [_node(0, 'rack1', 's1'), _node(1, 'rack1', 's2')]
        report = self.fleet(nodes, [_service('cn1', 'rack1', 's1')])
        [finding] = report.findings
        self.assertIn("1 nodes in conductor group 'rack1', shard 's2'",
                      finding.message)

    def test_an_unpartitioned_compute_lists_everything(self):
        nodes = [_node(0, 'rack1', 's1'), _node(1, 'rack1', 's2'),
                 _node(2, 'rack2')]
        report = self.fleet(nodes, [_service('cn1')])
        self.assertEqual([], report.findings)

    def test_a_group_mixing_sharded_and_unsharded_nodes(self):
        nodes = [_node(0, 'rack1', 's1'), _node(1, 'rack1'),
                 _node(2, 'rack1')]
        report = self.fleet(nodes, [_service('cn1', 'rack1')])
        [finding] = report.findings
        self.assertIn("Conductor group 'rack1' has 1 nodes with a shard "
                      "and 2 without", finding.message)

    def test_new_deployment_expects_no_live_service(self):
        nodes = [_node(0, 'rack1'), _node(1, 'rack2')]
        report = checks._Report()
        report.services = []
        ironic_checks.check_fleet(_FleetClient(nodes), CONDUCTORS,
                                  'nova-compute', report, new_deployment=True)
        self.assertEqual([], report.findings)
        self.assertEqual(['served', 'coverage'], report.passed)

    def test_services_unread_is_not_a_success(self):
        # The membership database could not be read: the coverage was not
        # checked, and the row says so rather than passing.
        nodes = [_node(0, 'rack1'), _node(1, 'rack2')]
        report = self.fleet(nodes, None)
        [finding] = report.findings
        self.assertEqual(('coverage', 'warning'),
                         (finding.check, finding.severity))
        self.assertIn('Not checked whether a live nova-compute service '
                      'lists each conductor group', finding.message)
        # A backend that keeps no services (static): nothing to say.
        report = checks._Report()
        ironic_checks.check_fleet(_FleetClient(nodes), CONDUCTORS,
                                  'nova-compute', report, keeps_services=False)
        self.assertEqual([], report.findings)

    def test_a_hardware_type_no_alive_conductor_serves(self):
        nodes = [_node(0, 'rack1', driver='ipmi')]
        report = self.fleet(nodes, [_service('cn1', 'rack1')])
        [finding] = report.problems
        self.assertEqual('served', finding.check)
        self.assertIn("no alive conductor serves its hardware type 'ipmi'",
                      finding.message)

    def test_without_the_services_only_the_conductors_are_checked(self):
        # The static or nova membership backends keep no services.
        nodes = [_node(0, 'rack9')]
        report = self.fleet(nodes, None)
        [finding] = report.problems
        self.assertEqual('served', finding.check)


class TestConsoleScriptErrors(base.TestCase):
    """A file or argument the scripts cannot use: one line, the code."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.bad = os.path.join(self.tmp, 'bad.conf')
        with open(self.bad, 'w') as stream:
            stream.write('[DEFAULT]\nnot an assignment\n')
        self.missing = os.path.join(self.tmp, 'missing.conf')

    def run_main(self, main, *argv):
        err = io.StringIO()
        with mock.patch('sys.stderr', err):
            code = main(list(argv), conf=cfg.ConfigOpts())
        return code, err.getvalue()

    def test_upgrade_check_missing_or_unparsable_file_exits_255(self):
        for path, words in ((self.missing, 'Failed to find some config '
                             'files: %s' % self.missing),
                            (self.bad, 'Failed to parse %s' % self.bad)):
            code, err = self.run_main(upgrade_check.main, '--config-file',
                                      path, 'upgrade', 'check')
            self.assertEqual(255, code)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn(words, err)
            self.assertNotIn('Traceback', err)

    def test_upgrade_check_bad_role_exits_255(self):
        code, err = self.run_main(upgrade_check.main, '--role', 'foo',
                                  'upgrade', 'check')
        self.assertEqual(255, code)
        self.assertIn('argument --role', err)
        self.assertNotIn('Traceback', err)

    def test_dbsync_missing_or_unparsable_file_is_one_line(self):
        for path, command in ((self.missing, 'version'),
                              (self.bad, 'upgrade')):
            code, err = self.run_main(dbsync.main, '--config-file', path,
                                      command)
            self.assertEqual(1, code)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertTrue(err.startswith('ironic-partition-dbsync: '
                                           'configuration error: '), err)
            self.assertIn(path, err)


class TestTimingRow(base.TestCase):

    run_main = TestUpgradeCheck.run_main

    def test_slow_return_of_a_dead_service_is_a_warning_row(self):
        # A 120 s lease chosen on nova's cadence (60 s) with
        # service_down_time 4: a dead service's nodes come back only after
        # the lease. The WARNING every start logs is the row's result, in
        # the table and in --json.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as stream:
            stream.write('[ironic_partition]\nservice_down_time = 4\n'
                         'heartbeat_interval = 1\nlease_time = 120\n')
        code, rows, _r = self.run_main(_doc(), '--config-file', path)
        self.assertEqual(WARNING, code, rows)
        result, details = rows['Claim timing']
        self.assertEqual(WARNING, result)
        self.assertIn('the nodes of a dead service are reported again only '
                      'after up to 180 s', details)
        self.assertIn('lease_time 120', details)
