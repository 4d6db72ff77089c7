from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalboard.core.context import Context
from evalboard.core.errors import InvalidDataset, NotFound, UsageError
from evalboard.core.states import ExampleStatus
from leaderboard.loop import (
    Failure,
    capture_failures,
    open_round,
    read_failures,
    validation_queue,
)
from tests.loop.conftest import People


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_failures_enter_the_open_rounds_validation_queue(
    ctx: Context, targets: list[int], people: People, tmp_path: Path
) -> None:
    opened = open_round(ctx, "sentiment", submission_ids=targets[:1])
    path = _write(
        tmp_path / "f.jsonl",
        [
            {
                "statement": "Loved the wait, said no one.",
                "label": "negative",
                "prediction": "positive",
                "submission_id": targets[0],
                "explanation": "sarcasm",
            },
            {
                "statement": "It is fine I guess.",
                "label": "neutral",
                "prediction": {"label": "negative", "probs": {"negative": 0.7}},
            },
        ],
    )
    stored = capture_failures(
        ctx, "sentiment", read_failures(ctx, "sentiment", path), reporter_id=people.owner
    )
    assert [e.round_id for e in stored] == [opened.id, opened.id]
    assert all(
        e.source == "failure" and e.fooled and e.status == ExampleStatus.PENDING for e in stored
    )
    assert stored[0].model_output == {"label": "positive"}
    assert stored[0].target_submission_id == targets[0]
    assert stored[0].explanation == "sarcasm"
    queued = validation_queue(ctx, "sentiment", user_id=people.validators[0])
    assert [e.id for e in queued] == [e.id for e in stored]


def test_one_bad_failure_stores_none(ctx: Context, task: str, people: People) -> None:
    failures = [
        Failure(inputs={"statement": "ok"}, gold={"label": "neutral"}),
        Failure(inputs={"statement": "ok"}, gold={"label": "sideways"}),
    ]
    with pytest.raises(UsageError, match="failure 2: Label 'sideways'"):
        capture_failures(ctx, task, failures, reporter_id=people.owner)
    assert validation_queue(ctx, task, user_id=people.validators[0]) == []


def test_a_failure_names_a_submission_of_the_task(ctx: Context, task: str) -> None:
    with pytest.raises(NotFound, match="no submission 42"):
        capture_failures(
            ctx,
            task,
            [Failure(inputs={"statement": "x"}, gold={"label": "neutral"}, submission_id=42)],
            reporter_id=None,
        )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"statement": "x", "label": "neutral", "colour": 1}\n', "line 1: unknown field"),
        ("not json\n", "line 1: not JSON"),
        ("\n", "holds no failures"),
        ("[1]\n", "a JSON object"),
    ],
)
def test_bad_failure_files_name_the_line(
    ctx: Context, task: str, tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(content)
    with pytest.raises(InvalidDataset, match=problem):
        read_failures(ctx, task, path)
