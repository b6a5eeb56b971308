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

"""A three-node MariaDB Galera cluster behind HAProxy, with faults.

Three ``mariadbd`` (Debian's 10.11, Galera 4) on 127.0.0.1, each with its
own data directory, ``--defaults-file`` (``/etc/mysql`` is never read)
and ports, behind one ``haproxy -db`` shaped as kolla-ansible's: node 0
active, nodes 1 and 2 ``backup``; a second front end of the same HAProxy
hands connections to node 0 and node 1 in turn (``url(roundrobin=True)``),
the shape the claims refuse. Every process is a
:class:`~ironic_partition.testing.process.Service` child of the test,
stopped by its pid at cleanup. tools/test-setup.sh installs the packages.
"""

import csv
import io
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import fixtures
import pymysql
from pymysql.constants import ER

from ironic_partition.testing import process
from ironic_partition.testing.services import db as harness_db

MARIADBD = '/usr/sbin/mariadbd'
INSTALL_DB = '/usr/bin/mariadb-install-db'
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
SST_RSYNC = '/usr/bin/wsrep_sst_rsync'
HAPROXY = '/usr/sbin/haproxy'
NODES = 3

#: The error of a node outside the primary component (``ER_UNKNOWN_COM_
#: ERROR``): "WSREP has not yet prepared node for application use".
WSREP_NOT_READY = ER.UNKNOWN_COM_ERROR

#: Galera's failure detection, shortened so that a dead or cut-off node
#: leaves the view within 2-4 s (the defaults take 5-15 s).
EVS_OPTIONS = ('evs.keepalive_period=PT0.5S; evs.inactive_check_period=PT0.5S;'
               ' evs.suspect_timeout=PT2S; evs.inactive_timeout=PT4S;'
               ' evs.install_timeout=PT4S; gmcast.peer_timeout=PT2S')

#: Seconds every running node may stay outside a primary component while
#: the fixture waits for the cluster, before it bootstraps one on the most
#: advanced node (``pc.bootstrap``, what an operator does). With the
#: shortened failure detection above, a node rejoining a loaded cluster
#: can split all three into non-primary parts (seen once in CI).
LOST_PRIMARY_GRACE = 10.0

LOG = logging.getLogger(__name__)

#: A node's ``--defaults-file``.
MY_CNF = '\n'.join([
    '[mysqld]', 'datadir={n.datadir}', 'socket={n.dir}/mysqld.sock',
    'pid-file={n.dir}/mysqld.pid', 'port={n.port}', 'bind-address=127.0.0.1',
    'skip-name-resolve', 'binlog_format=ROW', 'innodb_autoinc_lock_mode=2',
    'innodb_buffer_pool_size=64M', 'innodb_log_file_size=16M',
    'innodb_flush_log_at_trx_commit=2', 'wsrep_on=ON',
    'wsrep_provider=%s' % PROVIDER, 'wsrep_cluster_name=ipart_galera',
    'wsrep_cluster_address=gcomm://{cluster}', 'wsrep_node_name={n.name}',
    'wsrep_node_address=127.0.0.1:{n.gcomm_port}',
    'wsrep_node_incoming_address=127.0.0.1:{n.port}',
    'wsrep_sst_method={sst}',
    'wsrep_sst_receive_address=127.0.0.1:{n.sst_port}',
    'wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:{n.gcomm_port}'
    '; ist.recv_addr=127.0.0.1:{n.ist_port}; gcache.size=32M; %s"'
    % EVS_OPTIONS,
    '{user}', ''])

# NOTE(harness): kolla-ansible's and OpenStack-Ansible's shape, checks
# faster than their "inter 2000 rise 2 fall 5". mysql-check (a login as a
# password-less user) does not see Galera's state: a node that takes
# logins while joining or isolated is up, as there (not tcp-check).
HAPROXY_CFG = '\n    '.join([
    'global', 'maxconn 512', 'stats socket {stats} mode 600 level admin\n'
    'defaults', 'mode tcp', 'timeout connect 2s', 'timeout check 2s',
    'timeout client 3600s', 'timeout server 3600s\n'
    'listen galera', 'bind 127.0.0.1:{port}', 'mode tcp', 'option tcpka',
    'option mysql-check user haproxy post-41\n'])
