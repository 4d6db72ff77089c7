"""Datasets as the evaluator sees them: files, copies, and what reaches a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_registry.examples import canonical_jsonl, sha256_of
from evalboard.core.errors import InvalidDataset
from evaluator.testset import TestSet, in_evaluation_order, model_inputs
from tests.helpers.tasks import sentiment_rows, write_jsonl


def test_only_uid_and_inputs_reach_the_model() -> None:
    rows = [{**row, "input_id": "x", "perturbation": "typo"} for row in sentiment_rows()]
    assert model_inputs(rows, ["statement"])[0] == {"uid": "s1", "statement": rows[0]["statement"]}


def test_a_file_gets_the_registry_address_and_its_copy_role_from_its_name(
    tmp_path: Path,
) -> None:
    rows = sentiment_rows()
    plain = TestSet.from_jsonl(write_jsonl(tmp_path / "mini.jsonl", rows))
    assert plain.sha256 == sha256_of(canonical_jsonl(rows)) and plain.perturbation is None
    copy = TestSet.from_jsonl(write_jsonl(tmp_path / "fairness-mini.jsonl", rows))
    assert (copy.perturbation, copy.derived_from) == ("fairness", "mini")


def test_bad_lines_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"uid": "1", "statement": "x"}\n{"statement": "no uid"}\n')
    with pytest.raises(InvalidDataset, match="bad.jsonl, line 2"):
        TestSet.from_jsonl(path)


def test_originals_run_before_copies_and_names_are_unique() -> None:
    copy = TestSet(
        name="robustness-a", examples=[], sha256="", perturbation="robustness", derived_from="a"
    )
    original = TestSet(name="a", examples=[], sha256="")
    assert in_evaluation_order([copy, original]) == [original, copy]
    with pytest.raises(InvalidDataset, match="repeat"):
        in_evaluation_order([original, original])
    with pytest.raises(InvalidDataset, match="unknown"):
        TestSet(name="x", examples=[], sha256="", perturbation="typos", derived_from="a")
