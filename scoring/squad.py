"""SQuAD exact match and F1, x100, as the official v2.0 evaluation script computes them.

Answers are normalised (lower case, punctuation removed, the articles a/an/the removed,
whitespace collapsed), each prediction is scored against every gold answer, and the best
score counts. Gold answers that normalise to nothing are dropped; a question left with
no gold answer is unanswerable, and its one correct prediction is the empty string.

>>> from scoring import compute
>>> compute("squad_em", ["The Eiffel Tower", "Paris"], [["Eiffel Tower"], ["London"]])
50.0
>>> compute("squad_f1", ["in Paris, France", ""], [["Paris"], []])
75.0
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from scoring.registry import FloatArray, ScoringError, metric

__all__ = ["exact_matches", "normalize_answer", "token_f1", "token_f1s"]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, strip punctuation and articles, collapse whitespace (official SQuAD).

    >>> normalize_answer("  The  Eiffel-Tower!  ")
    'eiffeltower'
    >>> normalize_answer("An apple a day")
    'apple day'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-overlap F1 in [0, 1] between one prediction and one gold answer.

    >>> token_f1("the cat sat", "a cat sat down")
    0.8
    >>> token_f1("", "")
    1.0
    """
    predicted_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not predicted_tokens or not gold_tokens:
        return float(predicted_tokens == gold_tokens)
    common = sum((Counter(predicted_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _gold_answers(answers: Sequence[str]) -> list[str]:
    if isinstance(answers, str):
        raise ScoringError(
            f"SQuAD gold answers must be a list of strings, got the string {answers!r}; "
            "wrap it in a list (or pass [] for an unanswerable question)"
        )
    kept = [answer for answer in answers if normalize_answer(answer)]
    return kept or [""]


def _same_answer(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _best_over_answers(
    score: Callable[[str, str], float],
    predictions: Sequence[str],
    golds: Sequence[Sequence[str]],
) -> FloatArray:
    """Per example, the best ``score(prediction, answer)`` over its gold answers."""
    return np.fromiter(
        (
            max(score(p, g) for g in _gold_answers(gs))
            for p, gs in zip(predictions, golds, strict=True)
        ),
        dtype=np.float64,
        count=len(golds),
    )


@metric("squad_em", kind="span")
def exact_matches(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> FloatArray:
    """Per example, 1.0 where the normalised prediction equals some normalised gold answer.

    >>> exact_matches(["Tower.", "", "x"], [["the tower"], [], []])
    array([1., 1., 0.])
    """
    return _best_over_answers(_same_answer, predictions, golds)


@metric("squad_f1", kind="span")
def token_f1s(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> FloatArray:
    """Per example, the best token F1 in [0, 1] over the gold answers.

    >>> token_f1s(["blue whale", "no"], [["the blue whale", "whale"], []])
    array([1., 0.])
    """
    return _best_over_answers(token_f1, predictions, golds)
