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

"""Insert many nodes straight into Ironic's database (run as a child).

Usage: ``python -m ironic_partition.testing.services._bulk
--config-file ironic.conf`` with a JSON spec on stdin (see
:func:`ironic_partition.testing.services.enroll.bulk_enroll`). It
prints the created node UUIDs as a JSON list on stdout.

It runs in its own process because it loads Ironic's global configuration
and models, which must not leak into the test process.
"""

import argparse
import datetime
import json
import logging
import sys
import uuid

LOG = logging.getLogger(__name__)

BATCH = 1000


def build_rows(spec, node_version):
    """Turn a bulk spec into rows of the ``nodes`` table.

    :param spec: the dict read from stdin.
    :param node_version: the node object version to record.
    :returns: a list of dicts, one per node.
    """
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    available = spec['provision_state'] == 'available'
    rows = []
    shards = spec.get('shards') or [None] * len(spec['groups'])
    for index, group in enumerate(spec['groups']):
        row = {
            'uuid': str(uuid.uuid4()),
            'name': '%s-%d' % (spec['name_prefix'], spec['start'] + index),
            'driver': spec['driver'],
            'conductor_group': group,
            'shard': shards[index],
            'resource_class': spec['resource_class'],
            'properties': dict(spec['properties']),
            'provision_state': spec['provision_state'],
            'provision_updated_at': now,
            'power_state': 'power off' if available else None,
            'driver_info': {},
            'driver_internal_info': {},
            'instance_info': {},
            'extra': {},
            'maintenance': False,
            'console_enabled': False,
            'protected': False,
            'retired': False,
            'version': node_version,
            'created_at': now,
            # NOTE(harness): as the API leaves them: a node that went
            # through manage (and provide) has been updated since created.
            'updated_at': None if spec['provision_state'] == 'enroll'
            else now,
        }
        for iface, name in spec['interfaces'].items():
            row['%s_interface' % iface] = name
        rows.append(row)
    return rows


def main(argv=None):
    """Insert the nodes described on stdin; print their UUIDs.

    :param argv: command line arguments (``--config-file PATH``).
    :returns: the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config-file', required=True)
    args = parser.parse_args(argv)
    spec = json.load(sys.stdin)

    # NOTE(harness): imported late so that importing this module (e.g. by
    # test discovery) never loads Ironic's global configuration.
    from ironic.conf import CONF
    from ironic.db.sqlalchemy import models
    from ironic.objects import node as node_obj
    import sqlalchemy

    CONF(['--config-file', args.config_file], project='ironic')
    rows = build_rows(spec, node_obj.Node.VERSION)
    engine = sqlalchemy.create_engine(CONF.database.connection)
    table = models.Node.__table__
    try:
        for start in range(0, len(rows), BATCH):
            with engine.begin() as conn:
                conn.execute(table.insert(), rows[start:start + BATCH])
    finally:
        engine.dispose()
    json.dump([row['uuid'] for row in rows], sys.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
