"""The board's stored version: every write the board reads bumps it, and a warm board
that reads only that counter still follows every change.

``board_versions`` is bumped by database triggers (migration ``0017_board_version``) in
the writing transaction; a warm request reads that one row and, while it holds the value
the cached board was read under, skips the query over every job and result
(``leaderboard.aggregates.load_board``). Each test here makes one kind of write, checks
that the counter moved, and compares the warm board with one ranked from nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, event, insert, select, text, update
from sqlalchemy.orm import Session

from datasets_registry import add_dataset, set_dataset_weight
from evalboard.core.context import Context
from evalboard.core.tables import BoardEntry, BoardVersion, Job, Result, Submission, Task, User
from leaderboard import aggregates
from leaderboard.accounts import principal_for_token
from leaderboard.entry import ModelEntry
from leaderboard.phases import create_phase, reveal_phase
from leaderboard.table import load_table
from tests.conftest import make_settings
from tests.helpers.tasks import write_jsonl
from tests.leaderboard.conftest import serve
from tests.leaderboard.seeding import OTHER_TASK, TASK, Seeded, seed
from tests.leaderboard.test_board_cache import _board, _from_scratch


def _counter(ctx: Context, task_id: str = TASK) -> int | None:
    with ctx.db.session() as session:
        return session.scalar(select(BoardVersion.version).where(BoardVersion.task_id == task_id))


@contextmanager
def _statements(ctx: Context) -> Iterator[list[str]]:
    """Every SQL statement the context's engine runs inside the block."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(ctx.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(ctx.db.engine, "before_cursor_execute", record)


def _scans(statements: list[str]) -> list[str]:
    return [s for s in statements if "GROUP BY" in s and "jobs" in s]


def _roberta_job(ctx: Context, seeded: Seeded) -> int:
    with ctx.db.session() as session:
        job_id = session.scalars(
            select(Job.id)
            .join(Result, Result.job_id == Job.id)
            .where(Job.submission_id == seeded.submissions["roberta-large"])
        ).first()
    assert job_id is not None
    return job_id


def _result_stored_again(seeded: Seeded, _tmp: Path) -> None:
    """A job's result taken away (sent back to run again), then stored as it finishes."""
    ctx = seeded.ctx
    job_id = _roberta_job(ctx, seeded)
    with ctx.db.session() as session:
        row = session.execute(select(Result.__table__).where(Result.job_id == job_id)).one()
        session.execute(delete(Result).where(Result.job_id == job_id))
        session.execute(update(Job).where(Job.id == job_id).values(status="running"))
    roberta = seeded.submissions["roberta-large"]
    board = _board(ctx)
    assert roberta in {p["submission_id"] for p in board["pending"]}
    assert board == _from_scratch(ctx)
    with ctx.db.session() as session:
        session.execute(update(Job).where(Job.id == job_id).values(status="finished"))
        session.execute(insert(Result.__table__).values(**row._asdict()))


def _unpublished(seeded: Seeded, _tmp: Path) -> None:
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == seeded.submissions["roberta-large"])
            .values(published=False)
        )


def _deleted(seeded: Seeded, _tmp: Path) -> None:
    with seeded.ctx.db.session() as session:
        session.execute(
            delete(Submission).where(Submission.id == seeded.submissions["roberta-large"])
        )


def _renamed_in_raw_sql(seeded: Seeded, _tmp: Path) -> None:
    """Past the ORM altogether: the trigger still sees it."""
    with seeded.ctx.db.session() as session:
        session.execute(
            text("UPDATE submissions SET name = 'roberta-xl' WHERE id = :id"),
            {"id": seeded.submissions["roberta-large"]},
        )


def _card_edited(seeded: Seeded, _tmp: Path) -> None:
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == seeded.submissions["roberta-large"])
            .values(card={"license": "mit", "params": 355_000_000})
        )


def _owner_renamed(seeded: Seeded, _tmp: Path) -> None:
    with seeded.ctx.db.session() as session:
        session.execute(update(User).where(User.name == "alice").values(name="alicia"))


def _dataset_added(seeded: Seeded, tmp: Path) -> None:
    path = write_jsonl(
        tmp / "round-9.jsonl",
        [{"uid": f"r9-{i}", "statement": "fine", "label": "positive"} for i in range(5)],
    )
    add_dataset(seeded.ctx, task_id=TASK, name="round-9", path=path, round=9)


def _dataset_reweighted(seeded: Seeded, _tmp: Path) -> None:
    set_dataset_weight(seeded.ctx, task_id=TASK, name="test", weight=0.1)


