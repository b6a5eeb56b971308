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

"""Process identities (incarnations) and Ironic shards.

Adds to ``ironic_partition_services`` the incarnation of the process that
holds the host name, when it started (database clock), where it runs and
how to tell locally whether it still runs, and the Ironic shard of its
partition; adds to ``ironic_partition_claims`` the incarnation holding
each claim and the shard it was claimed in.

Revision ID: 0003_identity_shard
Revises: 0002_claims
Create Date: 2026-11-23 00:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '0003_identity_shard'
down_revision = '0002_claims'
branch_labels = None
depends_on = None

#: ``expand``: only adds; the code of the revisions before runs against it.
compatibility = 'expand'


def _timestamp():
    # NOTE(ironic-partition): spelled out here rather than imported from
    # the models, so that later model changes cannot rewrite history.
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    """Add the identity and shard columns.

    :returns: None
    """
    with op.batch_alter_table('ironic_partition_services') as batch:
        batch.add_column(sa.Column('incarnation', sa.String(length=36),
                                   nullable=True))
        batch.add_column(sa.Column('started_at', _timestamp(),
                                   nullable=True))
        batch.add_column(sa.Column('origin', sa.String(length=255),
                                   nullable=True))
        batch.add_column(sa.Column('liveness_token', sa.String(length=255),
                                   nullable=True))
        batch.add_column(sa.Column('shard', sa.String(length=255),
                                   nullable=True))
    with op.batch_alter_table('ironic_partition_claims') as batch:
        batch.add_column(sa.Column('incarnation', sa.String(length=36),
                                   nullable=True))
        batch.add_column(sa.Column('shard', sa.String(length=255),
                                   nullable=True))
