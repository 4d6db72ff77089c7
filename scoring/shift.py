"""Input shift: a classifier two-sample test between production inputs and reference inputs.

The question is whether a batch of unlabeled production inputs (*traffic*) comes from the
same distribution as the task's datasets (*reference*). The test is the classifier
two-sample test (Lopez-Paz and Oquab, 2017; the "domain classifier" of Rabanser et al.,
2019, *Failing Loudly*): if a classifier tells traffic from reference better than chance
on inputs it was not trained on, the two differ.

* Features: each input's words and word pairs (casefolded), tf-idf weighted (sublinear tf,
  smoothed idf), each row scaled to unit length. The vocabulary is the pooled inputs'
  terms found in at least two inputs, the ``max_features`` most frequent; it never sees
  which side an input is on.
* Classifier: nearest centroid (Rocchio): an input's *shift score* is its dot product
  with the difference of the traffic and reference centroids of the training folds (the
  witness function of a linear-kernel MMD). Its scores are linear in the labels, so
  every permutation below is one matrix product rather than a new fit: 999 permutations
  of 1,000 + 1,000 inputs take a few seconds on a loaded 2-core machine, where refitting a
  logistic regression 5,000 times would take minutes. On SST against DynaSent its AUC is
  a little below a kernel ridge classifier's (300 + 300 inputs: 0.924 and 0.932; 2,000 +
  2,000: 0.946 and 0.973; benchmarks/bench_drift.py): both far from 0.5.
* Statistic: the AUC of the out-of-fold scores, averaged over ``folds`` folds stratified by
  side. 0.5 is no shift; 1.0 is traffic that never looks like reference.
* p-value: labels permuted within each fold (each fold keeps its counts, so every fold's
  AUC exists), the same folds and features, ``n_permutations`` times with a fixed seed;
  ``p = (1 + #{null AUC >= observed}) / (1 + n_permutations)``, one-sided (a shift raises
  the AUC). Exact under the null that traffic and reference inputs are exchangeable.
* Interval: a percentile bootstrap of the AUC over the out-of-fold scores (each fold's
  traffic and reference resampled apart); it holds the fitted centroids fixed, so it
  leaves out their own variation.

>>> reviews = [f"the {w} was {v} and the staff {s}" for w, v, s in zip(
...     ["food", "pasta", "soup", "pizza", "salad"] * 8,
...     ["cold", "great", "bland", "fresh", "awful", "tasty", "fine", "good"] * 5,
...     ["smiled", "rushed", "waited", "helped"] * 10)]
>>> films = [f"the {w} film was {v} and the plot {s}" for w, v, s in zip(
...     ["new", "old", "long", "short", "french"] * 8,
...     ["dull", "moving", "slow", "clever", "silly", "tense", "flat", "warm"] * 5,
...     ["dragged", "twisted", "worked", "sagged"] * 10)]
>>> shifted = domain_shift(films, reviews, n_permutations=199, seed=1)
>>> shifted.auc.estimate > 0.95, shifted.p_value
(True, 0.005)
>>> same = domain_shift(reviews[:20], reviews[20:], n_permutations=199, seed=1)
>>> same.p_value > 0.05
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoring import percentiles
from scoring.bootstrap import Interval
from scoring.registry import FloatArray, ScoringError

__all__ = ["SHIFT_METHOD", "ShiftTest", "domain_shift", "shift_features"]

#: How the test is named in reports (the docs name and justify it).
SHIFT_METHOD = "domain classifier (nearest centroid on tf-idf), cross-validated AUC"

#: An input: one text, or one text per input field (QA: context and question).
Text = str | Sequence[str]

_WORD = re.compile(r"\w+(?:'\w+)*")


def _terms(text: Text) -> list[str]:
    fields = [text] if isinstance(text, str) else list(text)
    terms: list[str] = []
    for number, field in enumerate(fields):
        words = _WORD.findall(field.casefold())
        tag = f"{number}:" if len(fields) > 1 else ""
        terms.extend(tag + w for w in words)
        terms.extend(f"{tag}{a} {b}" for a, b in zip(words, words[1:], strict=False))
    return terms


def shift_features(texts: Sequence[Text], *, max_features: int = 4096) -> NDArray[np.float32]:
    """Unit-length tf-idf rows over the words and word pairs found in two inputs or more.

    >>> rows = shift_features(["good food", "good film", "bad film"])
    >>> rows.shape  # "good" and "film" are each in two inputs
    (3, 2)
    >>> np.round(np.linalg.norm(rows, axis=1), 6).tolist()
    [1.0, 1.0, 1.0]
    """
    documents = [_terms(text) for text in texts]
    frequency: dict[str, int] = {}
    for terms in documents:
        for term in set(terms):
            frequency[term] = frequency.get(term, 0) + 1
    kept = sorted((t for t, n in frequency.items() if n >= 2), key=lambda t: (-frequency[t], t))
    kept = kept[:max_features]
    column = {term: j for j, term in enumerate(kept)}
    rows = np.zeros((len(documents), len(kept)), dtype=np.float32)
    for i, terms in enumerate(documents):
        for term in terms:
            j = column.get(term)
            if j is not None:
                rows[i, j] += 1.0
    np.log1p(rows, out=rows)  # sublinear tf: 1 + log(count), shifted to keep zeros zero
    n = len(documents)
    df = np.array([frequency[t] for t in kept], dtype=np.float32)
    rows *= np.log((1.0 + n) / (1.0 + df)) + 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    rows /= norms
    return rows


@dataclass(frozen=True)
class ShiftTest:
    """The outcome of :func:`domain_shift`.

    Attributes:
        auc: the cross-validated AUC with its bootstrap interval (0.5: no shift).
        p_value: the permutation p-value, at least ``1 / (1 + n_permutations)``.
        traffic_scores: each traffic input's out-of-fold shift score, in input order
            (higher: more unlike the reference).
        reference_scores: the same for each reference input.
    """

    auc: Interval
    p_value: float
    n_traffic: int
    n_reference: int
    n_permutations: int
    folds: int
    features: int
    seed: int
    traffic_scores: FloatArray
    reference_scores: FloatArray


def _folds(is_traffic: NDArray[np.bool_], k: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Fold of each input, stratified: each side dealt round-robin in a random order."""
    fold = np.empty(len(is_traffic), dtype=np.intp)
    for side in (True, False):
        members = np.flatnonzero(is_traffic == side)
        rng.shuffle(members)
        fold[members] = np.arange(len(members)) % k
    return fold


