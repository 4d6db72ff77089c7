"""The migrations build exactly the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import delete, inspect, select, text, update

from evalboard.core.context import Context
from evalboard.core.db import migrate
from evalboard.core.tables import (
    Base,
    BoardVersion,
    Dataset,
    Job,
    Phase,
    PhaseDataset,
    Result,
    Submission,
    Task,
    User,
)


def test_migrations_match_the_models(any_ctx: Context) -> None:
    migrate(any_ctx.db.engine)
    with any_ctx.db.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == [], "run `alembic revision --autogenerate` after changing tables.py"


def test_first_use_migrates_and_a_second_migrate_is_a_noop(any_ctx: Context) -> None:
    with any_ctx.db.session():
        pass
    tables = set(inspect(any_ctx.db.engine).get_table_names())
    assert {"tasks", "datasets", "submissions", "jobs", "results", "alembic_version"} <= tables
    migrate(any_ctx.db.engine)


#: The tables whose writes change a board, and the events that bump its stored version
#: (migration ``0017_board_version``). A SQLite batch migration that copies one of these
#: tables drops its triggers: this catches it.
BOARD_TRIGGERS = {
    *(
        f"board_version_{table}_{event}"
        for table in ("submissions", "results", "datasets", "phases", "phase_datasets", "jobs")
        for event in ("insert", "update", "delete")
    ),
    "board_version_tasks_update",
    "board_version_users_update",
    "board_version_users_delete",
}


def _triggers(ctx: Context) -> set[str]:
    query = (
        "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
        if ctx.db.engine.dialect.name == "postgresql"
        else "SELECT name FROM sqlite_master WHERE type = 'trigger'"
    )
    with ctx.db.engine.connect() as connection:
        return {name for (name,) in connection.execute(text(query))}


def test_every_board_version_trigger_is_there_at_head(any_ctx: Context) -> None:
    migrate(any_ctx.db.engine)
    assert BOARD_TRIGGERS <= _triggers(any_ctx)


def _version(ctx: Context, task_id: str) -> int:
    with ctx.db.session() as session:
        found = session.get(BoardVersion, task_id)
        return found.version if found is not None else 0


def test_each_write_bumps_its_tasks_board_version_in_its_transaction(any_ctx: Context) -> None:
    ctx = any_ctx
    seen = {"a": 0, "b": 0}

    def bumped(task_id: str) -> None:
        now = {t: _version(ctx, t) for t in seen}
        assert now[task_id] > seen[task_id], f"no bump on task {task_id}"
        assert all(now[t] == seen[t] for t in seen if t != task_id), "another task bumped"
        seen.update(now)

    with ctx.db.session() as session:
        user = User(name="ada")
        session.add(user)
        session.flush()
        session.add_all(
            Task(id=t, name=t, spec={}, default_weights={}, owner_id=user.id) for t in seen
        )
    seen.update({t: _version(ctx, t) for t in seen})
    with ctx.db.session() as session:
        session.add(Dataset(task_id="a", name="test", sha256="0" * 64, rows=1, artifact_key="k"))
    bumped("a")
    with ctx.db.session() as session:
        dataset = session.scalars(select(Dataset).where(Dataset.task_id == "a")).one()
        submission = Submission(
            task_id="a",
            user_id=user.id,
            name="m",
            bundle_sha256="0" * 64,
            artifact_key="k",
            manifest={},
        )
        session.add(submission)
        session.flush()
        ids = (submission.id, dataset.id)
    bumped("a")
    with ctx.db.session() as session:
        job = Job(submission_id=ids[0], dataset_id=ids[1], status="running")
        session.add(job)
        session.flush()
        job_id = job.id
    bumped("a")
    with ctx.db.session() as session:  # a worker's progress: not on the board
        session.execute(update(Job).where(Job.id == job_id).values(progress=0.5))
    assert _version(ctx, "a") == seen["a"]
    with ctx.db.session() as session:  # the job finishes: its status and result at once
        session.execute(update(Job).where(Job.id == job_id).values(status="finished"))
        session.add(
            Result(
                job_id=job_id, submission_id=ids[0], dataset_id=ids[1], metrics={}, provenance={}
            )
        )
    bumped("a")
    with ctx.db.session() as session:
        session.execute(update(Dataset).where(Dataset.id == ids[1]).values(weight=2.0))
    bumped("a")
    with ctx.db.session() as session:
        session.execute(update(User).where(User.id == user.id).values(session_version=1))
    assert _version(ctx, "a") == seen["a"]  # signing out shows nowhere
    with ctx.db.session() as session:
        session.execute(update(User).where(User.id == user.id).values(name="ada-l"))
    bumped("a")
    with ctx.db.session() as session:
        session.execute(update(Task).where(Task.id == "b").values(default_weights={"perf": 2}))
    bumped("b")
    with ctx.db.session() as session:
        phase = Phase(task_id="a", name="final", submission_limit=1)
        session.add(phase)
        session.flush()
        phase_id = phase.id
    bumped("a")
    with ctx.db.session() as session:
        session.add(PhaseDataset(phase_id=phase_id, dataset_id=ids[1]))
    bumped("a")
    with ctx.db.session() as session:
        session.execute(update(Phase).where(Phase.id == phase_id).values(revealed=True))
    bumped("a")
    with ctx.db.session() as session:  # cascades to its job and result
        session.execute(delete(Submission).where(Submission.id == ids[0]))
    bumped("a")
    with ctx.db.session() as session:  # a deleted task's row stays: the counter never repeats
        session.execute(delete(Task).where(Task.id == "a"))
    assert _version(ctx, "a") >= seen["a"]
