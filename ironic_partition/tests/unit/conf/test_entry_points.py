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

"""Every entry point of setup.cfg is loaded by what it is declared for.

:data:`AUDITED` lists each one with the test proving that its consumer
loads it; an entry point added to setup.cfg without a line here (or one
removed) fails :meth:`TestEntryPoints.test_installed_are_the_audited`.
"""

import argparse
from importlib import metadata
import os
from unittest import mock

from cliff import commandmanager
import fixtures
from oslo_config import cfg
from oslo_config import generator

from ironic_partition.cmd import base as cmd_base
from ironic_partition.cmd import cli
from ironic_partition.cmd import dbsync
from ironic_partition.cmd import osc_plugin
from ironic_partition.cmd import upgrade_check
from ironic_partition.membership import base as membership_base
from ironic_partition.membership import database
from ironic_partition.membership import nova
from ironic_partition.membership import static
from ironic_partition import settings as settings_mod
from ironic_partition.tests import base

#: The commands of ``ironic-partition``.
CLI_COMMANDS = {
    'status': 'ironic_partition.cmd.status:Status',
    'ring': 'ironic_partition.cmd.ring:Ring',
    'simulate': 'ironic_partition.cmd.simulate:Simulate',
    'check': 'ironic_partition.cmd.check:Check',
    'reserve': 'ironic_partition.cmd.reserve:Reserve',
    'release': 'ironic_partition.cmd.reserve:Release',
    'takeover': 'ironic_partition.cmd.takeover:Takeover',
    'recover': 'ironic_partition.cmd.recover:Recover',
    'serve': 'ironic_partition.cmd.agent:Serve',
}
#: The commands that run a service, which the OpenStack client does not
#: offer.
SERVICE_ONLY = ('serve',)

#: group, name, target, and the test proving the consumer loads it.
AUDITED = [
    ('console_scripts', 'ironic-partition',
     'ironic_partition.cmd.cli:main', 'test_console_scripts'),
    ('console_scripts', 'ironic-partition-dbsync',
     'ironic_partition.cmd.dbsync:main', 'test_console_scripts'),
    ('console_scripts', 'ironic-partition-status',
     'ironic_partition.cmd.upgrade_check:main', 'test_console_scripts'),
    ('oslo.config.opts', 'ironic_partition',
     'ironic_partition.conf.opts:list_opts',
     'test_conf.TestListOpts.test_entry_point_loads_through_stevedore'),
    ('oslo.config.opts', 'ironic_partition.inspection',
     'ironic_partition.conf.inspection:list_opts',
     'test_inspection_options_in_the_sample'),
    ('oslo.config.opts.defaults', 'ironic_partition',
     'ironic_partition.conf.opts:update_opt_defaults',
     'test_sample_shows_the_runtime_defaults'),
    # NOTE: loaded by ironic-conductor ([inspector] hooks); ironic is not
    # installed in the unit test environment.
    ('ironic.inspection.hooks', 'ironic-partition',
     'ironic_partition.inspection.hook:PartitionHook',
     'tests.functional.test_inspection_hook'),
    ('ironic_partition.membership', 'database',
     'ironic_partition.membership.database:DatabaseMembership',
     'test_membership_backends'),
    ('ironic_partition.membership', 'nova',
     'ironic_partition.membership.nova:NovaMembership',
     'test_membership_backends'),
    ('ironic_partition.membership', 'static',
     'ironic_partition.membership.static:StaticMembership',
     'test_membership_backends'),
    ('ironic_partition.ring_providers', 'compute',
     'ironic_partition.ring.compute:ComputeRingProvider',
     'ring.test_base.FromConfTestCase'),
    ('openstack.cli.extension', 'baremetal_partition',
     'ironic_partition.cmd.osc_plugin', 'test_openstack_client_commands'),
] + [
    ('ironic_partition.cli', name, target, 'test_cli_commands')
    for name, target in CLI_COMMANDS.items()
] + [
    ('openstack.baremetal_partition.v1', 'baremetal_partition_' + name,
     target, 'test_openstack_client_commands')
    for name, target in CLI_COMMANDS.items() if name not in SERVICE_ONLY
]


