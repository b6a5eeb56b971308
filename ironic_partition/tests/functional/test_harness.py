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

"""The harness itself, against a real Ironic on PostgreSQL and MariaDB.

One Ironic per backend serves every check (starting one costs ~15 s):
enroll 1,000 nodes in bulk and a few through the API, filter by conductor
group, SIGKILL a rack1 conductor and watch its nodes move, then prove
that teardown leaves no process and no database behind.
"""

import collections
import fcntl
import logging
import os
import uuid

from oslotest import base
import sqlalchemy
import testscenarios

from ironic_partition import testing as harness
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db

LOG = logging.getLogger(__name__)

BULK_NODES = 1000
API_NODES_PER_GROUP = 2
FAILOVER_TIMEOUT = 60


NOISY_LOGGERS = ('keystoneauth', 'openstack', 'urllib3')


class TeardownAssertions(object):
    """Checks that a harness left nothing behind."""

    def quiet_sdk_logs(self):
        """Keep the SDK's request/response bodies out of the test log.

        :returns: None
        """
        for name in NOISY_LOGGERS:
            logger = logging.getLogger(name)
            self.addCleanup(logger.setLevel, logger.level)
            logger.setLevel(logging.INFO)

    def watch_teardown(self, fixture):
        """Register the teardown checks; they run after the fixture's.

        Registered before ``useFixture`` so that the fixture's cleanup,
        and testtools' collection of its log details, run first.

        :param fixture: an unstarted ``IronicFixture``.
        :returns: None
        """
        self.addCleanup(self.assert_torn_down, fixture)

    def assert_torn_down(self, fixture):
        """Assert no process, database or run directory survived.

        :param fixture: a cleaned-up ``IronicFixture``.
        :returns: None
        """
        pids = fixture.all_pids()
        self.assertNotEqual([], pids)
        self.assertEqual([], harness.pids_alive(pids))
        for service in fixture.services():
            self.assertEqual([], service.group_pids())
        self.assertFalse(fixture.database.exists(),
                         'database %s survived' % fixture.database.name)
        self.assertFalse(os.path.exists(fixture.workdir))


class MultiConductorTestCase(testscenarios.WithScenarios,
                             TeardownAssertions, base.BaseTestCase):
    """API + four conductors (rack1 x2, rack2, default) on a real DB."""

    scenarios = [
        ('postgresql', {'db_backend': 'postgresql'}),
        ('mysql', {'db_backend': 'mysql'}),
    ]

    def setUp(self):
        super().setUp()
        self.quiet_sdk_logs()
        harness_db.require_server(self, self.db_backend)

    def _enroll(self, ironic, conn):
        groups = ironic.conductor_groups
        expected = collections.defaultdict(set)
        for node in harness.bulk_enroll(ironic.config_file, BULK_NODES,
                                        groups):
            expected[node['conductor_group']].add(node['uuid'])
        distinct = sorted(set(groups))
        api_nodes = harness.enroll_api(
            conn, API_NODES_PER_GROUP * len(distinct), distinct)
        for node in api_nodes:
            expected[node['conductor_group']].add(node['uuid'])
        self.assertEqual(BULK_NODES + len(api_nodes),
                         sum(len(v) for v in expected.values()))
        return expected, api_nodes

    def _check_api_helpers(self, conn, api_nodes):
        node = api_nodes[0]
        harness.make_available(conn, [node])
        self.assertEqual('available',
                         conn.baremetal.get_node(node['uuid']).provision_state)
        instance = str(uuid.uuid4())
        self.assertEqual(instance, harness.set_instance_uuid(
            conn, node, instance).instance_id)
        self.assertIsNone(harness.clear_instance_uuid(conn, node).instance_id)

    def _check_group_filter(self, conn, expected):
        for group, uuids in expected.items():
            got = {n.id for n in conn.baremetal.nodes(conductor_group=group)}
            self.assertEqual(uuids, got, 'conductor_group=%r' % group)

    def _check_failover(self, ironic, conn, expected):
        rack1 = ironic.conductors_in('rack1')
        self.assertEqual(2, len(rack1))
        before = harness.node_conductors(conn, conductor_group='rack1')
        self.assertEqual(expected['rack1'], set(before))
        self.assertEqual({c.hostname for c in rack1}, set(before.values()))
        others = [c for c in ironic.conductors if c.group != 'rack1']

        victim, survivor = rack1
        ironic.kill_conductor(victim)
        states = ironic.wait_for_conductors(
            alive=[survivor] + others, dead=[victim],
            timeout=FAILOVER_TIMEOUT)
        self.assertFalse(states[victim.hostname]['alive'])

        def moved():
            owners = harness.node_conductors(conn, conductor_group='rack1')
            return set(owners.values()) == {survivor.hostname} and owners

        owners = harness.wait_for(moved, FAILOVER_TIMEOUT,
                                  'rack1 nodes to move to %s'
                                  % survivor.hostname)
        self.assertEqual(expected['rack1'], set(owners))
        for cond in others:
            owners = harness.node_conductors(conn,
                                             conductor_group=cond.group)
            self.assertEqual({cond.hostname}, set(owners.values()))

    def test_groups_failover_teardown(self):
        ironic = harness.IronicFixture(db_backend=self.db_backend)
        self.watch_teardown(ironic)
        self.useFixture(ironic)
        conn = harness.connect(ironic.endpoint)

        expected, api_nodes = self._enroll(ironic, conn)
        self._check_api_helpers(conn, api_nodes)
        self._check_group_filter(conn, expected)
        self._check_failover(ironic, conn, expected)


