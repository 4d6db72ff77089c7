from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasets_registry.examples import ColumnMapping, canonical_jsonl, parse_mapping, to_examples
from datasets_registry.importers import MAX_LINE_BYTES, read_rows
from datasets_registry.taskspec import parse_task_spec
from evalboard.core.errors import InvalidDataset
from tests.helpers.tasks import GENERATIVE_QA, QA, sentiment_spec


def test_csv_with_mapping_and_label_values(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('label,sentence,extra\n0,"Bad, really.",x\n2,Great,y\n')
    mapping = ColumnMapping(
        fields={"statement": "sentence"}, labels={"0": "negative", "2": "positive"}
    )
    result = to_examples(read_rows(path), sentiment_spec(), mapping)
    assert result.examples == [
        {"statement": "Bad, really.", "label": "negative", "uid": "2"},
        {"statement": "Great", "label": "positive", "uid": "3"},
    ]


def test_tsv_is_read_by_suffix(tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_text("id\tstatement\tlabel\na\tfine\tneutral\n")
    result = to_examples(read_rows(path), sentiment_spec(), ColumnMapping(fields={"uid": "id"}))
    assert result.examples == [{"uid": "a", "statement": "fine", "label": "neutral"}]


def test_unknown_label_names_line_value_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"statement": "a", "label": "positive"}\n{"statement": "b", "label": "mixed"}\n'
    )
    with pytest.raises(InvalidDataset) as info:
        to_examples(read_rows(path), sentiment_spec(), ColumnMapping())
    message = info.value.message
    assert "line 2" in message and "'mixed'" in message and "--exclude-label" in message


def test_missing_field_names_the_column_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"sentence": "a", "label": "positive"}\n')
    with pytest.raises(
        InvalidDataset, match=r"line 1: missing field 'statement'.*--map statement=COLUMN"
    ):
        to_examples(read_rows(path), sentiment_spec(), ColumnMapping())


def test_excluded_labels_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"statement": "a", "label": null}\n{"statement": "b", "label": "neutral"}\n')
    result = to_examples(
        read_rows(path), sentiment_spec(), ColumnMapping(exclude_labels=frozenset({"null"}))
    )
    assert result.excluded == 1 and len(result.examples) == 1


def test_duplicate_uid_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"uid": "1", "statement": "a", "label": "neutral"}\n' * 2)
    with pytest.raises(InvalidDataset, match="uid '1' repeats line 1"):
        to_examples(read_rows(path), sentiment_spec(), ColumnMapping())


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "holds no examples"),
        (b"\x00\x01\x02binary", "NUL bytes"),
        (b"\xff\xfe not utf8\n", "not UTF-8"),
        (b'{"statement": "a", "label": "neutral"\n', "not valid JSON"),
        (b"[1, 2]\n", "a JSON list, expected an object"),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(content)
    with pytest.raises(InvalidDataset, match=expected):
        to_examples(read_rows(path), sentiment_spec(), ColumnMapping())


def test_a_line_longer_than_the_cap_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"statement": "')
        handle.write(b"a" * (MAX_LINE_BYTES + 10))
        handle.write(b'", "label": "neutral"}\n')
    with pytest.raises(InvalidDataset, match="line 1: longer than 4 MiB"):
        list(read_rows(path))


def test_squad_json_keeps_unanswerable_questions(tmp_path: Path) -> None:
    context = "Normandy is a region in France."
    document = {
        "data": [
            {
                "title": "N",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Where is Normandy?",
                                "answers": [{"text": "France", "answer_start": 24}],
                            },
                            {"id": "q2", "question": "Who?", "answers": [], "is_impossible": True},
                        ],
                    }
                ],
            }
        ]
    }
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(document))
    result = to_examples(read_rows(path), parse_task_spec(QA), ColumnMapping())
    assert [e["uid"] for e in result.examples] == ["q1", "q2"]
    assert result.examples[0]["answers"] == [{"text": "France", "answer_start": 24}]
    assert result.examples[1]["answers"] == []


def test_squad_answer_outside_context_is_refused(tmp_path: Path) -> None:
    document = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "abc",
                        "qas": [
                            {
                                "id": "q",
                                "question": "?",
                                "answers": [{"text": "zzz", "answer_start": 0}],
                            }
                        ],
                    }
                ]
            }
        ]
    }
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidDataset, match="not in the context"):
        to_examples(read_rows(path), parse_task_spec(QA), ColumnMapping())


def test_canonical_jsonl_ignores_key_order() -> None:
    assert canonical_jsonl([{"b": 1, "a": "é"}]) == canonical_jsonl([{"a": "é", "b": 1}])
    assert canonical_jsonl([{"a": "é"}]) == '{"a":"é"}\n'.encode()


def _standard_library(rows: list[Any]) -> bytes:
    """The canonical form as the standard library writes it (what addresses were made of)."""
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
    return "".join(encode(row) + "\n" for row in rows).encode()


