"""validations.by_owner: the task owner's overriding verdict, recorded as such

Revision ID: 0007_issue19_owner_verdicts
Revises: 0006_issue16_cards
Create Date: 2026-12-01 22:30:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0007_issue19_owner_verdicts'
down_revision = '0006_issue16_cards'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('validations', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('by_owner', sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('validations', schema=None) as batch_op:
        batch_op.drop_column('by_owner')
