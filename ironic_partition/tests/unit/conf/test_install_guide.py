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

"""The install guide's nova.conf passes the checks nova-compute makes."""

import os
import socket

import fixtures
from oslo_config import cfg
from oslotest import base
import sqlalchemy.engine

from ironic_partition.cmd import base as cmd_base
from ironic_partition.cmd import upgrade_check
from ironic_partition import conf as ip_conf
from ironic_partition.membership import base as membership_base
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings

GUIDE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                     'doc', 'source', 'install', 'nova-compute.conf')

NOVA_CADENCE = claim_settings.nova_cadence(0)


class TestInstallGuide(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        if not os.path.exists(GUIDE):
            self.skipTest('no source tree (%s)' % GUIDE)
        # NOTE(ironic-partition): read as the operator tools read it, with
        # no option registered by hand: [DEFAULT] host must come from the
        # tools' own loading.
        self.conf = cmd_base.load_conf(
            [GUIDE], role=membership_base.ROLE_NOVA_COMPUTE)
        self.logger = self.useFixture(fixtures.FakeLogger())

    def test_partition_settings_are_valid(self):
        settings = settings_mod.from_conf(self.conf)
        self.assertEqual('rack1', settings.partition_key)
        self.assertEqual('compute-1', settings.host)
        self.assertIn(settings.host, settings.peer_list)

    def test_an_agent_keeps_its_own_identity(self):
        conf = cmd_base.load_conf([GUIDE], role=membership_base.ROLE_AGENT)
        self.assertNotIn('host', conf)
        self.assertEqual(ip_conf.normalize_host(socket.gethostname()),
                         ip_conf.get_host(conf))

    def test_upgrade_check_names_the_service_from_nova_conf(self):
        conf = cfg.ConfigOpts()
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_partition.cmd.upgrade_check.Checks.check',
            lambda checks: 0))
        upgrade_check.main(['--config-file', GUIDE, 'upgrade', 'check'],
                           conf=conf)
        self.assertEqual('compute-1', ip_conf.get_host(conf))

    def test_claims_database_is_shared_not_sqlite(self):
        # A SQLite file is refused at start while peer_list names other
        # hosts (claim_settings.check_shared_database): the guide must not rely
        # on the default.
        url = sqlalchemy.engine.make_url(
            self.conf.ironic_partition_database.connection)
        self.assertIn(url.get_backend_name(), ('mysql', 'postgresql'))

    def test_claim_timings_start_without_error_or_warning(self):
        settings = settings_mod.from_conf(self.conf, NOVA_CADENCE).claims()
        self.assertEqual((60.0, 16.0), (settings.lease_time,
                                        settings.fencing_margin))
        self.assertNotIn('lease_time', self.logger.output)
