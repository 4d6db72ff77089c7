"""Text-generation metrics, x100: exact match and token F1 (normalised, the best over an
example's references), chrF and BLEU as sacrebleu computes them at corpus level (several
references per example), and ROUGE-L (rouge-score's F-measure, the best reference).

chrF and BLEU are corpus metrics, not means of sentence scores: their per-example
statistics are sacrebleu's own segment statistics (character or word n-gram matches and
lengths, the best reference chosen as sacrebleu chooses it), summed and reduced with
sacrebleu's own formula, so the bootstrap resamples them like any other metric and the
full-data figure is exactly ``sacrebleu.corpus_chrf`` / ``corpus_bleu``'s.

>>> from scoring import compute
>>> compute("exact_match", ["The cat.", "a dog"], [["cat", "kitten"], ["cat"]])
50.0
>>> compute("text_f1", ["the black cat"], [["black cat sat", "dog"]])
80.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from scoring.registry import FloatArray, ScoringError, metric
from scoring.squad import normalize_answer, token_f1

if TYPE_CHECKING:
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu.metrics.base import Metric as SacreMetric
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.chrf import CHRF

__all__ = ["TEXT_METRICS", "sentence_chrfs"]

TEXT_METRICS: tuple[str, ...] = ("chrf", "bleu", "rouge_l", "text_f1", "exact_match")
"""The metrics of a text task, any of which may be its ``perf_metric``."""


# sacrebleu and rouge-score load on first use: importing scoring stays light (rouge-score
# pulls nltk, and through it pandas, which the board's start-up need not pay for).
@cache
def _chrf() -> CHRF:
    from sacrebleu.metrics.chrf import CHRF

    return CHRF()


@cache
def _bleu() -> BLEU:
    from sacrebleu.metrics.bleu import BLEU

    return BLEU()


@cache
def _rouge() -> RougeScorer:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"])


def _references(golds: Sequence[Any]) -> list[list[str]]:
    checked = []
    for gold in golds:
        if isinstance(gold, str) or not gold or not all(isinstance(r, str) for r in gold):
            raise ScoringError(
                f"a text example's gold is a non-empty list of reference strings; got {gold!r}"
            )
        checked.append(list(gold))
    return checked


def _streams(references: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu's layout: one stream per reference position, None where an example has
    fewer references (sacrebleu skips those)."""
    width = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]


def _segment_statistics(
    scorer: SacreMetric, predictions: Sequence[Any], golds: Sequence[Any]
) -> FloatArray:
    streams = _streams(_references(golds))
    # sacrebleu's own hint omits the None its code documents for a missing reference.
    stats = scorer._extract_corpus_statistics(list(predictions), streams)  # type: ignore[arg-type]  # noqa: SLF001
    return np.asarray(stats, dtype=np.float64)


def _reducer(make_scorer: Callable[[], SacreMetric]) -> Callable[[FloatArray, int], FloatArray]:
    def reduce(sums: FloatArray, count: int) -> FloatArray:
        # sacrebleu's formula on the summed statistics; leading axes are bootstrap draws.
        scorer = make_scorer()
        flat = sums.reshape(-1, sums.shape[-1])
        scores = [
            scorer._compute_score_from_stats([int(round(v)) for v in row]).score  # noqa: SLF001
            for row in flat
        ]
        return np.asarray(scores, dtype=np.float64).reshape(sums.shape[:-1])

    return reduce


@metric("chrf", kind="text", reduce=_reducer(_chrf))
def chrf_statistics(predictions: Sequence[Any], golds: Sequence[Any], labels: Any) -> FloatArray:
    """Per example: sacrebleu's chrF segment statistics against its best reference."""
    return _segment_statistics(_chrf(), predictions, golds)


@metric("bleu", kind="text", reduce=_reducer(_bleu))
def bleu_statistics(predictions: Sequence[Any], golds: Sequence[Any], labels: Any) -> FloatArray:
    """Per example: sacrebleu's BLEU n-gram matches, totals and lengths."""
    return _segment_statistics(_bleu(), predictions, golds)


@metric("exact_match", kind="text")
def exact_matches(predictions: Sequence[str], golds: Sequence[Any]) -> FloatArray:
    """1 where the normalised prediction equals a normalised reference."""
    return np.asarray(
        [
            float(normalize_answer(p) in {normalize_answer(r) for r in refs})
            for p, refs in zip(predictions, _references(golds), strict=True)
        ]
    )


@metric("text_f1", kind="text")
def text_f1s(predictions: Sequence[str], golds: Sequence[Any]) -> FloatArray:
    """Token F1 (normalised tokens) against the best reference."""
    return np.asarray(
        [
            max(token_f1(p, r) for r in refs)
            for p, refs in zip(predictions, _references(golds), strict=True)
        ]
    )


@metric("rouge_l", kind="text")
def rouge_ls(predictions: Sequence[str], golds: Sequence[Any]) -> FloatArray:
    """ROUGE-L F-measure against the best reference (rouge-score's ``score_multi``)."""
    scorer = _rouge()
    return np.asarray(
        [
            scorer.score_multi(refs, p)["rougeL"].fmeasure
            for p, refs in zip(predictions, _references(golds), strict=True)
        ]
    )


def sentence_chrfs(predictions: Sequence[str], references: Sequence[Any]) -> FloatArray:
    """Per example, sentence chrF in [0, 1] of a prediction against its references (the
    best one, as sacrebleu picks it): the delta metric of text tasks (the perturbed output
    against the original output) and the loop's ``chrf_below`` rule.

    >>> sentence_chrfs(["Rollo"], [["Rollo", "Hrolf"]])
    array([1.])
    """
    scorer = _chrf()
    return np.asarray(
        [
            scorer.sentence_score(p, refs).score / 100.0
            for p, refs in zip(predictions, _references(references), strict=True)
        ]
    )
