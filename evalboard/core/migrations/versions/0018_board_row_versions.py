"""board_row_versions: which submissions each bump of a board's version changed

Revision ID: 0018_board_row_versions
Revises: 0017_board_version
Create Date: 2026-12-05 22:00:00

The board's counter (``board_versions``, 0017) says that something changed; after one
more result at 100,000 submissions, finding what took a query over every submission's
jobs and results (about 1 s). The triggers on the tables a submission's row is read from
(submissions, jobs, results, users' names) now also record, per submission changed, the
counter value their write bumped the task's to, in the same transaction; a process that
kept the board read at counter ``c`` reads again only the submissions recorded above
``c`` (``leaderboard.aggregates.load_board``). Dataset, phase and task writes record no
submission: what they change reaches every row through the datasets' digest, which a
kept board is checked against.

A submission deleted records itself (from ``OLD``), so a reader drops its row; no
foreign key, since a deleted submission's jobs and results are deleted after it, and
their triggers then find no submission to record. The key is (task, submission): a
submission moved to another task is recorded under both.

The triggers keep 0017's names and events; only their bodies change (on PostgreSQL the
functions are replaced, on SQLite the triggers are made again).
"""

from alembic import op
import sqlalchemy as sa


revision = '0018_board_row_versions'
down_revision = '0017_board_version'
branch_labels = None
depends_on = None

#: Per table: the task ids one row of it belongs to, as a query over ``{row}`` (0017's).
_TASKS = {
    'submissions': 'SELECT {row}.task_id AS task_id',
    'jobs': 'SELECT task_id FROM submissions WHERE id = {row}.submission_id',
    'results': 'SELECT task_id FROM submissions WHERE id = {row}.submission_id',
    'users': 'SELECT task_id FROM submissions WHERE user_id = {row}.id',
}

#: Per table: the submissions (id, task) whose board row one row of it is read into.
_ROWS = {
    'submissions': 'SELECT {row}.id AS id, {row}.task_id AS task_id',
    'jobs': 'SELECT id, task_id FROM submissions WHERE id = {row}.submission_id',
    'results': 'SELECT id, task_id FROM submissions WHERE id = {row}.submission_id',
    'users': 'SELECT id, task_id FROM submissions WHERE user_id = {row}.id',
}

#: 0017's triggers on those tables: (table, timing, event, columns an update must touch).
TRIGGERS = [
    *(
        (table, 'AFTER', event, None)
        for table in ('submissions', 'results')
        for event in ('INSERT', 'UPDATE', 'DELETE')
    ),
    ('jobs', 'AFTER', 'INSERT', None),
    ('jobs', 'AFTER', 'UPDATE', 'status, submission_id, dataset_id'),
    ('jobs', 'AFTER', 'DELETE', None),
    ('users', 'AFTER', 'UPDATE', 'name'),
    ('users', 'BEFORE', 'DELETE', None),
]


def _name(table: str, event: str) -> str:
    return f'board_version_{table}_{event.lower()}'


def _changed(queries: dict[str, str], table: str, event: str) -> str:
    rows = {'INSERT': ['NEW'], 'UPDATE': ['NEW', 'OLD'], 'DELETE': ['OLD']}[event]
    return ' UNION '.join(queries[table].format(row=row) for row in rows)


def _bump(table: str, event: str) -> str:
    """0017's statement: every task the row (before and after) belongs to, counted up once."""
    return (
        'INSERT INTO board_versions (task_id, version) '
        f'SELECT DISTINCT task_id, 1 FROM ({_changed(_TASKS, table, event)}) AS changed '
        'WHERE task_id IS NOT NULL '
        'ON CONFLICT (task_id) DO UPDATE SET version = board_versions.version + 1'
    )


def _record(table: str, event: str) -> str:
    """Each submission the row is read into, at the counter its task was just bumped to."""
    return (
        'INSERT INTO board_row_versions (task_id, submission_id, version) '
        f'SELECT changed.task_id, changed.id, board_versions.version '
        f'FROM ({_changed(_ROWS, table, event)}) AS changed '
        'JOIN board_versions ON board_versions.task_id = changed.task_id WHERE true '
        'ON CONFLICT (task_id, submission_id) DO UPDATE SET version = excluded.version'
    )


def _event(event: str, columns: str | None) -> str:
    return f'{event} OF {columns}' if columns else event


def _install(bodies: dict[tuple[str, str], list[str]]) -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    for table, timing, event, columns in TRIGGERS:
        name = _name(table, event)
        statements = ' '.join(f'{s};' for s in bodies[table, event])
        if postgres:
            returned = 'OLD' if event == 'DELETE' else 'NEW'
            op.execute(
                f'CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ '
                f'BEGIN {statements} RETURN {returned}; END $$'
            )
        else:
            op.execute(f'DROP TRIGGER IF EXISTS {name}')
            op.execute(
                f'CREATE TRIGGER {name} {timing} {_event(event, columns)} ON {table} '
                f'FOR EACH ROW BEGIN {statements} END'
            )


def upgrade() -> None:
    op.create_table(
        'board_row_versions',
        sa.Column('task_id', sa.String(length=64), nullable=False),
        sa.Column('submission_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('task_id', 'submission_id'),
    )
    op.create_index(
        'ix_board_row_versions_task_version', 'board_row_versions', ['task_id', 'version']
    )
    # Every submission as of now, at its task's counter: a board kept from before this
    # migration is read again whole.
    op.execute(
        'INSERT INTO board_row_versions (task_id, submission_id, version) '
        'SELECT submissions.task_id, submissions.id, COALESCE(board_versions.version, 0) '
        'FROM submissions LEFT JOIN board_versions '
        'ON board_versions.task_id = submissions.task_id'
    )
    _install(
        {(t, e): [_bump(t, e), _record(t, e)] for t, _timing, e, _columns in TRIGGERS}
    )


def downgrade() -> None:
    _install({(t, e): [_bump(t, e)] for t, _timing, e, _columns in TRIGGERS})
    op.drop_index('ix_board_row_versions_task_version', table_name='board_row_versions')
    op.drop_table('board_row_versions')
