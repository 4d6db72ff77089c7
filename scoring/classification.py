"""Classification metrics: accuracy and macro-F1, x100.

>>> from scoring import compute
>>> compute("accuracy", ["pos", "neg", "pos", "neu"], ["pos", "pos", "pos", "neu"])
75.0
>>> round(compute("macro_f1", ["pos", "neg", "pos"], ["pos", "neg", "neg"],
...               labels=["neg", "neu", "pos"]), 4)
66.6667

Macro-F1 averages the per-class F1 over the task's label set, leaving out classes that
appear neither among the golds nor among the predictions (their F1 is 0/0). That is what
Dynabench got from scikit-learn's ``f1_score(average="macro")``, and it keeps a perfect
model at 100 on a dataset that happens to lack a class. A prediction outside the label
set is simply wrong: a false negative for the gold class, no one's false positive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scoring.registry import FloatArray, ScoringError, metric

__all__ = ["class_counts", "macro_f1_from_counts", "matches"]


@metric("accuracy")
def matches(predictions: Sequence[Any], golds: Sequence[Any]) -> FloatArray:
    """Per example, 1.0 where the prediction equals the gold label, else 0.0.

    >>> matches(["a", "b", "c"], ["a", "c", "c"])
    array([1., 0., 1.])
    >>> matches(np.array([0, 1, 2]), np.array([0, 1, 1]))
    array([1., 1., 0.])
    """
    predicted = np.asarray(predictions)
    gold = np.asarray(golds)
    if predicted.dtype.kind == gold.dtype.kind and predicted.dtype.kind in "biuU":
        return np.asarray(predicted == gold, dtype=np.float64)
    return np.fromiter(
        (p == g for p, g in zip(predictions, golds, strict=True)),
        dtype=np.float64,
        count=len(golds),
    )


def _label_set(
    predictions: Sequence[Any], golds: Sequence[Any], labels: Sequence[Any] | None
) -> list[Any]:
    if labels is not None:
        return list(labels)
    return sorted(set(golds) | set(predictions), key=str)


@metric("macro_f1", reduce=lambda sums, count: macro_f1_from_counts(sums))
def class_counts(
    predictions: Sequence[Any], golds: Sequence[Any], labels: Sequence[Any] | None
) -> FloatArray:
    """Per-example one-hot true positives, false positives and false negatives per class.

    Columns: ``tp`` for each label, then ``fp`` for each label, then ``fn``; summed over
    examples they are the confusion counts macro-F1 is made from. Pass ``labels`` (the
    task's label set, in a fixed order) whenever statistics of several models must line
    up, as in the bootstrap; without it the labels seen here are used, sorted.

    >>> class_counts(["a", "b"], ["a", "a"], ["a", "b"])
    array([[1., 0., 0., 0., 0., 0.],
           [0., 0., 0., 1., 1., 0.]])
    """
    label_set = _label_set(predictions, golds, labels)
    index = {label: i for i, label in enumerate(label_set)}
    if len(index) != len(label_set):
        raise ScoringError(f"The label set {label_set!r} repeats a label")
    unknown = sorted({str(g) for g in golds if g not in index})
    if unknown:
        raise ScoringError(
            f"Gold labels {', '.join(unknown)} are not in the task's label set "
            f"{label_set!r}; fix the dataset or the task's labels"
        )
    gold = np.fromiter((index[g] for g in golds), dtype=np.intp, count=len(golds))
    predicted = np.fromiter(
        (index.get(p, -1) for p in predictions), dtype=np.intp, count=len(predictions)
    )
    classes = np.arange(len(label_set))
    is_gold = gold[:, None] == classes
    is_predicted = predicted[:, None] == classes
    tp = is_gold & is_predicted
    fp = is_predicted & ~is_gold
    fn = is_gold & ~is_predicted
    return np.concatenate([tp, fp, fn], axis=1).astype(np.float64)


def macro_f1_from_counts(sums: FloatArray) -> FloatArray:
    """Macro-F1 x100 from summed :func:`class_counts` (last axis: tp, fp, fn per class).

    Leading axes are kept, so a batch of bootstrap resamples reduces in one call.

    >>> macro_f1_from_counts(np.array([2.0, 1.0, 0.0, 0.0, 1.0, 0.0]))
    array(90.)
    """
    tp, fp, fn = np.split(np.asarray(sums, dtype=np.float64), 3, axis=-1)
    denominator = 2 * tp + fp + fn
    present = denominator > 0
    f1 = np.divide(2 * tp, denominator, out=np.zeros_like(tp), where=present)
    n_present = present.sum(axis=-1)
    total = f1.sum(axis=-1)
    return np.asarray(
        100.0 * np.divide(total, n_present, out=np.full(total.shape, np.nan), where=n_present > 0),
        dtype=np.float64,
    )
