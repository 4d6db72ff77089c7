"""The README's Performance table, made from ``benchmarks/results/*.json`` and nothing else.

``python -m benchmarks`` rewrites the block of README.md between :data:`BEGIN` and
:data:`END` with :func:`table` after its run (``--summary-only``: from the results as they
are), and tests/demo/test_benchmarks_runner.py checks that the committed README's block is
what :func:`table` makes of the committed results: the two cannot disagree.

Each row is a figure measured several times, stated as its median and its range over the
runs (``1.04 (0.98-1.12, 5 runs)``) and over the last whole runs on this kind of machine
where the results carry them (:mod:`benchmarks.whole_runs`); a ratio is one per run, the
two sides timed moments apart. A row whose results are missing is left out. Each row
names the file it is read from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.whole_runs import (
    FAR,
    KEPT_RUNS,
    MACHINES,
    REPRODUCED,
    SHAPES,
    SPREAD_KEYS,
    TIMING_KEYS,
    is_number,
    kind_folder,
    kind_name,
    kind_of,
    moment_range,
    stated_range,
)

__all__ = [
    "BEGIN",
    "END",
    "SPREAD_KEYS",
    "TIMING_KEYS",
    "Row",
    "dig",
    "figure",
    "read_results",
    "rows",
    "speeds",
    "table",
    "update_readme",
]

BEGIN = "<!-- benchmarks:begin (made by `python -m benchmarks` from benchmarks/results) -->"
END = "<!-- benchmarks:end -->"


@dataclass(frozen=True)
class Row:
    """One line of the table: what was measured, the figure with its spread, the goal."""

    what: str
    measured: str
    goal: str = ""
    source: str = ""


def read_results(results: Path, name: str) -> dict[str, Any]:
    """``results/<name>.json`` as a mapping; empty where it is absent or not one."""
    path = results / f"{name}.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, None where a key or a mapping is missing."""
    for key in keys:
        if not isinstance(data, Mapping) or key not in data:
            return None
        data = data[key]
    return data


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` where it is a mapping, else an empty one (a results file of another shape)."""
    return value if isinstance(value, Mapping) else {}


def _number(value: float, unit: str = "") -> str:
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text}{unit}"


def figure(spread: Any, unit: str = "", scale: float = 1.0) -> str | None:
    """A spread (``{"median", "min", "max", "runs"}``) as ``median (min-max, n runs)``, the
    range over the earlier whole runs it carries too (:mod:`benchmarks.whole_runs`).

    >>> figure({"median": 1.04, "min": 0.98, "max": 1.121, "runs": 5})
    '1.04 (0.98-1.12, 5 runs)'
    >>> figure({"median": 0.0123, "min": 0.011, "max": 0.02, "runs": 3}, " ms", 1000)
    '12.3 ms (11-20, 3 runs)'
    >>> figure({"median": 1.04, "min": 0.98, "max": 1.1, "runs": 5, "earlier_runs": [[0.9, 1]]})
    '1.04 (0.9-1.1, 5 runs in each of 2 whole runs)'
    """
    if not isinstance(spread, Mapping) or not set(SPREAD_KEYS) <= set(spread):
        return None
    low, high, whole = stated_range(spread, SHAPES[0])
    runs = f"{spread['runs']} runs{_in_each(whole)}"
    return (
        f"{_number(spread['median'] * scale, unit)} "
        f"({_number(low * scale)}-{_number(high * scale)}, {runs})"
    )


def _row(
    what: str, spread: Any, *, unit: str = "", scale: float = 1.0, goal: str = "", source: str
) -> Iterator[Row]:
    measured = figure(spread, unit, scale)
    if measured is not None:
        yield Row(what, measured, goal, source)


def _startup(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "startup"), "startup.json"
    cli = _mapping(data.get("cli"))
    yield from _row(
        "every import of `evalboard --help` (every command's module; `python -X importtime`)",
        cli.get("help_imports_s"),
        unit=" s",
        goal="< 0.3 s",
        source=src,
    )
    yield from _row("`evalboard --help`, wall", cli.get("help_s"), unit=" s", source=src)
    imports = _mapping(data.get("evaluate_imports"))
    heavy = imports.get("heavy_loaded")
    note = "" if heavy is None else f"; database layer loaded: {'yes' if heavy else 'no'}"
    yield from _row(
        f"every import of `evalboard evaluate` (VADER, local sandbox){note}",
        imports.get("import_s"),
        unit=" s",
        goal="< 0.3 s",
        source=src,
    )
    meter = _mapping(data.get("energy_meter"))
    for key, what in (
        ("import_codecarbon_s", "energy meter: importing codecarbon"),
        ("first_start_probing_s", "energy meter: first start on a machine (hardware probe)"),
        ("first_start_probe_kept_s", "energy meter: first start of a later process (probe kept)"),
        ("part_of_running_meter_s", "energy meter: one dataset's part of the running meter"),
    ):
        yield from _row(what, meter.get(key), unit=" ms", scale=1000, source=src)
    per_dataset = _mapping(data.get("per_dataset"))
    for kind in ("local", "docker"):
        steps = _mapping(per_dataset.get(kind))
        for key, what in (
            ("sandbox_start_s", "start to the model's hello"),
            ("scoring_s", "scoring 100 examples"),
            ("sandbox_close_s", "close"),
        ):
            yield from _row(
                f"one dataset's fixed cost, {kind} sandbox: {what}",
                steps.get(key),
                unit=" ms",
                scale=1000,
                source=src,
            )
    ten_k = _mapping(data.get("evaluate_10k"))
    for key, what in (
        ("bundle_read_s", "the bundle read (manifest checked, files hashed)"),
        ("dataset_read_s", "the dataset read (parsed, canonical sha256)"),
        ("sandbox_start_s", "start to the model's hello"),
        ("timed_minus_raw_s", "timed phase minus raw inference"),
        ("scoring_s", "scoring"),
        ("sandbox_close_s", "close"),
    ):
        yield from _row(
            f"`evaluate`'s own cost, {ten_k.get('examples', 0):,} VADER examples, local "
            f"sandbox: {what}",
            ten_k.get(key),
            unit=" ms",
            scale=1000,
            source=src,
        )


def _evaluator(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "evaluator"), "evaluator.json"
    for case in map(_mapping, _mapping(data.get("end_to_end_10k")).values()):
        energy = "energy measured" if case.get("energy") else "--no-energy"
        what = (
            f"`evalboard evaluate` end to end (start-up included) / raw inference, "
            f"{case.get('examples', 0):,} examples, {case.get('model')} "
            f"({case.get('raw_us_per_example')} us/example raw), {case.get('sandbox')} "
            f"sandbox, {energy}"
        )
        goal = case.get("goal_ratio")
        yield from _row(
            what,
            case.get("ratio_cli_to_raw"),
            goal="" if goal is None else f"<= {goal}",
            source=src,
        )
    jobs = _mapping(data.get("jobs_per_minute"))
    for path, label in (
        ("pool", "embedded pool (threads, SQLite)"),
        ("celery", "Celery over Redis + PostgreSQL, `evalboard worker`s"),
    ):
        for sandbox in ("local", "docker"):
            for workers in ("1_worker", "2_workers"):
                yield from _row(
                    f"jobs per minute (200-example jobs), {label}, {sandbox} sandbox, "
                    f"{workers.replace('_', ' ')}",
                    jobs.get(f"{path}_{sandbox}_{workers}"),
                    source=src,
                )


def _sandbox(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "sandbox"), "sandbox.json"
    models = _mapping(data.get("models"))
    for name, rows_ in _mapping(data.get("inference")).items():
        for row in map(_mapping, rows_ if isinstance(rows_, list) else []):
            batch = row.get("batch_size")
            goal = row.get("goal_ratio_pipelined")
            for kind in data.get("sandboxes", []):
                yield from _row(
                    f"{kind}-sandboxed throughput / in-process, {models.get(name, name)}, "
                    f"batch {batch}, pipelined as the evaluator runs it",
                    row.get(f"ratio_{kind}_pipelined_to_in_process"),
                    goal="" if goal is None or kind != "docker" else f">= {goal}",
                    source=src,
                )
            yield from _row(
                f"gVisor-sandboxed / docker-sandboxed throughput, {name}, batch {batch}",
                row.get("ratio_gvisor_pipelined_to_docker_pipelined"),
                goal=">= 0.9 (not met: runsc's ptrace platform)" if batch == 32 else "",
                source=src,
            )
    for key, value in _mapping(data.get("per_message_us")).items():
        kind, _, channel = key.partition("_")
        yield from _row(
            f"channel round trip, one tiny request, {kind} sandbox, {channel}",
            value,
            unit=" us",
            source=src,
        )
    for key, value in _mapping(data.get("startup_s")).items():
        kind, _, model = key.partition("_")
        yield from _row(
            f"sandbox start to the model's hello, {kind}, {model or 'echo model'}",
            value,
            unit=" s",
            source=src,
        )


def _stability(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "stability"), "stability.json"
    goal = data.get("goal_max_over_min")
    for sandbox, series in map(
        lambda item: (item[0], _mapping(item[1])), _mapping(data.get("series")).items()
    ):
        for condition, what in (
            ("alone", "nothing beside it"),
            ("neighbour", "a neighbour burning a core"),
            ("neighbour_pinned", "a neighbour burning a core, sandbox pinned"),
        ):
            found = _mapping(series.get(condition))
            if not found:
                continue
            throughput = figure(found.get("throughput_examples_per_s"), " ex/s")
            over = _over_runs(found, ("throughput_max_over_min", "cpu_max_over_min"))
            yield Row(
                f"throughput of one model evaluated {data.get('runs')} times, max/min, "
                f"{sandbox} sandbox, {what} (cores: {', '.join(found.get('cores', []))})",
                f"{found.get('throughput_max_over_min')} (throughput {throughput}; CPU per "
                f"example max/min {found.get('cpu_max_over_min')}"
                + (f"; max/min throughput / CPU {over}" if over else "")
                + ")",
                "" if condition == "alone" or goal is None else f"<= {goal}",
                src,
            )


def _scoring(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "scoring"), "scoring.json"
    spreads = _mapping(data.get("spread_ms"))
    for key, what in (
        ("rerank_prepared_10000x8_ms", "re-ranking 10,000 submissions x 8 metrics, prepared"),
        (
            "rerank_from_table_10000x8_ms",
            "re-ranking 10,000 submissions x 8 metrics, from the raw table",
        ),
        (
            "bootstrap_100_models_10000_examples_1000_resamples_ms",
            "bootstrap, 100 models x 10,000 examples x 1,000 resamples (accuracy)",
        ),
        (
            "bootstrap_macro_f1_100_models_10000_examples_1000_resamples_ms",
            "bootstrap, the same (macro-F1)",
        ),
    ):
        goal = "< 20 ms" if key.startswith("rerank") else ""
        yield from _row(what, spreads.get(key), unit=" ms", goal=goal, source=src)


def _board(results: Path) -> Iterator[Row]:
    ranking = read_results(results, "ranking")
    for size in ("1000", "10000"):
        yield from _row(
            f"ranking {int(size):,} submissions (`build_leaderboard`, no intervals)",
            dig(ranking, "ms", size),
            unit=" ms",
            source="ranking.json",
        )
    board = read_results(results, "leaderboard")
    parts = (
        ("api", "API"),
        ("page", "task page"),
        ("api_fresh_weights", "API, dataset weights not asked for before,"),
        (
            "api_same_shares_weights",
            "API, dataset weights not asked for before in the owner's proportions,",
        ),
        ("api_fresh_metric_weights", "API, metric weights not asked for before,"),
        ("model_page", "a model's page (its row, card, charts, first examples)"),
    )
    for group, note in (("sizes", ""), ("with_intervals", " with intervals (two rounds)")):
        for size, found in _mapping(board.get(group)).items():
            where = f"{int(size):,} submissions{note}"
            yield from _board_rows(found, parts, where)
            yield from _board_moments(found, where, intervals=group == "with_intervals")
    large = read_results(results, "leaderboard_100k")
    for budget, found in _mapping(large.get("cache_bytes")).items():
        where = f"{large.get('submissions', 0):,} submissions, cache {int(budget) / 1024**3:g} GiB"
        goal = ("< 1 s", "< 1 s")
        yield from _board_rows(found, parts, where, goal=goal, source="leaderboard_100k.json")
        yield from _board_moments(found, where, source="leaderboard_100k.json")


def _board_rows(
    found: Any,
    parts: tuple[tuple[str, str], ...],
    where: str,
    *,
    goal: tuple[str, str] = ("first byte < 200 ms", "p95 < 100 ms"),
    source: str = "leaderboard.json",
) -> Iterator[Row]:
    """The warm requests; ``goal``: the task page's, then the API's (a model's page has
    none of its own)."""
    goals = {"page": goal[0], "model_page": ""}
    for part, what in parts:
        warm = dig(found, "warm", part)
        if isinstance(warm, Mapping) and set(TIMING_KEYS) <= set(warm):
            yield Row(
                f"leaderboard {what} at {where}, warm, p50 / p95",
                _requests(warm),
                goals.get(part, goal[1]),
                source,
            )


def _board_moments(
    found: Any, where: str, *, intervals: bool = False, source: str = "leaderboard.json"
) -> Iterator[Row]:
    """The requests that cannot be warm: a server's first, and the first after a result;
    and on a board with ``intervals``, where the first answer came before them, when
    they came."""
    ready = dig(found, "fresh_weights_intervals_ready") if intervals else None
    if isinstance(ready, Mapping) and set(TIMING_KEYS) <= set(ready):
        yield Row(
            f"leaderboard API at {where}, dataset weights not asked for before: until the "
            "answer has its intervals, p50 / p95",
            _requests(ready),
            "",
            source,
        )
    restart = _mapping(dig(found, "restart"))
    if {"api_ms", "page_ms"} <= set(restart):
        yield Row(
            f"leaderboard at {where}, first request of a restarted server (rows stored), "
            "API / task page",
            f"{_number(restart['api_ms'])} / {_number(restart['page_ms'])} ms (1 request each"
            f"{_then(_over_runs(restart, ('api_ms', 'page_ms')))})"
            + (_ready_note(restart) if intervals else ""),
            "",
            source,
        )
    at_once = _mapping(restart.get("at_once"))
    if set(TIMING_KEYS) <= set(at_once):
        yield Row(
            f"leaderboard API at {where}, a restarted server's first {at_once['n']} requests "
            "at once, p50 / p95",
            _requests(at_once),
            "",
            source,
        )
    if {"warmup_ms", "api_after_warmup_ms"} <= set(restart):
        keys = ["warmup_ms", "api_after_warmup_ms"]
        warmup = "reading its boards as it starts (warm-up) / its first API request"
        if "page_after_warmup_ms" in restart:  # since the warm-up makes routes and templates
            keys.append("page_after_warmup_ms")
            warmup = (
                "making its routes and templates and reading its boards as it starts "
                "(warm-up) / its first API request / task page"
            )
        yield Row(
            f"leaderboard at {where}, a restarted server {warmup} after that",
            " / ".join(_number(restart[key]) for key in keys)
            + f" ms (1 each{_then(_over_runs(restart, keys))})",
            "",
            source,
        )
    after = _mapping(dig(found, "after_new_result"))
    if set(TIMING_KEYS) <= set(after):
        yield Row(
            f"leaderboard API at {where}, first request after one more result, p50 / p95",
            _requests(after),
            "",
            source,
        )
    after_ready = _mapping(dig(found, "after_new_result_intervals_ready"))
    if intervals and set(TIMING_KEYS) <= set(after_ready):
        yield Row(
            f"leaderboard API at {where}, after one more result: until the answer has its "
            "intervals, p50 / p95",
            _requests(after_ready),
            "",
            source,
        )


def _ready_note(moment: Mapping[str, Any]) -> str:
    """When the intervals came, where the first answer came without them."""
    ready = moment.get("intervals_ready_ms")
    if ready is None:
        return ""
    over = _over_runs(moment, ("intervals_ready_ms",))
    return f"; intervals in after {_number(ready)} ms" + (f" ({over})" if over else "")


def _over_runs(moment: Mapping[str, Any], keys: Sequence[str]) -> str:
    """Things measured once a run, their ranges over the whole runs the results carry
    (:func:`benchmarks.whole_runs.moment_range`); "" for this run alone.

    >>> _over_runs({"api_ms": 90, "page_ms": 160,
    ...             "earlier_values": {"api_ms": [80, 110], "page_ms": [150, 170]}},
    ...            ("api_ms", "page_ms"))
    '80-110 / 150-170 over 3 whole runs'
    """
    ranges = [moment_range(moment, key) for key in keys if is_number(moment.get(key))]
    whole = min((runs for _, _, runs in ranges), default=0)
    if whole < 2 or len(ranges) < len(keys):
        return ""
    spans = " / ".join(f"{_number(low)}-{_number(high)}" for low, high, _ in ranges)
    return f"{spans} over {whole} whole runs"


def _then(clause: str) -> str:
    """A clause after the one before it (``"; clause"``), or nothing."""
    return f"; {clause}" if clause else ""


def _in_each(whole: int) -> str:
    """What a figure's repetitions were repeated over: the whole runs, where several."""
    return f" in each of {whole} whole runs" if whole > 1 else ""


def _requests(timed: Mapping[str, Any]) -> str:
    low, high, whole = stated_range(timed, SHAPES[1])
    return (
        f"{_number(timed['p50_ms'])} / {_number(timed['p95_ms'])} ms "
        f"({_number(low)}-{_number(high)}, {timed.get('n')} requests{_in_each(whole)})"
    )


def _generation(results: Path) -> Iterator[Row]:
    data, src = read_results(results, "generation"), "generation.json"
    batch, goal = data.get("batch_size"), data.get("goal_ratio")
    yield from _row(
        f"text generation, docker-sandboxed / in-process throughput, the demo's GPT-2, "
        f"batch {batch}, pipelined as the evaluator runs it",
        data.get("ratio_docker_to_in_process"),
        goal="" if goal is None else f">= {goal}",
        source=src,
    )
    for kind in ("docker", "in_process"):
        yield from _row(
            f"generated tokens/s (sacrebleu 13a tokens), the demo's GPT-2, batch {batch}, "
            f"{kind.replace('_', '-')}",
            data.get(f"{kind}_tokens_per_s"),
            source=src,
        )


SECTIONS: list[Callable[[Path], Iterator[Row]]] = [
    _evaluator,
    _startup,
    _sandbox,
    _generation,
    _stability,
    _scoring,
    _board,
]


def rows(results: Path) -> list[Row]:
    """Every row the results hold, section by section."""
    return [row for section in SECTIONS for row in section(results)]


def _loads(results: Path) -> str:
    found = []
    for path in sorted(results.glob("*.json")):
        load = dig(read_results(results, path.stem), "load_average_1m")
        if isinstance(load, Mapping) and "before" in load:
            found.append(f"{path.stem} {load['before']}-{load.get('after')}")
    return ", ".join(found)


def speeds(results: Path) -> str:
    """Each results file's machine speed, ``name loop / sort`` (ms), comma-separated."""
    found = []
    for path in sorted(results.glob("*.json")):
        speed = dig(read_results(results, path.stem), "reference_ms")
        if isinstance(speed, Mapping) and {"python_loop", "numpy_sort"} <= set(speed):
            found.append(
                f"{path.stem} {_number(speed['python_loop'])} / {_number(speed['numpy_sort'])}"
            )
    return ", ".join(found)


def failed(results: Path) -> str:
    """The benchmarks whose last run did not end well (``summary.json``), and how: their
    results files are partial (that run's alone, not pooled: the whole runs before it are
    kept under ``machines/``), or an earlier run's."""
    runs = _mapping(read_results(results, "summary").get("runs"))
    return ", ".join(
        f"{name} ({run.get('status')})"
        for name, run in sorted(runs.items())
        if isinstance(run, Mapping) and run.get("status") != "ok"
    )


def _kinds(results: Path) -> list[Mapping[str, Any]]:
    """The kinds of machine the results were measured on (one, after a whole run)."""
    kinds: list[Mapping[str, Any]] = []
    for path in sorted(results.glob("*.json")):
        kind = kind_of(read_results(results, path.stem))
        kinds += [] if kind is None or kind in kinds else [kind]
    return kinds


def measured_on(results: Path) -> str:
    """The kinds of machine the results were measured on, named."""
    return "; ".join(kind_name(kind) for kind in _kinds(results))


def machines(results: Path) -> str:
    """The kinds of machine the results were measured on, and the other kinds whose last
    results the folder keeps (``machines/``; not this kind's whole runs kept there while a
    benchmark of the last run did not finish)."""
    own = {kind_folder(kind) for kind in _kinds(results)}
    others = sorted({p.parent.name for p in (results / MACHINES).glob("*/*.json")} - own)
    folder = f"{results.parent.name}/{results.name}/{MACHINES}/"
    kept = f"; the last results of other kinds: `{folder}` ({', '.join(others)})"
    return f"{measured_on(results) or 'not recorded'}{kept if others else ''}"


def reproduced(results: Path) -> str:
    """How each file's run reproduced the ranges the file it replaced stated, summed."""
    counted = {
        path.stem: found
        for path in sorted(results.glob("*.json"))
        if isinstance(found := read_results(results, path.stem).get(REPRODUCED), Mapping)
    }
    if not counted:
        return ""
    total = {
        key: sum(int(c.get(key, 0)) for c in counted.values())
        for key in ("figures", "within", "far_outside")
    }
    each = ", ".join(
        f"{name} {c.get('within')} of {c.get('figures')}" for name, c in counted.items()
    )
    over = sorted({int(c.get("whole_runs", 0)) for c in counted.values()})
    runs = "-".join(map(str, dict.fromkeys([over[0], over[-1]])))
    return (
        f"{total['within']} of {total['figures']} medians within the ranges stated before "
        f"this run on this kind of machine (over {runs} whole run{'s' * (over[-1] > 1)}), "
        f"{total['far_outside']} more than {FAR:.0%} outside; by file: {each}"
    )


def table(results: Path) -> str:
    """The Markdown block of README.md: a note on the machine, then the table."""
    cell = lambda text: str(text).replace("|", "\\|")  # noqa: E731 - one use
    lines = [
        BEGIN,
        "",
        f"1-minute load average while each ran: {_loads(results) or 'not recorded'} (on "
        f"this project's shared 2-core machines). Spread: this run's median (the least-greatest "
        "over this run's repetitions and those of the last whole runs on this kind of "
        f"machine, up to {KEPT_RUNS}: `benchmarks/whole_runs.py`; each results file lists "
        "them).",
        *(
            [
                "",
                "The machine's speed when each ran, ms of a 1,000,000-step Python loop / of "
                "sorting 1,000 x 10,000 floats (`benchmarks/_report.py`; these machines differ "
                f"by about 3x): {speed}.",
            ]
            if (speed := speeds(results))
            else []
        ),
        "",
        f"Measured on: {machines(results)}.",
        *(
            [
                "",
                f"**Did not finish in their last run** (their results may be partial or an "
                f"earlier run's; a partial file is that run's alone, its kind's whole runs kept "
                f"under `{MACHINES}/`): {broken}.",
            ]
            if (broken := failed(results))
            else []
        ),
        *(
            [
                "",
                "How this run reproduced the README before it (each results file checked "
                "against the one it replaced, before pooling; `python -m benchmarks.reproduce` "
                f"names the figures outside): {found}.",
            ]
            if (found := reproduced(results))
            else []
        ),
        "",
        "| what | measured | goal | from |",
        "|---|---|---|---|",
        *(
            f"| {cell(r.what)} | {cell(r.measured)} | {cell(r.goal)} | {r.source} |"
            for r in rows(results)
        ),
        "",
        END,
    ]
    return "\n".join(lines)


def update_readme(readme: Path, results: Path) -> bool:
    """Rewrite the block between the markers; True when the file changed.

    Raises:
        ValueError: the README has no block (both markers, in order) to rewrite.
    """
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{readme} has no block between {BEGIN!r} and {END!r}")
    updated = text[:start] + table(results) + text[end + len(END) :]
    if updated == text:
        return False
    readme.write_text(updated, encoding="utf-8")
    return True
