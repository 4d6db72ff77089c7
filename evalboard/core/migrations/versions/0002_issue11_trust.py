"""sessions end server-side; uploads have a state and the submission they became; re-runs
are recorded (they count against the daily quota)

Revision ID: 0002_issue11_trust
Revises: 0001
Create Date: 2026-12-01 06:05:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0002_issue11_trust'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('reruns',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('submission_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_reruns_user_id', 'reruns', ['user_id'])
    with op.batch_alter_table('users') as batch:
        batch.add_column(
            sa.Column('session_version', sa.Integer(), server_default='0', nullable=False)
        )
    with op.batch_alter_table('uploads') as batch:
        batch.add_column(sa.Column('state', sa.String(length=16), server_default='open', nullable=False))
        batch.add_column(sa.Column('submission_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('updated_at', sa.DateTime(timezone=True), nullable=True))
    # Completed uploads keep their meaning; every row gets a last-activity time.
    op.execute("UPDATE uploads SET state = 'completed' WHERE completed")
    op.execute("UPDATE uploads SET updated_at = created_at")
    with op.batch_alter_table('uploads') as batch:
        batch.alter_column('state', server_default=None)
        batch.alter_column('updated_at', nullable=False)
        batch.drop_column('completed')
        batch.create_index('ix_uploads_state', ['state'])
        batch.create_foreign_key(
            'fk_uploads_submission_id', 'submissions', ['submission_id'], ['id'],
            ondelete='SET NULL',
        )


def downgrade() -> None:
    with op.batch_alter_table('uploads') as batch:
        batch.drop_constraint('fk_uploads_submission_id', type_='foreignkey')
        batch.drop_index('ix_uploads_state')
        batch.add_column(sa.Column('completed', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute("UPDATE uploads SET completed = (state = 'completed')")
    with op.batch_alter_table('uploads') as batch:
        batch.drop_column('updated_at')
        batch.drop_column('submission_id')
        batch.drop_column('state')
    with op.batch_alter_table('users') as batch:
        batch.drop_column('session_version')
    op.drop_index('ix_reruns_user_id', table_name='reruns')
    op.drop_table('reruns')
