"""The model-output contract, in one place: what a task's model returns for one input.

docs/contract.md states it for researchers. Classification: a ``label`` among the task's
labels and optionally ``probs`` (label -> probability, each in [0, 1], summing to 1).
QA: an ``answer`` that is a span of the input's ``context`` (``''`` for no answer) and
optionally ``conf`` in [0, 1]. Text generation: a ``text`` (any string, ``''`` included),
scored against the example's ``references``; the task fixes the generation settings
(:class:`GenerationSettings`) so that results reproduce.
Any output, in any field (extra ones included), holds finite numbers only: it is JSON,
which has no NaN or infinities.

:meth:`OutputSpec.parse` turns one raw output into a typed :class:`LabelOutput`,
:class:`SpanOutput` or :class:`TextOutput`, or raises :class:`BadOutput` with everything
wrong with it;
:func:`output_problems` checks a whole batch. The evaluator's measurement (where a bad
output is the model's ``protocol_error``), ``evalboard model test`` and the loop's target
models all check through here, so they cannot disagree. :meth:`OutputSpec.prediction` and
:meth:`OutputSpec.gold` are the one place that says which part of a (checked) output and
of an example a metric compares.

>>> spec = OutputSpec(type="multiclass", labels=["neg", "pos"])
>>> spec.parse({"label": "pos", "probs": {"neg": 0.25, "pos": 0.75}})
LabelOutput(label='pos', probs={'neg': 0.25, 'pos': 0.75})
>>> spec.parse({"label": "great"})
Traceback (most recent call last):
...
datasets_registry.outputs.BadOutput: has label 'great', which is not one of the task's ...
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "PROBS_TOLERANCE",
    "GOLD_FIELDS",
    "BadOutput",
    "GenerationSettings",
    "LabelOutput",
    "ModelOutput",
    "OutputProblem",
    "OutputSpec",
    "SpanOutput",
    "TextOutput",
    "output_problems",
]

#: How far from 1 a classifier's probabilities may sum: float32 softmax rounding, not
#: a model that forgot a label.
PROBS_TOLERANCE = 1e-3


#: The example fields that hold a gold output, of any output type: what an inputs-only
#: export, a drill-down's inputs and a sandbox never see.
GOLD_FIELDS: tuple[str, ...] = ("label", "answers", "references")


@dataclass(frozen=True, slots=True)
class LabelOutput:
    """A classifier's answer: one of the task's labels, and its probabilities if given."""

    label: str
    probs: Mapping[str, float] | None = None


@dataclass(frozen=True, slots=True)
class SpanOutput:
    """A QA model's answer: a span of the context ('' for no answer), and its confidence."""

    answer: str
    conf: float | None = None


@dataclass(frozen=True, slots=True)
class TextOutput:
    """A generative model's answer: the text it generated ('' is an answer too)."""

    text: str


ModelOutput = LabelOutput | SpanOutput | TextOutput


class GenerationSettings(BaseModel):
    """How a text task's models must generate, fixed by the task so that results reproduce.

    The container contract's requests carry inputs only, so these are the task's
    published rules (docs/contract.md), which a bundle follows for the task it is built for.
    """

    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(64, ge=1, le=4096)
    greedy: bool = True
    #: The sampling seed where ``greedy`` is off; sampling without one cannot reproduce.
    seed: int | None = None

    @model_validator(mode="after")
    def _reproducible(self) -> GenerationSettings:
        if not self.greedy and self.seed is None:
            raise ValueError("sampling (greedy: false) needs a fixed `seed` so results reproduce")
        return self


