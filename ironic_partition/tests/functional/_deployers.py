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

"""The deployers' pages: their files, layered as each tool layers them.

``doc/source/install/{kolla-ansible,openstack-ansible,helm}.rst`` print
the files an operator writes (included from
``doc/source/install/deployers/``). Here each tool's layering
(:mod:`ironic_partition.testing.install.deployers`) builds, from those very
files, the configuration each nova-compute and ironic-conductor gets;
our tools then read it as nova-compute would: the host name, the group
and its peers, the driver, the claims database's URL, the inspection
map. Only what the tool itself writes (kolla's or OpenStack-Ansible's
own nova.conf, the pod's host name) and the addresses of this machine's
Ironic and database are added. Mixed into the CLI class, for its Ironic.
"""

import collections
import json
import os

import sqlalchemy

from ironic_partition.cmd import base as base_cmd
from ironic_partition.db import api as db_api
from ironic_partition.inspection import audit
from ironic_partition.membership import base as membership_base
from ironic_partition.testing.commands import cli as harness_cli
from ironic_partition.testing.install import deployers
from ironic_partition.testing.services import db as harness_db

DEPLOYERS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'doc',
    'source', 'install', 'deployers')
#: The service user's password in the printed secrets files.
SECRET = 'service-secret'


def printed(*parts):
    return os.path.join(DEPLOYERS, *parts)


def kolla_instances():
    """globals.yml's nova-compute-ironic containers, with their hosts.

    :returns: ``[(host, instance)]``, in the page's order.
    """
    instances = deployers.load_yaml(printed(
        'kolla-ansible', 'globals.yml'))['nova_multi_compute_ironic_config']
    return [(deployers.kolla_host(i), i) for i in instances]


def kolla_computes(ironic_endpoint):
    """Each nova-compute-ironic container's files, as kolla layers them.

    kolla's order (``global.conf``, ``nova.conf``,
    ``nova-compute-ironic.conf``, ``nova-compute-ironic-<N>.conf``; the
    first two are not written on the page) over what kolla's own nova.conf
    template writes for the container, rendered with ``passwords.yml`` and
    this machine's addresses.

    :param ironic_endpoint: the Ironic the template names.
    :returns: ``{host: {section: {option: [values]}}}``, in the page's
        order.
    """
    kolla = printed('kolla-ansible')
    variables = dict(
        deployers.load_yaml(os.path.join(kolla, 'passwords.yml')),
        database_address='127.0.0.1', database_port=3306,
        api_interface_address='127.0.0.1')
    computes = collections.OrderedDict()
    for number, (host, instance) in enumerate(kolla_instances(), 1):
        computes[host] = deployers.merge(
            deployers.kolla_compute_ironic(instance, ironic_endpoint),
            deployers.kolla_merge([
                os.path.join(kolla, 'global.conf'),
                os.path.join(kolla, 'nova.conf'),
                os.path.join(kolla, 'nova-compute-ironic.conf'),
                os.path.join(kolla, 'nova-compute-ironic-%d.conf' % number),
            ], variables))
    return computes


