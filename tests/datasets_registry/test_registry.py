"""Registry behaviour, run on SQLite and on the real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_registry import (
    add_dataset,
    create_task,
    export_examples,
    get_dataset,
    get_task,
    list_datasets,
    read_examples,
)
from datasets_registry.taskspec import parse_task_spec
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, InvalidDataset, NotFound, PermissionDenied
from evalboard.core.states import Access
from tests.helpers.tasks import GENERATIVE_QA, sentiment_rows, sentiment_spec, write_jsonl


@pytest.fixture
def task_ctx(any_ctx: Context) -> Context:
    create_task(any_ctx, sentiment_spec())
    return any_ctx


def test_create_task_twice_is_a_noop_and_a_changed_spec_a_conflict(any_ctx: Context) -> None:
    _, created = create_task(any_ctx, sentiment_spec())
    _, again = create_task(any_ctx, sentiment_spec())
    assert (created, again) == (True, False)
    with pytest.raises(Conflict, match="different spec"):
        create_task(any_ctx, sentiment_spec(name="Renamed"))
    assert get_task(any_ctx, "sentiment").name == "Three-way sentiment"


def test_unknown_task_lists_known_ones(task_ctx: Context) -> None:
    with pytest.raises(NotFound, match="Unknown task 'nope'; known: sentiment"):
        get_task(task_ctx, "nope")
    # An unknown task's datasets are refused the same way, not listed empty.
    with pytest.raises(NotFound, match="Unknown task 'nope'; known: sentiment"):
        list_datasets(task_ctx, "nope")


def test_unknown_dataset_lists_the_tasks_known_ones(task_ctx: Context, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r1.jsonl", sentiment_rows())
    add_dataset(task_ctx, task_id="sentiment", name="r1", path=path, round=1, perturb=False)
    with pytest.raises(NotFound) as caught:
        get_dataset(task_ctx, task_id="sentiment", name="r9")
    assert caught.value.message == "Dataset 'r9' of task 'sentiment' not found; known: r1"


def test_add_is_content_addressed_and_idempotent(task_ctx: Context, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r1.jsonl", sentiment_rows())
    first = add_dataset(task_ctx, task_id="sentiment", name="r1", path=path, round=1, perturb=False)
    again = add_dataset(task_ctx, task_id="sentiment", name="r1", path=path, round=1, perturb=False)
    assert first.created and not again.created
    assert first.dataset.sha256 == again.dataset.sha256
    assert read_examples(task_ctx, first.dataset) == [
        {**row, "uid": row["uid"]} for row in sentiment_rows()
    ]


def test_other_content_under_a_stored_name_is_refused(task_ctx: Context, tmp_path: Path) -> None:
    add_dataset(
        task_ctx,
        task_id="sentiment",
        name="r1",
        path=write_jsonl(tmp_path / "a.jsonl", sentiment_rows()),
        perturb=False,
    )
    changed = sentiment_rows()[:2]
    with pytest.raises(Conflict, match="exists with other content"):
        add_dataset(
            task_ctx,
            task_id="sentiment",
            name="r1",
            path=write_jsonl(tmp_path / "b.jsonl", changed),
            perturb=False,
        )
    assert [d.rows for d in list_datasets(task_ctx, "sentiment")] == [4]


def test_a_bad_row_stores_nothing(task_ctx: Context, tmp_path: Path) -> None:
    rows = sentiment_rows() + [{"uid": "bad", "statement": "x", "label": "angry"}]
    with pytest.raises(InvalidDataset, match="line 5: unknown label 'angry'"):
        add_dataset(
            task_ctx,
            task_id="sentiment",
            name="r1",
            path=write_jsonl(tmp_path / "r1.jsonl", rows),
            perturb=False,
        )
    assert list_datasets(task_ctx, "sentiment") == []
    assert not any(task_ctx.artifacts.fs.find(task_ctx.artifacts.root))


def test_hidden_labels_need_the_owner(task_ctx: Context, tmp_path: Path) -> None:
    added = add_dataset(
        task_ctx,
        task_id="sentiment",
        name="secret",
        access=Access.HIDDEN,
        path=write_jsonl(tmp_path / "h.jsonl", sentiment_rows()),
        perturb=False,
    )
    with pytest.raises(PermissionDenied, match="hidden"):
        export_examples(task_ctx, added.dataset)
    inputs_only = export_examples(task_ctx, added.dataset, labels=False)
    assert all("label" not in example for example in inputs_only)
    assert export_examples(task_ctx, added.dataset, may_see_hidden=True)[0]["label"] == "positive"


def test_perturbed_copies_are_derived_and_linked(task_ctx: Context, tmp_path: Path) -> None:
    added = add_dataset(
        task_ctx,
        task_id="sentiment",
        name="r1",
        path=write_jsonl(tmp_path / "r1.jsonl", sentiment_rows()),
    )
    names = [d.name for d in list_datasets(task_ctx, "sentiment")]
    assert names[0] == "r1" and set(names[1:]) <= {"fairness-r1", "robustness-r1"}
    assert "robustness-r1" in names
    originals = {row["uid"] for row in sentiment_rows()}
    for child in added.derived:
        assert child.derived_from_id == added.dataset.id and child.round == added.dataset.round
        assert {row["input_id"] for row in read_examples(task_ctx, child)} <= originals


def test_a_text_tasks_references_stay_out_of_an_inputs_only_export(
    any_ctx: Context, tmp_path: Path
) -> None:
    create_task(any_ctx, parse_task_spec(GENERATIVE_QA))
    rows = [
        {
            "uid": "q1",
            "context": "Rollo led the Vikings who settled in Normandy.",
            "question": "Who led the Vikings?",
            "references": ["Rollo", "Rollo the Viking"],
        }
    ]
    added = add_dataset(
        any_ctx,
        task_id="generative-qa",
        name="secret",
        access=Access.HIDDEN,
        path=write_jsonl(tmp_path / "g.jsonl", rows),
    )
    inputs_only = export_examples(any_ctx, added.dataset, labels=False)
    assert inputs_only == [{k: v for k, v in rows[0].items() if k != "references"}]
    # The perturbed copies keep the references (gold) and change only the question.
    assert added.derived
    for copy in added.derived:
        [example] = read_examples(any_ctx, copy)
        assert example["references"] == rows[0]["references"]
        assert example["context"] == rows[0]["context"]