class SingleProcessTestCase(TeardownAssertions, base.BaseTestCase):
    """The all-in-one ``ironic`` on SQLite."""

    def setUp(self):
        super().setUp()
        self.quiet_sdk_logs()

    def test_single_process(self):
        ironic = harness.IronicFixture(mode='single')
        self.watch_teardown(ironic)
        self.useFixture(ironic)
        self.assertEqual('sqlite', ironic.database.backend)
        conn = harness.connect(ironic.endpoint)
        nodes = harness.enroll_api(conn, 2, [''])
        nodes += harness.bulk_enroll(ironic.config_file, 20, [''],
                                     provision_state='available')
        harness.make_available(conn, nodes[:2])
        got = {n.id: n.provision_state
               for n in conn.baremetal.nodes(details=True)}
        self.assertEqual({n['uuid']: 'available' for n in nodes}, got)
        self.assertEqual({'127.0.0.1'},
                         set(harness.node_conductors(conn).values()))


class _SchemaTemplateBase(base.BaseTestCase):

    DDL = (
        "CREATE TABLE parent (id INTEGER PRIMARY KEY, "
        "name VARCHAR(32) DEFAULT '5%' NOT NULL)",
        'CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER, '
        'CONSTRAINT child_parent FOREIGN KEY (parent_id) '
        'REFERENCES parent (id))',
        'CREATE INDEX child_parent_idx ON child (parent_id)',
        "INSERT INTO parent (id, name) VALUES (1, '10%')",
    )

    def setUp(self):
        super().setUp()
        harness_db.require_server(self, self.backend)
        self.key = 'harness_test_%s' % uuid.uuid4().hex[:8]
        self.addCleanup(harness_db.drop_template, self.backend, self.key)

    def _schema(self, url):
        engine = sqlalchemy.create_engine(
            url, poolclass=sqlalchemy.pool.NullPool)
        try:
            inspector = sqlalchemy.inspect(engine)
            schema = {}
            for table in sorted(inspector.get_table_names()):
                schema[table] = (
                    [(c['name'], str(c['type']), c['nullable'],
                      c.get('default')) for c in inspector.get_columns(
                          table)],
                    sorted((fk['name'], tuple(fk['constrained_columns']),
                            fk['referred_table'])
                           for fk in inspector.get_foreign_keys(table)),
                    sorted(ix['name'] for ix in inspector.get_indexes(
                        table)))
            with engine.connect() as conn:
                rows = [tuple(r) for r in conn.execute(sqlalchemy.text(
                    'SELECT id, name FROM parent ORDER BY id'))]
        finally:
            engine.dispose()
        return schema, rows

    def _execute(self, url, statements):
        engine = sqlalchemy.create_engine(
            url, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.begin() as conn:
                for statement in statements:
                    conn.execution_options(
                        no_parameters=True).exec_driver_sql(statement)
        finally:
            engine.dispose()


class SchemaTemplateTestCase(testscenarios.WithScenarios,
                             _SchemaTemplateBase):
    """A database copied from a template is the migrated one, rows too."""

    scenarios = [('postgresql', {'backend': 'postgresql'}),
                 ('mysql', {'backend': 'mysql'})]

    def test_copy_of_the_first_migrated_database(self):
        first = self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key))
        self.assertFalse(first.copied)
        self.assertIsNone(harness_db.template_of(self.backend, self.key))
        self._execute(first.url, self.DDL)
        first.save_template()
        template = harness_db.template_of(self.backend, self.key)
        self.assertTrue(template.startswith(harness_db.TEMPLATE_PREFIX))
        # Not a run's leftover: the leftover check ignores it.
        self.assertNotIn(template,
                         harness_db.list_leftover_databases(self.backend))
        expected = self._schema(first.url)
        self.assertEqual([(1, '10%')], expected[1])
        self.assertEqual(1, len(expected[0]['child'][1]), expected)

        second = self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key))
        self.assertTrue(second.copied)
        self.assertEqual(expected, self._schema(second.url))
        # The copy's foreign key holds; writing to it leaves the
        # template as it was, and a second save keeps the first.
        self.assertRaises(sqlalchemy.exc.IntegrityError, self._execute,
                          second.url,
                          ['INSERT INTO child (id, parent_id) VALUES (1, 2)'])
        self._execute(second.url,
                      ["INSERT INTO parent (id, name) VALUES (2, 'b')"])
        second.save_template()
        self.assertEqual(template,
                         harness_db.template_of(self.backend, self.key))
        third = self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key))
        self.assertEqual(expected, self._schema(third.url))

        harness_db.drop_template(self.backend, self.key)
        self.assertFalse(harness_db.database_exists(self.backend, template))
        self.assertFalse(self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key)).copied)

    def test_copy_of_a_missing_template_fails_and_leaves_nothing(self):
        name = harness_db.unique_name()
        self.addCleanup(harness_db.drop_database, self.backend, name)
        # PostgreSQL's own error; on MariaDB the harness's, before any
        # table is created.
        expected = (sqlalchemy.exc.DBAPIError if self.backend == 'postgresql'
                    else ValueError)
        error = self.assertRaises(
            expected, harness_db.create_database, self.backend, name,
            template=harness_db.TEMPLATE_PREFIX + 'missing')
        self.assertIn(harness_db.TEMPLATE_PREFIX + 'missing', str(error))
        self.assertFalse(harness_db.database_exists(self.backend, name))