class DeployersScenario(object):
    """The three pages' tests; needs the CLI class.

    Its Ironic, ``_guide_override`` (this machine's Ironic and database
    over the tool's files) and ``upgrade_check``.
    """

    def claims_database(self):
        """A real claims database: the schema, then the service user."""
        db = self.useFixture(harness_db.DatabaseFixture('mysql'))
        connection = db_api.Connection(db.url)
        connection.upgrade()
        connection.dispose()
        return self.useFixture(harness_db.ServiceUserFixture(db))

    def assert_printed_url(self, url, password=SECRET):
        """The printed URL, rendered: the install guide's form."""
        url = sqlalchemy.engine.make_url(url)
        self.assertEqual(
            ('mysql+pymysql', 'ironic_partition_service', password,
             'ironic_partition', 'utf8mb4'),
            (url.drivername, url.username, url.password, url.database,
             url.query.get('charset')))

    def site(self, name, user, host=None):
        """This machine's Ironic and database, over the tool's files."""
        return self._guide_override(name, user.url,
                                    **({'host': host} if host else {}))

    def assert_serves(self, files, host, peers):
        """Our tools read ``files`` as that nova-compute would.

        The host name, the group and its peers; the upgrade check of a
        new deployment passes every row.
        """
        args = []
        for kind, path in files:
            args += [kind, path]
        proc = harness_cli.run_cli(*(args + ['status', '-f', 'json']))
        self.assertEqual(0, proc.returncode, proc.stderr)
        status = json.loads(proc.stdout)
        self.assertEqual((host, 'rack1', sorted(peers)),
                         (status['host'], status['partition_key'],
                          sorted(status['peer_list'])))
        # NOTE(ironic-partition): the first file is a --config-file, the
        # one upgrade_check names itself.
        code, checks = self.upgrade_check(*(args[1:] + ['--new-deployment']))
        self.assertEqual(
            (0, {name: 0 for name in checks}),
            (code, {name: c['result'] for name, c in checks.items()}),
            checks)
        return status

    def assert_inspection(self, sections):
        path = deployers.write_ini(
            os.path.join(self.workdir, 'deployer-ironic.conf'), sections)
        self.assertEqual('$default_hooks,ironic-partition',
                         sections['inspector']['hooks'][-1])
        self.assertEqual(
            '$default_inspection_hooks,ironic-partition',
            sections['redfish']['inspection_hooks'][-1])
        pmap, _default = audit.load_map(path)
        self.assertEqual(2, len(pmap))

    def test_kolla_ansible_files_as_printed(self):
        user = self.claims_database()
        kolla = printed('kolla-ansible')
        computes = kolla_computes(self.ironic.endpoint)
        hosts = list(computes)
        self.assertEqual(
            ['rack1-a-ironic', 'rack1-b-ironic', 'rack1-c-ironic'], hosts)
        ports = set()
        for number, (host, merged) in enumerate(computes.items(), 1):
            self.assertEqual(['ironic_partition.IronicPartitionDriver'],
                             merged['DEFAULT']['compute_driver'])
            self.assertEqual([','.join(hosts)],
                             merged['ironic']['peer_list'])
            [url] = merged['ironic_partition_database']['connection']
            self.assert_printed_url(url)
            ports.update(merged['ironic_partition']['metrics_port'])
            path = deployers.write_ini(os.path.join(
                self.workdir, 'kolla-nova-compute-ironic-%d.conf' % number),
                merged)
            self.assert_serves(
                [('--config-file', path),
                 ('--config-file', self.site('kolla-site.conf', user))],
                host, hosts)
        self.assertEqual(3, len(ports))
        self.assert_inspection(deployers.kolla_merge(
            [os.path.join(kolla, 'ironic-conductor.conf')], {}))

    def test_openstack_ansible_files_as_printed(self):
        user = self.claims_database()
        osa = printed('openstack-ansible')
        variables = dict(
            deployers.load_yaml(os.path.join(osa, 'user_secrets.yml')),
            **deployers.load_yaml(os.path.join(osa, 'host_vars.yml')))
        variables['internal_lb_vip_address'] = '127.0.0.1'
        overrides = deployers.load_yaml(os.path.join(
            osa, 'ironic_compute.yml'), variables)
        # What the role's own nova.conf sets that matters here.
        merged = deployers.osa_merge(
            {'DEFAULT': {'compute_driver': ['ironic.IronicDriver'],
                         'service_down_time': ['120']}},
            overrides['nova_nova_conf_overrides'])
        self.assertEqual(['ironic_partition.IronicPartitionDriver'],
                         merged['DEFAULT']['compute_driver'])
        [url] = merged['ironic_partition_database']['connection']
        self.assert_printed_url(url)
        path = deployers.write_ini(
            os.path.join(self.workdir, 'osa-nova.conf'), merged)
        site = self.site('osa-site.conf', user)
        self.assert_serves([('--config-file', path), ('--config-file', site)],
                           'rack1-a', ['rack1-a', 'rack1-b', 'rack1-c'])
        # The role's service_down_time (120 s) is ours too, inside nova.
        conf = base_cmd.load_conf(config_files=[path, site],
                                  role=membership_base.ROLE_NOVA_COMPUTE)
        self.assertEqual(120, conf.ironic_partition.service_down_time)
        user_variables = deployers.load_yaml(
            os.path.join(osa, 'user_variables.yml'))
        for name in ('nova_user_pip_packages', 'ironic_user_pip_packages'):
            [package] = user_variables[name]
            self.assertTrue(package.startswith('ironic-partition['), package)
        self.assert_inspection(deployers.osa_merge(
            {}, user_variables['ironic_ironic_conf_overrides']))

    def test_helm_files_as_printed(self):
        user = self.claims_database()
        helm = printed('helm')
        values = deployers.load_yaml(os.path.join(helm, 'values.yaml'))
        self.assertTrue(values['manifests']['statefulset_compute_ironic'])
        replicas = values['pod']['replicas']['compute_ironic']
        pods = ['nova-compute-ironic-%d' % i for i in range(replicas)]
        nova_ironic = deployers.write_ini(
            os.path.join(self.workdir, 'nova-ironic.conf'),
            deployers.to_oslo_conf(values['conf']['nova_ironic']))
        # The Secret projected into nova.conf.d, named in etcSources.
        secret = deployers.load_yaml(os.path.join(helm, 'secret.yaml'))
        self.assertEqual(
            [{'secret': {'name': secret['metadata']['name']}}],
            values['pod']['etcSources']['nova_compute_ironic'])
        conf_d = os.path.join(self.workdir, 'nova.conf.d')
        os.makedirs(conf_d, exist_ok=True)
        for name, text in secret['stringData'].items():
            with open(os.path.join(conf_d, name), 'w') as stream:
                stream.write(text)
            [url] = deployers.parse_ini(text)[
                'ironic_partition_database']['connection']
            self.assert_printed_url(url)
        # The URL names a cluster address: a file sorted after the
        # Secret's in nova.conf.d points it at this machine's database.
        harness_cli.write_conf(
            os.path.join(conf_d, 'zz-this-machine.conf'),
            {'ironic_partition_database': {'connection': user.url}})
        # The chart's command line: nova-compute.conf (here this
        # machine's Ironic and the pod's host name), nova-ironic.conf,
        # then --config-dir nova.conf.d.
        for pod in pods:
            compute = self.site('helm-nova-compute.conf', user, host=pod)
            self.assert_serves(
                [('--config-file', compute),
                 ('--config-file', nova_ironic),
                 ('--config-dir', conf_d)], pod, pods)
        self.assert_inspection(deployers.to_oslo_conf(
            deployers.load_yaml(os.path.join(
                helm, 'ironic-values.yaml'))['conf']['ironic']))
