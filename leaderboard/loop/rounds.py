"""Collection rounds: opened with target models, closed into an immutable dataset.

A task has at most one open round. Its number follows the task's highest round so far
(rounds opened here and datasets added with ``--round``). Opening it adopts the failures
captured while no round was open, so they enter its validation queue. Closing it first
marks it closed (validation stops, so the dataset cannot miss a late verdict), then adds
its verified examples as dataset ``round-<n>`` (with its perturbed copies) and queues the
evaluation of every submission on the new datasets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Select, func, select, update
from sqlalchemy.exc import IntegrityError

from datasets_registry import add_dataset, canonical_jsonl, get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, UsageError
from evalboard.core.scratch import scratch_tree
from evalboard.core.states import Access, ExampleStatus, RoundStatus, SubmissionKind
from evalboard.core.tables import Dataset, Example, Round, Submission, utcnow
from evaluator import Dispatcher, queue_missing_jobs
from scoring import check_dataset_weight, default_dataset_weight

__all__ = [
    "ClosedRound",
    "ClosingPreview",
    "Ranking",
    "close_round",
    "closing_preview",
    "current_round",
    "dataset_name",
    "get_round",
    "list_rounds",
    "open_round",
    "round_examples",
]

#: Submission ids of a task, best first (the leaderboard's ranking).
Ranking = Callable[[Context, str], list[int]]


@dataclass(frozen=True)
class ClosedRound:
    """What closing a round did."""

    round: Round
    dataset: Dataset | None
    derived: list[Dataset] = field(default_factory=list)
    examples: int = 0
    jobs: list[int] = field(default_factory=list)


def dataset_name(number: int) -> str:
    """The registry name of a round's dataset."""
    return f"round-{number}"


def list_rounds(ctx: Context, task_id: str) -> list[Round]:
    get_task(ctx, task_id)
    with ctx.db.session() as session:
        return list(
            session.scalars(select(Round).where(Round.task_id == task_id).order_by(Round.number))
        )


def get_round(ctx: Context, task_id: str, number: int) -> Round:
    with ctx.db.session() as session:
        found = session.scalar(
            select(Round).where(Round.task_id == task_id, Round.number == number)
        )
        if found is None:
            known = session.scalars(
                select(Round.number).where(Round.task_id == task_id).order_by(Round.number)
            ).all()
            raise NotFound.among(
                f"Round {number} of task {task_id!r}",
                known,
                fix=f"Open one with `evalboard promote --task {task_id} --top 1`",
            )
        return found


def _open(task_id: str) -> Select[Round]:
    return select(Round).where(Round.task_id == task_id, Round.status == RoundStatus.OPEN)


def current_round(ctx: Context, task_id: str) -> Round | None:
    """The task's open round, if any."""
    with ctx.db.session() as session:
        return session.scalar(_open(task_id))


def _targets(
    ctx: Context,
    task_id: str,
    submission_ids: Sequence[int] | None,
    top: int | None,
    ranking: Ranking | None,
) -> list[int]:
    if submission_ids is None and top is None:
        raise UsageError(
            "Name the target submissions: the top K of the leaderboard (--top K) or "
            "submission ids (--submission ID, repeated)"
        )
    if submission_ids is not None and top is not None:
        raise UsageError("Choose the targets either by submission ids or as the top K, not both")
    if top is not None:
        if top < 1:
            raise UsageError(f"--top {top} must be at least 1")
        if ranking is None:
            from leaderboard.loop.ranking import leaderboard_ranking

            ranking = leaderboard_ranking
        ranked = ranking(ctx, task_id)
        if not ranked:
            raise UsageError(
                f"Task {task_id!r} has no ranked submission yet to promote; wait for its "
                "evaluations to finish, or name submissions with --submission ID"
            )
        return ranked[:top]
    assert submission_ids is not None
    chosen = list(dict.fromkeys(submission_ids))
    if not chosen:
        raise UsageError("Name at least one target submission")
    with ctx.db.session() as session:
        kinds = dict(
            session.execute(
                select(Submission.id, Submission.kind).where(
                    Submission.id.in_(chosen), Submission.task_id == task_id
                )
            ).all()
        )
    missing = [i for i in chosen if i not in kinds]
    if missing:
        raise NotFound(
            f"Task {task_id!r} has no submission {', '.join(map(str, missing))}; "
            "see `evalboard leaderboard --task " + task_id + "`"
        )
    given = [i for i, kind in kinds.items() if kind == SubmissionKind.PREDICTIONS.value]
    if given:
        raise UsageError(
            f"Submission {', '.join(map(str, sorted(given)))} is predictions only: it has no "
            "model to answer annotators, so it cannot be a target; promote a model bundle"
        )
    return chosen


def _refuse_if_open(open_now: Round | None) -> None:
    if open_now is not None:
        raise Conflict(
            f"Round {open_now.number} of task {open_now.task_id!r} is open; close it first "
            f"(`evalboard round close --task {open_now.task_id}`)"
        )


