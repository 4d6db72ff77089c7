"""A process with nothing in memory (a server started again, a board evicted) reads each
stored row still current as it is stored: no query over its submission's jobs and
results, no hashing of its facts (``leaderboard.aggregates._stored_board``, migration
``0019_board_entries_read_at``).

A stored row is current where its submission has no write recorded after the counter
value it was marked at (``board_row_versions``) and the datasets are those it was read
under. Each test compares with the board read from nothing (a context that keeps nothing
reads every row's facts), on SQLite and the real PostgreSQL where the write allows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select, update

from evalboard.core.context import Context
from evalboard.core.tables import BoardEntry
from leaderboard import aggregates
from tests.leaderboard.seeding import Seeded, seed
from tests.leaderboard.test_board_cache import _board, _from_scratch, _uncached
from tests.leaderboard.test_board_version import (
    DATASET_WRITES,
    ONE_ROW_WRITES,
    _counter,
    _scans,
    _statements,
    _whole_scans,
)


def _restarted(ctx: Context) -> Context:
    """Another context on the same database, nothing in memory: a server started again."""
    return Context.from_settings(ctx.settings)


def _read_restarted(ctx: Context) -> tuple[dict[str, object], list[str]]:
    """The board as a server started again reads it, and the statements it ran."""
    restarted = _restarted(ctx)
    try:
        with _statements(restarted) as seen:
            board = _board(restarted)
        return board, seen
    finally:
        assert restarted.background.wait_idle(timeout=60)  # the rows it marks, marked
        restarted.db.dispose()


def test_a_restarted_server_reads_the_stored_rows_as_they_are(
    any_ctx: Context, tmp_path: Path
) -> None:
    seeded = seed(any_ctx, tmp_path)
    _board(seeded.ctx)  # every row derived, stored and marked current
    board, seen = _read_restarted(seeded.ctx)
    assert not _scans(seen), "the facts of a row stored current were queried"
    assert any("board_row_versions" in s and "board_entries" in s for s in seen)
    assert board == _from_scratch(seeded.ctx)


@pytest.mark.parametrize(
    "write", ONE_ROW_WRITES, ids=[w.__name__.strip("_") for w in ONE_ROW_WRITES]
)
def test_after_a_write_a_restarted_server_reads_only_the_rows_it_reached(
    any_ctx: Context, tmp_path: Path, write: Callable[[Seeded, Path], None]
) -> None:
    seeded = seed(any_ctx, tmp_path)
    _board(seeded.ctx)
    write(seeded, tmp_path)
    board, seen = _read_restarted(seeded.ctx)
    assert not _whole_scans(seen), "the whole board was read again"
    assert board == _from_scratch(seeded.ctx)
    again, _ = _read_restarted(seeded.ctx)  # and what it stored or marked reads the same
    assert again == board


@pytest.mark.parametrize(
    "write", DATASET_WRITES, ids=[w.__name__.strip("_") for w in DATASET_WRITES]
)
def test_after_the_datasets_change_no_stored_row_is_taken_as_it_is(
    seeded: Seeded, tmp_path: Path, write: Callable[[Seeded, Path], None]
) -> None:
    _board(seeded.ctx)
    write(seeded, tmp_path)
    board, seen = _read_restarted(seeded.ctx)
    assert _scans(seen), "rows stored under other datasets were taken as they are"
    assert board == _from_scratch(seeded.ctx)


def test_rows_stored_before_the_migration_are_read_from_their_facts_once(
    seeded: Seeded,
) -> None:
    _board(seeded.ctx)
    with seeded.ctx.db.session() as session:  # as migration 0019 leaves them
        session.execute(update(BoardEntry).values(read_at=None, digest=None))
    first, seen = _read_restarted(seeded.ctx)
    assert _scans(seen)
    assert first == _from_scratch(seeded.ctx)
    with seeded.ctx.db.session() as session:
        marks = set(session.execute(select(BoardEntry.read_at, BoardEntry.digest)).all())
    assert len(marks) == 1  # every row marked, alike
    assert next(iter(marks))[0] == _counter(seeded.ctx)
    second, seen = _read_restarted(seeded.ctx)
    assert not _scans(seen)
    assert second == first


def test_a_row_marked_before_its_submissions_last_write_is_read_again(
    any_ctx: Context, tmp_path: Path
) -> None:
    """As a slow request that read a row's facts before a write, and stored it after a
    faster one stored the newer row, leaves it: marked at the counter it read."""
    seeded = seed(any_ctx, tmp_path)
    _board(seeded.ctx)
    roberta = seeded.submissions["roberta-large"]
    with seeded.ctx.db.session() as session:
        session.execute(
            update(BoardEntry).where(BoardEntry.submission_id == roberta).values(read_at=0)
        )
    board, seen = _read_restarted(seeded.ctx)
    assert _scans(seen) and not _whole_scans(seen)  # that row's facts alone
    assert board == _from_scratch(seeded.ctx)


def test_marking_never_moves_a_row_back_nor_marks_one_replaced(
    any_ctx: Context, tmp_path: Path
) -> None:
    seeded = seed(any_ctx, tmp_path)
    _board(seeded.ctx)
    ctx, roberta = seeded.ctx, seeded.submissions["roberta-large"]

    def stored() -> tuple[str, str | None, int | None]:
        query = select(BoardEntry.source, BoardEntry.digest, BoardEntry.read_at)
        with ctx.db.session() as session:
            source, digest, read_at = session.execute(
                query.where(BoardEntry.submission_id == roberta)
            ).one()
        return source, digest, read_at

    source, digest, read_at = stored()
    assert read_at is not None and digest is not None
    later = aggregates._Read(read_at + 5, digest)
    aggregates._mark_current(ctx, {roberta: source}, aggregates._Read(read_at - 1, digest))
    aggregates._mark_current(ctx, {roberta: "a digest since replaced"}, later)
    assert stored() == (source, digest, read_at)
    aggregates._mark_current(ctx, {roberta: source}, later)
    assert stored() == (source, digest, read_at + 5)


def test_a_context_that_keeps_nothing_reads_every_rows_facts(seeded: Seeded) -> None:
    """The reference the board tests compare with (``EVALBOARD_CACHE_BYTES=0``): it never
    takes a stored row as it is, nor marks one."""
    _board(seeded.ctx)  # every row stored current
    reference = _uncached(seeded.ctx)
    try:
        with _statements(reference) as seen:
            _board(reference)
        assert _whole_scans(seen)
        with seeded.ctx.db.session() as session:
            session.execute(update(BoardEntry).values(read_at=None))
        _board(reference)
    finally:
        reference.db.dispose()
    with seeded.ctx.db.session() as session:
        assert set(session.scalars(select(BoardEntry.read_at))) == {None}
