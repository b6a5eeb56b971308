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

"""A real Ironic and a real nova on real databases, for tests.

The public API::

    from ironic_partition import testing as harness

    ironic = self.useFixture(harness.IronicFixture(db_backend='mysql'))
    conn = harness.connect(ironic.endpoint)
    nodes = harness.bulk_enroll(ironic.config_file, 1000, ['rack1', ''])
    ironic.kill_conductor(0)

See ``doc/source/contributor/harness.rst``.
"""

from ironic_partition.testing.lanes.servers import ServerRecords
from ironic_partition.testing.process import HarnessError
from ironic_partition.testing.process import pids_alive
from ironic_partition.testing.process import Service
from ironic_partition.testing.process import skip_unless_long
from ironic_partition.testing.process import wait_for
from ironic_partition.testing.services.db import database_exists
from ironic_partition.testing.services.db import DatabaseFixture
from ironic_partition.testing.services.enroll import bulk_enroll
from ironic_partition.testing.services.enroll import clear_instance_uuid
from ironic_partition.testing.services.enroll import connect
from ironic_partition.testing.services.enroll import enroll_api
from ironic_partition.testing.services.enroll import make_available
from ironic_partition.testing.services.enroll import node_conductors
from ironic_partition.testing.services.enroll import set_instance_uuid
from ironic_partition.testing.services.glance import GlanceFixture
from ironic_partition.testing.services.ironic import Conductor
from ironic_partition.testing.services.ironic import DEFAULT_CONDUCTOR_GROUPS
from ironic_partition.testing.services.ironic import IronicFixture
from ironic_partition.testing.services.neutron import NeutronFixture
from ironic_partition.testing.services.nova import NOVA_DRIVER
from ironic_partition.testing.services.nova import NovaFixture
from ironic_partition.testing.services.nova import PARTITION_DRIVER
from ironic_partition.testing.services.nova_api import NovaAPIFixture
from ironic_partition.testing.services.rabbit import RabbitVhostFixture

__all__ = [
    'bulk_enroll',
    'clear_instance_uuid',
    'Conductor',
    'connect',
    'database_exists',
    'DatabaseFixture',
    'DEFAULT_CONDUCTOR_GROUPS',
    'enroll_api',
    'GlanceFixture',
    'HarnessError',
    'IronicFixture',
    'make_available',
    'NeutronFixture',
    'node_conductors',
    'NOVA_DRIVER',
    'NovaAPIFixture',
    'NovaFixture',
    'PARTITION_DRIVER',
    'pids_alive',
    'RabbitVhostFixture',
    'ServerRecords',
    'Service',
    'set_instance_uuid',
    'skip_unless_long',
    'wait_for',
]
