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

"""Add the services table.

Revision ID: 0001_services
Revises:
Create Date: 2026-01-01 00:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '0001_services'
down_revision = None
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
    """Create ``ironic_partition_services``.

    :returns: None
    """
    op.create_table(
        'ironic_partition_services',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('role', sa.String(length=32), nullable=False),
        sa.Column('partition_key', sa.String(length=255), nullable=True),
        sa.Column('version', sa.String(length=64), nullable=True),
        sa.Column('down', sa.Boolean(create_constraint=False),
                  nullable=False),
        sa.Column('created_at', _timestamp(), nullable=False),
        sa.Column('last_seen', _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_ironic_partition_services'),
        sa.UniqueConstraint(
            'host', 'role',
            name='uniq_ironic_partition_services0host0role'),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
    op.create_index('ix_ironic_partition_services_role_last_seen',
                    'ironic_partition_services', ['role', 'last_seen'])
