"""Unlabeled inputs (production traffic) read with the dataset row checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_registry import ColumnMapping, read_inputs
from datasets_registry.taskspec import parse_task_spec
from evalboard.core.errors import InvalidDataset
from tests.helpers.tasks import QA, sentiment_spec


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_only_the_input_fields_are_kept(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [{"statement": "fine", "uid": "a", "at": "2026-12-02"}, {"statement": 7, "label": "x"}],
    )
    assert read_inputs(path, sentiment_spec(), max_rows=10) == [
        {"statement": "fine"},
        {"statement": "7"},
    ]


def test_csv_columns_map_onto_inputs(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('label,sentence\n0,"Bad, really."\n1,Good.\n')
    mapping = ColumnMapping(fields={"statement": "sentence"})
    assert read_inputs(path, sentiment_spec(), max_rows=10, mapping=mapping) == [
        {"statement": "Bad, really."},
        {"statement": "Good."},
    ]


def test_every_field_of_a_qa_input_is_needed(tmp_path: Path) -> None:
    path = _write(tmp_path / "qa.jsonl", [{"context": "The sky is blue."}])
    with pytest.raises(InvalidDataset, match=r"qa.jsonl, line 1: missing field 'question'"):
        read_inputs(path, parse_task_spec(QA), max_rows=10)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "holds no inputs"),
        (b'{"text": "wrong field"}\n', "line 1: missing field 'statement'.*columns here: text"),
        (b'{"statement": "   "}\n', "line 1: field 'statement' is empty or not text"),
        (b'{"statement": "a\\u0000b"}\n', "line 1: field 'statement' holds a NUL"),
        (b'{"statement": "\\ud800"}\n', "unpaired surrogate"),
        (b'{"statement": "a"}\n\x00\x01\x02\n', "line 2: contains NUL bytes"),
        (b"[1, 2]\n", "line 1: a JSON list, expected an object"),
    ],
)
def test_bad_traffic_is_refused_with_the_line(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    with pytest.raises(InvalidDataset, match=words):
        read_inputs(path, sentiment_spec(), max_rows=10)


def test_more_rows_than_the_cap_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [{"statement": f"s{i}"} for i in range(4)])
    assert len(read_inputs(path, sentiment_spec(), max_rows=4)) == 4
    with pytest.raises(InvalidDataset, match=r"line 4: more than 3 inputs; send at most 3"):
        read_inputs(path, sentiment_spec(), max_rows=3)
