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

"""The database nodes' clocks and the claims' node, kept with each service.

Adds to ``ironic_partition_services``:

* ``database_clocks``: what the service's clock watch measured of the
  database nodes' clocks (JSON, ``{"host:port": seconds ahead of the
  lowest}``), recorded with each heartbeat and read back when the service
  starts again, so that a restart neither forgets a clock difference nor
  lifts the refusal it caused; NULL until a node was named.
* ``claims_database_node``: the database node that answered the service's
  last claim round (``host:port``), so that the several-writers watch
  sees the claim statements' connections as well as the heartbeat's; NULL
  where the database cannot tell, or no round ran lately.

An additive change: services of the previous revisions keep running
against it (they neither read nor write the columns).

Revision ID: 0007_database_clocks
Revises: 0006_schema_contract
Create Date: 2026-11-29 00:00:00
"""

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision = '0007_database_clocks'
down_revision = '0006_schema_contract'
branch_labels = None
depends_on = None

#: ``expand``: only adds; the code of the revisions before runs against it.
compatibility = 'expand'


def upgrade():
    """Add the ``database_clocks`` and ``claims_database_node`` columns.

    :returns: None
    """
    with op.batch_alter_table('ironic_partition_services') as batch:
        batch.add_column(sa.Column('database_clocks', sa.Text(),
                                   nullable=True))
        batch.add_column(sa.Column('claims_database_node',
                                   sa.String(length=255), nullable=True))