HAPROXY_SERVER = ('    server {n.name} 127.0.0.1:{n.port} check inter 500 '
                  'rise 2 fall 2{backup}\n')
#: A second front end, for the unsupported shape: node0 and node1 take
#: connections in turn, so both take writes at once (node2, whose clock a
#: test may set far off, is left out).
HAPROXY_ROUNDROBIN = '\n    '.join([
    '\nlisten galera_roundrobin', 'bind 127.0.0.1:{port}', 'mode tcp',
    'balance roundrobin', 'option tcpka',
    'option mysql-check user haproxy post-41\n'])

# NOTE(harness): as root, SST is not "rsync" itself: the joiner's
# wsrep_sst_rsync starts "rsync --daemon" with no uid in its rsyncd.conf,
# and a daemon started by root turns "nobody", who cannot write the data
# directory. Our SST script runs the real one with, first in its PATH, an
# rsync that keeps the daemon root (first in the nodes' PATH is too late:
# mariadbd puts /usr//bin before it).
SST_SCRIPTS = {
    'rsync': '#!/bin/sh\ncase " $* " in\n*" --daemon "*) exec /usr/bin/rsync'
             ' "$@" --dparam=uid=root --dparam=gid=root ;;\nesac\n'
             'exec /usr/bin/rsync "$@"\n',
    'wsrep_sst_ipart_rsync': '#!/bin/sh\nPATH="{bindir}:$PATH" exec '
                             + SST_RSYNC + ' "$@"\n',
}

_NAME_RE = re.compile(r'^[A-Za-z0-9_]+$')
_RECOVERED_RE = re.compile(r'WSREP: Recovered position: [0-9a-f-]+:(-?\d+)')


