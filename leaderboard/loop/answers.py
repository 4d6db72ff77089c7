"""An example's inputs and gold answer, checked against the task, and the model-wrong rule.

A classification example's gold is ``{"label": L}``; a QA example's is
``{"answers": [{"text": T, "answer_start": S}]}``, a span of the context; a text task's is
``{"references": [T, ...]}``. The same rule decides whether a target was fooled while
collecting and whether a model got an example right in the release gate: for
``exact_match`` the predicted label (or normalised answer or text) differs from the gold
one; for ``string_f1`` the best SQuAD token F1 against the gold answers, for
``chrf_below`` the sentence chrF of a text against the references, is below the task's
threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datasets_registry import TaskSpec
from evalboard.core.errors import UsageError
from scoring import per_example, sentence_chrfs

__all__ = [
    "check_gold",
    "check_inputs",
    "describe_rule",
    "gold_value",
    "is_model_wrong",
    "is_right",
    "prediction_score",
]

_MAX_FIELD_CHARS = 20_000


def check_inputs(task: TaskSpec, inputs: Mapping[str, Any]) -> dict[str, str]:
    """The task's input fields, each non-empty text; anything else is refused.

    Raises:
        UsageError: a field is missing, empty, too long, not text, or unknown to the task.
    """
    names = task.input_names
    unknown = sorted(set(inputs) - set(names))
    if unknown:
        raise UsageError(
            f"Unknown input field(s) {', '.join(unknown)}; task {task.id!r} takes "
            f"{', '.join(names)}"
        )
    checked: dict[str, str] = {}
    for name in names:
        value = inputs.get(name)
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"Input field {name!r} must be non-empty text (got {value!r})")
        if len(value) > _MAX_FIELD_CHARS:
            raise UsageError(
                f"Input field {name!r} has {len(value)} characters; at most "
                f"{_MAX_FIELD_CHARS} are accepted"
            )
        checked[name] = value
    return checked


def _answers(task: TaskSpec, inputs: Mapping[str, str], gold: Mapping[str, Any]) -> list[Any]:
    context = inputs["context"]
    raw = gold.get("answers")
    if raw is None and "answer" in gold:
        raw = [{"text": gold["answer"], "answer_start": gold.get("answer_start")}]
    if not isinstance(raw, list) or not raw:
        raise UsageError(
            "A QA example's gold is an answer span of the context: give `answer` (and "
            "optionally `answer_start`) or `answers: [{text, answer_start}]`"
        )
    answers = []
    for item in raw:
        text = item.get("text") if isinstance(item, Mapping) else None
        start = item.get("answer_start") if isinstance(item, Mapping) else None
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"Answer {item!r} needs a non-empty `text`")
        if start is None:
            start = context.find(text)
            if start < 0:
                raise UsageError(f"Answer {text!r} is not a span of the context; select it there")
        if not isinstance(start, int) or context[start : start + len(text)] != text:
            raise UsageError(
                f"Answer {text!r} is not in the context at answer_start {start!r}; "
                "select the span in the context"
            )
        answers.append({"text": text, "answer_start": start})
    return answers


def check_gold(
    task: TaskSpec, inputs: Mapping[str, str], gold: Mapping[str, Any]
) -> dict[str, Any]:
    """The intended answer in canonical form (``label``, ``answers`` or ``references``).

    Raises:
        UsageError: the label is not one of the task's, the answer is not a span, or a
            text task's gold has no reference text.
    """
    if task.output.type == "span":
        return {"answers": _answers(task, inputs, gold)}
    if task.output.type == "text":
        return {"references": _references(gold)}
    label = gold.get("label")
    if not label:
        raise UsageError(f"Choose the label you intend: {', '.join(task.output.labels)}")
    if label not in task.output.labels:
        raise UsageError(
            f"Label {label!r} is not one of task {task.id!r}'s labels: "
            f"{', '.join(task.output.labels)}"
        )
    return {"label": label}


def _references(gold: Mapping[str, Any]) -> list[str]:
    """An annotator's reference answers: ``references`` (a list), or one ``text``."""
    references = gold.get("references", [gold["text"]] if "text" in gold else None)
    if (
        not isinstance(references, list)
        or not references
        or not all(isinstance(text, str) and text.strip() for text in references)
    ):
        raise UsageError(
            "A text task's gold is `references` (a non-empty list of non-empty strings) "
            f"or one `text`; got {str(dict(gold))[:120]}"
        )
    return references


def gold_value(task: TaskSpec, gold: Mapping[str, Any]) -> Any:
    """What the metric compares with: the label, or the list of gold answer texts."""
    return task.gold(gold)


def prediction_score(task: TaskSpec, output: Mapping[str, Any], gold: Any) -> float:
    """1.0/0.0 for a label; the best SQuAD token F1 in [0, 1] for an answer; for a text,
    normalised exact match (1.0/0.0) or, under ``chrf_below``, sentence chrF in [0, 1],
    each against the best reference.

    Args:
        gold: a :func:`gold_value` (a label, or a list of answer or reference texts).
    """
    if task.output.type == "text":
        prediction = [task.prediction(output)]
        if task.model_wrong.rule == "chrf_below":
            return float(sentence_chrfs(prediction, [gold])[0])
        return float(per_example("exact_match", prediction, [gold])[0])
    if task.output.type == "span":
        metric = "squad_em" if task.model_wrong.rule == "exact_match" else "squad_f1"
        return float(per_example(metric, [task.prediction(output)], [gold])[0])
    return float(task.prediction(output) == gold)


def is_model_wrong(task: TaskSpec, output: Mapping[str, Any], gold: Any) -> bool:
    """The task's model-wrong rule; ``gold`` is a :func:`gold_value`.

    >>> from datasets_registry.taskspec import parse_task_spec
    >>> qa = parse_task_spec({"id": "qa", "name": "QA", "input": [{"name": "context"},
    ...     {"name": "question"}], "output": {"type": "span"}, "perf_metric": "squad_f1",
    ...     "model_wrong": {"string_f1": 0.4}})
    >>> is_model_wrong(qa, {"answer": "the blue whale"}, ["blue whale"])
    False
    >>> is_model_wrong(qa, {"answer": "a small grey fish"}, ["blue whale"])
    True
    """
    score = prediction_score(task, output, gold)
    if task.model_wrong.rule in ("string_f1", "chrf_below"):
        return score < task.model_wrong.threshold
    return score < 1.0


def is_right(task: TaskSpec, output: Mapping[str, Any] | None, gold: Any) -> bool:
    """Whether a model passed an example: it gave an output and the task's model-wrong rule
    does not call it wrong. The one per-example correctness rule of the release gate, the
    per-case history and the regression suite; ``gold`` is a :func:`gold_value`."""
    return output is not None and not is_model_wrong(task, output, gold)


def describe_rule(task: TaskSpec) -> str:
    """:func:`is_right` in words, for pages, reports and suite files."""
    rule = task.model_wrong
    if rule.rule == "string_f1":
        return f"passed: SQuAD token F1 against the best gold answer of at least {rule.threshold:g}"
    if rule.rule == "chrf_below":
        return f"passed: sentence chrF against the best reference of at least {rule.threshold:g}"
    if task.output.type == "multiclass":
        return "passed: the predicted label is the gold label"
    return "passed: the normalised answer equals a gold one (exact match)"
