"""drift checks; traffic inputs on examples (input_key), a validator's label on validations

Revision ID: 0014_drift
Revises: 0010_pages_roles
Create Date: 2026-12-02 03:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0014_drift'
down_revision = '0010_pages_roles'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('examples', schema=None) as batch_op:
        batch_op.add_column(sa.Column('input_key', sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint('uq_examples_input_key', ['task_id', 'input_key'])
    with op.batch_alter_table('validations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('label', sa.Text(), nullable=True))
    op.create_table(
        'drift_checks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('auc', sa.Float(), nullable=False),
        sa.Column('p_value', sa.Float(), nullable=False),
        sa.Column('shifted', sa.Boolean(), nullable=False),
        sa.Column('report', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['task_id'], ['tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id', 'number'),
    )


def downgrade() -> None:
    op.drop_table('drift_checks')
    with op.batch_alter_table('validations', schema=None) as batch_op:
        batch_op.drop_column('label')
    with op.batch_alter_table('examples', schema=None) as batch_op:
        batch_op.drop_constraint('uq_examples_input_key', type_='unique')
        batch_op.drop_column('input_key')
