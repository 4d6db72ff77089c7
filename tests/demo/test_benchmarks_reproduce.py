"""``python -m benchmarks.reproduce``: a run's figures against another's ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.reproduce import compare, main


def _write(folder: Path, name: str, data: object) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder


def _spread(median: float, low: float, high: float) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "runs": 5}


REFERENCE = {
    "reference_ms": {"python_loop": 28.0, "numpy_sort": 266.0},
    "ratio": _spread(1.0, 0.9, 1.1),
    "sizes": {"10000": {"warm": {"api": {"p50_ms": 8.0, "min_ms": 6.0, "max_ms": 9.0}}}},
    "only_here": _spread(3.0, 2.0, 4.0),
    "one_figure": 2.5,
    "by_batch": [{"batch": 1, "ratio": _spread(0.9, 0.85, 0.95)}],
}


def test_each_figure_in_both_is_within_the_references_range_or_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = _write(tmp_path / "ref", "leaderboard.json", REFERENCE)
    new = {
        "reference_ms": {"python_loop": 80.0, "numpy_sort": 55.0},
        "ratio": _spread(1.1, 1.05, 1.3),  # the median at the reference's greatest: within
        "sizes": {"10000": {"warm": {"api": {"p50_ms": 9.5, "min_ms": 9.0, "max_ms": 12.0}}}},
        "one_figure": 9.0,  # not a spread: not compared
        "by_batch": [{"batch": 1, "ratio": _spread(0.8, 0.7, 0.9)}],
    }
    run = _write(tmp_path / "run", "leaderboard.json", new)
    _write(run, "other.json", {"ratio": _spread(1.0, 1.0, 1.0)})  # not in the reference
    found = {c.where: c.within for c in compare(reference, run)}
    assert found == {
        "leaderboard.json: ratio": True,
        "leaderboard.json: sizes/10000/warm/api": False,
        "leaderboard.json: by_batch/0/ratio": False,
    }
    assert main([str(reference), str(run)]) == 0
    out = capsys.readouterr().out
    assert "leaderboard 28 / 266" in out and "leaderboard 80 / 55" in out  # as the README
    assert "outside: leaderboard.json: sizes/10000/warm/api: 9.5 not in 6-9" in out
    assert "1 of 3 figures within the reference's range" in out


def test_a_missing_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "absent"), str(tmp_path)]) == 2
    assert "is not a folder of results" in capsys.readouterr().err
