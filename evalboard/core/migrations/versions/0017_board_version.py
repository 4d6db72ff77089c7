"""board_versions: a per-task counter that database triggers bump on every write the board reads

Revision ID: 0017_board_version
Revises: 0016_phases_predictions
Create Date: 2026-12-02 07:00:00

A warm board request reads this one row instead of scanning every submission's jobs and
results (``leaderboard.aggregates.load_board``). The triggers bump it in the writing
statement's own transaction, whichever process or code path writes: submissions, jobs
(their status and keys, not the progress a worker writes), results, datasets, tasks,
phases and their datasets, and users' names. The counter only grows (a task's row is
never deleted), so a value once cached is never seen again after a write.

On SQLite a batch migration that copies one of these tables drops its triggers: such a
migration must create them again (``tests/core/test_migrations.py`` checks they are all
there at head).
"""

from alembic import op
import sqlalchemy as sa


revision = '0017_board_version'
down_revision = '0016_phases_predictions'
branch_labels = None
depends_on = None

#: Per table: the task ids one row of it belongs to, as a query over ``{row}`` (NEW/OLD).
_TASKS = {
    'submissions': 'SELECT {row}.task_id AS task_id',
    'jobs': 'SELECT task_id FROM submissions WHERE id = {row}.submission_id',
    'results': 'SELECT task_id FROM submissions WHERE id = {row}.submission_id',
    'datasets': 'SELECT {row}.task_id AS task_id',
    'tasks': 'SELECT {row}.id AS task_id',
    'phases': 'SELECT {row}.task_id AS task_id',
    'phase_datasets': 'SELECT task_id FROM phases WHERE id = {row}.phase_id',
    'users': 'SELECT task_id FROM submissions WHERE user_id = {row}.id',
}

#: (table, timing, event, columns an update must touch, or None for any).
TRIGGERS = [
    *(
        (table, 'AFTER', event, None)
        for table in ('submissions', 'results', 'datasets', 'phases', 'phase_datasets')
        for event in ('INSERT', 'UPDATE', 'DELETE')
    ),
    ('jobs', 'AFTER', 'INSERT', None),
    ('jobs', 'AFTER', 'UPDATE', 'status, submission_id, dataset_id'),
    ('jobs', 'AFTER', 'DELETE', None),
    # A new task has no board yet; a deleted one's rows cascade through the others.
    ('tasks', 'AFTER', 'UPDATE', None),
    ('users', 'AFTER', 'UPDATE', 'name'),
    # Before: afterwards the submissions' owner is already set to NULL.
    ('users', 'BEFORE', 'DELETE', None),
]


def _name(table: str, event: str) -> str:
    return f'board_version_{table}_{event.lower()}'


def _bump(table: str, event: str) -> str:
    """One statement: every task the row (before and after) belongs to, counted up once."""
    rows = {'INSERT': ['NEW'], 'UPDATE': ['NEW', 'OLD'], 'DELETE': ['OLD']}[event]
    tasks = ' UNION '.join(_TASKS[table].format(row=row) for row in rows)
    return (
        'INSERT INTO board_versions (task_id, version) '
        f'SELECT DISTINCT task_id, 1 FROM ({tasks}) AS changed WHERE task_id IS NOT NULL '
        'ON CONFLICT (task_id) DO UPDATE SET version = board_versions.version + 1'
    )


def _event(event: str, columns: str | None) -> str:
    return f'{event} OF {columns}' if columns else event


def upgrade() -> None:
    op.create_table(
        'board_versions',
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('task_id'),
    )
    postgres = op.get_bind().dialect.name == 'postgresql'
    for table, timing, event, columns in TRIGGERS:
        name = _name(table, event)
        if postgres:
            returned = 'OLD' if event == 'DELETE' else 'NEW'
            op.execute(
                f'CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ '
                f'BEGIN {_bump(table, event)}; RETURN {returned}; END $$'
            )
            op.execute(
                f'CREATE TRIGGER {name} {timing} {_event(event, columns)} ON {table} '
                f'FOR EACH ROW EXECUTE FUNCTION {name}()'
            )
        else:
            op.execute(
                f'CREATE TRIGGER {name} {timing} {_event(event, columns)} ON {table} '
                f'FOR EACH ROW BEGIN {_bump(table, event)}; END'
            )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    for table, _timing, event, _columns in TRIGGERS:
        name = _name(table, event)
        op.execute(f'DROP TRIGGER IF EXISTS {name}' + (f' ON {table}' if postgres else ''))
        if postgres:
            op.execute(f'DROP FUNCTION IF EXISTS {name}()')
    op.drop_table('board_versions')
