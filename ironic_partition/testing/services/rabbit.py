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

"""A RabbitMQ virtual host of its own for one test run."""

import os
import shutil
import subprocess
import uuid

import fixtures

from ironic_partition.testing import process as harness_process


class RabbitVhostFixture(fixtures.Fixture):
    """A RabbitMQ virtual host for one run, deleted at cleanup.

    Uses ``rabbitmqctl`` on the local broker (tools/test-setup.sh
    installs ``rabbitmq-server``).

    :param host: the broker's address.
    :param port: its AMQP port.
    :param user: a user allowed on the new vhost.
    :param password: its password.
    """

    def __init__(self, host='127.0.0.1', port=5672, user='guest',
                 password='guest'):
        super().__init__()
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.name = None

    def _ctl(self, *args):
        ctl = shutil.which('rabbitmqctl') or '/usr/sbin/rabbitmqctl'
        proc = subprocess.run([ctl] + list(args), capture_output=True,
                              timeout=120)
        if proc.returncode:
            raise harness_process.HarnessError('rabbitmqctl %s failed: %s' % (
                ' '.join(args), proc.stderr.decode('utf-8', 'replace')))

    def _setUp(self):
        self.name = 'ipart_func_%d_%s' % (os.getpid(), uuid.uuid4().hex[:8])
        self._ctl('add_vhost', self.name)
        self.addCleanup(self._ctl, 'delete_vhost', self.name)
        self._ctl('set_permissions', '-p', self.name, self.user,
                  '.*', '.*', '.*')

    @property
    def transport_url(self):
        """The oslo.messaging URL of the vhost."""
        return 'rabbit://%s:%s@%s:%d/%s' % (self.user, self.password,
                                            self.host, self.port, self.name)
