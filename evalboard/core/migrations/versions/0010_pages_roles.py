"""jobs.examples_done / examples_total: a job's real progress, written by its worker

Revision ID: 0010_pages_roles
Revises: 0008_lineage
Create Date: 2026-12-08 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0010_pages_roles'
down_revision = '0008_lineage'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('examples_done', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('examples_total', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('examples_total')
        batch_op.drop_column('examples_done')