def _phase_created(seeded: Seeded, _tmp: Path) -> None:
    owner = principal_for_token(seeded.ctx, seeded.tokens["owner"])
    assert owner is not None
    create_phase(
        seeded.ctx, owner, TASK, name="final", datasets=["hidden-test"], submission_limit=1
    )


def _phase_revealed(seeded: Seeded, tmp: Path) -> None:
    _phase_created(seeded, tmp)
    _board(seeded.ctx)  # warm under the open phase
    owner = principal_for_token(seeded.ctx, seeded.tokens["owner"])
    assert owner is not None
    reveal_phase(seeded.ctx, owner, TASK, "final", public=True)


def _default_weights_changed(seeded: Seeded, _tmp: Path) -> None:
    with seeded.ctx.db.session() as session:
        task = session.get(Task, TASK)
        assert task is not None
        weights = {**task.default_weights}
        weights[next(iter(weights))] = 9.0
        session.execute(update(Task).where(Task.id == TASK).values(default_weights=weights))


#: Writes that change some submissions' rows and not the datasets: read again alone.
ONE_ROW_WRITES: list[Callable[[Seeded, Path], None]] = [
    _result_stored_again,
    _unpublished,
    _deleted,
    _renamed_in_raw_sql,
    _card_edited,
    _owner_renamed,
    _default_weights_changed,  # no row at all
]
#: Writes to what every row depends on: the datasets, and which of them count.
DATASET_WRITES: list[Callable[[Seeded, Path], None]] = [
    _dataset_added,
    _dataset_reweighted,
    _phase_created,
    _phase_revealed,
]
WRITES = ONE_ROW_WRITES + DATASET_WRITES


@pytest.mark.parametrize("write", WRITES, ids=[w.__name__.strip("_") for w in WRITES])
def test_each_write_bumps_the_version_and_the_warm_board_follows(
    seeded: Seeded, tmp_path: Path, write: Callable[[Seeded, Path], None]
) -> None:
    before = _board(seeded.ctx)
    _board(seeded.ctx)  # warm: the version row read, nothing scanned
    counter = _counter(seeded.ctx)
    assert counter is not None
    write(seeded, tmp_path)
    assert (_counter(seeded.ctx) or 0) > counter, "the write did not bump the board's version"
    after = _board(seeded.ctx)
    assert after == _from_scratch(seeded.ctx)
    if write is not _result_stored_again:  # which restores the board it started from
        assert after != before
    assert _board(seeded.ctx) == after  # and warm again under the new version


def test_a_warm_board_reads_the_version_row_and_scans_nothing(seeded: Seeded) -> None:
    with _statements(seeded.ctx) as cold:
        _board(seeded.ctx)
    with _statements(seeded.ctx) as warm:
        _board(seeded.ctx)
    assert _scans(cold), "the cold board did not run the board query"
    assert not _scans(warm), warm
    assert any("board_versions" in s for s in warm)


def test_a_write_from_another_process_reaches_a_warm_board(seeded: Seeded) -> None:
    """Another context on the same database (its own engine and cache) stands for a
    worker or a second server process: the version is in the database, not in memory."""
    _board(seeded.ctx)
    other = Context.from_settings(seeded.ctx.settings)
    try:
        _board(other)
        with other.db.session() as session:
            session.execute(
                update(Submission)
                .where(Submission.id == seeded.submissions["roberta-large"])
                .values(name="renamed-elsewhere")
            )
        names = {r["name"] for r in _board(seeded.ctx)["rows"]}
        assert "renamed-elsewhere" in names
        assert _board(seeded.ctx) == _board(other) == _from_scratch(seeded.ctx)
    finally:
        other.db.dispose()


def test_a_workers_progress_and_lease_writes_leave_the_version(seeded: Seeded) -> None:
    """What a worker writes while a job runs does not show on the board: no new version,
    so a busy worker does not make every board request scan again."""
    job_id = _roberta_job(seeded.ctx, seeded)
    counter = _counter(seeded.ctx)
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(progress=0.5, examples_done=3, lease_owner="worker-1", log_tail="step 3")
        )
    assert _counter(seeded.ctx) == counter


def test_a_rolled_back_write_leaves_the_version(seeded: Seeded) -> None:
    counter = _counter(seeded.ctx)
    with pytest.raises(RuntimeError), seeded.ctx.db.session() as session:
        session.execute(update(Submission).values(name="never"))
        raise RuntimeError("abandoned")
    assert _counter(seeded.ctx) == counter
    assert "never" not in {r["name"] for r in _board(seeded.ctx)["rows"]}


