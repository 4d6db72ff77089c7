"""Adversarial collection: an annotator writes an example, the target answers at once.

The annotator gives the inputs and the answer they intend (a label, or for QA a span of
the context). The example goes to one of the round's targets, drawn at random; the
target's output (label and probabilities, or answer and confidence) comes back in the
same request, and the task's model-wrong rule says whether it was fooled. A fooling
example waits for validation (``pending``); one that did not fool the target is kept as
``not_fooling``, since it counts in vMER's denominator. The annotator says why it fooled
(or did not fool) the model, in the same request or afterwards.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, UsageError
from evalboard.core.states import ExampleStatus, RoundStatus
from evalboard.core.tables import Example, Round
from leaderboard.loop.answers import check_gold, check_inputs, gold_value, is_model_wrong
from leaderboard.loop.rounds import get_round

__all__ = ["Collected", "Predictor", "collect_example", "explain_example", "get_example"]

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
    uid = f"collect-{uuid.uuid4().hex[:12]}"
    started = time.perf_counter()
    (output,) = predictor.predict(round_.id, target, [{"uid": uid, **checked}], spec)
    latency = time.perf_counter() - started
    fooled = is_model_wrong(spec, output, gold_value(spec, intended))
    with ctx.db.session() as session:
        example = Example(
            task_id=task_id,
            round_id=round_.id,
            author_id=author_id,
            target_submission_id=target,
            source="collection",
            inputs=checked,
            gold=intended,
            model_output=dict(output),
            fooled=fooled,
            explanation=note,
            status=(ExampleStatus.PENDING if fooled else ExampleStatus.NOT_FOOLING).value,
        )
        session.add(example)
        session.flush()
    return Collected(example=example, latency_s=latency)


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
    with ctx.db.session() as session:
        example = session.get(Example, example_id)
        if example is None:
            raise NotFound(f"Example {example_id} does not exist")
        if example.author_id != author_id:
            raise PermissionDenied(f"Only the author of example {example_id} may explain it")
        if example.round_id is not None:
            round_ = session.get(Round, example.round_id)
            if round_ is not None:
                _check_open(round_)
        example.explanation = note
        session.flush()
        return example
