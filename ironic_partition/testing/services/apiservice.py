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

"""An OpenStack API under gunicorn, on its own database, torn down.

The base of the harness's glance, neutron and nova-api fixtures: a run
directory, a uniquely named database, a configuration written by the
subclass, the service's own database migration, then gunicorn on a free
loopback port as the leader of its own process group, stopped at cleanup
whatever the test did.
"""

import logging
import os
import shutil
import sys
import tempfile

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db

LOG = logging.getLogger(__name__)

#: The identity every harness API client sends, as keystonemiddleware
#: would after validating a token. nova-api and glance-api run without
#: keystone: their context filters trust these headers (never expose
#: such a pipeline beyond a test). neutron runs with ``noauth`` and
#: placement with ``noauth2``, which takes the token ``admin`` as an
#: administrator.
ADMIN_HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Identity-Status': 'Confirmed',
    'X-User-Id': 'admin',
    'X-Project-Id': 'b7d0c6f5d35a4cbb9b1cb25e0bd9e3a1',
    'X-Roles': 'admin,member,reader',
}


def data_file(project, name):
    """Find a file a service package installs under ``etc/<project>``.

    :param project: e.g. ``nova``.
    :param name: e.g. ``api-paste.ini``.
    :returns: its path, in this interpreter's prefix or ``/etc``.
    :raises: HarnessError when neither has it.
    """
    for root in (sys.prefix, '/'):
        path = os.path.join(root, 'etc', project, name)
        if os.path.exists(path):
            return path
    raise harness_process.HarnessError(
        '%s of %s not found under %s/etc or /etc; is %s installed in this '
        'environment?' % (name, project, sys.prefix, project))


def admin_session():
    """A keystoneauth session sending :data:`ADMIN_HEADERS`.

    Its auth plugin is keystoneauth's ``admin_token`` (the token
    ``admin``); every endpoint comes from an ``endpoint_override``.

    :returns: a ``keystoneauth1.session.Session``.
    """
    headers = dict(ADMIN_HEADERS)
    return ks_session.Session(
        auth=token_endpoint.Token(None, headers.pop('X-Auth-Token')),
        additional_headers=headers)


class APIServiceFixture(fixtures.Fixture):
    """One API service; subclasses say how to configure and migrate it.

    :param db_backend: ``mysql`` or ``postgresql``.
    :param workdir: the parent of the run directory.
    :param start_timeout: seconds allowed for the API to answer.
    :param transport_url: the oslo.messaging URL, for services that use
        RPC.
    :param threads: gunicorn threads of the one worker.
    """

    #: The short name: the log file, the run directory's prefix.
    name = None
    #: The WSGI application, ``module:attribute``.
    app = None
    #: Load :attr:`app` through :mod:`._wsgi` (the service hands
    #: ``sys.argv`` to oslo.config).
    clear_argv = False
    #: Create a database of its own (:attr:`database`).
    own_database = True
    #: Its schema's key (:func:`~.db.template_of`): a process migrates
    #: one database of it and copies the next ones.
    schema = None

    def __init__(self, db_backend='mysql', workdir=None, start_timeout=180,
                 transport_url=None, threads=4):
        super().__init__()
        self.db_backend = db_backend
        self.parent_workdir = workdir
        self.start_timeout = start_timeout
        self.transport_url = transport_url
        self.threads = threads
        self.service = None

    def _setUp(self):
        parent = self.parent_workdir or harness_db.default_workdir()
        os.makedirs(parent, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix='%s-harness-' % self.name,
                                        dir=parent)
        self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)
        self.log_path = os.path.join(self.workdir, self.name + '.log')
        open(self.log_path, 'ab').close()
        self.addDetail('log-' + self.name,
                       harness_process.log_content(self.log_path))
        if self.own_database:
            self.database = self.useFixture(harness_db.DatabaseFixture(
                self.db_backend, workdir=self.workdir, schema=self.schema))
        self.port = harness_process.free_port()
        self.confdir = os.path.join(self.workdir, 'etc')
        os.makedirs(self.confdir)
        self.configure()
        if self.own_database:
            self.database.ensure_schema(self.migrate)
        else:
            self.migrate()
        env = dict(os.environ, **self.environment())
        app = self.app
        if self.clear_argv:
            env['IRONIC_PARTITION_WSGI_APP'] = app
            app = 'ironic_partition.testing.services._wsgi:application'
        self.service = harness_process.Service(
            name=self.name, log_path=self.log_path, env=env, argv=[
                harness_process.bin_path('gunicorn'),
                '--bind', '127.0.0.1:%d' % self.port, '--workers', '1',
                '--threads', str(self.threads), '--timeout', '300',
                '--no-control-socket', app])
        self.addCleanup(self.service.stop)
        self.service.start()
        self.session = admin_session()
        harness_process.wait_for(self.ready, self.start_timeout,
                                 '%s at %s' % (self.name, self.endpoint),
                                 interval=0.5, check=self.check)
        self.started()

    # -- what a subclass provides -------------------------------------

    def configure(self):
        """Write the configuration files into :attr:`confdir`.

        :returns: None
        """
        raise NotImplementedError()

    def migrate(self):
        """Create the service's schema in :attr:`database`.

        :returns: None
        """
        raise NotImplementedError()

    def environment(self):
        """Extra environment variables of the server process.

        :returns: a dict.
        """
        return {}

    def started(self):
        """Called once the API answers (e.g. to create resources).

        :returns: None
        """

    # -- state --------------------------------------------------------

    @property
    def endpoint(self):
        """The API's root URL."""
        return 'http://127.0.0.1:%d' % self.port

    def run(self, argv):
        """Run one of the service's commands to completion, logged.

        :param argv: the command line; ``argv[0]`` is a console script
            of this environment.
        :returns: None
        :raises: HarnessError when it fails.
        """
        harness_process.run_logged([harness_process.bin_path(argv[0])] +
                                   list(argv[1:]), self.log_path)

    def check(self):
        """Raise when the server process died.

        :returns: None
        """
        if self.service is not None and self.service.process is not None \
                and not self.service.running():
            raise harness_process.HarnessError('%s exited with %s: %s' % (
                self.name, self.service.process.returncode,
                harness_process.tail(self.log_path)))

    def ready(self):
        """Tell whether the API answers its root document.

        :returns: True or False.
        """
        try:
            resp = self.session.get(self.endpoint + '/', authenticated=False,
                                    raise_exc=False, timeout=5)
        except ks_exc.ClientException:
            return False
        return resp.status_code < 500
