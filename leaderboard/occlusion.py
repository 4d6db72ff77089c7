"""Word-level attributions by occlusion: which words of an input moved the model's answer.

Any model that speaks the container contract can be explained this way, whatever its
runtime (python, onnx, transformers, an image in any language): no gradient, no access
to its weights. Each word (a run of non-space characters) of each of the task's input
fields is removed in turn, with the whitespace after it; the model answers the full
input and every such variant, and a word's attribution says how far removing it moved
the answer:

- classification: the drop in the probability the model gives its predicted label,
  ``p(label | input) - p(label | input without the word)``. Positive: the word supported
  the prediction; negative: it pulled the other way. A model that gives no probabilities
  counts its label as probability 1, so a word scores 1 when removing it changes the
  label, else 0.
- QA (span) and text: 1 minus the similarity of the variant's answer to the full input's
  answer, by the delta rule robustness already uses (``scoring.delta_per_example``):
  SQuAD token F1 of the answers for QA, sentence chrF of the texts for text generation.
  0: removing the word left the answer as it was; 1: it changed it entirely.

Only the gold-free inputs ever reach the model (``uid`` and the task's input fields).

>>> [w.text for w in words_of({"statement": "Not  bad, really."}, ["statement"])]
['Not', 'bad,', 'really.']
>>> without("Not  bad, really.", 0, 3)
'bad, really.'
>>> without("Not  bad, really.", 10, 17)
'Not  bad,'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datasets_registry import TaskSpec
from scoring import delta_per_example

__all__ = ["RULES", "Word", "attribution_scores", "variants", "without", "words_of"]

_WORD = re.compile(r"\S+")

#: How a word's attribution is computed, per output type, as the API and page say it.
RULES: Mapping[str, str] = {
    "multiclass": "the drop in the probability of the predicted label when the word is removed",
    "span": "1 - SQuAD token F1 of the answer without the word against the answer with it",
    "text": "1 - sentence chrF of the text generated without the word against the text with it",
}


@dataclass(frozen=True)
class Word:
    """One word of one input field: its text and where it stands (character offsets)."""

    field: str
    start: int
    end: int
    text: str


def words_of(inputs: Mapping[str, str], fields: Sequence[str]) -> list[Word]:
    """The words of ``fields`` of ``inputs``, field by field, in reading order."""
    return [
        Word(field, match.start(), match.end(), match.group())
        for field in fields
        for match in _WORD.finditer(inputs.get(field, ""))
    ]


def without(text: str, start: int, end: int) -> str:
    """``text`` with ``text[start:end]`` removed, and the whitespace after it (or, for the
    last word, before it), so that no double space is left where it stood."""
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    if after > end:
        return text[:start] + text[after:]
    before = start
    while before > 0 and text[before - 1].isspace():
        before -= 1
    return text[:before] + text[end:]


def variants(inputs: Mapping[str, str], words: Sequence[Word]) -> list[dict[str, str]]:
    """One input per word: ``inputs`` with that word removed from its field."""
    return [
        {**inputs, word.field: without(inputs[word.field], word.start, word.end)} for word in words
    ]


def _probability(output: Mapping[str, Any], label: str) -> float:
    probs = output.get("probs")
    if isinstance(probs, Mapping):
        return float(probs.get(label, 0.0))
    return 1.0 if output.get("label") == label else 0.0


def attribution_scores(
    task: TaskSpec, full: Mapping[str, Any], occluded: Sequence[Mapping[str, Any]]
) -> list[float]:
    """Each word's attribution, from the model's (checked) output on the full input and
    on each variant, in the order of :func:`variants` (the rules: :data:`RULES`)."""
    if task.output.type == "multiclass":
        label = str(full["label"])
        base = _probability(full, label)
        return [base - _probability(output, label) for output in occluded]
    answer = task.prediction(full)
    similarity = delta_per_example(
        task.perf_metric, [task.prediction(o) for o in occluded], [answer] * len(occluded)
    )
    return [float(1.0 - s) for s in similarity]
