"""``evalboard drift check`` on the local database, as an owner runs it (exit codes, output).
The same command against a server is in tests/leaderboard/test_drift_live.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from datasets_registry import add_dataset, create_task
from evalboard.cli import _context, main
from evalboard.core.context import Context
from evalboard.core.settings import get_settings
from tests.helpers.tasks import sentiment_spec, write_jsonl

_DINER = "food staff table menu price wait drink dessert plate order waiter tip".split()
_FILMS = "film plot actor scene script cast camera ending sequel director".split()


def _sentences(words: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=7)) for _ in range(n)]


@dataclass
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Context]:
    monkeypatch.setenv("EVALBOARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("EVALBOARD_SERVER", raising=False)
    get_settings.cache_clear()
    _context.context.cache_clear()
    ctx = _context.context()
    create_task(ctx, sentiment_spec())
    rows = [
        {"uid": str(i), "statement": s, "label": "neutral"}
        for i, s in enumerate(_sentences(_DINER, 40, 1))
    ]
    add_dataset(
        ctx,
        task_id="sentiment",
        name="static",
        path=write_jsonl(tmp_path / "static.jsonl", rows),
        perturb=False,
    )
    yield ctx
    ctx.db.dispose()
    get_settings.cache_clear()
    _context.context.cache_clear()


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> Ran:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def test_shifted_traffic_exits_1_with_a_verdict_and_a_table(
    task: Context, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traffic.csv"
    path.write_text(
        "text,seen_at\n" + "".join(f"[{s}],2026-12-02\n" for s in _sentences(_FILMS, 30, 2))
    )
    ran = _run(
        capsys, "drift", "check", path, "--task", "sentiment", "--map", "statement=text",
        "--queue", "5",
    )  # fmt: skip
    assert ran.code == 1, ran.err
    lines = ran.out.splitlines()
    assert lines[0].startswith("SHIFTED: the traffic is unlike the task's datasets (AUC ")
    assert lines[1] == "Check 1 of sentiment; reference: static (40)"
    assert lines[2] == "rank\tscore\tinput\tqueued"
    # Inputs are shown as written: brackets are not markup.
    assert lines[3].split("\t")[2].startswith("[") and lines[3].endswith("example 1")
    assert lines[-1].startswith("5 input(s) queued for labelling.")


def test_traffic_like_the_datasets_exits_0_and_json_is_the_apis(
    task: Context, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"statement": s} for s in _sentences(_DINER, 30, 3)])
    ran = _run(capsys, "drift", "check", path, "--task", "sentiment", "--json")
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    assert report["shifted"] is False and report["queued"] == []
    assert report["verdict"].startswith("not shifted at alpha 0.01")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("missing.jsonl",), "does not exist"),
        (("{file}", "--format", "xml"), "allowed: jsonl, csv, tsv"),
        (("{file}", "--alpha", "0"), "above 0"),
        (("{file}", "--queue", "500"), "--queue"),
        (("{file}", "--task", "nope"), "nope"),
        (("{one}",), "at least 20 traffic inputs"),
    ],
)
def test_usage_mistakes_exit_2_in_one_line(
    task: Context,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    words: str,
) -> None:
    file = write_jsonl(tmp_path / "t.jsonl", [{"statement": "x"}] * 30)
    one = write_jsonl(tmp_path / "one.jsonl", [{"statement": "x"}])
    argv = [a.format(file=file, one=one) for a in args]
    ran = _run(capsys, "drift", "check", "--task", "sentiment", *argv)
    assert ran.code == 2
    assert words in ran.err and "Traceback" not in ran.err
    assert len([line for line in ran.err.splitlines() if line.startswith("error")]) == 1
