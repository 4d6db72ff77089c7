"""board_entries: each submission's leaderboard row, derived once from its results

Revision ID: 0005_issue20_board
Revises: 0004_issue21_workers
Create Date: 2026-12-01 22:15:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0005_issue20_board'
down_revision = '0004_issue21_workers'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'board_entries',
        sa.Column('submission_id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('source', sa.String(length=64), nullable=False),
        sa.Column('entry', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('submission_id'),
    )
    with op.batch_alter_table('board_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_board_entries_task_id'), ['task_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('board_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_board_entries_task_id'))
    op.drop_table('board_entries')