class SchemaTemplateInUseTestCase(_SchemaTemplateBase):
    """PostgreSQL copies no database somebody is connected to."""

    backend = 'postgresql'

    def test_no_template_while_the_source_is_in_use(self):
        first = self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key))
        self._execute(first.url, self.DDL)
        engine = sqlalchemy.create_engine(
            first.url, poolclass=sqlalchemy.pool.NullPool)
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text('SELECT 1'))
            # Refused ("being accessed by other users"): logged, and the
            # next fixture migrates as the first did.
            first.save_template()
        self.assertIsNone(harness_db.template_of(self.backend, self.key))
        self.assertFalse(harness_db.database_exists(
            self.backend, '%s%d_%s' % (harness_db.TEMPLATE_PREFIX,
                                       os.getpid(), self.key)))
        self.assertFalse(self.useFixture(harness_db.DatabaseFixture(
            self.backend, schema=self.key)).copied)


class TestFreePort(base.BaseTestCase):
    """Ports for conductors and proxies never race outgoing connections."""

    def test_ports_are_outside_the_ephemeral_range_and_locked(self):
        low, high = harness_process._ephemeral_range()
        ports = [harness_process.free_port() for _ in range(20)]
        self.assertEqual(len(ports), len(set(ports)))
        for port in ports:
            self.assertFalse(low <= port <= high, port)
            # Another open file description (as a second stestr worker
            # would have) cannot take the reservation.
            path = os.path.join(harness_process._PORT_LOCK_DIR,
                                '%d.lock' % port)
            fd = os.open(path, os.O_RDWR)
            try:
                self.assertRaises(OSError, fcntl.flock, fd,
                                  fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
