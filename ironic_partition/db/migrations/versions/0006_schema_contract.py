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

"""The schema's contract with the code that runs against it.

Adds ``ironic_partition_schema``, one row: the oldest code revision that
may run against this schema (``oldest_code_revision``) and the version of
``ironic-partition-dbsync`` that last upgraded it (``upgraded_by``). Code
that meets a schema revision it does not know reads the row and runs when
the oldest code revision is one it knows (a later expand-only migration),
instead of refusing every newer schema. This schema keeps code from
``0004_database_node`` on running: migrations 0005 and 0006 only add.
An additive change: services of the previous revisions keep running
against it.

Revision ID: 0006_schema_contract
Revises: 0005_outside_peers
Create Date: 2026-11-28 00:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# revision identifiers, used by Alembic.
revision = '0006_schema_contract'
down_revision = '0005_outside_peers'
branch_labels = None
depends_on = None

#: ``expand``: only adds; the code of the revisions before runs against it.
compatibility = 'expand'

#: The oldest code revision this schema lets run.
OLDEST_CODE_REVISION = '0004_database_node'


def _timestamp():
    # NOTE(ironic-partition): spelled out, as in 0001, so that later model
    # changes cannot rewrite history.
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    """Create ``ironic_partition_schema`` with its one row.

    :returns: None
    """
    table = op.create_table(
        'ironic_partition_schema',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('oldest_code_revision', sa.String(length=64),
                  nullable=False),
        sa.Column('upgraded_by', sa.String(length=64), nullable=True),
        sa.Column('updated_at', _timestamp(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_ironic_partition_schema'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.bulk_insert(table, [{'id': 1,
                            'oldest_code_revision': OLDEST_CODE_REVISION}])