def faketime_library():
    """Locate libfaketime, as Debian's ``libfaketime`` package installs it.

    :returns: the path of ``libfaketime.so.1``, or None.
    """
    try:
        listed = subprocess.run(['dpkg', '-L', 'libfaketime'], text=True,
                                capture_output=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ''
    return next((path for path in listed.split() if path.endswith(
        '/faketime/libfaketime.so.1') and os.path.exists(path)), None)


class _Node(process.Service):
    """One ``mariadbd``: its files, ports and state."""

    def __init__(self, index, workdir, offset):
        self.index = index
        self.dir = os.path.join(workdir, 'node%d' % index)
        self.datadir = os.path.join(self.dir, 'data')
        self.cnf = os.path.join(self.dir, 'my.cnf')
        self.port, self.gcomm_port, self.ist_port, self.sst_port = [
            process.free_port() for _ in range(4)]
        self.offset = offset
        self.paused = self.isolated = False
        super().__init__('node%d' % index, [MARIADBD],
                         os.path.join(workdir, 'node%d.log' % index))


class GaleraFixture(fixtures.Fixture):
    """Three MariaDB Galera nodes and HAProxy, torn down at cleanup.

    :param clock_offsets: ``{node index: seconds}``: those nodes run with
        their wall clock off by that much (libfaketime), e.g. ``{1: 5.0}``.
    :param workdir: the parent of the run directory (data directories,
        configuration, logs); the harness's default by default.
    :param timeout: seconds allowed to every wait, unless a method is
        given its own.
    :param keep_workdir: keep the run directory (logs) after cleanup.
    """

    def __init__(self, clock_offsets=None, workdir=None, timeout=90,
                 keep_workdir=False):
        super().__init__()
        self.clock_offsets = dict(clock_offsets or {})
        if set(self.clock_offsets) - set(range(NODES)):
            raise ValueError('No such node in %r' % clock_offsets)
        self.parent_workdir = workdir
        self.timeout = timeout
        self.keep_workdir = keep_workdir
        self.workdir = None
        self.nodes = []
        self.haproxy = None
        self.haproxy_port = None
        self.roundrobin_port = None
        #: How many times a wait found no primary component and
        #: bootstrapped one (:data:`LOST_PRIMARY_GRACE`).
        self.primary_bootstraps = 0

    def _setUp(self):
        missing = [path for path in (MARIADBD, INSTALL_DB, PROVIDER, SST_RSYNC,
                                     HAPROXY) if not os.path.exists(path)]
        if missing:
            raise process.HarnessError(
                '%s missing: run tools/test-setup.sh (it installs '
                'mariadb-server, galera-4, rsync and haproxy)' % missing)
        parent = self.parent_workdir or harness_db.default_workdir()
        os.makedirs(parent, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix='ipart-galera-', dir=parent)
        if not self.keep_workdir:
            self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)
        self.nodes = [_Node(i, self.workdir, self.clock_offsets.get(i))
                      for i in range(NODES)]
        self._write_files()
        self.haproxy = process.Service(
            'haproxy', [HAPROXY, '-db', '-f', self._path('haproxy.cfg')],
            self._path('haproxy.log'))
        # NOTE(harness): before anything starts, for a failed set-up too.
        self.addCleanup(self._stop_everything)
        # NOTE(harness): only node 0 gets system tables (root without a
        # password on localhost and 127.0.0.1); the joiners start on empty
        # data directories and receive node 0's by SST.
        process.run_logged(
            [INSTALL_DB, '--no-defaults', '--datadir=' + self.nodes[0].datadir,
             '--auth-root-authentication-method=normal', '--skip-test-db',
             '--skip-name-resolve', '--innodb-log-file-size=16M']
            + self._user(), self.nodes[0].log_path, timeout=self.timeout)
        self._start_node(0, bootstrap=True)
        self.wait_for_cluster([0])
        for sql in ("CREATE USER IF NOT EXISTS root@'%'",
                    "GRANT ALL ON *.* TO root@'%' WITH GRANT OPTION",
                    "CREATE USER IF NOT EXISTS haproxy@'127.0.0.1'"):
            self.execute(sql, 0)
        self._start_node(1)
        self._start_node(2)
        self.haproxy.start()
        self.wait_for_cluster()

    def _path(self, *names):
        return os.path.join(self.workdir, *names)

    @staticmethod
    def _user():
        # NOTE(harness): mariadbd refuses to run as root unless told to.
        return ['--user=root'] if os.geteuid() == 0 else []

    def _write_files(self):
        sst = 'ipart_rsync' if os.geteuid() == 0 else 'rsync'
        if sst != 'rsync':
            os.makedirs(self._path('bin'))
            for name, text in SST_SCRIPTS.items():
                with open(self._path('bin', name), 'w') as stream:
                    stream.write(text.replace('{bindir}', self._path('bin')))
                os.chmod(self._path('bin', name), 0o755)
        cluster = ','.join('127.0.0.1:%d' % n.gcomm_port for n in self.nodes)
        self.haproxy_port = process.free_port()
        self.roundrobin_port = process.free_port()
        servers = spread = ''
        for node in self.nodes:
            os.makedirs(node.datadir)
            with open(node.cnf, 'w') as stream:
                stream.write(MY_CNF.format(n=node, cluster=cluster, sst=sst,
                                           user=' '.join(self._user())[2:]))
            node.env = self._node_env(node)
            servers += HAPROXY_SERVER.format(
                n=node, backup=' backup' if node.index else '')
            if node.index < 2:
                spread += HAPROXY_SERVER.format(n=node, backup='')
        with open(self._path('haproxy.cfg'), 'w') as stream:
            stream.write(HAPROXY_CFG.format(
                stats=self._path('haproxy.sock'), port=self.haproxy_port)
                + servers + HAPROXY_ROUNDROBIN.format(
                    port=self.roundrobin_port) + spread)

    def _node_env(self, node):
        env = dict(os.environ)
        env['PATH'] = '%s:%s' % (self._path('bin'), env.get('PATH', ''))
        if node.offset is None:
            return env
        library = faketime_library()
        if library is None:
            raise process.HarnessError(
                'libfaketime is needed for a node whose clock is off: '
                'run tools/test-setup.sh (it installs libfaketime)')
        # NOTE(harness): a fixed offset of the wall clock only; the
        # monotonic clock (Galera's timers, mariadbd's timed waits) stays
        # real. FAKETIME_NO_CACHE is not needed: FAKETIME never changes.
        env.update({'LD_PRELOAD': library, 'FAKETIME': '%+f' % node.offset,
                    'FAKETIME_DONT_FAKE_MONOTONIC': '1'})
        return env

    def _start_node(self, index, bootstrap=False):
        node = self.nodes[index]
        node.argv = [MARIADBD, '--defaults-file=' + node.cnf] + (
            ['--wsrep-new-cluster'] if bootstrap else [])
        node.paused = node.isolated = False
        node.start()

    def _stop_everything(self):
        self.haproxy.stop()
        for node in reversed(self.nodes):
            node.stop(timeout=20)

    def running(self):
        """The nodes whose process runs, paused or isolated ones included.

        :returns: a list of node indexes.
        """
        return [node.index for node in self.nodes if node.running()]

    def _members(self, exclude=None):
        return [i for i in self.running() if i != exclude and
                not (self.nodes[i].paused or self.nodes[i].isolated)]

    def _check(self, alive):
        for service in [self.nodes[i] for i in alive] + [self.haproxy]:
            if service.process is not None and not service.running():
                raise process.HarnessError('%s exited with %s: %s' % (
                    service.name, service.process.returncode,
                    process.tail(service.log_path)))

    def _wait(self, predicate, timeout, what, nodes, alive=None):
        timeout = self.timeout if timeout is None else timeout
        alive = nodes if alive is None else alive
        try:
            return process.wait_for(predicate, timeout, what, interval=0.2,
                                    check=lambda: self._check(alive))
        except process.HarnessError as exc:
            states = {n.name: '/'.join((n.running() and not n.paused and
                                        self.status(n.index) or {}).get(
                'wsrep_' + key, '?') for key in self._STATE)
                for n in self.nodes}
            raise process.HarnessError('%s; wsrep: %s; haproxy: %s\n%s' % (
                exc, states, self._haproxy_states(), '\n'.join(
                    '%s:\n%s' % (self.nodes[i].log_path,
                                 process.tail(self.nodes[i].log_path, 15))
                    for i in nodes)))

    def wait_for_cluster(self, members=None, timeout=None):
        """Wait until the members are the primary component, all Synced.

        Then until HAProxy sees the members up, the stopped nodes down.

        :param members: node indexes; by default every node that runs and
            is neither paused nor isolated.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        :raises: HarnessError on timeout, with the nodes' states and logs.
        """
        members = sorted(self._members() if members is None else members)
        lost = []

        def formed():
            states = [self.status(i) or {} for i in members]
            if all(self._state(s) == ('ON', 'Primary', 'Synced',
                                      str(len(members))) for s in states):
                return True
            if any(s.get('wsrep_cluster_status') in (None, 'Primary')
                   for s in states):
                del lost[:]
            elif not lost:
                lost.append(time.monotonic())
            elif time.monotonic() - lost[0] >= LOST_PRIMARY_GRACE:
                self._bootstrap_primary(members, states)
                del lost[:]
            return False
        self._wait(formed, timeout,
                   'nodes %s to be Synced in a primary component of %d'
                   % (members, len(members)), members)
        if self.haproxy.running():
            self.wait_for_haproxy(members, set(range(NODES)) - set(
                self.running()), timeout)

    def wait_for_haproxy(self, up=(), down=(), timeout=None):
        """Wait until HAProxy's checks see these nodes up and those down.

        :param up: node indexes HAProxy must see ``UP``.
        :param down: node indexes HAProxy must see ``DOWN``.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        def seen():
            states = self._haproxy_states()
            return all(states.get(i) == 'UP' for i in up) and \
                all(states.get(i) == 'DOWN' for i in down)
        self._wait(seen, timeout, 'HAProxy to see nodes %s up and %s down'
                   % (sorted(up), sorted(down)), sorted(set(up) | set(down)),
                   alive=up)

    def url(self, database=None, roundrobin=False):
        """The SQLAlchemy URL of the cluster, through HAProxy.

        :param database: the database name, or None for none.
        :param roundrobin: through the second front end, which hands
            connections to node 0 and node 1 in turn (not supported for
            the claims: several nodes take writes at once).
        :returns: ``mysql+pymysql://root@127.0.0.1:PORT/DATABASE``.
        """
        return 'mysql+pymysql://root@127.0.0.1:%d/%s' % (
            self.roundrobin_port if roundrobin else self.haproxy_port,
            database or '')

    def node_url(self, index, database=None):
        """The SQLAlchemy URL of one node, without HAProxy.

        :param index: the node, 0 to 2.
        :param database: the database name, or None for none.
        :returns: ``mysql+pymysql://root@127.0.0.1:PORT/DATABASE``.
        """
        return 'mysql+pymysql://root@127.0.0.1:%d/%s' % (
            self.nodes[index].port, database or '')

    def _connect(self, index=None, database=None, timeout=5):
        port = self.haproxy_port if index is None else self.nodes[index].port
        return pymysql.connect(
            host='127.0.0.1', port=port, user='root', database=database,
            autocommit=True, connect_timeout=timeout, read_timeout=timeout,
            write_timeout=timeout)

    def execute(self, sql, index=None, database=None, timeout=5):
        """Run one statement on a connection of its own; fetch its rows.

        :param sql: the statement.
        :param index: the node, or None to go through HAProxy.
        :param database: the database to use, or None.
        :param timeout: seconds for connecting, reading and writing.
        :returns: a tuple of row tuples.
        :raises: ``pymysql.MySQLError``, e.g. :data:`WSREP_NOT_READY` from
            a node outside the primary component.
        """
        with self._connect(index, database, timeout) as conn, \
                conn.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def create_database(self, name):
        """Create a database through HAProxy (Galera replicates it).

        :param name: letters, digits and underscores.
        :returns: None
        """
        self.execute('CREATE DATABASE `%s`' % self._checked(name))

    def drop_database(self, name):
        """Drop a database, if it exists, through HAProxy.

        :param name: letters, digits and underscores.
        :returns: None
        """
        self.execute('DROP DATABASE IF EXISTS `%s`' % self._checked(name))

    @staticmethod
    def _checked(name):
        if not _NAME_RE.match(name or ''):
            raise ValueError('Refusing unsafe database name %r' % name)
        return name

    def writer(self):
        """The node HAProxy sends a new connection to.

        :returns: its index.
        """
        return int(self.execute('SELECT @@wsrep_node_name')[0][0][4:])

    def status(self, index):
        """The ``wsrep_%`` status variables of a node.

        :param index: the node.
        :returns: ``{name: value}`` (strings), or None when the node does
            not answer within 2 s.
        """
        try:
            return dict(self.execute("SHOW GLOBAL STATUS LIKE 'wsrep\\_%'",
                                     index, timeout=2))
        except pymysql.MySQLError:
            return None

    _STATE = ('ready', 'cluster_status', 'local_state_comment',
              'cluster_size')

    def _state(self, status):
        return tuple(status.get('wsrep_' + key) for key in self._STATE)

    def _synced(self, index, size):
        return self._state(self.status(index) or {}) == (
            'ON', 'Primary', 'Synced', str(size))

    def _bootstrap_primary(self, members, states):
        """Make the most advanced member a primary component again."""
        committed = [int(s.get('wsrep_last_committed') or -1)
                     for s in states]
        first = members[max(range(len(members)),
                            key=lambda i: (committed[i], -members[i]))]
        LOG.warning('Galera nodes %(members)s have had no primary '
                    'component for %(grace)s s; bootstrapping one on '
                    'node%(first)d (pc.bootstrap), the most advanced',
                    {'members': members, 'grace': LOST_PRIMARY_GRACE,
                     'first': first})
        self.execute("SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'",
                     first)
        self.primary_bootstraps += 1

    def _haproxy_states(self):
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(5)
                sock.connect(self._path('haproxy.sock'))
                sock.sendall(b'show stat\n')
                data = b''.join(iter(lambda: sock.recv(65536), b''))
        except OSError:
            return {}
        rows = csv.DictReader(io.StringIO(data.decode().lstrip('# ')))
        return {int(row['svname'][4:]): row['status'] for row in rows
                if row.get('pxname') == 'galera' and
                row.get('svname', '').startswith('node')}

    def kill(self, index, timeout=None):
        """SIGKILL a node; wait until the others go on without it.

        Without a majority of the last primary component (a second kill
        in a row), the survivor turns non-primary: then this waits for
        that.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        others = self._members(exclude=index)
        size = max([int((self.status(i) or {}).get('wsrep_cluster_size', 0))
                    for i in others] or [0])
        self.nodes[index].kill()
        if 2 * len(others) > size:
            return self.wait_for_cluster(timeout=timeout)
        self._wait(lambda: all((self.status(i) or {}).get(
            'wsrep_cluster_status') == 'non-Primary' for i in others),
            timeout, 'nodes %s to lose the quorum' % others, others)
        self.wait_for_haproxy(down=[index], timeout=timeout)

    def stop(self, index, timeout=None):
        """Stop a node gracefully (SIGTERM); wait for the others.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        self.nodes[index].stop()
        self.wait_for_cluster(timeout=timeout)

    def start(self, index, timeout=None):
        """Start a stopped node; wait until it is Synced, HAProxy sees it.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        :raises: HarnessError when no other node runs (see
            :meth:`restart_all`).
        """
        if not self._members(exclude=self.nodes[index].index):
            raise process.HarnessError('no running node for node%d to join; '
                                       'use restart_all()' % index)
        self._start_node(index)
        self.wait_for_cluster(timeout=timeout)

    def set_clock_offset(self, index, offset, timeout=None):
        """Restart a node with its wall clock off by ``offset`` seconds.

        The node must not be the only one running; the others keep the
        cluster (and HAProxy its writer) meanwhile.

        :param index: the node.
        :param offset: seconds (libfaketime), or None for the real clock.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        node = self.nodes[index]
        if index in self.running():
            self.stop(index, timeout=timeout)
        node.offset = offset
        node.env = self._node_env(node)
        self.start(index, timeout=timeout)

    def pause(self, index):
        """SIGSTOP a node; return at once (the others drop it in ~2 s).

        :param index: the node.
        :returns: None
        """
        self.nodes[index].pause()
        self.nodes[index].paused = True

    def resume(self, index, timeout=None):
        """SIGCONT a paused node; wait until it is Synced again.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        self.nodes[index].resume()
        self.nodes[index].paused = False
        self.wait_for_cluster(timeout=timeout)

    def isolate(self, index, timeout=None):
        """Cut a node off from the other two; it keeps running.

        ``gmcast.isolate=1`` (Galera 26.4's hidden option for tests)
        closes the node's group connections and refuses new ones. The
        node falls into a non-primary component of its own and fails
        queries on tables with :data:`WSREP_NOT_READY`; HAProxy's
        mysql-check still sees it up.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        self.execute("SET GLOBAL wsrep_provider_options='gmcast.isolate=1'",
                     self.nodes[index].index)
        self.nodes[index].isolated = True
        others = self._members()
        self._wait(lambda: (self.status(index) or {}).get(
            'wsrep_cluster_status') == 'non-Primary' and all(
                self._synced(i, len(others)) for i in others), timeout,
            'node%d to be non-primary, nodes %s to go on without it'
            % (index, others), [index] + others)

    def rejoin(self, index, timeout=None):
        """Undo :meth:`isolate` (``gmcast.isolate=0``); wait for Synced.

        The node reconnects and catches up by IST on its own, without
        ``pc.bootstrap`` or a restart.

        :param index: the node.
        :param timeout: seconds; the fixture's timeout by default.
        :returns: None
        """
        self.execute("SET GLOBAL wsrep_provider_options='gmcast.isolate=0'",
                     self.nodes[index].index)
        self.nodes[index].isolated = False
        self.wait_for_cluster(timeout=timeout)

    def restart_all(self, timeout=None, on_bootstrap=None):
        """Stop every node, then bootstrap from the most advanced one.

        Gracefully, node 0 last. The highest ``seqno`` of
        ``grastate.dat`` (``mariadbd --wsrep-recover`` where it is -1;
        node 0 on a tie) gets ``safe_to_bootstrap: 1`` and
        ``--wsrep-new-cluster``; the other two join it.

        :param timeout: seconds for each wait; the fixture's timeout by
            default.
        :param on_bootstrap: called with the bootstrapped node's index once
            it takes connections, before the other two join (their state
            transfer can take many seconds on a busy machine, while the
            cluster already serves).
        :returns: the index of the node bootstrapped.
        """
        for node in reversed(self.nodes):
            node.stop()
        seqnos = [self._seqno(node, timeout) for node in self.nodes]
        first = max(range(NODES), key=lambda i: (seqnos[i], -i))
        grastate = os.path.join(self.nodes[first].datadir, 'grastate.dat')
        with open(grastate, 'r+') as stream:
            text = re.sub(r'(?m)^safe_to_bootstrap:.*$',
                          'safe_to_bootstrap: 1', stream.read())
            stream.seek(0)
            stream.write(text)
        self._start_node(first, bootstrap=True)
        self.wait_for_cluster([first], timeout=timeout)
        if on_bootstrap is not None:
            on_bootstrap(first)
        for index in set(range(NODES)) - {first}:
            self._start_node(index)
        self.wait_for_cluster(timeout=timeout)
        return first

    def restore(self, timeout=None):
        """Every node up and synced, node 0 taking the connections.

        Undoes whatever faults a test left: resumes paused nodes, rejoins
        isolated ones, bootstraps the cluster again when no node runs,
        starts the nodes that do not, and restarts a node whose clock a
        test changed with its configured offset.

        :param timeout: seconds allowed to each wait.
        :returns: None
        """
        timeout = timeout or self.timeout
        for node in self.nodes:
            if node.paused:
                self.resume(node.index)
            if node.isolated:
                self.rejoin(node.index)
        if not self.running():
            self.restart_all(timeout=timeout)
        for index in range(NODES):
            if index not in self.running():
                self.start(index)
        for index in range(NODES):
            if self.nodes[index].offset != self.clock_offsets.get(index):
                self.set_clock_offset(index, self.clock_offsets.get(index),
                                      timeout=timeout)
        self.wait_for_cluster(timeout=timeout)
        self.wait_for_haproxy(up=range(NODES), timeout=timeout)
        self._wait(lambda: self.writer() == 0, timeout,
                   'HAProxy to send connections to node0 again', [0])

    def _seqno(self, node, timeout):
        with open(os.path.join(node.datadir, 'grastate.dat')) as stream:
            found = re.search(r'(?m)^seqno:\s*(-?\d+)', stream.read())
        if found and found.group(1) != '-1':
            return int(found.group(1))
        offset = os.path.getsize(node.log_path)
        process.run_logged([MARIADBD, '--defaults-file=' + node.cnf,
                            '--wsrep-recover'], node.log_path,
                           timeout=timeout or self.timeout)
        with open(node.log_path) as stream:
            stream.seek(offset)
            found = _RECOVERED_RE.findall(stream.read())
        return int(found[-1]) if found else -1

    def clock_offset(self, index):
        """How far a node's ``NOW(6)`` is ahead of node 0's, as measured.

        The real time between the middles of the two reads is taken off.

        :param index: the node.
        :returns: seconds, a float (negative when behind).
        """
        (start0, now0, end0), (start, now, end) = [
            (time.monotonic(), self.execute('SELECT NOW(6)', node)[0][0],
             time.monotonic()) for node in (0, self.nodes[index].index)]
        return (now - now0).total_seconds() - (start + end - start0 - end0) / 2
