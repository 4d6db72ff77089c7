"""``evalboard promote | round | failures | gate`` as a user runs them (exit codes, output)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from datasets_registry import add_dataset
from evalboard.cli import _context, main
from evalboard.core.context import Context
from evalboard.core.settings import get_settings
from tests.helpers.tasks import write_jsonl
from tests.loop.platform import FIXTURES, Platform, build_platform

pytestmark = pytest.mark.slow

ROUND_ONE = [
    ("c1", "Oh great, the flight is delayed again.", "negative"),  # both models wrong
    ("c2", "What a wonderful day.", "positive"),  # both right
    ("c3", "This is dreadful.", "negative"),  # VADER right, the keyword model wrong
]


@dataclass
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def cli_ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Context]:
    """The CLI's own context on a fresh data dir (settings from the environment)."""
    monkeypatch.setenv("EVALBOARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EVALBOARD_SANDBOX", "local")
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    _context.context.cache_clear()
    yield _context.context()
    _context.context().db.dispose()
    get_settings.cache_clear()
    _context.context.cache_clear()


@pytest.fixture
def platform(cli_ctx: Context, tmp_path: Path) -> Platform:
    built = build_platform(cli_ctx, tmp_path, annotators=0)
    rows = [{"uid": uid, "statement": text, "label": label} for uid, text, label in ROUND_ONE]
    add_dataset(
        cli_ctx,
        task_id="sentiment",
        name="round-1",
        round=1,
        path=write_jsonl(tmp_path / "round-1.jsonl", rows),
    )
    return built


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> object:
    def invoke(*args: object) -> Ran:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return invoke


