"""A write to a submission between the board query and the derivation of its row
(``leaderboard.aggregates._read_board``): the query read the submission's facts as they
were (A), the derivation reads them as they are (B), in statements of its own. Kept or
stored under the digest of A, the row derived from B would be served for good once the
submission is back at A (a card edited and edited back, a result taken away and stored
again, a rename undone): its digest matches again. Such a row is served once, neither
stored nor kept under A's digest (``aggregates._written_since``: the triggers recorded
the write above the counter read before the query), and derived again by the next read.

Each test forces the interleaving (the write runs just before ``_derive`` reads) and
compares the board served afterwards, kept and by a server started again, with the
board derived from nothing (no stored row left to take as it is), on SQLite and the real
PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, insert, select, update

from evalboard.core.context import Context
from evalboard.core.tables import BoardEntry, Job, Result, Submission
from leaderboard import aggregates
from tests.leaderboard.seeding import Seeded, seed
from tests.leaderboard.test_board_cache import _board, _from_scratch
from tests.leaderboard.test_board_stored import _read_restarted

#: Two states of one submission (roberta-large): a write to A, a write to B.
Edits = tuple[Callable[[], None], Callable[[], None]]


def _setting(seeded: Seeded, **values: Any) -> Callable[[], None]:
    """A write of these columns of roberta-large's submission."""

    def write() -> None:
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission)
                .where(Submission.id == seeded.submissions["roberta-large"])
                .values(**values)
            )

    return write


def _card(seeded: Seeded) -> Edits:
    return (
        _setting(seeded, card={"license": "mpl-2.0", "params": 123}),
        _setting(seeded, card={"license": "bsd-3-clause"}),
    )


def _result(seeded: Seeded) -> Edits:
    """A: a result taken away, its job sent back to run; B: the same result stored again
    (same id), the job finished."""
    ctx, roberta = seeded.ctx, seeded.submissions["roberta-large"]
    with ctx.db.session() as session:
        job_id = session.scalars(
            select(Job.id).join(Result, Result.job_id == Job.id).where(Job.submission_id == roberta)
        ).first()
        assert job_id is not None
        row = session.execute(select(Result.__table__).where(Result.job_id == job_id)).one()

    def taken_away() -> None:
        with ctx.db.session() as session:
            session.execute(delete(Result).where(Result.job_id == job_id))
            session.execute(update(Job).where(Job.id == job_id).values(status="running"))

    def stored_again() -> None:
        with ctx.db.session() as session:
            session.execute(update(Job).where(Job.id == job_id).values(status="finished"))
            session.execute(insert(Result.__table__).values(**row._asdict()))

    return taken_away, stored_again


def _name(seeded: Seeded) -> Edits:
    return _setting(seeded, name="roberta-a"), _setting(seeded, name="roberta-b")


EDITS = [_card, _result, _name]


def _derived_from_nothing(ctx: Context) -> dict[str, Any]:
    """The board with every stored row gone: each derived from its facts as they are."""
    with ctx.db.session() as session:
        session.execute(delete(BoardEntry))
    return _from_scratch(ctx)


@pytest.mark.parametrize("edits", EDITS, ids=[e.__name__.strip("_") for e in EDITS])
def test_a_write_between_the_board_query_and_the_derivation_is_not_kept(
    any_ctx: Context,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edits: Callable[[Seeded], Edits],
) -> None:
    seeded = seed(any_ctx, tmp_path)
    ctx, roberta = seeded.ctx, seeded.submissions["roberta-large"]
    to_a, to_b = edits(seeded)
    _board(ctx)  # kept, and every row stored
    to_a()  # roberta's stored row no longer matches: the next read derives it
    derive, fired = aggregates._derive, []

    def write_then_derive(session: Any, ids: list[int], *args: Any) -> Any:
        if roberta in ids and not fired:  # after the board query read A
            fired.append(ids)
            to_b()
        return derive(session, ids, *args)

    monkeypatch.setattr(aggregates, "_derive", write_then_derive)
    _board(ctx)  # (a board read from nothing now would store B's row again, mending it)
    assert fired
    to_a()  # back to the facts the raced query read
    served = _board(ctx)
    restarted, _ = _read_restarted(ctx)
    reference = _derived_from_nothing(ctx)
    assert served == reference, "the kept board pairs A's digest with B's row"
    assert restarted == reference, "the stored row pairs A's digest with B's row"


def test_a_write_to_another_submission_meanwhile_leaves_the_derived_row_stored(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a write to a row being derived keeps it apart: the others race nothing."""
    ctx, roberta = seeded.ctx, seeded.submissions["roberta-large"]
    _board(ctx)
    to_a, _ = _card(seeded)
    to_a()

    def stored_source() -> str:
        with ctx.db.session() as session:
            query = select(BoardEntry.source).where(BoardEntry.submission_id == roberta)
            return session.execute(query).scalar_one()

    before = stored_source()
    derive, fired = aggregates._derive, []

    def write_then_derive(session: Any, ids: list[int], *args: Any) -> Any:
        if roberta in ids and not fired:
            fired.append(ids)
            with ctx.db.session() as writer:
                writer.execute(
                    update(Submission)
                    .where(Submission.id == seeded.submissions["bow-logreg"])
                    .values(name="bow-2")
                )
        return derive(session, ids, *args)

    monkeypatch.setattr(aggregates, "_derive", write_then_derive)
    _board(ctx)
    assert fired == [[roberta]]
    assert stored_source() != before  # derived and stored
    assert _board(ctx) == _from_scratch(ctx)
