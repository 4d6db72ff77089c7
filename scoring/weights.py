"""Weights, read and checked once: metric weights and dataset weights alike.

The CLI (``--weights``, ``--dataset-weights``), the API (``?weights=``,
``?dataset_weights=``), the owner's forms and the task spec all go through
:func:`check_weights` (and :func:`parse_weights` for the ``NAME:W,...`` text form), so a
weight the API refuses the CLI refuses too, with the same message.

A usable set of weights: every name known, every value a finite number >= 0, not all
zero, and a finite sum (``perf:1e308,throughput:1e308`` overflows to infinity when
normalised, and is refused here rather than turning every score into NaN).

>>> parse_weights("perf:4, memory=1", known=["perf", "memory", "throughput"])
{'perf': 4.0, 'memory': 1.0}
>>> check_weights({"perf": -1}, known=["perf"])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
scoring.weights.InvalidWeightsError: Weight perf:-1 is negative; weights are numbers >= 0, ...
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from scoring.registry import ScoringError

__all__ = [
    "REFERENCE_ROWS",
    "InvalidWeightsError",
    "check_weights",
    "check_dataset_weight",
    "default_dataset_weight",
    "parse_weights",
]

REFERENCE_ROWS = 500
"""A round with at least this many examples weighs 1 by default; a smaller one less."""


class InvalidWeightsError(ScoringError):
    """Weights that cannot be used; the message names the bad value and the fix."""


def _example(what: str, known: list[str]) -> str:
    if what == "metric":
        return "e.g. perf:4,throughput:1"
    names = known[:2] or ["NAME"]
    return "e.g. " + ",".join(f"{name}:{w}" for name, w in zip(names, (1, 0.5), strict=False))


def check_weights(
    weights: Mapping[str, float | str],
    *,
    known: Iterable[str],
    what: str = "metric",
    partial: bool = False,
    usable: Iterable[str] | None = None,
) -> dict[str, float]:
    """``weights`` as floats, or :class:`InvalidWeightsError` naming the first bad one.

    Args:
        weights: name -> weight (a number, or its text from a form).
        known: the names that may be weighted (metrics, or the task's datasets).
        what: ``"metric"`` or ``"dataset"``, for the messages.
        partial: the weights override some of a complete set (dataset weights over the
            owner's), so all of them may be 0; the caller checks the merged set.
        usable: the known names that can weigh here (on a board, the metrics the ranked
            models can be ranked by, ``scoring.rankable``): at least one of them needs a
            weight above 0. None: all known.

    >>> check_weights({"perf": 0, "memory": 1}, known=["perf", "memory"], usable=["perf"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scoring.weights.InvalidWeightsError: At least one of perf needs a weight above 0; ...
    """
    names = list(known)
    example = _example(what, names)
    checked: dict[str, float] = {}
    for name, raw in weights.items():
        if name not in names:
            raise InvalidWeightsError(
                f"Unknown {what} {name!r} in the weights; known: {', '.join(names) or '-'}"
            )
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise InvalidWeightsError(f"Weight {name}:{raw!r} is not a number; {example}") from None
        if not math.isfinite(value):
            raise InvalidWeightsError(
                f"Weight {name}:{raw} is not a finite number; weights are numbers >= 0, {example}"
            )
        if value < 0:
            raise InvalidWeightsError(
                f"Weight {name}:{raw:g} is negative; weights are numbers >= 0, {example}"
            )
        checked[name] = value
    if checked and not partial and not any(v > 0 for v in checked.values()):
        raise InvalidWeightsError(
            f"Every {what} weight is 0 ({_text(checked)}); give at least one a weight above 0"
        )
    if not math.isfinite(sum(checked.values())):
        raise InvalidWeightsError(
            f"The {what} weights {_text(checked)} sum to infinity; use smaller numbers "
            "(only their ratios matter), " + example
        )
    if usable is not None:
        present = list(usable)
        if not any(checked.get(name, 0.0) > 0 for name in present):
            raise InvalidWeightsError(
                f"At least one of {', '.join(present) or '-'} needs a weight above 0; "
                f"got {_text(checked)}"
            )
    return checked


def _text(weights: Mapping[str, float]) -> str:
    return ",".join(f"{k}:{v:g}" for k, v in weights.items())


def parse_weights(
    text: str | None, *, known: Iterable[str], what: str = "metric", partial: bool = False
) -> dict[str, float] | None:
    """``NAME:W,...`` (or ``NAME=W``) -> checked weights; None or blank -> None."""
    if text is None or not text.strip():
        return None
    names = list(known)
    raw: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.replace("=", ":").partition(":")
        if not sep or not name.strip() or not value.strip():
            raise InvalidWeightsError(
                f"Weight {item.strip()!r} is not {what.upper()}:NUMBER; "
                f"{_example(what, names)} (known: {', '.join(names) or '-'})"
            )
        if name.strip() in raw:
            raise InvalidWeightsError(
                f"Weight {name.strip()!r} is given twice; give each {what} once"
            )
        raw[name.strip()] = value.strip()
    parsed: dict[str, float] = {}
    for name, value in raw.items():
        try:
            parsed[name] = float(value)
        except ValueError:
            if name not in names:  # the unknown name is the more useful message
                parsed[name] = math.nan
                continue
            raise InvalidWeightsError(
                f"Weight {name}:{value!r} is not a number; {_example(what, names)}"
            ) from None
    return check_weights(parsed, known=names, what=what, partial=partial)


def default_dataset_weight(rows: int) -> float:
    """The weight of a round closed from the collection loop when the owner gives none:
    ``min(1, rows / REFERENCE_ROWS)``, so a 4-example round does not weigh as much as a
    12,000-example test set (it weighs 0.008), and any round of 500 examples or more
    weighs as much as every other dataset.

    >>> default_dataset_weight(4), default_dataset_weight(250), default_dataset_weight(12_284)
    (0.008, 0.5, 1.0)
    """
    if rows < 1:
        raise InvalidWeightsError(f"A dataset needs at least one row for a weight, got {rows}")
    return min(1.0, rows / REFERENCE_ROWS)


def check_dataset_weight(weight: float, *, name: str) -> float:
    """One dataset weight set by its owner: a finite number above 0 (1e6 at most)."""
    value = float(weight)
    if not (math.isfinite(value) and 0 < value <= 1e6):
        raise InvalidWeightsError(
            f"Weight {weight} of dataset {name!r} must be a finite number above 0 and at most "
            "1e6; e.g. 1 for a full test set, 0.25 for a small round"
        )
    return value
