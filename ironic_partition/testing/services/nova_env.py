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

"""Real nova code in a test process: nova's CONF and its main database.

nova keeps process-wide state (``nova.conf.CONF`` and the main database's
engine), so the database is created once per test process, on SQLite, with
nova's own migrations (``nova.db.migration.db_sync('main')``), and every
test adds the services, compute nodes and instances it needs under host
names of its own.
"""

import atexit
import datetime
import os
import shutil
import tempfile
import uuid

import fixtures
from oslo_config import fixture as config_fixture
import sqlalchemy

from ironic_partition import conf as ip_conf

_STATE = {}

# NOTE(ironic-partition): read at import, before any test runs: oslotest
# points tempfile at a per-test directory removed when that test ends, and
# nova's database must outlive the test that created it.
_PROCESS_TMP = tempfile.gettempdir()


def _nova():
    import nova.conf  # noqa: H306
    from nova import config
    from nova import context
    from nova.db.main import api as db_api
    from nova.db import migration
    from nova import objects
    objects.register_all()
    return (nova.conf.CONF, context, db_api, migration, objects, config)


def nova_database():
    """Create nova's main database once per process and point CONF at it.

    :returns: the database URL (a SQLite file in a private directory that
        is removed when the process exits).
    """
    if 'url' not in _STATE:
        conf, _ctx, _db, migration, _obj, config = _nova()
        workdir = tempfile.mkdtemp(prefix='ipart-nova-', dir=_PROCESS_TMP)
        atexit.register(shutil.rmtree, workdir, True)
        url = 'sqlite:///%s' % os.path.join(workdir, 'nova.sqlite')
        conf.set_default('connection', url, group='database')
        # nova's own start-up: options, logging defaults, the database
        # engine (no RPC: nothing here talks to other nova services).
        config.parse_args(['test'], default_config_files=[],
                          init_rpc=False)
        migration.db_sync(database='main')
        _STATE['url'] = url
    return _STATE['url']


def admin_context():
    """nova's admin context.

    :returns: a ``nova.context.RequestContext`` (nova's database is
        created first if needed).
    """
    nova_database()
    return _nova()[1].get_admin_context()


def add_compute(host, up=True):
    """Add a nova-compute service with one ironic compute node.

    :param host: the service's host, written as given.
    :param up: False to make its last heartbeat an hour old.
    :returns: the service's id.
    """
    ctxt = admin_context()
    db_api = _nova()[2]
    service = db_api.service_create(ctxt, {
        'host': host, 'binary': 'nova-compute', 'topic': 'compute',
        'report_count': 1})
    db_api.compute_node_create(ctxt, {
        'host': host, 'service_id': service['id'],
        'hypervisor_hostname': '%s-node' % host,
        'hypervisor_type': 'ironic', 'hypervisor_version': 1,
        'vcpus': 1, 'memory_mb': 1, 'local_gb': 1, 'vcpus_used': 0,
        'memory_mb_used': 0, 'local_gb_used': 0, 'cpu_info': '{}',
        'uuid': str(uuid.uuid4())})
    set_up(host, up)
    return service['id']


def set_up(host, up, nodes=True):
    """Make a compute service's heartbeat current or an hour old.

    A service made down has its compute nodes last written an hour ago
    too, as those of a nova-compute that stopped then.

    :param host: the service's host.
    :param up: True for now, False for an hour ago.
    :param nodes: False leaves its compute nodes as they are (a
        nova-compute in its first resource-tracker pass, which has not
        heartbeaten yet but writes its compute nodes).
    :returns: None
    """
    ctxt = admin_context()
    db_api = _nova()[2]
    service = db_api.service_get_by_host_and_binary(ctxt, host,
                                                    'nova-compute')
    seen = datetime.datetime.utcnow()
    if not up:
        seen -= datetime.timedelta(hours=1)
    db_api.service_update(ctxt, service['id'], {'last_seen_up': seen})
    if not up and nodes:
        # NOTE(ironic-partition): nova's own update stamps updated_at now.
        engine = sqlalchemy.create_engine(_STATE['url'])
        try:
            with engine.begin() as conn:
                conn.execute(sqlalchemy.text(
                    'UPDATE compute_nodes SET created_at = :seen, '
                    'updated_at = :seen WHERE host = :host'),
                    {'seen': seen, 'host': host})
        finally:
            engine.dispose()


def set_all_down():
    """Make every compute service down and disabled.

    nova's database is shared by the process: a test that counts the live
    computes starts from none. Earlier tests' services are disabled as
    well (nova's service group, like nova's ring, leaves those out): the
    drivers of earlier tests may still write their compute nodes, which
    counts as running.

    :returns: None
    """
    ctxt = admin_context()
    db_api = _nova()[2]
    for service in db_api.service_get_all_by_binary(ctxt, 'nova-compute'):
        set_up(service['host'], False)
        db_api.service_update(ctxt, service['id'], {'disabled': True})


def add_instance(instance_uuid, host):
    """Add an instance owned by ``host``.

    :param instance_uuid: the instance's UUID.
    :param host: the owning compute service's host.
    :returns: None
    """
    ctxt = admin_context()
    _nova()[2].instance_create(ctxt, {
        'uuid': instance_uuid, 'host': host, 'node': None,
        'project_id': 'ipart-project', 'user_id': 'ipart-user'})


class NovaConf(fixtures.Fixture):
    """Configure nova's global CONF for our driver; undone at cleanup.

    :param endpoint: the Ironic API endpoint (noauth).
    :param overrides: ``{(group, name): value}`` for more options.
    """

    def __init__(self, endpoint, overrides=None):
        super().__init__()
        self.endpoint = endpoint
        self.overrides = overrides or {}

    def _setUp(self):
        nova_database()
        conf = _nova()[0]
        ip_conf.register_opts(conf)
        self.conf = conf
        fixture = self.useFixture(config_fixture.Config(conf))
        # NOTE(ironic-partition): the fixture's cleanup resets CONF,
        # defaults included: set nova's database again for each use (nova
        # reads the URL itself, e.g. for its regex instance filters).
        fixture.config(group='database', connection=nova_database())
        fixture.config(group='ironic', auth_type='none',
                       endpoint_override=self.endpoint)
        for (group, name), value in self.overrides.items():
            fixture.config(group=group, **{name: value})
        self.fixture = fixture

    def config(self, group=None, **kw):
        """Override more options until cleanup.

        :param group: the group, None for ``[DEFAULT]``.
        :param kw: option names and values.
        :returns: None
        """
        self.fixture.config(group=group, **kw)
