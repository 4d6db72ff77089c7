"""Delta metrics: fairness and robustness, as Dynaboard defines them.

For each perturbed example, the task metric scores the model's prediction on the
perturbed input against the model's *own* prediction on the original input (not against
the gold output), and the scores are averaged, x100. For a classifier that is the
percentage of predictions the perturbation left unchanged, so classification tasks use
accuracy here whatever their perf metric (macro-F1 of a model against itself would
reward nothing sensible); span tasks use their own metric, with the original prediction
as the one gold answer (an original abstention, "", makes the question unanswerable);
text tasks use sentence chrF of the perturbed output against the original output, whatever
their perf metric (it rewards near-identical rewordings, which exact match would not).

The caller pairs each perturbed example with its original through ``input_id``.

>>> delta("macro_f1", ["pos", "neg", "pos", "pos"], ["pos", "pos", "pos", "pos"])
75.0
>>> round(delta("squad_f1", ["the blue whale", "", "a"], ["blue whale", "", "whale"]), 4)
66.6667
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.registry import FloatArray, get_metric, per_example
from scoring.text import sentence_chrfs

__all__ = ["delta", "delta_metric", "delta_per_example"]


def delta_metric(perf_metric: str) -> str:
    """The metric that scores perturbed predictions for a task whose perf is ``perf_metric``.

    >>> delta_metric("macro_f1"), delta_metric("squad_f1")
    ('accuracy', 'squad_f1')
    """
    entry = get_metric(perf_metric)
    if entry.kind == "label":
        return "accuracy"
    if entry.kind == "text":
        return "chrf"
    return entry.name


def delta_per_example(
    perf_metric: str, perturbed: Sequence[Any], original: Sequence[Any]
) -> FloatArray:
    """Per perturbed example, the score in [0, 1] of its prediction against the original one.

    Args:
        perf_metric: the task's perf metric, e.g. ``"macro_f1"`` or ``"squad_f1"``.
        perturbed: the model's predictions on the perturbed inputs.
        original: the model's predictions on the matching original inputs, same order.

    >>> delta_per_example("accuracy", ["a", "b"], ["a", "a"])
    array([1., 0.])
    """
    name = delta_metric(perf_metric)
    if get_metric(name).kind == "text":
        return sentence_chrfs(perturbed, [[text] for text in original])
    if get_metric(name).kind == "span":
        return per_example(name, perturbed, [[answer] for answer in original])
    return per_example(name, perturbed, original)


def delta(perf_metric: str, perturbed: Sequence[Any], original: Sequence[Any]) -> float:
    """Fairness or robustness x100: the mean of :func:`delta_per_example` x100."""
    return float(100.0 * delta_per_example(perf_metric, perturbed, original).mean())
