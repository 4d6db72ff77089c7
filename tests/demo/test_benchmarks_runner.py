"""``python -m benchmarks``: finds every benchmark, summarises what they wrote, and the
README's Performance table is what the committed results make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.__main__ import (
    RESULTS,
    ROOT,
    discover,
    plot,
    summarise,
    with_earlier_runs,
    write_markdown,
)
from benchmarks.figures import BEGIN, END, failed, rows, table, update_readme


def test_every_bench_file_is_found() -> None:
    found = discover()
    assert found, "no benchmarks/bench_*.py"
    for name, path in found.items():
        assert path.name == f"bench_{name}.py"


def _spread(median: float, low: float, high: float, runs: int = 5) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "runs": runs}


def test_summary_reads_the_ratios_and_skips_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "scoring.json").write_text(
        json.dumps({"spread_ms": {"rerank_prepared_10000x8_ms": _spread(1.5, 1.2, 2.0)}}),
        encoding="utf-8",
    )
    (tmp_path / "evaluator.json").write_text(
        json.dumps(
            {
                "jobs_per_minute": {
                    "pool_local_1_worker": _spread(100.0, 90.0, 110.0),
                    "pool_docker_2_workers": _spread(40.0, 38.0, 41.0),
                }
            }
        ),
        encoding="utf-8",
    )
    panels = {title: values for title, _, values in summarise(tmp_path)}
    assert panels["Re-ranking 10,000 submissions"] == {"prepared": 1.5}
    assert panels["Jobs per minute"] == {
        "pool local 1 worker": 100.0,
        "pool docker 2 workers": 40.0,
    }
    assert panels["Docker sandbox throughput / in-process"] == {}

    write_markdown(summarise(tmp_path), tmp_path / "summary.md")
    assert "| Jobs per minute (jobs / min) | pool docker 2 workers | 40 |" in (
        tmp_path / "summary.md"
    ).read_text(encoding="utf-8")
    picture = plot(summarise(tmp_path), tmp_path / "summary.png")
    assert picture.stat().st_size > 1000


def test_every_row_states_its_spread_and_says_which_sandbox(tmp_path: Path) -> None:
    (tmp_path / "evaluator.json").write_text(
        json.dumps(
            {
                "end_to_end_10k": {
                    "vader_docker": {
                        "model": "vader",
                        "examples": 10000,
                        "sandbox": "docker",
                        "energy": False,
                        "raw_us_per_example": 31.0,
                        "ratio_cli_to_raw": _spread(1.8, 1.7, 1.95),
                        "goal_ratio": 2.0,
                    }
                },
                "jobs_per_minute": {"celery_docker_1_worker": _spread(50.0, 45.5, 52.0, 3)},
            }
        ),
        encoding="utf-8",
    )
    found = rows(tmp_path)
    assert [r.measured for r in found] == ["1.8 (1.7-1.95, 5 runs)", "50 (45.5-52, 3 runs)"]
    assert "docker sandbox" in found[0].what and found[0].goal == "<= 2.0"
    assert "Celery" in found[1].what and "docker sandbox" in found[1].what
    block = table(tmp_path)
    assert block.startswith(BEGIN) and block.endswith(END)


def test_the_readme_block_is_rewritten_between_its_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n{BEGIN}\nold\n{END}\n\nafter\n", encoding="utf-8")
    assert update_readme(readme, tmp_path) is True
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# x\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old" not in text and update_readme(readme, tmp_path) is False
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no block"):
        update_readme(readme, tmp_path)


def test_the_committed_readme_states_what_the_committed_results_say() -> None:
    # `python -m benchmarks` rewrites the block from benchmarks/results; a README edited by
    # hand, or results committed without the README, fail here.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == table(RESULTS), (
        "README.md's Performance table differs from benchmarks/results: run "
        "`.venv/bin/python -m benchmarks --summary-only` and commit README.md"
    )


def test_the_100k_board_rows_name_their_cache_and_the_goal_at_that_size(tmp_path: Path) -> None:
    timed = {"p50_ms": 13.2, "p95_ms": 15.9, "min_ms": 11.9, "max_ms": 15.9, "n": 3}
    measured = {"warm": {"api": timed, "page": timed}, "restart": {"api_ms": 19.1, "page_ms": 0.2}}
    (tmp_path / "leaderboard_100k.json").write_text(
        json.dumps(
            {"submissions": 100_000, "cache_bytes": {str(1024**3): measured, str(6 * 1024**3): {}}}
        ),
        encoding="utf-8",
    )
    found = rows(tmp_path)
    assert [r.what for r in found] == [
        "leaderboard API at 100,000 submissions, cache 1 GiB, warm, p50 / p95",
        "leaderboard task page at 100,000 submissions, cache 1 GiB, warm, p50 / p95",
        "leaderboard at 100,000 submissions, cache 1 GiB, first request of a restarted server "
        "(rows stored), API / task page",
    ]
    assert [r.goal for r in found] == ["< 1 s", "< 1 s", ""]
    assert {r.source for r in found} == {"leaderboard_100k.json"}
    assert found[0].measured == "13.2 / 15.9 ms (11.9-15.9, 3 requests)"


def test_a_partial_run_keeps_the_summary_of_the_benchmarks_it_did_not_run() -> None:
    earlier = {"board_100k": {"status": "ok", "seconds": 106.6}, "ranking": {"status": "ok"}}
    now = {"ranking": {"status": "failed", "seconds": 4.0}}
    assert with_earlier_runs(earlier, now) == {
        "board_100k": {"status": "ok", "seconds": 106.6},
        "ranking": {"status": "failed", "seconds": 4.0},
    }
    assert with_earlier_runs(None, now) == now  # no summary before: this run's alone
    assert with_earlier_runs(["not", "runs"], {}) == {}


def test_the_readme_names_a_benchmark_that_did_not_finish(tmp_path: Path) -> None:
    runs = {
        "ranking": {"status": "ok"},
        "sandbox": {"status": "timeout"},
        "pages": {"status": "failed"},
    }
    (tmp_path / "summary.json").write_text(json.dumps({"runs": runs}), encoding="utf-8")
    assert failed(tmp_path) == "pages (failed), sandbox (timeout)"
    assert "**Did not finish in their last run** (their results may be partial or an " in (
        table(tmp_path)
    )
    runs["sandbox"] = runs["pages"] = {"status": "ok"}
    (tmp_path / "summary.json").write_text(json.dumps({"runs": runs}), encoding="utf-8")
    assert failed(tmp_path) == "" and "Did not finish" not in table(tmp_path)
