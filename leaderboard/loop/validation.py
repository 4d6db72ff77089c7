"""Validation: other annotators judge each fooling example before it enters a dataset.

Each validator gives one verdict per example, never on their own example: ``correct``
(the intended answer is right, so the model made an error), ``incorrect`` or
``flagged`` (unclear, offensive or off-task: for the owner to look at). When
``num_matching`` verdicts (the task's ``validation.num_matching``, 3 by default) agree,
the example becomes ``verified``, ``rejected`` or ``flagged``. The task owner decides
alone: one owner verdict settles the example, also one that others flagged; it is
recorded with ``by_owner`` set, and the owner sees the earlier votes first. Once the
round is closed its dataset is fixed, and verdicts are refused.

An unlabeled production input (source ``traffic``, queued by a drift check) has no
intended answer to judge: each validator gives it a label instead (or flags it). When
``num_matching`` labels agree it is ``verified`` with that label as its gold; the owner's
label settles it alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, UsageError
from evalboard.core.states import ExampleStatus, RoundStatus, Verdict
from evalboard.core.tables import Example, Round, Validation
from leaderboard.loop.content import content_version

__all__ = [
    "QueueCounts",
    "Vote",
    "decide",
    "decide_label",
    "queue_counts",
    "validate_example",
    "validation_queue",
    "verdicts_of",
]

_OUTCOME = {
    Verdict.CORRECT: ExampleStatus.VERIFIED,
    Verdict.INCORRECT: ExampleStatus.REJECTED,
    Verdict.FLAGGED: ExampleStatus.FLAGGED,
}
_SETTLED = {ExampleStatus.VERIFIED, ExampleStatus.REJECTED}


def decide(verdicts: list[Verdict], *, num_matching: int) -> ExampleStatus:
    """The status ``verdicts`` give: the first verdict to reach ``num_matching``, else pending.

    >>> decide([Verdict.CORRECT, Verdict.FLAGGED, Verdict.CORRECT], num_matching=2)
    <ExampleStatus.VERIFIED: 'verified'>
    >>> decide([Verdict.CORRECT, Verdict.INCORRECT], num_matching=2)
    <ExampleStatus.PENDING: 'pending'>
    """
    counts: Counter[Verdict] = Counter()
    for verdict in verdicts:
        counts[verdict] += 1
        if counts[verdict] >= num_matching:
            return _OUTCOME[verdict]
    return ExampleStatus.PENDING


#: One validator's vote on a traffic input: (LABELLED, the label) or (FLAGGED, None).
Vote = tuple[Verdict, str | None]


def decide_label(votes: list[Vote], *, num_matching: int) -> tuple[ExampleStatus, str | None]:
    """The status (and label) ``votes`` give a traffic input: the first label, or the flag,
    to reach ``num_matching`` votes; else pending.

    >>> labelled = Verdict.LABELLED
    >>> decide_label([(labelled, "pos"), (labelled, "neg"), (labelled, "pos")], num_matching=2)
    (<ExampleStatus.VERIFIED: 'verified'>, 'pos')
    >>> decide_label([(labelled, "pos"), (Verdict.FLAGGED, None)], num_matching=2)
    (<ExampleStatus.PENDING: 'pending'>, None)
    """
    counts: Counter[Vote] = Counter()
    for vote in votes:
        counts[vote] += 1
        if counts[vote] >= num_matching:
            verdict, label = vote
            if verdict is Verdict.FLAGGED:
                return ExampleStatus.FLAGGED, None
            return ExampleStatus.VERIFIED, label
    return ExampleStatus.PENDING, None


def _vote(spec: TaskSpec, example: Example, verdict: Verdict | None, label: str | None) -> Vote:
    """The vote a validator's input makes, checked against the example's kind."""
    if example.source != "traffic":
        if label is not None or verdict is None or verdict is Verdict.LABELLED:
            raise UsageError(
                f"Example {example.id} has an intended answer to judge: give a verdict "
                "(correct, incorrect or flagged), not a label"
            )
        return verdict, None
    if label is None and verdict is Verdict.FLAGGED:
        return Verdict.FLAGGED, None
    if label is None or verdict not in (None, Verdict.LABELLED):
        raise UsageError(
            f"Example {example.id} is an unlabeled production input: give its label "
            f"({', '.join(spec.output.labels)}) or flag it (verdict flagged)"
        )
    if label not in spec.output.labels:
        raise UsageError(
            f"Label {label!r} is not one of task {spec.id!r}'s labels: "
            f"{', '.join(spec.output.labels)}"
        )
    return Verdict.LABELLED, label


def verdicts_of(ctx: Context, example_id: int) -> list[Validation]:
    query = select(Validation).where(Validation.example_id == example_id)
    with ctx.db.session() as session:
        return list(session.scalars(query.order_by(Validation.id)))


def _check_open(session: Session, example: Example) -> None:
    if example.round_id is None:
        return  # a captured failure waiting for the next round
    round_ = session.get(Round, example.round_id)
    if round_ is not None and round_.status != RoundStatus.OPEN:
        raise Conflict(
            f"Example {example.id} belongs to round {round_.number}, which is closed: its "
            "dataset is fixed and takes no more verdicts"
        )


def _check_seen(example: Example, seen_version: str | None) -> None:
    if seen_version is not None and seen_version != content_version(example):
        raise Conflict(
            f"Example {example.id} was edited by its author after you read it; reload it "
            "and judge the new version"
        )


def validate_example(
    ctx: Context,
    example_id: int,
    *,
    user_id: int,
    verdict: Verdict | None = None,
    label: str | None = None,
    as_owner: bool = False,
    seen_version: str | None = None,
) -> Example:
    """Record a verdict (or, on a traffic input, a label) and update the example's status.

    Args:
        verdict: correct, incorrect or flagged; on a traffic input only flagged.
        label: a traffic input's label (one of the task's).
        as_owner: the caller owns the task; the verdict then settles the example.
        seen_version: the content version the caller judged (``content_version``); an
            example edited since then is not judged.

    Raises:
        UsageError: a label for an example with an intended answer, or a verdict other
            than flagged (or a label not the task's) for a traffic input.
        PermissionDenied: the caller wrote the example.
        Conflict: the caller judged it already, it is settled, it did not fool the
            target, it was edited since ``seen_version``, or its round is closed.
    """
    with ctx.db.session() as session:
        # Locked (PostgreSQL): concurrent verdicts, edits and retractions of one example
        # take turns, each reading what the one before it committed.
        example = session.get(Example, example_id, with_for_update=True)
        if example is None:
            raise NotFound(f"Example {example_id} does not exist")
        spec = get_task(ctx, example.task_id)
        if example.author_id == user_id:
            raise PermissionDenied(
                f"You wrote example {example_id}; validation is for other annotators"
            )
        _check_open(session, example)
        _check_seen(example, seen_version)
        vote, given = _vote(spec, example, verdict, label)
        status = ExampleStatus(example.status)
        if status is ExampleStatus.NOT_FOOLING:
            raise Conflict(
                f"Example {example_id} did not fool its target; only model errors are validated"
            )
        if status is ExampleStatus.RETRACTED:
            raise Conflict(f"Example {example_id} was retracted by its author; it is not judged")
        if not as_owner and (status in _SETTLED or status is ExampleStatus.FLAGGED):
            raise Conflict(
                f"Example {example_id} is {status.value} already; the task owner may still "
                "change that"
            )
        mine = session.scalar(
            select(Validation).where(
                Validation.example_id == example_id, Validation.user_id == user_id
            )
        )
        if mine is not None and not as_owner:
            raise Conflict(f"You judged example {example_id} already")
        if mine is None:
            mine = Validation(example_id=example_id, user_id=user_id)
            session.add(mine)
        mine.verdict, mine.label, mine.by_owner = vote.value, given, as_owner
        try:
            session.flush()
        except IntegrityError:  # the same user's verdict in a concurrent request
            raise Conflict(f"You judged example {example_id} already") from None
        # Read again now that this transaction writes (SQLite reads without a lock): an
        # edit committed since the first read is caught here, before the status moves.
        session.refresh(example)
        _check_seen(example, seen_version)
        num_matching = spec.validation.num_matching
        votes: list[Vote] = [
            (Verdict(v), lab)
            for v, lab in session.execute(
                select(Validation.verdict, Validation.label)
                .where(Validation.example_id == example_id)
                .order_by(Validation.id)
            )
        ]
        outcome: dict[str, Any]
        if example.source == "traffic":
            # The owner's vote alone settles it; its gold is the agreed label, none until then.
            settled = [(vote, given)] if as_owner else votes
            decided, agreed = decide_label(settled, num_matching=1 if as_owner else num_matching)
            verified = decided is ExampleStatus.VERIFIED
            outcome = {"status": decided.value, "gold": {"label": agreed} if verified else {}}
        elif as_owner:
            outcome = {"status": _OUTCOME[vote].value}
        else:
            outcome = {"status": decide([v for v, _ in votes], num_matching=num_matching).value}
        # Only over the status read above (SQLite reads without a lock): a retraction or an
        # edit committed since then makes this verdict a conflict, never overwritten.
        done = session.execute(
            update(Example)
            .where(Example.id == example_id, Example.status == status.value)
            .values(**outcome)
        )
        if getattr(done, "rowcount", 0) != 1:
            raise Conflict(
                f"Example {example_id} changed while you judged it (edited, retracted or "
                "judged by the owner); reload it and judge it again"
            )
        return example


def _waiting(
    task_id: str, *, user_id: int, flagged: bool, skipped: Collection[int]
) -> ColumnElement[bool]:
    """Examples this user may judge: pending ones not theirs and not yet judged by them in
    open rounds (or captured failures), less those they skipped; or the flagged ones."""
    status = ExampleStatus.FLAGGED if flagged else ExampleStatus.PENDING
    judged = select(Validation.example_id).where(Validation.user_id == user_id)
    open_rounds = select(Round.id).where(
        Round.task_id == task_id, Round.status == RoundStatus.OPEN.value
    )
    return and_(
        Example.task_id == task_id,
        Example.status == status.value,
        (Example.author_id.is_(None)) | (Example.author_id != user_id),
        Example.id.not_in(judged) if not flagged else Example.id.is_not(None),
        Example.round_id.is_(None) | Example.round_id.in_(open_rounds),
        Example.id.not_in(list(skipped)) if skipped else Example.id.is_not(None),
    )


def validation_queue(
    ctx: Context,
    task_id: str,
    *,
    user_id: int,
    limit: int = 20,
    flagged: bool = False,
    skipped: Collection[int] = (),
) -> list[Example]:
    """Examples this user may judge, oldest first: pending ones not theirs and not yet
    judged by them in open rounds (or captured failures); ``flagged`` lists those flagged
    for the owner instead. ``skipped``: examples this validator passed over (their
    session's); they stay in everyone else's queue."""
    get_task(ctx, task_id)
    where = _waiting(task_id, user_id=user_id, flagged=flagged, skipped=skipped)
    with ctx.db.session() as session:
        return list(session.scalars(select(Example).where(where).order_by(Example.id).limit(limit)))


@dataclass(frozen=True)
class QueueCounts:
    """What is left for one validator, and where their own examples stand."""

    waiting: int  # examples they may still judge (skipped ones not counted)
    skipped: int  # of those, passed over in this session
    mine_pending: int  # their own examples awaiting others' verdicts


def queue_counts(
    ctx: Context, task_id: str, *, user_id: int, skipped: Collection[int] = ()
) -> QueueCounts:
    """The validation page's counts for one user (one query each)."""
    wheres = (
        _waiting(task_id, user_id=user_id, flagged=False, skipped=()),
        _waiting(task_id, user_id=user_id, flagged=False, skipped=skipped),
        and_(
            Example.task_id == task_id,
            Example.author_id == user_id,
            Example.status == ExampleStatus.PENDING.value,
        ),
    )
    with ctx.db.session() as session:
        everything, waiting, mine_pending = [
            int(session.scalar(select(func.count(Example.id)).where(where)) or 0)
            for where in wheres
        ]
    return QueueCounts(waiting=waiting, skipped=everything - waiting, mine_pending=mine_pending)
