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

"""A WSGI entry point for OpenStack APIs that parse ``sys.argv``.

nova's and neutron's WSGI modules hand ``sys.argv`` to oslo.config, which
then refuses the WSGI server's own arguments (``--bind``...). gunicorn
loads this module instead; it clears the arguments and imports the
application named by ``IRONIC_PARTITION_WSGI_APP`` (``module:attribute``).
The service then reads its configuration files from its usual
environment variables (``OS_NOVA_CONFIG_DIR``, ``OS_NEUTRON_CONFIG_DIR``).
"""

import importlib
import os
import sys

#: The environment variable naming the real application.
APP_ENV = 'IRONIC_PARTITION_WSGI_APP'

#: Set to 1 to configure SQLAlchemy's mappers once the application is
#: loaded (see :func:`load`).
MAPPERS_ENV = 'IRONIC_PARTITION_WSGI_CONFIGURE_MAPPERS'


def load(spec):
    """Import ``module:attribute`` with the command line cleared.

    :param spec: e.g. ``nova.wsgi.osapi_compute:application``.
    :returns: the WSGI application.
    :raises: ValueError when ``spec`` has no ``:``.
    """
    module, sep, attribute = spec.partition(':')
    if not sep or not module or not attribute:
        raise ValueError('%s must be module:attribute, not %r'
                         % (APP_ENV, spec))
    del sys.argv[1:]
    app = getattr(importlib.import_module(module), attribute)
    if os.environ.get(MAPPERS_ENV) == '1':
        # NOTE(ironic-partition): neutron 29 loaded without a mechanism
        # driver never configures its ORM mappers before the first port
        # listing, which then fails on a backref another plugin's model
        # adds (Port.port_forwardings); the OVS and OVN drivers' start-up
        # does it in a full deployment.
        from sqlalchemy import orm
        orm.configure_mappers()
    return app


if APP_ENV in os.environ:
    application = load(os.environ[APP_ENV])
