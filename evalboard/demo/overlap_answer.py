"""The demo's template model: no weights; n-gram overlap picks the sentence, a template
picks the words.

Copied into its bundle as ``handler.py`` (python runtime), standard library only; the
tests' template-model bundle is this module too (tests/evaluator/test_generative_qa.py).

The sentence of the context that shares the most word bigrams (then words) with the
question is the one that answers it; the answer is the first run of up to four words of
that sentence that the question does not use (answers are what the question lacks).
Deterministic, standard library only.
"""

from __future__ import annotations

import re
from typing import Any

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[\w'-]+")
_STOP = {
    "the",
    "a",
    "an",
    "of",
    "in",
    "on",
    "to",
    "and",
    "is",
    "was",
    "what",
    "who",
    "when",
    "where",
    "which",
    "how",
    "did",
    "does",
    "do",
    "by",
    "for",
    "with",
    "as",
}
MAX_WORDS = 4


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _bigrams(words: list[str]) -> set[tuple[str, str]]:
    lowered = [w.lower() for w in words]
    return set(zip(lowered, lowered[1:], strict=False))


class Model:
    """The contract's python entry: ``predict(batch)`` answers each input with a text."""

    def __init__(self, model_dir: str) -> None:
        pass

    def _answer(self, context: str, question: str) -> str:
        asked = _words(question)
        asked_words = {w.lower() for w in asked} - _STOP
        asked_bigrams = _bigrams(asked)
        best, best_key = "", (-1, -1)
        for sentence in _SENTENCE_END.split(context.strip()):
            words = _words(sentence)
            key = (
                len(_bigrams(words) & asked_bigrams),
                len({w.lower() for w in words} & asked_words),
            )
            if key > best_key:
                best, best_key = sentence, key
        run: list[str] = []
        for word in _words(best):
            if word.lower() in asked_words or (word.lower() in _STOP and not run):
                if run:
                    break
                continue
            run.append(word)
            if len(run) == MAX_WORDS:
                break
        return " ".join(run)

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, str]]:
        return [{"text": self._answer(ex["context"], ex["question"])} for ex in batch]
