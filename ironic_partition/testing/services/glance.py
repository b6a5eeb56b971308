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

"""A real glance-api, without keystone, holding one small image.

glance 33 (the release of nova 34) under gunicorn, with a file store in
the run directory. Its paste pipeline is glance's own keystone pipeline
less ``authtoken``: glance's ``context`` filter builds the request context
from the identity headers keystonemiddleware would have set
(:data:`~.apiservice.ADMIN_HEADERS`), so policy is enforced as in
production, except that a request without them (nova's, which carries
only the token) is anonymous and may read images (:data:`POLICY`). It
holds one raw image of a few bytes, public, for nova to boot from:
Ironic's ``fake`` deploy interface never reads it.
"""

import os

from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import apiservice

#: The bytes of the image (the deploy never reads them).
IMAGE_DATA = b'ironic-partition test image\n'

#: glance's default policy, except that an anonymous request (nova's)
#: may read images: glance's defaults want the reader role, which only a
#: validated token carries.
POLICY = """
"get_image": ""
"get_images": ""
"download_image": ""
"""

#: glance's keystone pipeline without ``authtoken``.
PASTE = """
[composite:glance-api]
paste.composite_factory = glance.api:root_app_factory
/: api

[pipeline:api]
pipeline = versionnegotiation context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:\
VersionNegotiationFilter.factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:\
ContextMiddleware.factory
"""


class GlanceFixture(apiservice.APIServiceFixture):
    """glance-api with a file store and one image, :attr:`image_id`.

    :param kwargs: see :class:`~.apiservice.APIServiceFixture`.
    """

    name = 'glance-api'
    app = 'glance.wsgi.api:application'
    schema = 'glance'

    def configure(self):
        store = os.path.join(self.workdir, 'images')
        staging = os.path.join(self.workdir, 'staging')
        for path in (store, staging):
            os.makedirs(path)
        policy = os.path.join(self.confdir, 'policy.yaml')
        with open(policy, 'w') as stream:
            stream.write(POLICY)
        paste = os.path.join(self.confdir, 'glance-api-paste.ini')
        with open(paste, 'w') as stream:
            stream.write(PASTE)
        self.config_file = os.path.join(self.confdir, 'glance-api.conf')
        harness_process.write_config(self.config_file, {
            'DEFAULT': {
                'debug': False,
                'use_stderr': True,
                'enabled_backends': 'fs:file',
                'worker_self_reference_url': self.endpoint,
                # NOTE(ironic-partition): no interoperable import (it
                # needs a staging store and a task executor); nova only
                # reads the image's record.
                'enabled_import_methods': '[]',
                # NOTE(ironic-partition): nova passes on only the
                # request's token, which no authtoken validates here: its
                # reads are anonymous (see POLICY).
                'allow_anonymous_access': True,
            },
            'oslo_policy': {'policy_file': policy},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir': store},
            'os_glance_staging_store': {
                'filesystem_store_datadir': staging},
            'os_glance_tasks_store': {
                'filesystem_store_datadir': os.path.join(self.workdir,
                                                         'tasks')},
            'database': {'connection': self.database.url},
            'paste_deploy': {'config_file': paste},
            'oslo_concurrency': {
                'lock_path': os.path.join(self.workdir, 'locks')},
        }, join_lists=True)

    def migrate(self):
        self.run(['glance-manage', '--config-file', self.config_file,
                  'db_sync'])

    def environment(self):
        return {'OS_GLANCE_CONFIG_DIR': self.confdir}

    def started(self):
        self.image_id = self.upload_image('ironic-partition-image',
                                          IMAGE_DATA)

    def connection(self):
        """An openstacksdk connection to this glance.

        :returns: an ``openstack.connection.Connection``.
        """
        import openstack
        return openstack.connection.Connection(
            session=apiservice.admin_session(),
            image_endpoint_override=self.endpoint)

    def upload_image(self, name, data):
        """Create a public raw image and upload its data.

        :param name: the image name.
        :param data: its bytes.
        :returns: the image ID, once ``active``.
        """
        conn = self.connection()
        image = conn.image.create_image(
            name=name, disk_format='raw', container_format='bare',
            visibility='public', data=data, validate_checksum=False,
            allow_duplicates=True)
        image = conn.image.wait_for_status(image, status='active',
                                           wait=self.start_timeout)
        return image.id
