"""Predictions-only submissions against hostile input: non-finite numbers, names made to
be read as spreadsheet formulas, and a board that predictions could never complete."""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from datasets_registry import OutputSpec, list_datasets, read_examples
from evalboard.core.tables import Result, Submission
from evaluator.scorecard import Quality
from leaderboard.ranking import to_csv
from leaderboard.schemas import LeaderboardPublic
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio

PUBLIC_SETS = ("test", "fairness-test", "robustness-test")


def _examples(seeded: Seeded, name: str) -> list[dict[str, Any]]:
    dataset = next(d for d in list_datasets(seeded.ctx, TASK) if d.name == name)
    return read_examples(seeded.ctx, dataset)


def _gold(seeded: Seeded, **extra: Any) -> dict[str, list[dict[str, Any]]]:
    """Perfect predictions on the public sets (each copy answers as its original), with
    ``extra`` fields in every output."""
    files: dict[str, list[dict[str, Any]]] = {}
    for name in PUBLIC_SETS:
        examples = _examples(seeded, name)
        if "input_id" in examples[0]:
            original = {r["uid"]: r["label"] for r in files[name.split("-", 1)[1]]}
            labels = [original[e["input_id"]] for e in examples]
        else:
            labels = [e["label"] for e in examples]
        files[name] = [
            {"uid": e["uid"], "label": label, **extra}
            for e, label in zip(examples, labels, strict=True)
        ]
    return files


async def _post(app: Any, path: str, body: Any, user: str, seeded: Seeded) -> httpx.Response:
    # Python's json.dumps writes NaN and Infinity (httpx's json= would refuse them), and
    # the app's JSON parser reads them: what a researcher's script sends.
    async with make_client(app, seeded.tokens[user]) as client:
        return await client.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )


async def _open_phase(app: Any, seeded: Seeded) -> None:
    """A private phase on the hidden set: the public board stops counting it."""
    made = await _post(
        app,
        f"/tasks/{TASK}/phases",
        {"name": "final", "datasets": ["hidden-test"], "submission_limit": 2},
        "owner",
        seeded,
    )
    assert made.status_code == 201, made.text


def _submissions(seeded: Seeded) -> int:
    with seeded.ctx.db.session() as session:
        return int(session.scalar(select(func.count(Submission.id))) or 0)


# Non-finite numbers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"conf": math.nan},
        {"conf": math.inf},
        {"probs": {"negative": 0.0, "neutral": 0.0, "positive": math.nan}},
        {"notes": [1.0, {"deep": -math.inf}]},
    ],
    ids=["nan-field", "inf-field", "nan-probability", "nested-infinity"],
)
async def test_non_finite_numbers_in_any_output_field_are_refused(app, seeded, extra):
    await _open_phase(app, seeded)
    before = _submissions(seeded)
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "nan-preds", "predictions": _gold(seeded, **extra)},
        "alice",
        seeded,
    )
    assert answer.status_code == 400, answer.text
    assert "NaN or an infinity" in answer.json()["detail"]
    assert _submissions(seeded) == before


@pytest.mark.parametrize("kind", ["multiclass", "span", "text"])
def test_the_output_contract_refuses_non_finite_numbers_for_every_output_type(kind):
    """The one rule a model's answers and a predictions file are both checked by."""
    spec = OutputSpec(type=kind, labels=["a", "b"] if kind == "multiclass" else [])
    output = {"label": "a", "answer": "", "text": "", "conf": 0.5, "extra": math.nan}
    [problem] = spec.problems(output, context="")
    assert "'extra'" in problem and "NaN or an infinity" in problem
    del output["extra"]
    assert spec.problems(output, context="") == []


def test_drill_down_records_are_never_written_with_nan():
    """Written, a NaN would be a file that its reader (orjson) refuses for ever after."""
    quality = Quality(
        perf=100.0,
        uids=["a"],
        outputs=[{"text": "x", "conf": math.nan}],
        scores=[1.0],
        references={"gold": [["x"]]},
    )
    with pytest.raises(ValueError, match="Out of range float"):
        quality.jsonl()


