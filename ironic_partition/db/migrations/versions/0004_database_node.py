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

"""The database node that took each service's last heartbeat.

Adds ``database_node`` to ``ironic_partition_services``: ``host:port`` of
the MariaDB or MySQL server that ran the heartbeat (NULL elsewhere), so
that services can see when they write through different nodes of a
Galera cluster at once.

Revision ID: 0004_database_node
Revises: 0003_identity_shard
Create Date: 2026-11-27 00:00:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = '0004_database_node'
down_revision = '0003_identity_shard'
branch_labels = None
depends_on = None

#: ``expand``: only adds; the code of the revisions before runs against it.
compatibility = 'expand'


def upgrade():
    """Add the ``database_node`` column.

    :returns: None
    """
    with op.batch_alter_table('ironic_partition_services') as batch:
        batch.add_column(sa.Column('database_node', sa.String(length=255),
                                   nullable=True))