def _permuted(
    labels: FloatArray, fold: NDArray[np.intp], n: int, rng: np.random.Generator
) -> FloatArray:
    """Column 0: the labels; columns 1..n: the labels shuffled within each fold."""
    columns = np.empty((len(labels), n + 1))
    columns[:, 0] = labels
    members = np.argsort(fold, kind="stable")  # fold 0's inputs, then fold 1's, ...
    # Sorting random keys offset by the fold keeps each fold's block and shuffles inside it.
    shuffled = np.argsort(fold[:, None] + rng.random((len(labels), n)), axis=0)
    columns[members, 1:] = labels[shuffled]
    return columns


def _aucs(scores: FloatArray, positive: NDArray[np.bool_]) -> FloatArray:
    """The AUC of each column of ``scores`` (Mann-Whitney, ties counted half).

    >>> s = np.array([[0.9, 0.1], [0.8, 0.8], [0.1, 0.9]])
    >>> _aucs(s, np.array([[True, True], [False, False], [False, False]])).tolist()
    [1.0, 0.0]
    """
    m = scores.shape[0]
    order = np.argsort(scores, axis=0, kind="stable")
    ordered = np.take_along_axis(scores, order, axis=0)
    # Tied scores share the mean of their positions: find each run's first and last.
    position = np.arange(m)[:, None]
    starts = np.ones(scores.shape, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    ends = np.ones(scores.shape, dtype=bool)
    ends[:-1] = starts[1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=0)
    last = np.minimum.accumulate(np.where(ends, position, m)[::-1], axis=0)[::-1]
    ranks = np.empty(scores.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=0)
    n_pos = positive.sum(axis=0)
    n_neg = m - n_pos
    auc: FloatArray = ((ranks * positive).sum(axis=0) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return auc


def _resampled_aucs(
    scores: FloatArray, positive: NDArray[np.bool_], n: int, rng: np.random.Generator
) -> FloatArray:
    """``n`` bootstrap AUCs: positives and negatives resampled apart (counts kept)."""
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    picks = np.concatenate([rng.choice(pos, (len(pos), n)), rng.choice(neg, (len(neg), n))], axis=0)
    flags = np.zeros(picks.shape, dtype=bool)
    flags[: len(pos)] = True
    return _aucs(scores[picks], flags)


def domain_shift(
    traffic: Sequence[Text],
    reference: Sequence[Text],
    *,
    folds: int = 5,
    n_permutations: int = 999,
    n_resamples: int = 1000,
    level: float = 0.95,
    max_features: int = 4096,
    seed: int = 0,
) -> ShiftTest:
    """Test whether ``traffic`` and ``reference`` inputs come from one distribution.

    Args:
        traffic: the production inputs; each a text or a sequence of field texts.
        reference: the inputs they are compared with, in the same shape.
        folds: cross-validation folds; each side needs at least this many inputs.
        n_permutations: label permutations for the p-value (999 resolves p = 0.001).
        n_resamples: bootstrap resamples for the AUC's interval.
        level: the interval's coverage.
        max_features: the largest vocabulary kept.
        seed: folds, permutations and resamples are all drawn from it.

    Raises:
        ScoringError: a side has fewer than ``folds`` inputs, or a count is unusable.
    """
    if folds < 2 or n_permutations < 1 or n_resamples < 1 or not 0 < level < 1:
        raise ScoringError(
            f"folds {folds} (>= 2), n_permutations {n_permutations} (>= 1), n_resamples "
            f"{n_resamples} (>= 1) and level {level} (in (0, 1)) must be usable"
        )
    if min(len(traffic), len(reference)) < folds:
        raise ScoringError(
            f"A shift test with {folds} folds needs at least {folds} inputs on each side; "
            f"got {len(traffic)} traffic and {len(reference)} reference"
        )
    rows = shift_features([*traffic, *reference], max_features=max_features)
    is_traffic = np.arange(len(rows)) < len(traffic)
    rng = np.random.default_rng(seed)
    fold = _folds(is_traffic, folds, rng)
    labels = _permuted(is_traffic.astype(np.float64), fold, n_permutations, rng)
    gram = rows @ rows.T  # float32: the one large product
    null = np.zeros(n_permutations + 1)
    scores = np.empty(len(rows))
    resampled = np.zeros(n_resamples)
    for k in range(folds):
        test, train = fold == k, fold != k
        y = labels[train]
        n_pos = y.sum(axis=0)
        # Centroid difference weights: +1/n_traffic on traffic, -1/n_reference elsewhere.
        weights = (y / n_pos - (1.0 - y) / (len(y) - n_pos)).astype(np.float32)
        fold_scores = (gram[np.ix_(test, train)] @ weights).astype(np.float64)
        null += _aucs(fold_scores, labels[test] == 1.0)
        scores[test] = fold_scores[:, 0]
        resampled += _resampled_aucs(fold_scores[:, 0], is_traffic[test], n_resamples, rng)
    null /= folds
    resampled /= folds
    observed = float(null[0])
    low, high = percentiles.ends(resampled[:, None], level=level)[:, 0].tolist()
    return ShiftTest(
        auc=Interval(estimate=observed, low=low, high=high),
        p_value=float((1 + np.sum(null[1:] >= observed - 1e-12)) / (1 + n_permutations)),
        n_traffic=len(traffic),
        n_reference=len(reference),
        n_permutations=n_permutations,
        folds=folds,
        features=rows.shape[1],
        seed=seed,
        traffic_scores=scores[is_traffic],
        reference_scores=scores[~is_traffic],
    )
