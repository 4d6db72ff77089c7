"""Checks of a model's outputs against what a task expects, from plain arguments.

``submission_sandbox`` does not import the task registry (they are sibling layers), so
the caller passes the output type and labels from the task spec.

>>> check_outputs([{"uid": "1", "text": "hi"}], [{"label": "pos", "probs": {"pos": 1.0}}],
...               output_type="multiclass", labels=["neg", "pos"])
[]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["OutputProblem", "check_outputs"]


@dataclass(frozen=True)
class OutputProblem:
    """One thing wrong with one output (``index`` is None for the whole batch)."""

    index: int | None
    uid: str | None
    problem: str


def _check_probs(probs: Any, labels: list[str], tolerance: float) -> str | None:
    if not isinstance(probs, dict):
        return f"probs must be an object label -> probability, got {type(probs).__name__}"
    unknown = sorted(set(probs) - set(labels))
    if unknown:
        return f"probs name unknown label(s) {unknown}; known: {labels}"
    values = list(probs.values())
    if not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    ):
        return "probs must be finite numbers"
    if any(v < 0 or v > 1 for v in values):
        return "probs must lie in [0, 1]"
    total = sum(values)
    if abs(total - 1.0) > tolerance:
        return f"probs sum to {total:.6f}, not 1 (within {tolerance:g})"
    return None


def check_outputs(
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    *,
    output_type: Literal["multiclass", "span"],
    labels: list[str] | None = None,
    tolerance: float = 1e-3,
) -> list[OutputProblem]:
    """Everything wrong with ``outputs`` for ``inputs``; empty when all is well.

    multiclass: a ``label`` among ``labels``; ``probs`` optional, and if given over known
    labels, in [0, 1], summing to 1 within ``tolerance``. span: an ``answer`` string that
    is a substring of the input's ``context``; ``conf`` optional, a number in [0, 1].
    """
    if len(outputs) != len(inputs):
        return [
            OutputProblem(
                None,
                None,
                f"{len(outputs)} outputs for {len(inputs)} inputs; "
                "return exactly one output per input",
            )
        ]
    labels = labels or []
    problems = []
    for index, (example, output) in enumerate(zip(inputs, outputs, strict=True)):
        uid = str(example.get("uid")) if "uid" in example else None

        def add(message: str, index: int = index, uid: str | None = uid) -> None:
            problems.append(OutputProblem(index, uid, message))

        if not isinstance(output, dict):
            add(f"an output must be an object, got {type(output).__name__}")
            continue
        if output_type == "multiclass":
            label = output.get("label")
            if label not in labels:
                add(f"label {label!r} is not one of the task's labels {labels}")
            if "probs" in output:
                if (message := _check_probs(output["probs"], labels, tolerance)) is not None:
                    add(message)
        else:
            answer = output.get("answer")
            context = str(example.get("context", ""))
            if not isinstance(answer, str):
                add(f"answer must be a string, got {type(answer).__name__}")
            elif answer not in context:
                add(f"answer {answer[:60]!r} is not a substring of the context")
            conf = output.get("conf")
            if conf is not None and (
                not isinstance(conf, int | float) or isinstance(conf, bool) or not 0 <= conf <= 1
            ):
                add(f"conf must be a number in [0, 1], got {conf!r}")
    return problems
