"""worker_beats: each live worker's heartbeat and the readiness of its parts

Revision ID: 0004_issue21_workers
Revises: 0003_issue21_faults
Create Date: 2026-12-01 07:40:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0004_issue21_workers'
down_revision = '0003_issue21_faults'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'worker_beats',
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('engine', sa.String(length=16), nullable=False),
        sa.Column('store', sa.String(length=16), nullable=False),
        sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name'),
    )
    with op.batch_alter_table('worker_beats', schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f('ix_worker_beats_expires_at'), ['expires_at'], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table('worker_beats', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_worker_beats_expires_at'))
    op.drop_table('worker_beats')
