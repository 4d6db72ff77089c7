"""private phases of hidden sets (phases, phase_datasets, phase_entries); a submission's kind

Revision ID: 0016_phases_predictions
Revises: 0014_drift
Create Date: 2026-12-02 06:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0016_phases_predictions'
down_revision = '0014_drift'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('kind', sa.String(length=16), server_default='bundle', nullable=False)
        )
    op.create_table(
        'phases',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('submission_limit', sa.Integer(), nullable=False),
        sa.Column('revealed', sa.Boolean(), nullable=False),
        sa.Column('public', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('revealed_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id', 'name'),
    )
    op.create_table(
        'phase_datasets',
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('phase_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['phase_id'], ['phases.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('dataset_id'),
    )
    op.create_index('ix_phase_datasets_phase_id', 'phase_datasets', ['phase_id'])
    op.create_table(
        'phase_entries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('phase_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('submission_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['phase_id'], ['phases.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_phase_entries_phase_id', 'phase_entries', ['phase_id'])
    op.create_index('ix_phase_entries_user_id', 'phase_entries', ['user_id'])


def downgrade() -> None:
    op.drop_index('ix_phase_entries_user_id', table_name='phase_entries')
    op.drop_index('ix_phase_entries_phase_id', table_name='phase_entries')
    op.drop_table('phase_entries')
    op.drop_index('ix_phase_datasets_phase_id', table_name='phase_datasets')
    op.drop_table('phase_datasets')
    op.drop_table('phases')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_column('kind')
