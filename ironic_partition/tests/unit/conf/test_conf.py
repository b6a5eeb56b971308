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

import os

import fixtures
from oslo_config import cfg
from oslo_config import generator
import stevedore

from ironic_partition import conf as ip_conf
from ironic_partition.conf import opts
from ironic_partition import exception
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base


class TestListOpts(base.TestCase):

    def test_groups_and_names(self):
        listed = {group: [o.name for o in group_opts]
                  for group, group_opts in opts.list_opts()}
        self.assertEqual(['partition_key', 'conductor_group', 'peer_list'],
                         listed['ironic'][:3])
        # How to reach Ironic: keystoneauth's options.
        self.assertIn('endpoint-override', listed['ironic'])
        self.assertIn('auth_type', listed['ironic'])
        self.assertIn('partition_exponent', listed['ironic_partition'])
        self.assertIn('service_down_time', listed['ironic_partition'])

    def test_partition_options_are_mutable(self):
        ironic_opts = dict(opts.list_opts())['ironic'][:3]
        self.assertTrue(all(o.mutable for o in ironic_opts))

    def test_list_opts_registers_nothing(self):
        conf = cfg.ConfigOpts()
        opts.list_opts()
        self.assertNotIn('ironic', conf)
        self.assertNotIn('ironic_partition', conf)

    def test_register_is_idempotent(self):
        ip_conf.register_opts(self.conf)
        ip_conf.register_opts(self.conf)
        self.assertIsNone(self.conf.ironic.partition_key)

    def test_defaults(self):
        self.assertIsNone(self.conf.ironic.partition_key)
        self.assertEqual([], self.conf.ironic.peer_list)
        self.assertEqual(5, self.conf.ironic_partition.partition_exponent)
        self.assertEqual('tooz', self.conf.ironic_partition.ring_mode)
        self.assertEqual('database',
                         self.conf.ironic_partition.membership_backend)

    def test_entry_point_loads_through_stevedore(self):
        mgr = stevedore.DriverManager('oslo.config.opts', 'ironic_partition')
        self.assertIs(opts.list_opts, mgr.driver)

    def test_sample_config_marks_partition_options_mutable(self):
        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'sample.conf')
        gen_conf = cfg.ConfigOpts()
        generator.register_cli_opts(gen_conf)
        gen_conf(['--namespace', 'ironic_partition', '--output-file', out])
        generator.generate(gen_conf)
        with open(out) as f:
            text = f.read()
        ironic_section = text.split('[ironic]')[1].split('\n[')[0]
        blocks = ironic_section.split('\n\n')
        for name in ('partition_key', 'peer_list'):
            block = [b for b in blocks if '\n#%s =' % name in b]
            self.assertEqual(1, len(block), name)
            self.assertIn('changed without restarting', block[0], name)


class TestPartitionKey(base.TestCase):

    def _settings(self, **kw):
        self.config(group='ironic_partition', host='cn1')
        if 'peer_list' not in kw:
            kw['peer_list'] = ['cn1']
        self.config(group='ironic', **kw)
        return ip_conf.get_settings(self.conf)

    def test_unset_disables_partitioning(self):
        s = ip_conf.get_settings(self.conf)
        self.assertIsNone(s.partition_key)

    def test_empty_string_is_default_group_not_unset(self):
        self.assertEqual('', self._settings(partition_key='').partition_key)

    def test_mixed_case_is_lowered(self):
        s = self._settings(partition_key='Rack-1.A_b')
        self.assertEqual('rack-1.a_b', s.partition_key)

    def test_too_long(self):
        self.assertRaisesRegex(ValueError, '256 characters long.*at most 255',
                               self._settings, partition_key='a' * 256)

    def test_max_length_accepted(self):
        s = self._settings(partition_key='A' * 255)
        self.assertEqual('a' * 255, s.partition_key)

    def test_bad_characters(self):
        for bad in ('rack 1', 'rack/1', 'rack1\n', 'r:1', 'räck'):
            e = self.assertRaises(ValueError, self._settings,
                                  partition_key=bad)
            self.assertIn(repr(bad), str(e))
            self.assertIn('a-z, A-Z, 0-9', str(e))

    def test_normalize_names_the_option(self):
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.normalize_partition_key, 'rack1\n')
        self.assertIn('[ironic] partition_key', str(e))
        self.assertIn("'\\n'", str(e))

    def test_bad_value_in_config_file(self):
        path = self.create_tempfiles(
            [('ironic', '[ironic]\npartition_key = rack/1\n')])[0]
        self.conf(['--config-file', path], project='ironic-partition')
        e = self.assertRaises(cfg.ConfigFileValueError,
                              lambda: self.conf.ironic.partition_key)
        self.assertIn('partition_key', str(e))
        self.assertIn("'/'", str(e))

    def test_alias_conductor_group(self):
        s = self._settings(conductor_group='RACK2')
        self.assertEqual('rack2', s.partition_key)

    def test_alias_equal_ignoring_case(self):
        s = self._settings(conductor_group='RACK2', partition_key='rack2')
        self.assertEqual('rack2', s.partition_key)

    def test_alias_conflict(self):
        e = self.assertRaises(exception.ConflictingOptions, self._settings,
                              conductor_group='rack2', partition_key='rack1')
        self.assertIn('conductor_group', str(e))
        self.assertIn('partition_key', str(e))


