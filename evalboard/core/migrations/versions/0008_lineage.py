"""lineages (submissions.release_of_id, lineage_id; uploads.release_of_id) and suite versions

Revision ID: 0008_lineage
Revises: 0007_issue19_owner_verdicts
Create Date: 2026-12-02 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0008_lineage'
down_revision = '0007_issue19_owner_verdicts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('release_of_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('lineage_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            'fk_submissions_release_of_id', 'submissions', ['release_of_id'], ['id'],
            ondelete='SET NULL',
        )
        batch_op.create_foreign_key(
            'fk_submissions_lineage_id', 'submissions', ['lineage_id'], ['id'],
            ondelete='SET NULL',
        )
        batch_op.create_index('ix_submissions_lineage_id', ['lineage_id'], unique=False)
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.add_column(sa.Column('release_of_id', sa.Integer(), nullable=True))
    op.create_table(
        'suite_versions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('dataset_ids', sa.JSON(), nullable=False),
        sa.Column('release_ids', sa.JSON(), nullable=False),
        sa.Column('result_ids', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id', 'number'),
    )


def downgrade() -> None:
    op.drop_table('suite_versions')
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.drop_column('release_of_id')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index('ix_submissions_lineage_id')
        batch_op.drop_constraint('fk_submissions_lineage_id', type_='foreignkey')
        batch_op.drop_constraint('fk_submissions_release_of_id', type_='foreignkey')
        batch_op.drop_column('lineage_id')
        batch_op.drop_column('release_of_id')