class BadOutput(ValueError):
    """An output breaks the contract; ``problems`` says how, each naming the bad value."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class OutputProblem:
    """One thing wrong with one output of a batch (``index`` None: the batch as a whole)."""

    index: int | None
    uid: str | None
    problem: str

    def describe(self) -> str:
        """The problem as one line that names the output it is about."""
        return self.problem if self.index is None else f"output for uid {self.uid!r} {self.problem}"


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 120 else shown[:117] + "..."


def _non_finite(raw: Mapping[str, Any]) -> list[str]:
    """Each field of ``raw`` (a nested one as ``probs.pos`` or ``spans[0]``) that holds NaN
    or an infinity: JSON has no such numbers, so an output carrying one could be neither
    stored nor read back, whatever field holds it (a model's runner cannot even send one:
    "Out of range float values are not JSON compliant")."""
    if _finite(raw.values()):  # the hot path: a model's every output, no names built
        return []
    found: list[str] = []
    pending: list[tuple[str, Any]] = [(str(key), value) for key, value in raw.items()]
    while pending:
        where, value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, list | tuple):
            pending.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        elif not _finite((value,)):
            found.append(where)
    return sorted(found)


_PLAIN = frozenset({str, int, bool, type(None)})


def _finite(values: Iterable[Any]) -> bool:
    """Whether no NaN or infinity is among ``values``, at any depth (a stack, not
    recursion: a deeply nested output cannot overflow it)."""
    pending = list(values)
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind in _PLAIN:
            continue
        if kind is float or isinstance(value, float):
            if not math.isfinite(value):
                return False
        elif kind is dict or isinstance(value, Mapping):
            pending.extend(value.values())
        elif kind is list or isinstance(value, tuple | list):
            pending.extend(value)
    return True


def _is_probability(value: Any) -> bool:
    if type(value) is float:  # what a model's JSON gives: the per-output check's hot path
        return 0.0 <= value <= 1.0  # NaN compares false; an infinity is out of range
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


class OutputSpec(BaseModel):
    """What a model predicts: one of ``labels`` (multiclass), a span of the context (QA) or
    free text (``text``, generated under the task's ``generation`` settings)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["multiclass", "span", "text"]
    labels: list[str] = Field(default_factory=list)
    generation: GenerationSettings | None = None

    @model_validator(mode="after")
    def _labels_match_type(self) -> OutputSpec:
        if self.type == "multiclass" and len(self.labels) < 2:
            raise ValueError("a multiclass output needs at least two labels")
        if self.type == "multiclass" and len(set(self.labels)) != len(self.labels):
            raise ValueError(f"labels repeat: {self.labels}")
        if self.type != "multiclass" and self.labels:
            raise ValueError(f"a {self.type} output has no labels; remove `labels`")
        if self.type != "text" and self.generation is not None:
            raise ValueError("`generation` is for text outputs; remove it")
        if self.type == "text" and self.generation is None:
            self.generation = GenerationSettings()
        return self

    @property
    def gold_field(self) -> str:
        """The example field that holds the gold output: ``label``, ``answers`` or
        ``references``."""
        return {"multiclass": "label", "span": "answers", "text": "references"}[self.type]

    # The contract ---------------------------------------------------------------------------

    def parse(self, raw: Any, *, context: str | None = None) -> ModelOutput:
        """``raw`` as a typed output; ``context`` is the input's, for a span's check.

        Raises:
            BadOutput: naming every problem and the bad value of each.
        """
        problems = self.problems(raw, context=context)
        if problems:
            raise BadOutput(problems)
        if self.type == "span":
            return SpanOutput(answer=raw["answer"], conf=raw.get("conf"))
        if self.type == "text":
            return TextOutput(text=raw["text"])
        return LabelOutput(label=raw["label"], probs=raw.get("probs"))

    def problems(self, raw: Any, *, context: str | None = None) -> list[str]:
        """Everything wrong with ``raw`` (empty when it keeps the contract), without
        building the typed output: what a batch's check needs."""
        # A dict first: an ABC's isinstance check costs more than the rest of the check.
        if type(raw) is not dict and not isinstance(raw, Mapping):
            return [f"is {_short(raw)}, not an object"]
        if self.type == "span":
            problems = self._span_problems(raw, context)
        elif self.type == "text":
            problems = self._text_problems(raw)
        else:
            problems = self._label_problems(raw)
        non_finite = _non_finite(raw)
        if non_finite:
            named = ", ".join(map(repr, non_finite[:5]))
            more = f" (and {len(non_finite) - 5} more)" if len(non_finite) > 5 else ""
            problems.append(
                f"has NaN or an infinity in {named}{more}; outputs are JSON, whose numbers "
                "are finite: give a finite number or leave the field out"
            )
        return problems

    @property
    def _known(self) -> str:
        return ", ".join(self.labels)

    def _label_problems(self, raw: Mapping[str, Any]) -> list[str]:
        problems = []
        label = raw.get("label")
        if not isinstance(label, str) or label not in self.labels:
            problems.append(
                f"has label {_short(label)}, which is not one of the task's labels: {self._known}"
            )
        probs = raw.get("probs")
        if probs is None:
            return problems
        if type(probs) is not dict and not isinstance(probs, Mapping):
            problems.append(
                f"has probs {_short(probs)}; probs must be an object mapping the task's "
                f"labels ({self._known}) to probabilities"
            )
            return problems
        unknown = [name for name in probs if name not in self.labels]
        if unknown:
            problems.append(
                f"has probs naming unknown label(s) {', '.join(map(_short, unknown))}; "
                f"known: {self._known}"
            )
            return problems
        for name, value in probs.items():
            if not _is_probability(value):
                problems.append(
                    f"has probs[{name!r}] = {_short(value)}; probabilities are finite "
                    "numbers in [0, 1]"
                )
                return problems
        total = math.fsum(probs.values())
        if abs(total - 1.0) > PROBS_TOLERANCE:
            problems.append(
                f"has probs that sum to {total:.6f}, not 1 (within {PROBS_TOLERANCE:g})"
            )
        return problems

    @staticmethod
    def _span_problems(raw: Mapping[str, Any], context: str | None) -> list[str]:
        problems = []
        answer = raw.get("answer")
        if not isinstance(answer, str):
            problems.append(
                f"has answer {_short(answer)}; a string (the span, or '' for no answer) is required"
            )
        elif context is not None and answer not in context:
            problems.append(
                f"has answer {_short(answer)}, which is not a span of its context; answer "
                "with a substring of the context, or '' for no answer"
            )
        conf = raw.get("conf")
        if conf is not None and not _is_probability(conf):
            problems.append(f"has conf {_short(conf)}; a number in [0, 1] is required")
        return problems

    @staticmethod
    def _text_problems(raw: Mapping[str, Any]) -> list[str]:
        text = raw.get("text")
        if isinstance(text, str):
            return []
        return [f"has text {_short(text)}; a string (the generated text) is required"]

    def prediction(self, output: Mapping[str, Any]) -> Any:
        """The part of a checked output a metric scores: the label, the answer span or the
        generated text."""
        if self.type == "text":
            return output["text"]
        return output["answer"] if self.type == "span" else output["label"]

    def gold(self, example: Mapping[str, Any]) -> Any:
        """What a metric compares a prediction with: the label, the gold answer texts, or
        the reference texts."""
        if self.type == "text":
            return list(example.get("references", []))
        if self.type == "span":
            return [
                answer["text"] if isinstance(answer, Mapping) else answer
                for answer in example.get("answers", [])
            ]
        return example["label"]


def output_problems(
    spec: OutputSpec, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Any]
) -> list[OutputProblem]:
    """Everything wrong with a batch's ``outputs`` for its ``inputs``; empty when all is well.

    >>> spec = OutputSpec(type="span")
    >>> [found] = output_problems(spec, [{"uid": "q", "context": "a cat"}], [{"answer": "a dog"}])
    >>> found.describe()[:62]
    "output for uid 'q' has answer 'a dog', which is not a span of "
    """
    if len(outputs) != len(inputs):
        return [
            OutputProblem(
                None,
                None,
                f"the model returned {len(outputs)} outputs for {len(inputs)} inputs; "
                "return exactly one output per input",
            )
        ]
    found: list[OutputProblem] = []
    for index, (example, output) in enumerate(zip(inputs, outputs, strict=True)):
        context = example.get("context")
        problems = spec.problems(output, context=context if isinstance(context, str) else None)
        if problems:
            uid = str(example["uid"]) if "uid" in example else None
            found.extend(OutputProblem(index, uid, problem) for problem in problems)
    return found
