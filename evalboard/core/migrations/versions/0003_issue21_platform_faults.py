"""jobs: platform faults are waits (fault_since, faults, not_before)

Revision ID: 0003_issue21_faults
Revises: 0002_issue11_trust
Create Date: 2026-12-01 07:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0003_issue21_faults'
down_revision = '0002_issue11_trust'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fault_since', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column('faults', sa.Integer(), nullable=False, server_default='0')
        )
        batch_op.add_column(sa.Column('not_before', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('not_before')
        batch_op.drop_column('faults')
        batch_op.drop_column('fault_since')
