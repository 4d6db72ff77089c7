"""Turn raw rows into a task's canonical examples, checking each against the task.

A canonical example holds ``uid``, the task's input fields and the gold output
(``label``, ``answers`` for QA, or ``references`` for text generation); perturbed copies
add ``input_id`` and ``perturbation``. The canonical JSONL (sorted keys, compact
separators, one example per line) is what the dataset's sha256 is taken over, so the same
content always has the same address.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from datasets_registry.importers import RawRow
from datasets_registry.taskspec import TaskSpec
from evalboard.core.errors import InvalidDataset
from evalboard.core.validation import bad_text

__all__ = [
    "ColumnMapping",
    "ExampleSet",
    "canonical_jsonl",
    "parse_mapping",
    "to_examples",
    "to_inputs",
]


@dataclass(frozen=True)
class ColumnMapping:
    """How a file's columns become a task's fields.

    Attributes:
        fields: task field (``uid``, an input, ``label``, ``answers``) -> column in the file.
        labels: value in the file -> the task's label (e.g. ``0`` -> ``negative``).
        exclude_labels: gold values whose rows are skipped and counted (``mixed``,
            ``null`` for a missing label); every other unknown label is an error.
    """

    fields: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    exclude_labels: frozenset[str] = frozenset()

    def column(self, name: str) -> str:
        return self.fields.get(name, name)


@dataclass(frozen=True)
class ExampleSet:
    examples: list[dict[str, Any]]
    excluded: int = 0


def parse_mapping(pairs: Iterable[str], *, what: str = "--map") -> dict[str, str]:
    """Parse ``field=column`` pairs (also comma-separated) into a dict."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        for item in pair.split(","):
            if not item.strip():
                continue
            key, sep, value = item.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise InvalidDataset(f"{what} {item!r} is not of the form field=column")
            mapping[key.strip()] = value.strip()
    return mapping


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _gold_label(
    raw: Any, task: TaskSpec, mapping: ColumnMapping, where: str, column: str
) -> str | None:
    """The task label for a raw gold value; None when the row is to be excluded."""
    value = "null" if raw is None or raw == "" else _text(raw)
    if value is None:
        raise InvalidDataset(f"{where}: label column {column!r} holds {raw!r}, not a label")
    value = mapping.labels.get(value, value)
    if value in mapping.exclude_labels:
        return None
    if value not in task.output.labels:
        shown = "a missing label" if value == "null" else f"unknown label {value!r}"
        raise InvalidDataset(
            f"{where}: {shown}; the task's labels are {', '.join(task.output.labels)}. "
            "Map values with --label-map VALUE=LABEL or skip rows with --exclude-label VALUE"
        )
    return value


def _gold_answers(raw: Any, context: str, where: str) -> list[dict[str, Any]]:
    answers = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(answers, list):
        raise InvalidDataset(
            f"{where}: answers must be a list of {{text, answer_start}} ([] if unanswerable)"
        )
    checked = []
    for answer in answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if not isinstance(text, str) or not isinstance(start, int):
            raise InvalidDataset(f"{where}: answer {answer!r} needs text and answer_start")
        if context[start : start + len(text)] != text:
            raise InvalidDataset(
                f"{where}: answer {text!r} is not in the context at answer_start {start}"
            )
        checked.append({"text": text, "answer_start": start})
    return checked


def _gold_references(raw: Any, where: str) -> list[str]:
    references = json.loads(raw) if isinstance(raw, str) and raw.startswith("[") else raw
    if isinstance(references, str):
        references = [references]
    if (
        not isinstance(references, list)
        or not references
        or not all(isinstance(text, str) and text.strip() for text in references)
    ):
        raise InvalidDataset(
            f"{where}: references must be a non-empty list of non-empty strings (or one "
            f"string); got {str(raw)[:80]!r}"
        )
    return list(references)


def _inputs(
    row: Mapping[str, Any], task: TaskSpec, mapping: ColumnMapping, where: str
) -> dict[str, Any]:
    """The task's input fields of one row, each non-empty text."""
    inputs: dict[str, Any] = {}
    for name in task.input_names:
        column = mapping.column(name)
        if column not in row:
            raise InvalidDataset(
                f"{where}: missing field {name!r} (looked for column {column!r}; columns "
                f"here: {', '.join(sorted(row)) or 'none'}). Use --map {name}=COLUMN"
            )
        value = _text(row[column])
        if value is None or not value.strip():
            raise InvalidDataset(f"{where}: field {name!r} is empty or not text")
        inputs[name] = value
    return inputs


def _check_storable(example: Mapping[str, Any], where: str) -> None:
    for key, value in example.items():
        if isinstance(value, str) and bad_text(value):
            raise InvalidDataset(
                f"{where}: field {key!r} holds a NUL character or an unpaired surrogate, "
                "which Evalboard does not store; remove it and save the file as UTF-8"
            )