async def test_an_unreadable_prediction_file_is_named_in_the_log(app, seeded, caplog):
    await _open_phase(app, seeded)
    made = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "later-broken", "predictions": _gold(seeded)},
        "alice",
        seeded,
    )
    assert made.status_code == 201, made.text
    with seeded.ctx.db.session() as session:
        key = session.scalars(
            select(Result.predictions_key).where(Result.submission_id == made.json()["id"])
        ).first()
    assert key is not None
    # As a file written before NaN was refused: JSON that orjson will not read.
    seeded.ctx.artifacts.put_bytes(key, b'{"uid": "x", "output": {"conf": NaN}}\n')
    with caplog.at_level(logging.WARNING, logger="leaderboard.intervals"):
        async with make_client(app) as client:
            board = await client.get(f"/tasks/{TASK}/leaderboard")
    assert board.status_code == 200, board.text
    warned = [r.getMessage() for r in caplog.records if "no intervals" in r.getMessage()]
    assert warned and key in warned[0], warned


# Names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        '=HYPERLINK("http://evil.example","click")',
        "+cmd",
        "-2+3",
        "@sum",
        "Nice Name",
        "evil\u202eexe",
        "a" * 65,
    ],
)
async def test_a_predictions_name_keeps_the_manifest_name_rule(app, seeded, name):
    await _open_phase(app, seeded)
    before = _submissions(seeded)
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": name, "predictions": _gold(seeded)},
        "alice",
        seeded,
    )
    assert answer.status_code == 422, answer.text
    assert _submissions(seeded) == before


async def test_csv_text_cells_that_would_start_a_formula_are_quoted_numbers_are_not(app, seeded):
    async with make_client(app) as client:
        got = await client.get(f"/tasks/{TASK}/leaderboard")
    board = LeaderboardPublic.model_validate(got.json())
    row = next(r for r in board.rows if r.rank is not None)
    # A name stored before the rule (free text then), and a negative figure.
    row.name, row.user, row.dynascore = '=HYPERLINK("http://evil.example")', "@bob", -1.5
    shown = next(r for r in csv.DictReader(io.StringIO(to_csv(board))) if r["rank"] == "1")
    assert shown["name"] == '\'=HYPERLINK("http://evil.example")'
    assert shown["user"] == "'@bob"
    assert shown["dynascore"] == "-1.5"
    for start in ("+", "-", "\t", "\r"):
        row.name = f"{start}x"
        text = to_csv(board)
        assert f"'{start}x" in text


# A board that predictions cannot complete -------------------------------------------------


async def test_predictions_are_refused_while_the_board_counts_a_hidden_set(app, seeded):
    """No phase holds the hidden set: the board counts it, predictions cannot give it, so
    the row could never be ranked; refused before anything is recorded or counted."""
    before = _submissions(seeded)
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "never-ranked", "predictions": _gold(seeded)},
        "alice",
        seeded,
    )
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert "cannot rank predictions" in detail and "hidden" in detail
    assert "open a phase" in detail and "no quota was used" in detail
    assert "hidden-test" not in detail  # a hidden set outside a phase is never named
    assert _submissions(seeded) == before
    # Once a phase holds the hidden set the same predictions go through.
    await _open_phase(app, seeded)
    again = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "never-ranked", "predictions": _gold(seeded)},
        "alice",
        seeded,
    )
    assert again.status_code == 201, again.text


async def test_predictions_are_refused_once_the_phase_is_revealed_onto_the_board(app, seeded):
    await _open_phase(app, seeded)
    revealed = await _post(
        app, f"/tasks/{TASK}/phases/final/reveal", {"public": True}, "owner", seeded
    )
    assert revealed.status_code == 200, revealed.text
    before = _submissions(seeded)
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "too-late", "predictions": _gold(seeded)},
        "alice",
        seeded,
    )
    assert answer.status_code == 400, answer.text
    assert "cannot rank predictions" in answer.json()["detail"]
    assert _submissions(seeded) == before