class TestEntryPoints(base.TestCase):

    def test_installed_are_the_audited(self):
        installed = {(ep.group, ep.name, ep.value) for ep in
                     metadata.distribution('ironic-partition').entry_points}
        self.assertEqual({entry[:3] for entry in AUDITED}, installed)

    def test_no_virt_namespace(self):
        # NOTE: nova loads compute_driver by import path and the mixin is
        # inherited, so nothing would load such a namespace.
        self.assertEqual(
            [], list(metadata.entry_points(group='ironic_partition.virt')))

    def test_console_scripts(self):
        scripts = {ep.name: ep for ep in
                   metadata.entry_points(group='console_scripts')}
        self.assertIs(cli.main, scripts['ironic-partition'].load())
        self.assertIs(dbsync.main, scripts['ironic-partition-dbsync'].load())
        self.assertIs(upgrade_check.main,
                      scripts['ironic-partition-status'].load())

    def test_cli_commands(self):
        manager = commandmanager.CommandManager(cli.NAMESPACE)
        found = {name: manager.find_command([name])[0]
                 for name in CLI_COMMANDS}
        for name, factory in found.items():
            self.assertEqual(CLI_COMMANDS[name], '%s:%s' % (
                factory.__module__, factory.__name__))
            self.assertTrue(issubclass(factory, cmd_base.CommandBase), name)

    def test_openstack_client_commands(self):
        # NOTE: how the OpenStack client finds a plugin: the module of the
        # extension, its command group by API_NAME and the default
        # version, and the commands in it ("baremetal partition status").
        plugin, = [ep.load() for ep in metadata.entry_points(
            group='openstack.cli.extension') if ep.name ==
            'baremetal_partition']
        self.assertIs(osc_plugin, plugin)
        parser = argparse.ArgumentParser()
        plugin.build_option_parser(parser)
        version = getattr(parser.parse_args([]), plugin.API_VERSION_OPTION)
        self.assertIn(version, plugin.API_VERSIONS)
        group = 'openstack.%s.v%s' % (plugin.API_NAME, version)
        manager = commandmanager.CommandManager(group)
        for name, target in CLI_COMMANDS.items():
            words = ['baremetal', 'partition', name]
            if name in SERVICE_ONLY:
                self.assertRaises(ValueError, manager.find_command, words)
                continue
            factory, found, _rest = manager.find_command(words)
            self.assertEqual('baremetal partition ' + name, found)
            self.assertEqual(target, '%s:%s' % (factory.__module__,
                                                factory.__name__))

    def test_membership_backends(self):
        self.config(group='ironic_partition', host='cn1')
        expected = {'database': database.DatabaseMembership,
                    'nova': nova.NovaMembership,
                    'static': static.StaticMembership}
        for name, cls in expected.items():
            extra = {'connection': mock.Mock()} if name == 'database' else {}
            backend = membership_base.get_backend(
                settings_mod.from_conf(self.conf),
                membership_base.ROLE_NOVA_COMPUTE, name=name, **extra)
            self.assertIsInstance(backend, cls)
            self.assertEqual(name, backend.name)

    def test_inspection_options_in_the_sample(self):
        text = self._sample('ironic_partition.inspection')
        self.assertIn('[ironic_partition_inspection]', text)

    def test_sample_shows_the_runtime_defaults(self):
        text = self._sample('ironic_partition')
        self.assertIn('\n#service_type = baremetal\n', text)
        self.assertIn('\n#valid_interfaces = internal,public\n', text)

    def _sample(self, namespace):
        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'sample.conf')
        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(['--namespace', namespace, '--output-file', out])
        generator.generate(conf)
        with open(out) as f:
            return f.read()
