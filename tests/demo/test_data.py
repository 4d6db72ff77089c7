"""The demo's own data: balanced, distinct, and giving the perturbations work to do."""

from __future__ import annotations

from collections import Counter

import pytest

from datasets_registry import add_dataset, create_task, list_datasets
from evalboard.core.context import Context
from evalboard.demo.data import (
    DEMO_TASK_ID,
    LABELS,
    data_path,
    demo_sets,
    demo_task_spec,
    read_jsonl,
)

FILES = ["train.jsonl", "round-1.jsonl", "round-2.jsonl", "static.jsonl", "collection.jsonl"]


@pytest.mark.parametrize("name", FILES)
def test_each_file_is_balanced_with_unique_uids(name: str) -> None:
    rows = read_jsonl(data_path(name))
    assert len({row["uid"] for row in rows}) == len(rows)
    counts = Counter(row["label"] for row in rows)
    assert set(counts) == set(LABELS)
    assert max(counts.values()) - min(counts.values()) <= 3


def test_no_sentence_appears_in_two_files() -> None:
    seen: dict[str, str] = {}
    for name in FILES:
        for row in read_jsonl(data_path(name)):
            text = row["statement"].strip().lower()
            assert text not in seen, f"{row['statement']!r} is in {seen.get(text)} and {name}"
            seen[text] = name


def test_sets_are_of_the_promised_sizes() -> None:
    sizes = {s.name: len(read_jsonl(data_path(s.file))) for s in demo_sets()}
    assert sizes == {"round-1": 90, "round-2": 90, "static": 90}
    assert [s.round for s in demo_sets()] == [1, 2, 0]
    assert len(read_jsonl(data_path("train.jsonl"))) == 180


def test_adding_the_sets_derives_fairness_and_robustness_copies(ctx: Context) -> None:
    create_task(ctx, demo_task_spec())
    for demo_set in demo_sets():
        add_dataset(
            ctx,
            task_id=DEMO_TASK_ID,
            name=demo_set.name,
            path=data_path(demo_set.file),
            round=demo_set.round,
        )
    rows = {d.name: d.rows for d in list_datasets(ctx, DEMO_TASK_ID)}
    for demo_set in demo_sets():
        # Names and pronouns in the sentences give the fairness family something to swap.
        assert rows[f"fairness-{demo_set.name}"] >= 5
        assert rows[f"robustness-{demo_set.name}"] >= 45