def test_gate_fails_listing_exactly_the_regressed_examples(
    platform: Platform, run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    baseline = platform.submissions["vader"]
    result = run(
        "gate",
        FIXTURES / "keyword",
        "--task",
        "sentiment",
        "--baseline",
        baseline,
        "--sandbox",
        "local",
        "--json",
    )
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert report["passed"] is False
    # VADER gets s4, s5 (static) and c3 (round 1) right; the keyword model does not.
    assert [
        (r["dataset"], r["uid"], r["gold"], r["baseline"], r["candidate"])
        for r in report["regressions"]
    ] == [
        ("static", "s4", "positive", "positive", "neutral"),
        ("static", "s5", "negative", "negative", "neutral"),
        ("round-1", "c3", "negative", "negative", "neutral"),
    ]
    # Originals only: perturbed copies measure stability, not correctness.
    assert [d["dataset"] for d in report["datasets"]] == ["static", "round-1"]
    # The candidate is found among the uploads by its bundle's sha256; no server, no link.
    keyword = platform.submissions["keyword"]
    assert (report["baseline_submission"], report["candidate_submission"]) == (baseline, keyword)
    assert report["compare_url"] is None

    plain = run(
        "gate",
        FIXTURES / "keyword",
        "--task",
        "sentiment",
        "--baseline",
        baseline,
        "--sandbox",
        "local",
        "--server",
        "http://evalboard.example:8000/",
    )
    assert plain.code == 1
    link = f"http://evalboard.example:8000/ui/tasks/sentiment/compare?models={baseline},{keyword}"
    assert f"Side by side: {link}" in plain.err
    assert plain.out.splitlines() == [
        "REGRESSION static s4: gold 'positive', baseline 'positive', candidate 'neutral'",
        "REGRESSION static s5: gold 'negative', baseline 'negative', candidate 'neutral'",
        "REGRESSION round-1 c3: gold 'negative', baseline 'negative', candidate 'neutral'",
    ]
    assert "Gate FAILED: 3 regression(s)" in plain.err


def test_gate_passes_a_candidate_that_is_not_worse(platform: Platform, run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    candidate = tmp_path / "vader-v2"
    shutil.copytree(FIXTURES / "vader", candidate)
    result = run(
        "gate",
        candidate,
        "--task",
        "sentiment",
        "--baseline",
        platform.submissions["vader"],
        "--json",
    )
    assert result.code == 0, result.out + result.err
    assert json.loads(result.out)["regressions"] == []
    # A bundle as the baseline: VADER improves on the keyword model, regresses nowhere.
    better = run(
        "gate", candidate, "--task", "sentiment", "--baseline", FIXTURES / "keyword", "--json"
    )
    assert better.code == 0
    report = json.loads(better.out)
    assert sum(d["improvements"] for d in report["datasets"]) == 3


@pytest.mark.parametrize("baseline", ["nope", "\u00b9", "\u0663"])
def test_gate_refuses_a_baseline_that_is_neither(platform: Platform, run, baseline: str) -> None:  # type: ignore[no-untyped-def]
    result = run("gate", FIXTURES / "vader", "--task", "sentiment", "--baseline", baseline)
    assert result.code == 2 and "neither a submission id nor a bundle path" in result.err
    unknown = run("gate", FIXTURES / "vader", "--task", "sentiment", "--baseline", "999")
    assert unknown.code == 2 and "has no submission 999" in unknown.err


def test_gate_says_how_to_see_a_candidate_not_uploaded_beside_the_baseline(
    platform: Platform, run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    candidate = tmp_path / "keyword-v2"
    shutil.copytree(FIXTURES / "keyword", candidate)
    (candidate / "NOTES.md").write_text("A second version.\n")
    baseline = platform.submissions["vader"]
    args = ("gate", candidate, "--task", "sentiment", "--baseline", baseline)
    result = run(*args, "--server", "http://evalboard.example:8000", "--json")
    report = json.loads(result.out)
    assert (report["candidate_submission"], report["compare_url"]) == (None, None)
    plain = run(*args, "--server", "http://evalboard.example:8000")
    assert "upload it (evalboard model upload)" in plain.err and "Side by side" not in plain.err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "Name what the candidate must not regress against"),
        (("--baseline", "3"), "--baseline needs --task"),
        (("--baseline", "3", "--lineage", "2"), "two gates; give one of them"),
        (("--suite", "s.json", "--baseline", "3"), "drop --baseline"),
        (("--lineage", "0"), "greater than or equal to 1"),
    ],
)
def test_gate_takes_one_thing_to_compare_with(run, args: tuple[str, ...], expected: str) -> None:  # type: ignore[no-untyped-def]
    result = run("gate", FIXTURES / "vader", *args)
    assert result.code == 2 and expected in result.err
    assert len(result.err.strip().splitlines()) <= 2  # the error, and typer's hint


def test_promote_list_failures_and_close(platform: Platform, run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    opened = run("promote", "--task", "sentiment", "--submission", platform.submissions["keyword"])
    assert opened.code == 0, opened.err
    assert "Round 2 of sentiment is open" in opened.out  # round-1 exists as a dataset
    again = run("promote", "--task", "sentiment", "--top", "1")
    assert again.code == 2 and "close it first" in again.err

    failures = write_jsonl(
        tmp_path / "failures.jsonl",
        [
            {"statement": "Not great, not terrible.", "label": "neutral", "prediction": "positive"},
        ],
    )
    added = run("failures", "add", failures, "--task", "sentiment", "--reporter", "rita")
    assert added.code == 0 and "1 failure(s) queued for validation in the open round" in added.out
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"statement": "x", "label": "sideways"}])
    refused = run("failures", "add", bad, "--task", "sentiment")
    assert refused.code == 2 and "sideways" in refused.err

    listed = run("round", "list", "--task", "sentiment", "--json")
    (row,) = json.loads(listed.out)
    assert (row["number"], row["status"], row["targets"]) == (
        2,
        "open",
        [platform.submissions["keyword"]],
    )
    assert (row["collected"], row["vmer"]) == (0, None)

    closed = run("round", "close", "--task", "sentiment")
    assert closed.code == 0 and "closed with no verified example" in closed.out
    assert run("round", "close", "--task", "sentiment").code == 2
