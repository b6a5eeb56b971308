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

"""ironic-partition's options beside the real nova's, on one ConfigOpts.

nova 34 registers ``[ironic] conductor_group`` (deprecated name
``partition_key``, mutable) and ``[ironic] peer_list`` (not mutable) in
nova-compute. These tests import the real nova and check that registering
ours beside them raises nothing and that what an operator writes under
``[ironic]`` is what the plugin reads.
"""

from oslo_config import cfg
from oslotest import base

import nova.conf
import nova.conf.ironic
import nova.conf.netconf

from ironic_partition import conf as ip_conf
from ironic_partition import exception


class TestNovaCoexistence(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        # The order of nova-compute: nova's options are registered when
        # nova.conf is imported, before any virt driver is loaded. Only
        # nova's own [ironic] options: its keystoneauth ones cannot be
        # registered twice in one process with keystoneauth1 5.18.
        self.conf.register_opts(nova.conf.ironic.ironic_options,
                                group='ironic')
        nova.conf.netconf.register_opts(self.conf)
        ip_conf.register_opts(self.conf)

    def _load(self, text):
        path = self.create_tempfiles([('nova', text)])[0]
        self.conf(['--config-file', path], project='nova')
        return ip_conf.get_settings(self.conf)

    def test_register_on_nova_global_conf(self):
        # nova-compute's own CONF, as the real service builds it.
        ip_conf.register_opts(nova.conf.CONF)
        ip_conf.register_opts(nova.conf.CONF)
        self.assertTrue(ip_conf.nova_owns_ironic_opts(nova.conf.CONF))
        self.assertIn('service_down_time', nova.conf.CONF.ironic_partition)

    def test_no_duplicate_opt_error_and_idempotent(self):
        ip_conf.register_opts(self.conf)
        self.assertTrue(ip_conf.nova_owns_ironic_opts(self.conf))
        # nova's own definitions are the ones in force.
        self.assertNotIn('partition_key', self.conf.ironic)
        self.assertIn('ironic_partition', self.conf)

    def test_partition_key_written_in_nova_conf(self):
        s = self._load('[DEFAULT]\nhost = Compute-1\n'
                       '[ironic]\npartition_key = Rack1\n'
                       'peer_list = compute-1, COMPUTE-2\n')
        self.assertEqual('rack1', s.partition_key)
        self.assertEqual(('compute-1', 'compute-2'), s.peer_list)
        self.assertEqual('compute-1', s.host)

    def test_conductor_group_written_in_nova_conf(self):
        s = self._load('[DEFAULT]\nhost = compute-1\n'
                       '[ironic]\nconductor_group = rack2\n'
                       'peer_list = compute-1\n')
        self.assertEqual('rack2', s.partition_key)

    def test_unset_in_nova_conf(self):
        s = self._load('[DEFAULT]\nhost = compute-1\n')
        self.assertIsNone(s.partition_key)

    def test_our_validation_applies_to_nova_options(self):
        # nova's regex ends in "$" and lets a trailing newline through;
        # ours does not.
        self.conf([], project='nova')
        self.conf.set_override('conductor_group', 'rack1\n', 'ironic')
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.get_settings, self.conf)
        self.assertIn('[ironic] conductor_group', str(e))

    def test_peer_list_without_host_in_nova_conf(self):
        self.assertRaises(exception.InvalidPeerList, self._load,
                          '[DEFAULT]\nhost = compute-9\n'
                          '[ironic]\npartition_key = rack1\n'
                          'peer_list = compute-1\n')

    def test_conflicting_names_in_nova_conf_are_refused(self):
        # nova registers partition_key as a deprecated name of
        # conductor_group and silently uses one of two different values.
        path = self.create_tempfiles([('nova', (
            '[DEFAULT]\nhost = compute-1\n[ironic]\npartition_key = rack1\n'
            'conductor_group = rack2\npeer_list = compute-1\n'))])[0]
        self.conf(['--config-file', path], project='nova')
        e = self.assertRaises(exception.ConflictingOptions,
                              ip_conf.reread_immutable_options, self.conf,
                              apply=False)
        self.assertIn("[ironic] partition_key='rack1'", str(e))
        self.assertIn("[ironic] conductor_group='rack2'", str(e))

    def test_sighup_with_conflicting_names_keeps_the_old_values(self):
        path = self.create_tempfiles([('nova', (
            '[DEFAULT]\nhost = compute-1\n[ironic]\nconductor_group = rack1\n'
            'peer_list = compute-1\n'))])[0]
        self.conf(['--config-file', path], project='nova')
        self.assertEqual('rack1', ip_conf.get_settings(self.conf)
                         .partition_key)
        with open(path, 'w') as stream:
            stream.write('[DEFAULT]\nhost = compute-1\n[ironic]\n'
                         'partition_key = rack1\nconductor_group = rack2\n'
                         'peer_list = compute-1\n')
        self.assertRaises(exception.ConflictingOptions,
                          ip_conf.reread_immutable_options, self.conf)
        self.assertEqual('rack1', ip_conf.get_settings(self.conf)
                         .partition_key)