def to_examples(rows: Iterable[RawRow], task: TaskSpec, mapping: ColumnMapping) -> ExampleSet:
    """Map and check every row; the first bad row raises and nothing is returned."""
    examples: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    excluded = 0
    gold = task.gold_field
    for number, row in rows:
        where = f"line {number}"
        example = _inputs(row, task, mapping, where)
        gold_column = mapping.column(gold)
        if gold_column not in row:
            raise InvalidDataset(
                f"{where}: missing gold field {gold!r} (looked for column {gold_column!r}). "
                f"Use --map {gold}=COLUMN"
            )
        if gold == "label":
            label = _gold_label(row[gold_column], task, mapping, where, gold_column)
            if label is None:
                excluded += 1
                continue
            example["label"] = label
        elif gold == "references":
            example["references"] = _gold_references(row[gold_column], where)
        else:
            example["answers"] = _gold_answers(row[gold_column], example["context"], where)
        uid_column = mapping.column("uid")
        uid = _text(row.get(uid_column)) if uid_column in row else str(number)
        if not uid:
            raise InvalidDataset(f"{where}: empty uid in column {uid_column!r}")
        if uid in seen:
            raise InvalidDataset(
                f"{where}: uid {uid!r} repeats line {seen[uid]}; uids must be unique"
            )
        seen[uid] = number
        example["uid"] = uid
        _check_storable(example, where)
        examples.append(example)
    if not examples:
        raise InvalidDataset(
            "the file holds no examples"
            + (f" ({excluded} excluded by label)" if excluded else "")
            + "; check that it is the right file and not empty"
        )
    return ExampleSet(examples=examples, excluded=excluded)


def to_inputs(
    rows: Iterable[RawRow], task: TaskSpec, mapping: ColumnMapping, *, max_rows: int
) -> list[dict[str, str]]:
    """The task's input fields of every row, checked as :func:`to_examples` checks them;
    other columns (a uid, a label, a timestamp) are left out.

    Raises:
        InvalidDataset: a row lacks an input or holds text Evalboard does not store, the
            file holds no rows, or more than ``max_rows``.
    """
    inputs: list[dict[str, str]] = []
    for number, row in rows:
        if len(inputs) == max_rows:
            raise InvalidDataset(
                f"line {number}: more than {max_rows:,} inputs; send at most {max_rows:,} "
                "per file (a sample of the traffic, or several files)"
            )
        where = f"line {number}"
        found = _inputs(row, task, mapping, where)
        _check_storable(found, where)
        inputs.append(found)
    if not inputs:
        raise InvalidDataset(
            "the file holds no inputs; check that it is the right file and not empty"
        )
    return inputs


#: The address's form: the standard library's encoder, one for every line (``json.dumps``
#: with options builds a new one per call, a third of the cost of hashing a 10,000-example
#: file).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
#: Values orjson writes byte for byte as ``_CANONICAL`` does (every string: checked code
#: point by code point in tests/datasets_registry/test_importers.py). Floats are not among
#: them: ``repr`` and orjson's shortest form differ (``1e+16`` and ``1e16``, ``NaN``).
_AS_ORJSON = frozenset({str, int, bool, type(None)})
#: Where one row ends and the next begins in orjson's ``[row,row,...]`` of flat rows.
_BETWEEN, _LINE_BREAK = b'},{"', b'}\n{"'


def canonical_jsonl(examples: Iterable[Mapping[str, Any]]) -> bytes:
    """The bytes a dataset is addressed by: one sorted, compact JSON object per line.

    Flat rows (strings, integers, booleans, nulls: most datasets) are written by one
    orjson call over them all, 8x faster than the standard library (20 ms of a
    10,000-example ``evalboard evaluate``; an orjson call per row costs as much as the
    standard library's); any other rows by the standard library, so the address never
    depends on which one wrote it.
    """
    rows = list(examples)
    flat = all(rows) and {type(value) for row in rows for value in row.values()} <= _AS_ORJSON
    if flat:
        try:
            listed = orjson.dumps(rows, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # what orjson refuses: a non-string key, an integer past 64 bits
            listed = b""
        # Each of the len(rows) - 1 boundaries reads },{" (a row ends with } and the next,
        # not empty, begins with {"); a string ending in "},{" puts the same bytes inside a
        # row. Where there are exactly len(rows) - 1 of them, there are no others.
        if listed and listed.count(_BETWEEN) == len(rows) - 1:
            return listed[1:-1].replace(_BETWEEN, _LINE_BREAK) + b"\n"
    return "".join([_CANONICAL.encode(row) + "\n" for row in rows]).encode()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
