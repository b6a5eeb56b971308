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

"""Alembic environment of the membership database.

It is driven by :mod:`ironic_partition.db.migration`, which hands over an
open connection in ``config.attributes['connection']``; there is no
alembic.ini and no URL is read from here.
"""

from alembic import context

from ironic_partition.db import models

VERSION_TABLE = 'ironic_partition_alembic_version'


def run_migrations_online():
    """Run the migrations on the connection given by the caller.

    :returns: None
    """
    connection = context.config.attributes['connection']
    context.configure(
        connection=connection,
        target_metadata=models.Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == 'sqlite',
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError('Offline (--sql) migrations are not supported.')
run_migrations_online()
