"""``python -m benchmarks``: finds every benchmark and summarises what they wrote."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.__main__ import discover, plot, summarise, write_markdown


def test_every_bench_file_is_found() -> None:
    found = discover()
    assert found, "no benchmarks/bench_*.py"
    for name, path in found.items():
        assert path.name == f"bench_{name}.py"


def test_summary_reads_the_ratios_and_skips_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "scoring.json").write_text(
        json.dumps({"medians_ms": {"rerank_prepared_10000x8_ms": 1.5}}), encoding="utf-8"
    )
    (tmp_path / "evaluator.json").write_text(
        json.dumps({"jobs_per_minute": {"1_worker": 100.0, "2_workers": 180.0}}),
        encoding="utf-8",
    )
    panels = {title: values for title, _, values in summarise(tmp_path)}
    assert panels["Re-ranking 10,000 submissions"] == {"prepared": 1.5}
    assert panels["Jobs per minute (embedded pool)"] == {"1 worker": 100.0, "2 workers": 180.0}
    assert panels["Sandbox throughput / in-process"] == {}

    write_markdown(summarise(tmp_path), tmp_path / "summary.md")
    assert "| Jobs per minute (embedded pool) (jobs / min) | 2 workers | 180 |" in (
        tmp_path / "summary.md"
    ).read_text(encoding="utf-8")
    picture = plot(summarise(tmp_path), tmp_path / "summary.png")
    assert picture.stat().st_size > 1000
