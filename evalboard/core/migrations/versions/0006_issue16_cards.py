"""model cards (card, published) on submissions; leaderboard snapshots

Revision ID: 0006_issue16_cards
Revises: 0005_issue20_board
Create Date: 2026-12-01 22:20:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0006_issue16_cards'
down_revision = '0005_issue20_board'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('card', sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column('published', sa.Boolean(), server_default=sa.true(), nullable=False)
        )
    op.create_table(
        'snapshots',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('title', sa.String(length=200), nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('json_key', sa.String(length=256), nullable=False),
        sa.Column('csv_key', sa.String(length=256), nullable=False),
        sa.Column('json_sha256', sa.String(length=64), nullable=False),
        sa.Column('csv_sha256', sa.String(length=64), nullable=False),
        sa.Column('models', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id', 'number'),
    )


def downgrade() -> None:
    op.drop_table('snapshots')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_column('published')
        batch_op.drop_column('card')