def open_round(
    ctx: Context,
    task_id: str,
    *,
    submission_ids: Sequence[int] | None = None,
    top: int | None = None,
    ranking: Ranking | None = None,
) -> Round:
    """Open the task's next round with its target models.

    Args:
        submission_ids: the targets, by id; or
        top: promote the leaderboard's best ``top`` submissions (by ``ranking``).

    Raises:
        Conflict: a round of the task is open already.
        NotFound: a named submission is not one of the task's.
    """
    get_task(ctx, task_id)
    _refuse_if_open(current_round(ctx, task_id))
    targets = _targets(ctx, task_id, submission_ids, top, ranking)
    with ctx.db.session() as session:
        _refuse_if_open(session.scalar(_open(task_id)))
        last_round = session.scalar(select(func.max(Round.number)).where(Round.task_id == task_id))
        last_dataset = session.scalar(
            select(func.max(Dataset.round)).where(Dataset.task_id == task_id)
        )
        number = max(last_round or 0, last_dataset or 0) + 1
        opened = Round(
            task_id=task_id,
            number=number,
            status=RoundStatus.OPEN.value,
            target_submission_ids=targets,
        )
        session.add(opened)
        try:
            session.flush()
        except IntegrityError:  # another request opened round `number` at the same moment
            raise Conflict(f"Round {number} of task {task_id!r} was opened just now") from None
        session.execute(
            update(Example)
            .where(Example.task_id == task_id, Example.round_id.is_(None))
            .values(round_id=opened.id)
        )
        return opened


def round_examples(
    ctx: Context, round_id: int, *, status: ExampleStatus | None = None
) -> list[Example]:
    with ctx.db.session() as session:
        query = select(Example).where(Example.round_id == round_id)
        if status is not None:
            query = query.where(Example.status == status.value)
        return list(session.scalars(query.order_by(Example.id)))


@dataclass(frozen=True)
class ClosingPreview:
    """What closing a round would write, for the owner to see before the irreversible step."""

    examples: int
    weight: float  # the default weight (min(1, n/500)); 0 when nothing is verified
    balance: dict[str, int]  # gold label -> count; empty for span tasks
    sample: list[dict[str, object]]


def closing_preview(
    ctx: Context, task_id: str, round_: Round, *, sample: int = 3
) -> ClosingPreview:
    """The rows :func:`close_round` would write now (the same :func:`_rows`), counted."""
    rows = _rows(ctx, task_id, round_)
    labels = sorted(str(row["label"]) for row in rows if isinstance(row.get("label"), str))
    return ClosingPreview(
        examples=len(rows),
        weight=default_dataset_weight(len(rows)) if rows else 0.0,
        balance=dict(Counter(labels)),
        sample=rows[:sample],
    )


def _rows(ctx: Context, task_id: str, closing: Round) -> list[dict[str, object]]:
    spec = get_task(ctx, task_id)
    rows: list[dict[str, object]] = []
    for example in round_examples(ctx, closing.id, status=ExampleStatus.VERIFIED):
        row: dict[str, object] = {"uid": f"r{closing.number}-{example.id}", **example.inputs}
        row[spec.gold_field] = example.gold[spec.gold_field]
        rows.append(row)
    return rows


def close_round(
    ctx: Context,
    task_id: str,
    number: int | None = None,
    *,
    weight: float | None = None,
    dispatcher: Dispatcher | None = None,
) -> ClosedRound:
    """Close a round (the open one by default) into dataset ``round-<n>``.

    ``weight`` is the new dataset's weight in the leaderboard's averages; None applies the
    default rule for rounds, :func:`scoring.default_dataset_weight` (``min(1, n/500)``).

    A round with no verified example closes without a dataset. The caller releases the
    round's warm targets (:meth:`TargetPool.release`).

    Raises:
        Conflict: the round is closed already, or ``round-<n>`` exists with other content.
    """
    if weight is not None:
        check_dataset_weight(weight, name=f"round {number or 'open'}")
    closing = get_round(ctx, task_id, number) if number is not None else current_round(ctx, task_id)
    if closing is None:
        raise Conflict(f"Task {task_id!r} has no open round to close")
    with ctx.db.session() as session:
        done = session.execute(
            update(Round)
            .where(Round.id == closing.id, Round.status == RoundStatus.OPEN.value)
            .values(status=RoundStatus.CLOSED.value, closed_at=utcnow())
        )
        if getattr(done, "rowcount", 0) != 1:
            raise Conflict(f"Round {closing.number} of task {task_id!r} is closed already")
    try:
        rows = _rows(ctx, task_id, closing)
        added = None
        if rows:
            with scratch_tree("evalboard-round") as tmp:
                path = Path(tmp) / f"{dataset_name(closing.number)}.jsonl"
                path.write_bytes(canonical_jsonl(rows))
                added = add_dataset(
                    ctx,
                    task_id=task_id,
                    name=dataset_name(closing.number),
                    path=path,
                    round=closing.number,
                    access=Access.SCORING,
                    weight=weight if weight is not None else default_dataset_weight(len(rows)),
                )
    except BaseException:
        with ctx.db.session() as session:  # nothing was stored: the round stays open
            session.execute(
                update(Round)
                .where(Round.id == closing.id)
                .values(status=RoundStatus.OPEN.value, closed_at=None)
            )
        raise
    with ctx.db.session() as session:
        closed = session.get(Round, closing.id)
        assert closed is not None
        closed.dataset_id = added.dataset.id if added is not None else None
        session.flush()
    jobs = queue_missing_jobs(ctx, task_id, dispatcher=dispatcher) if added is not None else []
    return ClosedRound(
        round=closed,
        dataset=added.dataset if added else None,
        derived=added.derived if added else [],
        examples=len(rows),
        jobs=jobs,
    )
