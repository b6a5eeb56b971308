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

"""A real neutron API with no network back end, for nova's delete path.

nova boots the lane's servers with ``networks: none`` and never asks
neutron for a port then; but deleting a server always asks neutron for
the ports bound to it (``GET /v2.0/ports?device_id=...``), whatever the
server was booted with. This is neutron 29 (the release of nova 34)
under gunicorn with the ML2 plugin, no type or mechanism driver beyond
``flat``, no agent and ``auth_strategy = noauth``: it answers that there
are no ports, from its own database, as a neutron without networks does.
"""

import os

from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import apiservice
from ironic_partition.testing.services import rabbit as harness_rabbit


class NeutronFixture(apiservice.APIServiceFixture):
    """neutron-server's API alone (no RPC server, no agent).

    :param kwargs: see :class:`~.apiservice.APIServiceFixture`.
    """

    name = 'neutron-api'
    app = 'neutron.wsgi.api:application'
    schema = 'neutron'
    clear_argv = True

    def configure(self):
        self.config_files = [os.path.join(self.confdir, 'neutron.conf'),
                             os.path.join(self.confdir, 'ml2_conf.ini')]
        vhost = self.useFixture(harness_rabbit.RabbitVhostFixture())
        harness_process.write_config(self.config_files[0], {
            'DEFAULT': {
                'debug': False,
                'use_stderr': True,
                'core_plugin': 'ml2',
                # NOTE(ironic-partition): neutron 29's port listing reads
                # the port forwarding relation, which only the plugin
                # loads.
                'service_plugins': 'router,port_forwarding',
                'auth_strategy': 'noauth',
                'transport_url': vhost.transport_url,
                'api_paste_config': apiservice.data_file(
                    'neutron', 'api-paste.ini'),
                'state_path': self.workdir,
            },
            'database': {'connection': self.database.url},
            'oslo_concurrency': {
                'lock_path': os.path.join(self.workdir, 'locks')},
        }, join_lists=True)
        harness_process.write_config(self.config_files[1], {'ml2': {
            'type_drivers': 'flat',
            'tenant_network_types': '',
            'mechanism_drivers': '',
            'extension_drivers': '',
        }}, join_lists=True)

    def migrate(self):
        argv = ['neutron-db-manage']
        for path in self.config_files:
            argv += ['--config-file', path]
        self.run(argv + ['upgrade', 'heads'])

    def environment(self):
        return {'OS_NEUTRON_CONFIG_DIR': self.confdir,
                'IRONIC_PARTITION_WSGI_CONFIGURE_MAPPERS': '1',
                'OS_NEUTRON_CONFIG_FILES': ';'.join(
                    os.path.basename(p) for p in self.config_files)}
