"""Run every benchmark, then summarise their results in one table and one plot.

Usage: ``python -m benchmarks [--quick] [--fresh] [--only NAME ...] [--timeout SECONDS]``.

Each ``benchmarks/bench_<name>.py`` runs in its own process (as its docstring says to run
it), so one that fails or hangs does not take the others down. Then README.md's
Performance table is rewritten from the JSON files they wrote (``benchmarks/figures.py``),
and a summary (``summary.md``, ``summary.png``) plots the main ratios: sandbox against
in-process inference, ``evaluate`` against raw inference, re-ranking time, jobs per minute.

Each figure a benchmark writes keeps the ranges the same figure had in the last whole runs
on this kind of machine (``benchmarks/whole_runs.py``), unless ``--fresh``; before that,
each file is checked against the ranges the file it replaces stated (the README's line
on how the run reproduced, ``benchmarks/reproduce.py``). A file measured on another kind
of machine is kept under ``results/machines/KIND/``, not replaced.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from benchmarks.figures import dig, measured_on, read_results, update_readme
from benchmarks.reproduce import compare_file, tally
from benchmarks.whole_runs import (
    MACHINES,
    REPRODUCED,
    RUNS,
    carry,
    kind_folder,
    kind_of,
    machine_kind,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

# Fewer repetitions, for a smoke run (--quick); benchmarks not named here run in full.
QUICK_ARGS = {
    "sandbox": ["--quick"],
    "evaluator": ["--repeats", "2", "--jobs", "10"],
    "startup": ["--runs", "3"],
    "stability": ["--runs", "3", "--examples", "600"],
    "generation": ["--repeats", "3", "--examples", "32"],
    "board_100k": ["--repeats", "1"],
}


def discover() -> dict[str, Path]:
    return {path.stem.removeprefix("bench_"): path for path in sorted(HERE.glob("bench_*.py"))}


def run_one(
    name: str,
    path: Path,
    *,
    quick: bool,
    timeout: float,
    earlier: dict[str, dict[str, Any]],
    fresh: bool = False,
) -> dict[str, Any]:
    """Run one benchmark script; returns its status and the result files it wrote.

    ``earlier``: each results file as it was before this run (:func:`_pool`). ``fresh``:
    the files written do not carry the earlier runs' ranges.
    """
    before = {p: p.stat().st_mtime for p in RESULTS.glob("*.json")}
    started = time.monotonic()
    command = [sys.executable, str(path), *(QUICK_ARGS.get(name, []) if quick else [])]
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    try:
        done = subprocess.run(command, cwd=ROOT, timeout=timeout, text=True, capture_output=True)
        status, code, tail = (
            ("ok" if done.returncode == 0 else "failed"),
            done.returncode,
            (done.stdout + done.stderr)[-2000:],
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        status, code = "timeout", None
        tail = (out.decode() if isinstance(out, bytes) else out)[-2000:]
    seconds = time.monotonic() - started
    written = sorted(
        p.name
        for p in RESULTS.glob("*.json")
        if p.name != "summary.json" and before.get(p) != p.stat().st_mtime
    )
    print(f"   {status} in {seconds:.1f} s; wrote {', '.join(written) or 'nothing'}", flush=True)
    for file in written:
        _pool(RESULTS / file, earlier.get(file), fresh=fresh, whole=status == "ok")
    if status != "ok":
        print("   " + tail.strip().replace("\n", "\n   "), flush=True)
    return {"status": status, "exit_code": code, "seconds": round(seconds, 1), "wrote": written}


def with_earlier_runs(earlier: Any, runs: dict[str, Any]) -> dict[str, Any]:
    """Every benchmark's last run: this run's, and the earlier summary's for those it did
    not run (``--only``, ``--summary-only``), so the summary keeps saying how each of the
    results files on disk was made (tests/demo/test_benchmarks_runner.py)."""
    kept = earlier if isinstance(earlier, dict) else {}
    return dict(sorted({**kept, **runs}.items()))


def _pool(
    path: Path, previous: dict[str, Any] | None, *, fresh: bool = False, whole: bool = True
) -> None:
    """A results file just written, checked against the ranges the last results of this
    kind of machine stated and its figures given their ranges (not ``fresh``).

    ``previous``: the file it replaced. Measured on another kind of machine, that file is
    kept under ``machines/KIND/``; this kind's last results are then those kept there.
    Not ``whole`` (its benchmark failed or timed out, the file may be partial): the file
    is neither checked nor pooled nor stamped as a whole run, and this kind's last whole
    results are kept under ``machines/KIND/``, for the next whole run to pool with.
    """
    latest = read_results(path.parent, path.stem)
    if not latest:
        return
    kind = machine_kind()
    kept = path.parent / MACHINES / kind_folder(kind) / path.name
    other = kind_of(previous)
    if other is not None and (other != kind or not whole):
        _write(path.parent / MACHINES / kind_folder(other) / path.name, previous)
    if not whole:
        print(f"   {path.name}: not pooled (its benchmark did not finish)", flush=True)
        return
    if other != kind:
        previous = read_results(kept.parent, path.stem) or None
    if previous is not None and kind_of(previous) == kind:
        counts = tally(compare_file(path.name, previous, latest))
        if counts["figures"]:  # a file without figures (a drift report) checks nothing
            latest[REPRODUCED] = {"whole_runs": len(previous[RUNS]), **counts}
    pooled = carry(None if fresh else previous, latest, kind)
    _write(path, latest)
    kept.unlink(missing_ok=True)  # this kind's runs are pooled in the results folder now
    with suppress(OSError):  # its folder too, once empty
        kept.parent.rmdir()
    print(f"   {path.name}: ranges over {pooled} whole run(s) on this kind of machine", flush=True)


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _median(data: Any, *keys: str) -> float | None:
    value = dig(data, *keys, "median")
    return float(value) if isinstance(value, int | float) else None


def _sandbox_panel(results: Path) -> dict[str, float]:
    panel = {}
    inference = read_results(results, "sandbox").get("inference")
    for model, rows in (inference if isinstance(inference, dict) else {}).items():
        for row in rows if isinstance(rows, list) else []:
            # The evaluator streams requests pipelined; quote the same path.
            ratio = _median(row, "ratio_docker_pipelined_to_in_process")
            if ratio is not None:
                panel[f"{model} b{row.get('batch_size')}"] = ratio
    return panel


def _evaluator_panel(results: Path) -> dict[str, float]:
    cases = read_results(results, "evaluator").get("end_to_end_10k") or {}
    panel = {name: _median(case, "ratio_cli_to_raw") for name, case in cases.items()}
    return {k.replace("_", " "): v for k, v in panel.items() if v is not None}


def _rerank_panel(results: Path) -> dict[str, float]:
    spreads = read_results(results, "scoring").get("spread_ms", {})
    panel = {
        "prepared": _median(spreads, "rerank_prepared_10000x8_ms"),
        "from the table": _median(spreads, "rerank_from_table_10000x8_ms"),
    }
    return {k: v for k, v in panel.items() if v is not None}


def _jobs_panel(results: Path) -> dict[str, float]:
    data = read_results(results, "evaluator").get("jobs_per_minute", {})
    panel = {
        key.replace("_worker", " worker").replace("_", " "): _median(value)
        for key, value in data.items()
        if isinstance(value, dict)
    }
    return {k: v for k, v in panel.items() if v is not None}


PANELS: list[tuple[str, str, Callable[[Path], dict[str, float]]]] = [
    ("Docker sandbox throughput / in-process", "ratio (1 = no overhead)", _sandbox_panel),
    ("evaluate end to end / raw inference (10k)", "time ratio", _evaluator_panel),
    ("Re-ranking 10,000 submissions", "ms (goal < 20)", _rerank_panel),
    ("Jobs per minute", "jobs / min", _jobs_panel),
]


def summarise(results: Path = RESULTS) -> list[tuple[str, str, dict[str, float]]]:
    """The README's figures, read from the benchmarks' JSON files in ``results``."""
    return [(title, unit, panel(results)) for title, unit, panel in PANELS]


def write_markdown(panels: list[tuple[str, str, dict[str, float]]], path: Path) -> None:
    lines = ["| figure | case | value |", "|---|---|---|"]
    for title, unit, values in panels:
        for case, value in values.items():
            lines.append(f"| {title} ({unit}) | {case} | {value:.3g} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot(
    panels: list[tuple[str, str, dict[str, float]]], path: Path, measured_on: str = ""
) -> Path:
    """A 2x2 bar chart as PNG (matplotlib), else an HTML page (plotly), titled with the
    machine the results were measured on (:func:`~benchmarks.figures.measured_on`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _plot_html(panels, path.with_suffix(".html"))
    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for axis, (title, unit, values) in zip(axes.flat, panels, strict=True):
        axis.set_title(title, fontsize=11)
        axis.set_ylabel(unit)
        if not values:
            axis.text(0.5, 0.5, "no result", ha="center", va="center", transform=axis.transAxes)
            axis.set_xticks([])
            continue
        bars = axis.bar(list(values), list(values.values()), color="#4c72b0")
        axis.bar_label(bars, fmt=lambda v: f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}")
        # The cases' names are long ("celery docker 2 workers"): slanted, they do not overlap.
        axis.tick_params(axis="x", labelrotation=25, labelsize=9)
        plt.setp(axis.get_xticklabels(), ha="right", rotation_mode="anchor")
        axis.margins(y=0.2)
    figure.suptitle(f"Evalboard benchmarks ({measured_on or 'machine not recorded'})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _plot_html(panels: list[tuple[str, str, dict[str, float]]], path: Path) -> Path:
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=2, cols=2, subplot_titles=[title for title, _, _ in panels])
    for index, (_, unit, values) in enumerate(panels):
        row, col = divmod(index, 2)
        figure.add_bar(x=list(values), y=list(values.values()), row=row + 1, col=col + 1)
        figure.update_yaxes(title_text=unit, row=row + 1, col=col + 1)
    figure.update_layout(showlegend=False, title="Evalboard benchmarks")
    figure.write_html(path, include_plotlyjs=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions where offered")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names to run")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark")
    parser.add_argument(
        "--summary-only", action="store_true", help="only summarise the existing results"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="state each figure's range over this run only, not the last whole runs "
        "(after a change that moved figures for good)",
    )
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    found = discover()
    unknown = sorted(set(args.only or []) - set(found))
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(found)}")
    chosen = {n: p for n, p in found.items() if args.only is None or n in args.only}
    runs = {}
    earlier = {p.name: read_results(RESULTS, p.stem) for p in RESULTS.glob("*.json")}
    if not args.summary_only:
        runs = {
            n: run_one(
                n, p, quick=args.quick, timeout=args.timeout, earlier=earlier, fresh=args.fresh
            )
            for n, p in chosen.items()
        }
    panels = summarise()
    write_markdown(panels, RESULTS / "summary.md")
    summary = {
        "schema_version": 1,
        "runs": with_earlier_runs(read_results(RESULTS, "summary").get("runs"), runs),
        "figures": {title: {"unit": unit, "values": values} for title, unit, values in panels},
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    # Before the README: its table names the benchmarks whose last run did not finish.
    _write(RESULTS / "summary.json", summary)
    changed = update_readme(ROOT / "README.md", RESULTS)
    print(f"README.md's Performance table {'rewritten' if changed else 'unchanged'}")
    picture = plot(panels, RESULTS / "summary.png", measured_on(RESULTS))
    print((RESULTS / "summary.md").read_text(encoding="utf-8"))
    print(f"wrote {RESULTS / 'summary.json'}, {RESULTS / 'summary.md'}, {picture}")
    return 0 if all(run["status"] == "ok" for run in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
