"""Failure capture: inputs a deployed model got wrong, with the right answer.

Production teams report them through ``POST /tasks/{id}/failures`` or
``evalboard failures add``. Each failure enters the same validation queue as collected
examples (``pending``, source ``failure``): in the open round, or, when no round is open,
in the next round opened. Verified, it becomes part of that round's dataset.

A failures file is JSON lines: the task's input fields, the correct ``label`` (or for QA
``answers``/``answer``), and optionally ``prediction`` (what the deployed model said,
e.g. ``{"label": "positive"}``), ``submission_id``, ``explanation`` and ``uid`` (ignored: the
example gets its own).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from datasets_registry import get_task
from evalboard.core.context import Context
from evalboard.core.errors import InvalidDataset, NotFound, UsageError
from evalboard.core.states import ExampleStatus
from evalboard.core.tables import Example, Submission
from leaderboard.loop.answers import check_gold, check_inputs
from leaderboard.loop.rounds import current_round

__all__ = ["Failure", "capture_failure", "capture_failures", "read_failures"]

_GOLD_KEYS = ("label", "answers", "answer", "answer_start", "references", "text")
_EXTRA_KEYS = ("prediction", "submission_id", "explanation", "uid")


@dataclass(frozen=True)
class Failure:
    """One captured failure before it is stored."""

    inputs: dict[str, Any]
    gold: dict[str, Any]
    prediction: dict[str, Any] | None = None
    submission_id: int | None = None
    explanation: str = ""


def capture_failure(
    ctx: Context, task_id: str, failure: Failure, *, reporter_id: int | None
) -> Example:
    """Check a failure against the task and queue it for validation.

    Raises:
        UsageError: the inputs or the correct answer do not fit the task.
        NotFound: ``submission_id`` is not one of the task's submissions.
    """
    return capture_failures(ctx, task_id, [failure], reporter_id=reporter_id)[0]


def capture_failures(
    ctx: Context, task_id: str, failures: list[Failure], *, reporter_id: int | None
) -> list[Example]:
    """Check every failure first, then store them all (or none)."""
    spec = get_task(ctx, task_id)
    checked = []
    for number, failure in enumerate(failures, start=1):
        where = f"failure {number}" if len(failures) > 1 else "failure"
        try:
            inputs = check_inputs(spec, failure.inputs)
            gold = check_gold(spec, inputs, failure.gold)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc.message}") from None
        checked.append((failure, inputs, gold))
    submissions = {f.submission_id for f in failures if f.submission_id is not None}
    open_round = current_round(ctx, task_id)
    with ctx.db.session() as session:
        known = set(
            session.scalars(
                select(Submission.id).where(
                    Submission.id.in_(submissions), Submission.task_id == task_id
                )
            )
        )
        missing = sorted(submissions - known)
        if missing:
            raise NotFound(f"Task {task_id!r} has no submission {missing[0]}")
        stored = []
        for failure, inputs, gold in checked:
            example = Example(
                task_id=task_id,
                round_id=open_round.id if open_round is not None else None,
                author_id=reporter_id,
                target_submission_id=failure.submission_id,
                source="failure",
                inputs=inputs,
                gold=gold,
                model_output=failure.prediction,
                fooled=True,
                explanation=failure.explanation.strip(),
                status=ExampleStatus.PENDING.value,
            )
            session.add(example)
            stored.append(example)
        session.flush()
        return stored


def _failure(row: Mapping[str, Any], input_names: list[str]) -> Failure:
    prediction = row.get("prediction")
    if prediction is not None and not isinstance(prediction, dict):
        prediction = {"label": prediction} if isinstance(prediction, str) else None
    submission_id = row.get("submission_id")
    return Failure(
        inputs={k: row[k] for k in input_names if k in row},
        gold={k: row[k] for k in _GOLD_KEYS if k in row},
        prediction=prediction,
        submission_id=int(submission_id) if submission_id is not None else None,
        explanation=str(row.get("explanation") or ""),
    )


def read_failures(ctx: Context, task_id: str, path: Path) -> list[Failure]:
    """Read a failures JSONL file; unknown fields are refused with the line number."""
    spec = get_task(ctx, task_id)
    allowed = set(spec.input_names) | set(_GOLD_KEYS) | set(_EXTRA_KEYS)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidDataset(f"Failures file {path} does not exist") from None
    except UnicodeDecodeError:
        raise InvalidDataset(
            f"Failures file {path} is not UTF-8 text; is it the right file?"
        ) from None
    except OSError as exc:  # a directory, no permission
        raise InvalidDataset(
            f"Cannot read the failures file {path}: {exc.strerror or exc}; give a readable "
            "JSONL file"
        ) from None
    failures = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidDataset(f"{path.name}, line {number}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise InvalidDataset(f"{path.name}, line {number}: a JSON object is expected")
        unknown = sorted(set(row) - allowed)
        if unknown:
            raise InvalidDataset(
                f"{path.name}, line {number}: unknown field(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        failures.append(_failure(row, spec.input_names))
    if not failures:
        raise InvalidDataset(f"{path.name} holds no failures")
    return failures
