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

"""A real nova (placement, nova-conductor, N nova-compute) for tests.

No keystone: placement runs under gunicorn with ``auth_strategy =
noauth2``, the computes reach it through keystoneauth's ``admin_token``
plugin, and Ironic through ``auth_type = none``. nova's API database,
cell0 and cell1 and placement's database are created uniquely named on
MariaDB (or PostgreSQL) and dropped at cleanup; RabbitMQ gets a virtual
host of its own, deleted at cleanup. Every service is the leader of its
own process group; cleanup stops every group, whatever the test did.

The public API::

    from ironic_partition import testing as harness

    nova = self.useFixture(harness.NovaFixture(
        ironic.endpoint, ['cn1', 'cn2', 'cn3'], partition_key='rack1'))
    nova.kill_compute('cn2')
    nova.edit_compute_config('cn1', {'ironic': {'peer_list': 'cn1'}})
    nova.sighup_compute('cn1')

See ``doc/source/contributor/nova-lane.rst``.
"""

import configparser
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.request

import fixtures

from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import nova_compute
from ironic_partition.testing.services import proxy as harness_proxy
from ironic_partition.testing.services import rabbit as harness_rabbit

LOG = logging.getLogger(__name__)

WORKDIR_PREFIX = 'nova-harness-'

#: Our driver, through the package's ``nova.virt`` shim.
PARTITION_DRIVER = 'ironic_partition.IronicPartitionDriver'
#: nova 34's own Ironic driver, for the side-by-side benchmark.
NOVA_DRIVER = 'ironic.IronicDriver'

#: The token placement's noauth2 middleware maps to the admin role.
PLACEMENT_TOKEN = 'admin'

#: A short cadence, for most scenarios. ``None`` leaves nova's default.
SHORT_CADENCE = {
    'update_resources_interval': 4,
    'periodic_fuzzy_delay': 2,
    'report_interval': 2,
    'service_down_time': 10,
}

#: nova's own defaults (``update_resources_interval`` unset: the default
#: periodic spacing of 60 s; fuzzy delay 60 s; down after 60 s).
NOVA_DEFAULT_CADENCE = {
    'update_resources_interval': None,
    'periodic_fuzzy_delay': None,
    'report_interval': None,
    'service_down_time': None,
}


def claim_timings(cadence):
    """Our automatic claim timings inside nova-compute on a cadence.

    :param cadence: nova's options, as :data:`SHORT_CADENCE` (None or an
        absent option: nova's default).
    :returns: the :data:`~ironic_partition.settings.claims.
        ClaimSettings` the driver resolves (lease, margin, renewals).
    """
    return settings_mod.for_tests(
        cadence=claim_settings.nova_cadence(
            cadence.get('update_resources_interval')),
        service_down_time=cadence.get('service_down_time') or 60).claims()


