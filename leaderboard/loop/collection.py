"""Adversarial collection: an annotator writes an example, the target answers at once.

The annotator gives the inputs and the answer they intend (a label, or for QA a span of
the context). The example goes to one of the round's targets, drawn at random; the
target's output (label and probabilities, or answer and confidence) comes back in the
same request, and the task's model-wrong rule says whether it was fooled. A fooling
example waits for validation (``pending``); one that did not fool the target is kept as
``not_fooling``, since it counts in vMER's denominator. The annotator says why it fooled
(or did not fool) the model, in the same request or afterwards.

Until a validator has judged it, the author may edit a pending example (the same target
answers the new version at once, and decides again whether it fooled) or retract it. A
retracted example leaves validation but stays in vMER's denominator: retracting the
examples one expects rejected must not raise one's own vMER.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, UsageError
from evalboard.core.states import ExampleStatus, RoundStatus
from evalboard.core.tables import Example, Round, Validation
from leaderboard.loop.answers import check_gold, check_inputs, gold_value, is_model_wrong
from leaderboard.loop.rounds import get_round

__all__ = [
    "Collected",
    "Predictor",
    "collect_example",
    "edit_example",
    "explain_example",
    "get_example",
    "retract_example",
]

_MAX_EXPLANATION = 2_000


class Predictor(Protocol):
    """Answers for a round's target (a :class:`TargetPool` is one)."""

    def predict(
        self, round_id: int, submission_id: int, inputs: list[dict[str, Any]], task: TaskSpec
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Collected:
    """A stored example and how long its target took to answer."""

    example: Example
    latency_s: float


def _explanation(text: str) -> str:
    if len(text) > _MAX_EXPLANATION:
        raise UsageError(
            f"The explanation has {len(text)} characters; at most {_MAX_EXPLANATION} please"
        )
    return text.strip()


def get_example(ctx: Context, example_id: int) -> Example:
    with ctx.db.session() as session:
        example = session.get(Example, example_id)
        if example is None:
            raise NotFound(f"Example {example_id} does not exist")
        return example


def collect_example(
    ctx: Context,
    task_id: str,
    number: int,
    *,
    author_id: int,
    inputs: Mapping[str, Any],
    gold: Mapping[str, Any],
    predictor: Predictor,
    explanation: str = "",
    rng: random.Random | None = None,
) -> Collected:
    """Store an annotator's example with its target's answer and whether it fooled it.

    Args:
        number: the round, which must be open.
        inputs: the task's input fields (for QA, ``context`` and ``question``).
        gold: ``{"label": L}``, or for QA ``{"answer": T, "answer_start": S}`` or
            ``{"answers": [...]}``, or for text ``{"references": [...]}`` or ``{"text": T}``.
        predictor: answers for the round's targets (the warm :class:`TargetPool`).
        rng: draws the target when the round has several.

    Raises:
        Conflict: the round is closed.
        UsageError: the inputs or the intended answer do not fit the task.
        SandboxFailure: the target failed to answer (nothing is stored).
    """
    spec = get_task(ctx, task_id)
    round_ = get_round(ctx, task_id, number)
    _check_open(round_)
    checked = check_inputs(spec, inputs)
    intended = check_gold(spec, checked, gold)
    note = _explanation(explanation)
    targets = [int(i) for i in round_.target_submission_ids]
    if not targets:
        raise Conflict(f"Round {number} of task {task_id!r} has no target model")
    target = (rng or random).choice(targets)
    fields, latency = _answer(predictor, round_.id, target, spec, checked, intended, note)
    with ctx.db.session() as session:
        example = Example(
            task_id=task_id,
            round_id=round_.id,
            author_id=author_id,
            target_submission_id=target,
            source="collection",
            **fields,
        )
        session.add(example)
        session.flush()
    return Collected(example=example, latency_s=latency)


def _answer(
    predictor: Predictor,
    round_id: int,
    target: int,
    spec: TaskSpec,
    inputs: dict[str, str],
    intended: dict[str, Any],
    explanation: str,
) -> tuple[dict[str, Any], float]:
    """The example's written fields with its target's answer, as collecting or editing it
    stores them (pending validation when it fooled the target), and how long it took."""
    uid = f"collect-{uuid.uuid4().hex[:12]}"
    started = time.perf_counter()
    (output,) = predictor.predict(round_id, target, [{"uid": uid, **inputs}], spec)
    latency = time.perf_counter() - started
    fooled = is_model_wrong(spec, output, gold_value(spec, intended))
    status = ExampleStatus.PENDING if fooled else ExampleStatus.NOT_FOOLING
    fields = {
        "inputs": inputs,
        "gold": intended,
        "model_output": dict(output),
        "fooled": fooled,
        "explanation": explanation,
        "status": status.value,
    }
    return fields, latency


def _check_open(round_: Round) -> None:
    if round_.status != RoundStatus.OPEN:
        raise Conflict(
            f"Round {round_.number} of task {round_.task_id!r} is closed; its dataset is "
            "fixed. Write examples for the open round"
        )


def explain_example(ctx: Context, example_id: int, *, author_id: int, explanation: str) -> Example:
    """Record why the example fooled (or did not fool) the target; its author only.

    Raises:
        PermissionDenied: the caller did not write the example.
        Conflict: its round is closed.
    """
    note = _explanation(explanation)
    # One session: the author and the round are checked where the note is written.
    with ctx.db.session() as session:
        example = session.get(Example, example_id)
        if example is None:
            raise NotFound(f"Example {example_id} does not exist")
        if example.author_id != author_id:
            raise PermissionDenied(f"Only the author of example {example_id} may explain it")
        if example.round_id is not None:
            _check_open(_round_in(session, example.round_id))
        example.explanation = note
        session.flush()
        return example


def _change_unjudged(session: Session, example_id: int, author_id: int, **values: Any) -> bool:
    """Write ``values`` on the example if it is this author's, pending, and has no verdict
    yet; False when it is not (any more)."""
    # The row is locked first, so that the check below reads verdicts committed while it
    # waited: PostgreSQL rechecks a waiting UPDATE's row, not its NOT EXISTS subquery, and
    # would let an edit or a retraction through after a verdict it did not see.
    session.execute(select(Example.id).where(Example.id == example_id).with_for_update())
    done = session.execute(
        update(Example)
        .where(
            (Example.id == example_id)
            & (Example.author_id == author_id)
            & (Example.status == ExampleStatus.PENDING.value)
            & ~exists().where(Validation.example_id == example_id)
        )
        .values(**values)
    )
    return getattr(done, "rowcount", 0) == 1


def _editable(ctx: Context, example_id: int, author_id: int, doing: str) -> Example:
    """The author's own pending example, in an open round; else why not."""
    example = get_example(ctx, example_id)
    if example.author_id != author_id:
        raise PermissionDenied(f"Only the author of example {example_id} may {doing} it")
    if example.status != ExampleStatus.PENDING:
        raise Conflict(
            f"Example {example_id} is {example.status}; only a pending example (one that "
            f"fooled the target and awaits validation) can be {doing}ed"
        )
    if example.round_id is not None:
        with ctx.db.session() as session:
            _check_open(_round_in(session, example.round_id))
    return example


def _round_in(session: Session, round_id: int) -> Round:
    round_ = session.get(Round, round_id)
    if round_ is None:
        raise NotFound(f"Round {round_id} does not exist")
    return round_


def _judged_meanwhile(example_id: int) -> Conflict:
    return Conflict(
        f"Example {example_id} has a verdict already (or changed meanwhile); it can no "
        "longer be edited or retracted"
    )


def retract_example(ctx: Context, example_id: int, *, author_id: int) -> Example:
    """Withdraw one's own pending example before anyone judged it.

    It leaves the validation queue and never enters a dataset, but still counts among the
    examples its author wrote (vMER's denominator).

    Raises:
        PermissionDenied: the caller did not write it.
        Conflict: it is not pending, has a verdict, or its round is closed.
    """
    _editable(ctx, example_id, author_id, "retract")
    with ctx.db.session() as session:
        if not _change_unjudged(
            session, example_id, author_id, status=ExampleStatus.RETRACTED.value
        ):
            raise _judged_meanwhile(example_id)
    return get_example(ctx, example_id)


def edit_example(
    ctx: Context,
    example_id: int,
    *,
    author_id: int,
    inputs: Mapping[str, Any],
    gold: Mapping[str, Any],
    predictor: Predictor,
    explanation: str = "",
) -> Collected:
    """Rewrite one's own pending example before anyone judged it; its target answers the
    new version at once, and whether it fooled the target is decided again.

    Raises:
        PermissionDenied: the caller did not write it.
        Conflict: it is not pending, has a verdict (also one given meanwhile), or its round
            is closed.
        UsageError: the inputs or the intended answer do not fit the task.
        SandboxFailure: the target failed to answer (nothing is changed).
    """
    example = _editable(ctx, example_id, author_id, "edit")
    spec = get_task(ctx, example.task_id)
    checked = check_inputs(spec, inputs)
    intended = check_gold(spec, checked, gold)
    note = _explanation(explanation)
    if example.round_id is None or example.target_submission_id is None:
        raise Conflict(f"Example {example_id} has no target to answer it again")
    fields, latency = _answer(
        predictor, example.round_id, example.target_submission_id, spec, checked, intended, note
    )
    with ctx.db.session() as session:
        if not _change_unjudged(session, example_id, author_id, **fields):
            raise _judged_meanwhile(example_id)
    return Collected(example=get_example(ctx, example_id), latency_s=latency)