#: Every code point but the surrogates, in one string; and keys that sort differently by
#: UTF-16 units than by code points.
_EVERY_CHARACTER = "".join(map(chr, [*range(0xD800), *range(0xE000, 0x110000)]))
_ODD_KEYS = {"\U0001f600": 1, "\uffff": 2, "\ue000": 3, "B": 4, "a": 5, "é": 6, "": 7}


@pytest.mark.parametrize(
    "rows",
    [
        [{"uid": "1", "text": _EVERY_CHARACTER, 'quote"and\\slash': "\x00\x1f\x7f\u2028"}],
        [_ODD_KEYS, {"k": {**_ODD_KEYS, "n": [_ODD_KEYS]}}],
        [{"uid": 1, "n": 2**64 - 1, "m": -(2**63), "t": True, "f": False, "z": None}],
        [{"uid": "q", "answers": ["a", "b"], "nested": [{"y": [1, None], "x": "é"}]}],
        # What orjson writes otherwise, or refuses: the standard library writes those.
        [{"uid": "f", "x": 0.1}, {"uid": "g", "x": 1e16, "y": 1e-05, "z": -0.0}],
        [{"uid": "n", "x": float("nan"), "y": float("inf")}],
        [{"uid": "b", "x": 2**64}, {"uid": "c", "x": -(2**63) - 1}],
        [{"uid": "k", "x": {2: "int keys", 1: "are written as strings"}}],
        [{"uid": "deep", "x": [[[[[[["deep"]]]]]]]}, {"uid": "l", "x": [0.5, "s"]}],
        [{"uid": "flat", "x": "a"}, {"uid": "mixed", "x": [1.5]}],
        # Row boundaries in orjson's list, },{" , also inside a row (kept as they are).
        [{"uid": "1", "x": "a},{"}, {"uid": "2", "x": "},{"}, {"uid": "3", "x": 'q"},{"'}],
        [{"uid": "1"}, {}, {"x": "end},{"}, {"y": "z"}],
        [{"uid": "1"}],
        [{}],
        [],
    ],
)
def test_canonical_jsonl_is_the_standard_librarys_form(rows: list[Any]) -> None:
    # A dataset's address is the sha256 of these bytes: however they are written (orjson
    # where it writes the same, else the standard library), they must not change.
    assert canonical_jsonl(rows) == _standard_library(rows)


@given(
    st.lists(
        st.dictionaries(
            st.text(max_size=5),
            st.recursive(
                st.none()
                | st.booleans()
                | st.integers(min_value=-(2**70), max_value=2**70)
                | st.floats()
                | st.text(),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                ),
                max_leaves=8,
            ),
            max_size=4,
        ),
        max_size=4,
    )
)
@settings(max_examples=300, deadline=None)
def test_canonical_jsonl_of_any_rows_is_the_standard_librarys_form(rows: list[Any]) -> None:
    try:
        expected = _standard_library(rows)
    except UnicodeEncodeError:  # a lone surrogate: no address, however it is written
        with pytest.raises(UnicodeEncodeError):
            canonical_jsonl(rows)
        return
    assert canonical_jsonl(rows) == expected


def test_parse_mapping_accepts_repeats_and_commas() -> None:
    assert parse_mapping(["a=b,c=d", "e=f"]) == {"a": "b", "c": "d", "e": "f"}
    with pytest.raises(InvalidDataset, match="field=column"):
        parse_mapping(["nonsense"])


def test_text_task_rows_keep_their_references(tmp_path: Path) -> None:
    path = tmp_path / "gen.jsonl"
    rows = [
        {
            "uid": "q1",
            "context": "Rollo led the Vikings.",
            "question": "Who?",
            "references": ["Rollo", "Rollo the Viking"],
        },
        {"uid": "q2", "context": "In 911.", "question": "When?", "refs": "911"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows[:1]), encoding="utf-8")
    result = to_examples(read_rows(path), parse_task_spec(GENERATIVE_QA), ColumnMapping())
    assert result.examples == [{**rows[0]}]
    # One reference as a plain string, through a column mapping.
    path.write_text(json.dumps(rows[1]) + "\n", encoding="utf-8")
    mapped = ColumnMapping(fields={"references": "refs"})
    [example] = to_examples(read_rows(path), parse_task_spec(GENERATIVE_QA), mapped).examples
    assert example["references"] == ["911"]
    assert b'"references":["911"]' in canonical_jsonl([example])


@pytest.mark.parametrize("references", [[], [""], [3], {"text": "Rollo"}])
def test_text_task_rows_without_usable_references_are_refused(
    tmp_path: Path, references: object
) -> None:
    path = tmp_path / "gen.jsonl"
    row = {"uid": "q1", "context": "c", "question": "q", "references": references}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InvalidDataset, match="line 1: references must be a non-empty list"):
        to_examples(read_rows(path), parse_task_spec(GENERATIVE_QA), ColumnMapping())