class NovaFixture(fixtures.Fixture):
    """placement, nova-conductor and nova-compute services, torn down.

    :param ironic_endpoint: the Ironic API (noauth) the computes use.
    :param hosts: the computes' ``[DEFAULT] host`` names.
    :param partition_key: ``[ironic] partition_key`` of every compute.
    :param peer_list: ``[ironic] peer_list``; ``hosts`` by default.
    :param driver: ``compute_driver``: :data:`PARTITION_DRIVER` or
        :data:`NOVA_DRIVER`.
    :param cadence: nova's timing options (see :data:`SHORT_CADENCE`);
        a ``None`` value leaves nova's default.
    :param partition_options: more ``[ironic_partition]`` options.
    :param db_backend: ``mysql`` or ``postgresql`` for nova and placement.
    :param membership_backend: the backend of the membership database
        (``[ironic_partition_database]``), reached through a
        :class:`~ironic_partition.testing.services.proxy.TCPProxy` that a test
        can cut (``membership_proxy``).
    :param membership_url: an existing membership database (an SQLAlchemy
        URL, e.g. a :class:`~ironic_partition.testing.services.galera.
        GaleraFixture`'s) that the computes use directly: nothing is
        created or dropped, there is no proxy (``membership_proxy`` is
        None) and ``membership_backend`` is ignored. It is synced
        (``ironic-partition-dbsync upgrade``) like a created one.
    :param service_user: the computes connect to a created membership
        database as a user with the service role only
        (:class:`~ironic_partition.testing.services.db.ServiceUserFixture`);
        the schema is created by the administrator.
    :param extra_config: ``{section: {option: value}}`` for every compute.
    :param workdir: the parent of the run directory.
    :param start_timeout: seconds allowed for each service to come up.
    :param start_computes: start the computes at setUp.
    :param keep_workdir: keep configs and logs after cleanup.
    :param glance_endpoint: glance's URL, for computes that boot servers
        (:class:`~ironic_partition.testing.services.glance.GlanceFixture`).
    :param neutron_endpoint: neutron's URL, which nova asks for a
        server's ports when deleting it
        (:class:`~ironic_partition.testing.services.neutron.NeutronFixture`).
    :param placement_threads: placement's gunicorn threads (8).
    :param metrics: give each compute a ``[ironic_partition] metrics_port``
        of its own, kept across restarts (:attr:`metrics_ports`).
    :param deployed_config: ``{host: {section: {option: [values]}}}``:
        what a deployment tool wrote for each compute (kolla-ansible's
        files, layered as kolla layers them), written over the harness's
        own configuration, which stands for what the tool's templates
        write; then this machine's addresses over it: Ironic's endpoint,
        the claims database's URL and a free metrics port.
    """

    def __init__(self, ironic_endpoint, hosts, partition_key=None,
                 peer_list=None, driver=PARTITION_DRIVER, cadence=None,
                 partition_options=None, db_backend='mysql',
                 membership_backend='postgresql', extra_config=None,
                 workdir=None, start_timeout=180, start_computes=True,
                 keep_workdir=False, glance_endpoint=None,
                 neutron_endpoint=None, placement_threads=None,
                 metrics=False, membership_url=None, service_user=True,
                 deployed_config=None):
        super().__init__()
        self.deployed_config = deployed_config or {}
        #: The membership database the computes were given, or None.
        self.given_membership_url = membership_url
        self.service_user = service_user
        self.metrics = metrics
        #: host -> the port its metrics are served on.
        self.metrics_ports = {}
        self.placement_threads = placement_threads or 8
        self.glance_endpoint = glance_endpoint
        self.neutron_endpoint = neutron_endpoint
        self.ironic_endpoint = ironic_endpoint
        self.hosts = list(hosts)
        self.partition_key = partition_key
        self.peer_list = list(self.hosts if peer_list is None else peer_list)
        self.driver = driver
        self.cadence = dict(SHORT_CADENCE if cadence is None else cadence)
        self.partition_options = dict(partition_options or {})
        self.db_backend = db_backend
        self.membership_backend = membership_backend
        self.extra_config = extra_config or {}
        self.parent_workdir = workdir
        self.start_timeout = start_timeout
        self.start_computes = start_computes
        self.keep_workdir = keep_workdir
        self.computes = {}
        self.services = []

    # -- set up -----------------------------------------------------------

    def _setUp(self):
        parent = self.parent_workdir or harness_db.default_workdir()
        os.makedirs(parent, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent)
        if not self.keep_workdir:
            self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)
        self.setup_log = os.path.join(self.workdir, 'setup.log')
        open(self.setup_log, 'ab').close()
        self.addDetail('log-nova-setup',
                       harness_process.log_content(self.setup_log))
        dbs = {}
        for name, schema in (('placement', 'placement'), ('api', 'nova_api'),
                             ('cell0', 'nova_cell'), ('cell1', 'nova_cell')):
            dbs[name] = self.useFixture(harness_db.DatabaseFixture(
                self.db_backend, workdir=self.workdir, schema=schema))
        self.databases = dbs
        self.cell_url = dbs['cell1'].url
        self.membership_db = self.membership_proxy = None
        self.membership_user = None
        if self.given_membership_url is None:
            self.membership_db = self.useFixture(harness_db.DatabaseFixture(
                self.membership_backend, workdir=self.workdir))
            if self.service_user and self.membership_backend != 'sqlite':
                # NOTE(ironic-partition): created before the computes, so
                # that it is dropped after they stop.
                self.membership_user = self.useFixture(
                    harness_db.ServiceUserFixture(self.membership_db,
                                                  grant=False))
        self.vhost = self.useFixture(harness_rabbit.RabbitVhostFixture())
        self.addCleanup(self.stop_all)
        self._start_placement(dbs['placement'].url)
        self._prepare_nova(dbs)
        if self.membership_db is None:
            self.membership_url = self.given_membership_url
        else:
            target = self.membership_db.url
            self.membership_proxy = self.useFixture(
                harness_proxy.TCPProxy.for_url(target))
            self.membership_url = self.membership_proxy.url_through(target)
        self._dbsync_membership()
        if self.membership_user is not None:
            # NOTE(ironic-partition): the schema is the administrator's
            # (dbsync above); the computes run as the service user, with
            # what "ironic-partition-dbsync grants" prints and no more.
            self.membership_user.grant()
            self.membership_url = self.membership_proxy.url_through(
                self.membership_user.url)
        for index, host in enumerate(self.hosts):
            self.add_compute(host, start=False)
        self.conductor = self._service(
            'nova-conductor', ['nova-conductor', '--config-file',
                               self.nova_conf])
        self.conductor.start()
        if self.start_computes:
            for compute in self.computes.values():
                compute.start()
            self.wait_for_services(self.hosts)

    def _service(self, name, argv, cls=harness_process.Service, env=None,
                 **kwargs):
        argv = [harness_process.bin_path(argv[0])] + list(argv[1:])
        log_path = os.path.join(self.workdir, name + '.log')
        open(log_path, 'ab').close()
        service = cls(name=name, argv=argv, log_path=log_path, env=env,
                      **kwargs)
        self.addDetail('log-' + name, harness_process.log_content(log_path))
        self.services.append(service)
        return service

    def _start_placement(self, url):
        confdir = os.path.join(self.workdir, 'placement')
        os.makedirs(confdir)
        conf = os.path.join(confdir, 'placement.conf')
        harness_process.write_config(conf, {
            'DEFAULT': {'debug': False, 'use_stderr': True},
            'api': {'auth_strategy': 'noauth2'},
            'placement_database': {'connection': url},
        }, join_lists=True)
        self.databases['placement'].ensure_schema(
            lambda: harness_process.run_logged(
                [harness_process.bin_path('placement-manage'),
                 '--config-file', conf, 'db', 'sync'], self.setup_log))
        self.placement_port = harness_process.free_port()
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir)
        self.placement = self._service('placement', [
            'gunicorn', '--bind', '127.0.0.1:%d' % self.placement_port,
            '--workers', '1', '--threads', str(self.placement_threads),
            '--timeout', '120', '--no-control-socket',
            'placement.wsgi.api:application'],
            env=env)
        self.placement.start()
        harness_process.wait_for(
            self.placement_ready, self.start_timeout, 'placement',
            check=lambda: self._check([self.placement]))

    @property
    def placement_endpoint(self):
        """placement's root URL."""
        return 'http://127.0.0.1:%d' % self.placement_port

    def placement_ready(self):
        """Tell whether placement answers its root document.

        :returns: True or False.
        """
        try:
            with urllib.request.urlopen(self.placement_endpoint + '/',
                                        timeout=2) as resp:
                return resp.status == 200
        except (OSError, ValueError):
            return False

    def _common_config(self):
        cadence = self.cadence
        config = {
            'DEFAULT': {
                'transport_url': self.vhost.transport_url,
                'state_path': self.workdir,
                'debug': False,
                'use_stderr': True,
                'default_log_levels': (
                    list(nova_compute.NOVA_DEFAULT_LOG_LEVELS) +
                    list(nova_compute.DEBUG_LOGGERS)),
                'report_interval': cadence.get('report_interval'),
                'service_down_time': cadence.get('service_down_time'),
                'periodic_fuzzy_delay': cadence.get('periodic_fuzzy_delay'),
                'update_resources_interval': cadence.get(
                    'update_resources_interval'),
            },
            'oslo_concurrency': {
                'lock_path': os.path.join(self.workdir, 'locks')},
            'placement': {
                'auth_type': 'admin_token',
                'token': PLACEMENT_TOKEN,
                'endpoint': self.placement_endpoint,
                'endpoint_override': self.placement_endpoint,
            },
            'conductor': {'workers': 1},
            'scheduler': {'workers': 1},
            # NOTE(ironic-partition): nova's default quota (10 instances a
            # project) is below the lane's bursts.
            'quota': {'instances': -1, 'cores': -1, 'ram': -1},
        }
        if self.glance_endpoint:
            # NOTE(ironic-partition): the request's token is passed on;
            # the harness's glance trusts the identity headers instead.
            config['glance'] = {'endpoint_override': self.glance_endpoint}
            # NOTE(ironic-partition): builds are scheduled one at a time
            # (see nova_api.py); on two loaded cores a burst's last
            # select_destinations can wait longer than nova's 60 s.
            config['DEFAULT']['rpc_response_timeout'] = 180
        if self.neutron_endpoint:
            # NOTE(ironic-partition): nova asks neutron for a server's
            # ports on delete (and heals its network info cache every
            # minute); the harness's neutron has no authentication.
            config['neutron'] = {'auth_type': 'none',
                                 'endpoint_override': self.neutron_endpoint}
        return config

    def _prepare_nova(self, dbs):
        config = self._common_config()
        # NOTE(ironic-partition): nova-conductor's nova.conf takes the
        # [DEFAULT] extras too (rpc_response_timeout...).
        config['DEFAULT'].update(self.extra_config.get('DEFAULT', {}))
        config['api_database'] = {'connection': dbs['api'].url}
        config['database'] = {'connection': dbs['cell1'].url}
        self.nova_conf = os.path.join(self.workdir, 'nova.conf')
        harness_process.write_config(self.nova_conf, config,
                                     join_lists=True)
        manage = [harness_process.bin_path('nova-manage'), '--config-file',
                  self.nova_conf]
        run = harness_process.run_logged
        # NOTE(ironic-partition): a database copied from this process's
        # template has its schema already (harness_db.template_of); the
        # templates are kept before any cell is mapped or row written.
        dbs['api'].ensure_schema(
            lambda: run(manage + ['api_db', 'sync'], self.setup_log))
        run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                      dbs['cell0'].url], self.setup_log)
        run(manage + ['cell_v2', 'create_cell', '--name', 'cell1',
                      '--database_connection', dbs['cell1'].url,
                      '--transport-url', self.vhost.transport_url],
            self.setup_log)
        if not (dbs['cell0'].copied and dbs['cell1'].copied):
            run(manage + ['db', 'sync'], self.setup_log)
            dbs['cell1'].save_template()

    def _dbsync_membership(self):
        conf = os.path.join(self.workdir, 'membership.conf')
        # NOTE(ironic-partition): a created database is synced directly,
        # not through the proxy.
        target = (self.given_membership_url if self.membership_db is None
                  else self.membership_db.url)
        harness_process.write_config(conf, {'ironic_partition_database': {
            'connection': target}}, join_lists=True)
        harness_process.run_logged(
            [harness_process.bin_path('ironic-partition-dbsync'),
             '--config-file', conf, 'upgrade'], self.setup_log)

    def compute_config(self, host):
        """Build the configuration of one compute.

        :param host: its ``[DEFAULT] host``.
        :returns: ``{section: {option: value}}``.
        """
        config = self._common_config()
        config['DEFAULT'].update({
            'host': host,
            'compute_driver': self.driver,
            'instances_path': os.path.join(self.workdir, host, 'instances'),
        })
        config['ironic'] = {
            'auth_type': 'none',
            'endpoint_override': self.ironic_endpoint,
            'partition_key': self.partition_key,
            'peer_list': self.peer_list if self.partition_key else None,
        }
        partition = {
            'membership_backend': 'database',
            'claims': 'database',
            'state_path': os.path.join(self.workdir, host),
            'service_down_time': self.cadence.get('service_down_time'),
            'heartbeat_interval': _heartbeat(self.cadence),
            # NOTE(ironic-partition): inside nova the refresh runs with
            # the resource tracker; say so, so the lease fits the cadence.
            'refresh_interval': self.cadence.get(
                'update_resources_interval'),
        }
        if self.metrics:
            partition['metrics_port'] = self.metrics_ports.setdefault(
                host, harness_process.free_port())
        partition.update(self.partition_options)
        config['ironic_partition'] = partition
        config['ironic_partition_database'] = {
            'connection': self.membership_url}
        for section, options in self.extra_config.items():
            config.setdefault(section, {}).update(options)
        return config

    def _deployed(self, host, sections):
        deployed = self.deployed_config.get(host)
        if not deployed:
            return
        if 'conductor_group' in deployed.get('ironic', {}):
            # NOTE(ironic-partition): the tool names the group; the
            # harness's older name for it would be a second value.
            sections['ironic'].pop('partition_key', None)
        for section, options in deployed.items():
            target = sections.setdefault(section, {})
            for option, values in options.items():
                target[option] = values[0] if len(values) == 1 else list(
                    values)
        sections['ironic']['endpoint_override'] = self.ironic_endpoint
        sections['ironic_partition_database'] = {
            'connection': self.membership_url}
        partition = sections.setdefault('ironic_partition', {})
        if partition.get('metrics_port') is not None:
            partition['metrics_port'] = self.metrics_ports.setdefault(
                host, harness_process.free_port())

    def add_compute(self, host, start=True, config=None):
        """Add (and start) one more nova-compute.

        :param host: its ``[DEFAULT] host``.
        :param start: start it now.
        :param config: ``{section: {option: value}}`` merged into its
            configuration.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        os.makedirs(os.path.join(self.workdir, host, 'instances'),
                    exist_ok=True)
        path = os.path.join(self.workdir, 'nova-compute-%s.conf' % host)
        sections = self.compute_config(host)
        self._deployed(host, sections)
        for section, options in (config or {}).items():
            sections.setdefault(section, {}).update(options)
        harness_process.write_config(path, sections, join_lists=True)
        compute = self._service(
            'nova-compute-%s' % host,
            ['nova-compute', '--config-file', path], cls=nova_compute.Compute,
            host=host, config_file=path)
        self.computes[host] = compute
        if host not in self.hosts:
            self.hosts.append(host)
        if start:
            compute.start()
        return compute

    # -- state and waiting ------------------------------------------------

    def _check(self, services):
        for service in services:
            if service.process is not None and not service.running():
                raise harness_process.HarnessError(
                    '%s exited with %s: %s' % (
                        service.name, service.process.returncode,
                        harness_process.tail(service.log_path)))

    def check_services(self):
        """Raise when placement, the conductor or a started compute died.

        Computes a test killed or stopped on purpose are not checked.

        :returns: None
        """
        self._check([self.placement, self.conductor])

    def wait_for_services(self, hosts, timeout=None):
        """Wait until nova's cell database has each compute's service.

        :param hosts: compute host names.
        :param timeout: seconds; the fixture's start timeout by default.
        :returns: None
        """
        from ironic_partition.testing.lanes import novalane
        cell = novalane.CellDatabase(self.cell_url)
        try:
            harness_process.wait_for(
                lambda: set(h.lower() for h in hosts) <= set(
                    s['host'].lower() for s in cell.services()),
                timeout or self.start_timeout,
                'nova-compute services %s to register' % hosts,
                interval=1,
                check=lambda: self._check(
                    [self.placement, self.conductor] +
                    [self.computes[h] for h in hosts]))
        finally:
            cell.close()

    def compute(self, host):
        """Find a compute by host name.

        :param host: the ``[DEFAULT] host``.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        return self.computes[host]

    # -- faults -----------------------------------------------------------

    def kill_compute(self, host):
        """SIGKILL a compute's process group and wait until it is gone.

        :param host: the compute.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.kill()
        return compute

    def stop_compute(self, host, timeout=60):
        """SIGTERM a compute (nova's graceful stop).

        :param host: the compute.
        :param timeout: seconds before SIGKILL.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.stop(timeout)
        return compute

    def start_compute(self, host):
        """Start a compute that is not running.

        :param host: the compute.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.start()
        return compute

    def restart_compute(self, host, timeout=60):
        """Stop a compute (SIGTERM) and start it again.

        :param host: the compute.
        :param timeout: seconds allowed for the graceful stop.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        if compute.running():
            compute.stop(timeout)
        compute.start()
        return compute

    def pause_compute(self, host):
        """SIGSTOP a compute.

        :param host: the compute.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.pause()
        return compute

    def resume_compute(self, host):
        """SIGCONT a compute.

        :param host: the compute.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.resume()
        return compute

    def sighup_compute(self, host):
        """SIGHUP a compute.

        :param host: the compute.
        :returns: the
            :class:`~ironic_partition.testing.services.nova_compute.Compute`.
        """
        compute = self.compute(host)
        compute.sighup()
        return compute

    def edit_compute_config(self, host, changes):
        """Change options in a compute's nova.conf (no signal sent).

        :param host: the compute.
        :param changes: ``{section: {option: value}}``; a ``None`` value
            removes the option.
        :returns: the path of the file.
        """
        compute = self.compute(host)
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(compute.config_file)
        for section, options in changes.items():
            if section != 'DEFAULT' and not parser.has_section(section):
                parser.add_section(section)
            for key, value in options.items():
                if value is None:
                    parser.remove_option(section, key)
                    continue
                if isinstance(value, (list, tuple)):
                    value = ','.join(value)
                parser.set(section, key, str(value))
        tmp = compute.config_file + '.tmp'
        with open(tmp, 'w') as stream:
            parser.write(stream)
        os.replace(tmp, compute.config_file)
        compute.mark('config %s' % sorted(
            '%s.%s' % (s, k) for s, o in changes.items() for k in o))
        return compute.config_file

    # -- tear down --------------------------------------------------------

    def all_pids(self):
        """Every pid any service of this fixture ever had.

        :returns: a sorted list.
        """
        pids = set()
        for service in self.services:
            service.group_pids()
            pids.update(service.seen_pids)
        return sorted(pids)

    def stop_all(self, timeout=60):
        """Stop every service: computes first, then conductor, placement.

        :param timeout: seconds allowed for the graceful exit.
        :returns: None
        :raises: HarnessError listing services that would not die.
        """
        compute = nova_compute.Compute
        failed = harness_process.stop_together(
            [s for s in self.services if isinstance(s, compute)],
            [s for s in self.services if not isinstance(s, compute)],
            timeout=timeout)
        if failed:
            raise harness_process.HarnessError(
                'Services left running: %s' % failed)


def _heartbeat(cadence):
    down = cadence.get('service_down_time')
    if down is None:
        return None
    return max(1, down // 5)