class TestPeerList(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(group='ironic_partition', host='CN1')

    def test_trimmed_lowered_deduplicated(self):
        path = self.create_tempfiles(
            [('ironic', '[ironic]\npartition_key = rack1\n'
              'peer_list = cn2 , CN1,cn2, Cn3,\n')])[0]
        self.conf(['--config-file', path], project='ironic-partition')
        s = ip_conf.get_settings(self.conf)
        self.assertEqual(('cn2', 'cn1', 'cn3'), s.peer_list)
        self.assertEqual('cn1', s.host)

    def test_missing_own_host(self):
        self.config(group='ironic', partition_key='rack1',
                    peer_list=['cn2', 'cn3'])
        e = self.assertRaises(exception.InvalidPeerList,
                              ip_conf.get_settings, self.conf)
        self.assertIn("'cn1'", str(e))
        self.assertIn("['cn2', 'cn3']", str(e))

    def test_empty_while_partition_key_set(self):
        self.config(group='ironic', partition_key='rack1', peer_list=[])
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.get_settings, self.conf)
        self.assertIn('[ironic] peer_list', str(e))
        self.assertIn('empty', str(e))

    def test_empty_partition_key_needs_peer_list_too(self):
        self.config(group='ironic', partition_key='', peer_list=[])
        self.assertRaises(exception.ConfigurationError,
                          ip_conf.get_settings, self.conf)

    def test_ignored_without_partition_key(self):
        self.config(group='ironic', peer_list=['other'])
        s = ip_conf.get_settings(self.conf)
        self.assertIsNone(s.partition_key)

    def test_bad_host_name(self):
        for bad in ('cn 1', 'cn/1'):
            self.assertRaises(ValueError, self.config, group='ironic',
                              peer_list=['cn1', bad])
        e = self.assertRaises(exception.ConfigurationError,
                              ip_conf.normalize_peer_list, ['cn1', ''])
        self.assertIn('[ironic] peer_list', str(e))

    def test_host_falls_back_to_default_host(self):
        self.config(group='ironic_partition', host=None)
        self.conf.register_opt(cfg.StrOpt('host', default='Nova-Host'))
        self.assertEqual('nova-host', ip_conf.get_host(self.conf))


class TestValidate(base.TestCase):

    def test_heartbeat_must_be_below_down_time(self):
        self.config(group='ironic_partition', heartbeat_interval=60,
                    service_down_time=60)
        e = self.assertRaises(exception.ConfigurationError,
                              settings_mod.from_conf, self.conf)
        self.assertIn('heartbeat_interval', str(e))

    def test_forget_database_clocks_takes_database_nodes(self):
        self.config(group='ironic_partition',
                    forget_database_clocks=['db3'])
        e = self.assertRaises(exception.ConfigurationError,
                              settings_mod.from_conf, self.conf)
        self.assertIn('[ironic_partition] forget_database_clocks', str(e))
        self.assertIn("'db3'", str(e))
        self.assertIn('"host:port"', str(e))
        self.config(group='ironic_partition',
                    forget_database_clocks=['DB3:3306', 'db3:3306'])
        self.assertEqual(('db3:3306',), settings_mod.from_conf(
            self.conf).forget_database_clocks)

    def test_valid(self):
        self.config(group='ironic_partition', host='a')
        self.config(group='ironic', partition_key='x', peer_list=['a', 'b'])
        self.assertEqual('x', self.read_settings().partition_key)


class TestNovaServiceDownTime(base.TestCase):
    """Inside nova, one service_down_time unless ours is set."""

    def _conf(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as stream:
            stream.write(text)
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        ip_conf.register_nova_host_opt(conf)
        conf(['--config-file', path])
        ip_conf.follow_nova_service_down_time(conf)
        return conf

    def test_ours_follows_novas(self):
        conf = self._conf('[DEFAULT]\nservice_down_time = 30\n')
        self.assertEqual(30, conf.ironic_partition.service_down_time)

    def test_ours_set_wins(self):
        conf = self._conf('[DEFAULT]\nservice_down_time = 30\n'
                          '[ironic_partition]\nservice_down_time = 45\n')
        self.assertEqual(45, conf.ironic_partition.service_down_time)

    def test_outside_nova_unchanged(self):
        conf = cfg.ConfigOpts()
        ip_conf.register_opts(conf)
        conf([])
        ip_conf.follow_nova_service_down_time(conf)
        self.assertEqual(60, conf.ironic_partition.service_down_time)


class TestClaimsOffInsideNova(base.TestCase):

    def test_nova_membership_warns_naming_claims_database(self):
        from ironic_partition.claims import manager as claims
        logger = self.useFixture(fixtures.FakeLogger(
            level='INFO', format='%(levelname)s %(message)s'))
        for backend, level in (('nova', 'WARNING'), ('static', 'INFO')):
            settings = settings_mod.for_tests(membership_backend=backend)
            self.assertIsNone(claims.from_settings(settings, store=None))
            line = [x for x in logger.output.splitlines()
                    if '(%s)' % backend in x][0]
            self.assertTrue(line.startswith(
                '%s Ownership claims are off: the membership backend (%s)'
                % (level, backend)), line)
            self.assertIn('claims = database', line)
