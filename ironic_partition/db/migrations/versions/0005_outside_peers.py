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

"""The peers each service counts from outside the membership database.

Adds ``outside_peers`` to ``ironic_partition_services``: the host names,
comma-separated, that a nova-compute counts in its ring because nova's
service group has them up while they do not heartbeat this database
(nova's own driver during a rolling switch, or ours against another
claims database); NULL when there are none. Only read by ``status``,
``check`` and the upgrade check. An additive change: services of the
previous revision keep running against it.

Revision ID: 0005_outside_peers
Revises: 0004_database_node
Create Date: 2026-11-28 00:00:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = '0005_outside_peers'
down_revision = '0004_database_node'
branch_labels = None
depends_on = None

#: ``expand``: only adds; the code of the revisions before runs against it.
compatibility = 'expand'


def upgrade():
    """Add the ``outside_peers`` column.

    :returns: None
    """
    with op.batch_alter_table('ironic_partition_services') as batch:
        batch.add_column(sa.Column('outside_peers', sa.Text(),
                                   nullable=True))
