"""Stored board rows: the same figures as deriving them from the results, kept fresh."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import selectinload

from datasets_registry import list_datasets, scoring_datasets, set_dataset_weight
from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import BoardEntry, Job, Submission, User
from evaluator.result import shown_metrics
from leaderboard.entry import derive_entry
from leaderboard.table import load_table
from tests.leaderboard.seeding import TASK, Seeded


def _slow_path(ctx: Context) -> list[dict[str, Any]]:
    """Every row derived straight from the ORM objects, as the board did before."""
    datasets = list_datasets(ctx, TASK)
    scoring = scoring_datasets(datasets)
    by_id = {d.id: d for d in datasets}
    with ctx.db.session() as session:
        users = dict(session.execute(select(User.id, User.name)).all())
        submissions = session.scalars(
            select(Submission)
            .where(Submission.task_id == TASK)
            .options(
                selectinload(Submission.jobs).selectinload(Job.result),
                selectinload(Submission.jobs).selectinload(Job.dataset),
            )
            .order_by(Submission.id)
        ).all()
        return [asdict(derive_entry(s, users, scoring, by_id)) for s in submissions]


def _results_figures(ctx: Context) -> dict[int, dict[str, dict[str, Any]]]:
    """Submission -> dataset -> the figures of its finished job, from the results."""
    with ctx.db.session() as session:
        jobs = session.scalars(
            select(Job).options(selectinload(Job.result), selectinload(Job.dataset))
        ).all()
        found: dict[int, dict[str, dict[str, Any]]] = {}
        for job in sorted(jobs, key=lambda j: j.id):
            found.setdefault(job.submission_id, {})
            if job.status == JobStatus.FINISHED and job.result is not None:
                found[job.submission_id][job.dataset.name] = shown_metrics(job.result.metrics)
        return found


def _stored_sources(ctx: Context) -> dict[int, str]:
    with ctx.db.session() as session:
        return dict(session.execute(select(BoardEntry.submission_id, BoardEntry.source)).all())


def _fresh(ctx: Context) -> Context:
    """A context on the same storage with an empty cache: what a new process reads."""
    return Context.from_settings(ctx.settings)


def test_stored_rows_equal_the_rows_derived_from_the_results(seeded: Seeded) -> None:
    first = load_table(seeded.ctx, TASK)  # derives and stores
    assert len(_stored_sources(seeded.ctx)) == len(first.models)
    reader = _fresh(seeded.ctx)
    try:
        stored = load_table(reader, TASK)  # reads the stored rows back
    finally:
        reader.db.dispose()
    expected = _slow_path(seeded.ctx)
    assert [asdict(m) for m in first.models] == expected
    assert [asdict(m) for m in stored.models] == expected
    assert any(m.complete for m in stored.models) and any(not m.complete for m in stored.models)
    # The packed figures read back are the results' own.
    figures = _results_figures(seeded.ctx)
    assert {m.submission_id: m.per_dataset for m in stored.models} == figures
    assert any(figures.values())
    scoring = {d.name for d in scoring_datasets(list_datasets(seeded.ctx, TASK))}
    for model in stored.models:
        assert sorted(o.dataset for o in model.outcomes) == sorted(
            scoring & set(figures[model.submission_id])
        )


def test_a_dataset_weight_change_derives_the_rows_again(seeded: Seeded) -> None:
    before = load_table(seeded.ctx, TASK)
    sources = _stored_sources(seeded.ctx)
    set_dataset_weight(seeded.ctx, task_id=TASK, name="test", weight=3.0)
    after = load_table(seeded.ctx, TASK)
    assert set(_stored_sources(seeded.ctx).values()).isdisjoint(sources.values())
    assert [asdict(m) for m in after.models] == _slow_path(seeded.ctx)
    perf = {m.name: m.metrics.get("perf") for m in before.ranked}
    assert {m.name: m.metrics.get("perf") for m in after.ranked} != perf


def test_a_job_sent_back_to_the_queue_makes_its_model_pending(seeded: Seeded) -> None:
    roberta = seeded.submissions["roberta-large"]
    assert load_table(seeded.ctx, TASK).entry(roberta).complete  # type: ignore[union-attr]
    with seeded.ctx.db.session() as session:
        job_id = session.scalars(select(Job.id).where(Job.submission_id == roberta)).first()
        session.execute(update(Job).where(Job.id == job_id).values(status=JobStatus.QUEUED.value))
    entry = load_table(seeded.ctx, TASK).entry(roberta)
    assert entry is not None and not entry.complete and entry.status == JobStatus.QUEUED


def test_a_renamed_submission_shows_its_new_name(seeded: Seeded) -> None:
    roberta = seeded.submissions["roberta-large"]
    load_table(seeded.ctx, TASK)
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Submission).where(Submission.id == roberta).values(name="roberta-xl")
        )
    assert load_table(seeded.ctx, TASK).entry(roberta).name == "roberta-xl"  # type: ignore[union-attr]


def test_an_edited_card_or_unpublishing_refreshes_the_stored_row(seeded: Seeded) -> None:
    roberta = seeded.submissions["roberta-large"]
    before = load_table(seeded.ctx, TASK).entry(roberta)
    assert before is not None and before.published and before.card.license != "mit"
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == roberta)
            .values(card={"license": "mit", "params": 355_000_000}, published=False)
        )
    reader = _fresh(seeded.ctx)  # the stored row, not this process's cached one
    try:
        after = load_table(reader, TASK).entry(roberta)
    finally:
        reader.db.dispose()
    assert after is not None and not after.published
    assert (after.card.license, after.card.params) == ("mit", 355_000_000)
    assert [asdict(m) for m in load_table(seeded.ctx, TASK).models] == _slow_path(seeded.ctx)


def test_a_running_server_reuses_unchanged_rows_and_its_version_is_a_new_ones(
    seeded: Seeded,
) -> None:
    """After one submission changes, a warm process makes again only that row's digest and
    entry (the others are the same objects), and reaches the version and rows that a
    process reading the board for the first time reaches."""
    roberta = seeded.submissions["roberta-large"]
    before = load_table(seeded.ctx, TASK)
    with seeded.ctx.db.session() as session:
        session.execute(
            update(Submission).where(Submission.id == roberta).values(name="roberta-xl")
        )
    after = load_table(seeded.ctx, TASK)
    assert after.version != before.version
    for old, new in zip(before.models, after.models, strict=True):
        assert (new is old) == (new.submission_id != roberta)
    assert after.entry(roberta).name == "roberta-xl"  # type: ignore[union-attr]
    reader = _fresh(seeded.ctx)
    try:
        first_read = load_table(reader, TASK)
    finally:
        reader.db.dispose()
    assert first_read.version == after.version
    assert [asdict(m) for m in after.models] == [asdict(m) for m in first_read.models]
    assert [asdict(m) for m in after.models] == _slow_path(seeded.ctx)
