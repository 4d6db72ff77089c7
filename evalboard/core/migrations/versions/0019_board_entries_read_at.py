"""board_entries: the datasets' digest and the board counter each stored row is current at

Revision ID: 0019_board_entries_read_at
Revises: 0018_board_row_versions
Create Date: 2026-12-05 23:55:00

A server that keeps nothing in memory (started again, or its board evicted) read a
board by the query over every submission's jobs and results, hashing each row's facts to
check its stored row: at 100,000 submissions most of ten seconds. Each stored row now
says under which datasets' digest, and at which value of its task's counter
(``board_versions``), it was known current. A submission that ``board_row_versions``
(0018) records at no later value has not changed since: its stored row is read as it
is (``leaderboard.aggregates``). Rows stored before this revision have neither and are
read as before, once, and marked.
"""

from alembic import op
import sqlalchemy as sa


revision = '0019_board_entries_read_at'
down_revision = '0018_board_row_versions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('board_entries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('digest', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('read_at', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('board_entries', schema=None) as batch_op:
        batch_op.drop_column('read_at')
        batch_op.drop_column('digest')