def test_a_write_to_one_task_leaves_the_other_tasks_version(seeded: Seeded) -> None:
    other = _counter(seeded.ctx, OTHER_TASK)
    _renamed_in_raw_sql(seeded, Path())
    assert _counter(seeded.ctx, OTHER_TASK) == other


def test_a_write_racing_the_board_query_is_not_lost(seeded: Seeded) -> None:
    """Another process renames a model just after this request's board query read the
    rows: the board this request caches is filed under the counter read before the
    query, so the next request reads everything again and shows the rename."""
    roberta = seeded.submissions["roberta-large"]
    _board(seeded.ctx)
    with seeded.ctx.db.session() as session:  # a new counter: the next request reads all
        session.execute(
            update(Submission)
            .where(Submission.id == seeded.submissions["bow-logreg"])
            .values(name="bow-2")
        )
    writer = Context.from_settings(seeded.ctx.settings)
    fired: list[str] = []

    def write_after_the_query(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if _scans([statement]) and not fired:
            fired.append(statement)
            with writer.db.session() as session:
                session.execute(
                    update(Submission).where(Submission.id == roberta).values(name="in-between")
                )

    event.listen(seeded.ctx.db.engine, "after_cursor_execute", write_after_the_query)
    try:
        _board(seeded.ctx)
    finally:
        event.remove(seeded.ctx.db.engine, "after_cursor_execute", write_after_the_query)
        writer.db.dispose()
    assert fired
    after = _board(seeded.ctx)
    assert "in-between" in {r["name"] for r in after["rows"]}
    assert after == _from_scratch(seeded.ctx)


def _add_copy(session: Session, of: int, name: str) -> None:
    """A new submission: submission ``of``'s row under a new id and ``name``."""
    columns = [c for c in Submission.__table__.c if c.name != "id"]
    row = session.execute(select(*columns).where(Submission.id == of)).one()
    session.execute(insert(Submission.__table__).values({**row._asdict(), "name": name}))


def _whole_scans(statements: list[str]) -> list[str]:
    """The board queries over every submission of a task (not over a list of them)."""
    return [s for s in _scans(statements) if "submissions.id IN" not in s]


@pytest.mark.parametrize(
    "write", ONE_ROW_WRITES, ids=[w.__name__.strip("_") for w in ONE_ROW_WRITES]
)
def test_a_write_to_a_few_submissions_reads_only_those_again(
    any_ctx: Context, tmp_path: Path, write: Callable[[Seeded, Path], None]
) -> None:
    """The triggers record which submissions each bump changed (migration
    ``0018_board_row_versions``), on SQLite and the real PostgreSQL: the next request
    reads those rows, not the board."""
    seeded = seed(any_ctx, tmp_path)
    _board(seeded.ctx)
    write(seeded, tmp_path)
    with _statements(seeded.ctx) as next_request:
        after = _board(seeded.ctx)
    assert not _whole_scans(next_request), "the whole board was read again"
    assert any("board_row_versions" in s for s in next_request)
    assert after == _from_scratch(seeded.ctx)


def test_a_dataset_added_reads_the_whole_board_again(seeded: Seeded, tmp_path: Path) -> None:
    """Every row depends on the datasets: their digest changed, nothing kept is reused."""
    _board(seeded.ctx)
    _dataset_added(seeded, tmp_path)
    with _statements(seeded.ctx) as next_request:
        after = _board(seeded.ctx)
    assert _whole_scans(next_request)
    assert after == _from_scratch(seeded.ctx)


def test_more_changed_submissions_than_worth_reading_alone_read_the_board(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aggregates, "_CHANGED_ALONE", 1)
    _board(seeded.ctx)
    with seeded.ctx.db.session() as session:
        session.execute(text("UPDATE submissions SET name = name || '-2'"))
    with _statements(seeded.ctx) as next_request:
        after = _board(seeded.ctx)
    assert _whole_scans(next_request)
    assert after == _from_scratch(seeded.ctx)


def test_a_submission_committed_out_of_id_order_takes_its_place(seeded: Seeded) -> None:
    """Two writers at once may commit a later id first: the rows stay in submission order
    (what a first reader sees), the lower id read in after the higher one."""
    ctx = seeded.ctx
    gone = min(seeded.submissions.values())
    with ctx.db.session() as session:
        row = session.execute(select(Submission.__table__).where(Submission.id == gone)).one()
        session.execute(delete(Submission).where(Submission.id == gone))
    _board(ctx)  # kept without it
    with ctx.db.session() as session:  # back under its old id, below every kept one
        session.execute(insert(Submission.__table__).values(**row._asdict()))
    with _statements(ctx) as next_request:
        after = _board(ctx)
    assert not _whole_scans(next_request)
    assert gone in {r["submission_id"] for r in after["rows"] + after["pending"]}
    assert after == _from_scratch(ctx)


def test_each_changed_submission_is_recorded_on_both_databases(
    any_ctx: Context, tmp_path: Path
) -> None:
    """On SQLite and the real PostgreSQL: a board kept by one process follows a rename,
    a deletion and a new model written by another, reading only those rows again."""
    seeded = seed(any_ctx, tmp_path)
    _board(any_ctx)
    other = Context.from_settings(any_ctx.settings)
    try:
        with other.db.session() as session:
            session.execute(
                update(Submission)
                .where(Submission.id == seeded.submissions["roberta-large"])
                .values(name="roberta-renamed")
            )
            session.execute(
                delete(Submission).where(Submission.id == seeded.submissions["bow-logreg"])
            )
            _add_copy(session, seeded.submissions["roberta-large"], "newcomer")
        with _statements(any_ctx) as next_request:
            after = _board(any_ctx)
        assert not _whole_scans(next_request)
        names = {r["name"] for r in after["rows"] + after["pending"]}
        assert "roberta-renamed" in names and "newcomer" in names
        assert "bow-logreg" not in names
        assert after == _board(other) == _from_scratch(any_ctx)
    finally:
        other.db.dispose()


def test_writers_and_readers_at_once_end_on_the_board_read_from_nothing(
    any_ctx: Context, tmp_path: Path
) -> None:
    """Real threads on SQLite and the real PostgreSQL: two writers (another context, as a
    worker or a second server would be) rename, add and delete submissions while two
    readers keep reading the board from their kept rows; once the writers stop, the
    board a reader reads is the one read from nothing."""
    seeded = seed(any_ctx, tmp_path)
    writer = Context.from_settings(any_ctx.settings)
    ids = sorted(seeded.submissions.values())
    stop = threading.Event()
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(12):
                with writer.db.session() as session:
                    session.execute(
                        update(Submission)
                        .where(Submission.id == ids[(n + i) % len(ids)])
                        .values(name=f"renamed-{n}-{i}")
                    )
                    if i % 3 == 0:
                        _add_copy(session, ids[0], f"new-{n}-{i}")
                if i == 6:
                    with writer.db.session() as session:
                        session.execute(delete(Submission).where(Submission.id == ids[-1 - n]))
        except BaseException as failure:  # noqa: BLE001 - raised in the test's thread
            failures.append(failure)

    def read() -> None:
        try:
            while not stop.is_set():
                _board(any_ctx)
        except BaseException as failure:  # noqa: BLE001 - raised in the test's thread
            failures.append(failure)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    try:
        for thread in readers + writers:
            thread.start()
        for thread in writers:
            thread.join()
    finally:
        stop.set()
        for thread in readers:
            thread.join()
        writer.db.dispose()
    assert not failures, failures
    after = _board(any_ctx)
    names = {r["name"] for r in after["rows"] + after["pending"]}
    assert {"new-0-9", "new-1-9"} <= names
    assert after == _from_scratch(any_ctx)


def _whole_board(url: str) -> list[dict[str, Any]]:
    """Every page of the task's board as a server answers it (its time stamps aside)."""
    pages, offset = [], 0
    while True:
        answer = httpx.get(f"{url}/tasks/{TASK}/leaderboard?limit=1000&offset={offset}", timeout=60)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        pages.append({k: v for k, v in page.items() if k not in ("computed_at", "generated_at")})
        offset += 1000
        if offset >= page["total"]:
            return pages


@pytest.mark.postgres
@pytest.mark.slow
def test_two_servers_follow_another_processs_writes_on_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two real ``evalboard serve`` processes on one PostgreSQL database, read by six
    threads while this process renames, deletes and adds models and sends jobs back to
    run: every answer is 200, and afterwards both serve the board a third server, started
    on nothing kept, serves."""
    settings = make_settings(tmp_path, postgres_url)
    ctx = Context.from_settings(settings)
    seeded = seed(ctx, tmp_path)
    env = {"EVALBOARD_DATABASE_URL": postgres_url}
    with ExitStack() as servers:
        servers.callback(ctx.db.dispose)
        urls = [
            servers.enter_context(
                serve(
                    settings.data_dir, tmp_path / f"server-{n}.log", env=env, args=("--no-worker",)
                )
            )[0]
            for n in range(2)
        ]
        for url in urls:
            _whole_board(url)  # each keeps the board
        stop = threading.Event()
        codes: list[int] = []

        def read(url: str) -> None:
            with httpx.Client(timeout=60) as client:
                while not stop.is_set():
                    for query in ("", "?limit=3", "?weights=perf:3,throughput:1"):
                        codes.append(
                            client.get(f"{url}/tasks/{TASK}/leaderboard{query}").status_code
                        )

        readers = [threading.Thread(target=read, args=(url,)) for url in urls for _ in range(3)]
        for thread in readers:
            thread.start()
        try:
            ids = sorted(seeded.submissions.values())
            for i in range(12):
                with ctx.db.session() as session:
                    session.execute(
                        update(Submission)
                        .where(Submission.id == ids[i % len(ids)])
                        .values(name=f"renamed-{i}")
                    )
                    if i == 4:
                        session.execute(
                            update(Job).where(Job.submission_id == ids[1]).values(status="running")
                        )
                    if i == 8:
                        session.execute(delete(Submission).where(Submission.id == ids[-1]))
                    if i % 3 == 0:
                        _add_copy(session, ids[0], f"new-{i}")
                time.sleep(0.05)
        finally:
            stop.set()
            for thread in readers:
                thread.join()
        assert codes and set(codes) == {200}, sorted(set(codes))
        boards = [_whole_board(url) for url in urls]
        fresh, _ = servers.enter_context(
            serve(settings.data_dir, tmp_path / "server-fresh.log", env=env, args=("--no-worker",))
        )
        assert boards[0] == boards[1] == _whole_board(fresh)


def _store_at_once(
    ctx: Context,
    rows: list[tuple[int, tuple[str, ModelEntry]]],
    barrier: threading.Barrier,
    failures: list[BaseException],
) -> None:
    barrier.wait()
    try:
        aggregates._store(ctx, TASK, dict(rows), aggregates._Read(_counter(ctx), "digest"))
    except BaseException as failure:  # noqa: BLE001 - raised in the test's thread
        failures.append(failure)


@pytest.mark.postgres
def test_two_requests_storing_the_same_rows_in_opposite_orders_both_finish(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two requests that derived the same new rows (in whatever order their query gave)
    store them at once on PostgreSQL: in id order, one waits for the other and then finds
    them stored; in opposite orders each waited on the other's rows until PostgreSQL
    stopped one (deadlock detected: a 503 for a board read)."""
    ctx = Context.from_settings(make_settings(tmp_path, postgres_url))
    try:
        seed(ctx, tmp_path)
        models = {m.submission_id: m for m in load_table(ctx, TASK).models}
        with ctx.db.session() as session:
            sources = {
                sid: source
                for sid, source in session.execute(
                    select(BoardEntry.submission_id, BoardEntry.source)
                )
            }
        rows = [(sid, (sources[sid], models[sid])) for sid in sorted(models)]
        for _ in range(8):
            with ctx.db.session() as session:
                session.execute(delete(BoardEntry))
            barrier = threading.Barrier(2)
            failures: list[BaseException] = []
            threads = [
                threading.Thread(target=_store_at_once, args=(ctx, order, barrier, failures))
                for order in (rows, rows[::-1])
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not failures, failures
            with ctx.db.session() as session:
                assert len(session.scalars(select(BoardEntry.submission_id)).all()) == len(rows)
    finally:
        ctx.db.dispose()


def test_a_model_deleted_between_the_board_query_and_its_stored_row_is_read_again(
    seeded: Seeded,
) -> None:
    """A server with nothing kept reads the stored rows it cannot take as they are
    (here: none marked current, as rows stored before migration 0019) after the board
    query: a model deleted in between (its stored row goes with it) makes the board read
    again, and the answer is the board without it, not an error."""
    _board(seeded.ctx)  # every row stored
    with seeded.ctx.db.session() as session:
        session.execute(update(BoardEntry).values(read_at=None))
    reader = Context.from_settings(seeded.ctx.settings)  # a server started again
    roberta = seeded.submissions["roberta-large"]
    fired: list[str] = []

    def delete_after_the_query(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if _scans([statement]) and not fired:
            fired.append(statement)
            with seeded.ctx.db.session() as session:
                session.execute(delete(Submission).where(Submission.id == roberta))

    event.listen(reader.db.engine, "after_cursor_execute", delete_after_the_query)
    try:
        after = _board(reader)
    finally:
        event.remove(reader.db.engine, "after_cursor_execute", delete_after_the_query)
        reader.db.dispose()
    assert fired
    assert roberta not in {r["submission_id"] for r in after["rows"] + after["pending"]}
    assert after == _from_scratch(seeded.ctx)
