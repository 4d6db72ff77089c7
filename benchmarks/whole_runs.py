"""Each figure's range over the last whole runs of the benchmarks on one kind of machine.

A figure's own range (its 3-7 repetitions, minutes apart in one run) misses what moves
between runs: two whole runs of ``python -m benchmarks`` back to back on one quiet
machine (2026-12-06, nothing else running) put 93 of 244 medians outside the other
run's range, 28 of them by more than 10% (the machine's own speed moved up to 1.9x for
one benchmark between the runs). So ``python -m benchmarks`` carries each figure's
range from the run before into the new results (:func:`carry`): a figure keeps the
ranges of up to ``KEPT_RUNS - 1`` earlier whole runs on the same kind of machine
(:func:`machine_kind`: the CPU's name and generation, its count, the Python), and the
README states its median with the range over all of them (:func:`stated_range`), which
is what a run on such a machine is expected to land in (``python -m benchmarks.reproduce``).
A thing measured once a run (a restarted server's first request, one model's spread over
its evaluations) keeps the earlier runs' values (:func:`moment_range`): the README states
their range beside it.

Earlier runs may have measured earlier code: each file lists the runs it pools
(``"whole_runs"``: when, the machine kind), and ``python -m benchmarks --fresh`` starts
over after a change that moved figures for good. Results of another kind of machine (or
without a kind: measured before this module) are not pooled: the results folder keeps the
last results of each other kind under ``machines/KIND/`` (:func:`kind_folder`), so a run
on one kind loses nothing another kind measured, and the next run on that kind pools with
them again (the sessions' machines are one kind or another, by chance).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluator.provenance import cpu_model, cpuinfo

__all__ = [
    "EARLIER",
    "EARLIER_VALUES",
    "FAR",
    "KEPT_RUNS",
    "MACHINES",
    "REPRODUCED",
    "RUNS",
    "SPREAD_KEYS",
    "TIMING_KEYS",
    "carry",
    "cpu_generation",
    "figures",
    "is_number",
    "kind_folder",
    "kind_name",
    "kind_of",
    "machine_kind",
    "moment_range",
    "moments",
    "stated_range",
]

#: The most whole runs a figure's stated range covers: this one and four before it.
KEPT_RUNS = 5
#: A figure's key for the earlier runs' ranges, oldest first: ``[[least, greatest], ...]``.
EARLIER = "earlier_runs"
#: A results file's key for the runs it pools: ``[{"at", "kind"}, ...]``, oldest first.
RUNS = "whole_runs"
#: A figure measured several times: its median, least and greatest, and how many runs.
SPREAD_KEYS = ("median", "min", "max", "runs")
#: A timing of several requests (the leaderboard's): its p50, least, greatest and p95.
TIMING_KEYS = ("p50_ms", "min_ms", "max_ms", "p95_ms")
#: A figure's keys for its middle, least and greatest (the two shapes the README states).
SHAPES = (SPREAD_KEYS[:3], TIMING_KEYS[:3])
#: Where a run measures a thing once: each ``*_ms`` number of a mapping under ``restart``
#: (a restarted server's first requests: one first request per start), and each
#: ``*_max_over_min`` (one model's spread over its evaluations within a run). A mapping
#: holding such moments keeps the earlier runs' values of each, ``{"api_ms": [...]}``.
MOMENTS_UNDER = "restart"
MOMENT_SUFFIX = "_max_over_min"
EARLIER_VALUES = "earlier_values"
#: The results folder's folder of the last results of each other kind of machine.
MACHINES = "machines"
#: A results file's key for how its run reproduced the ranges the file it replaced stated:
#: ``{"whole_runs": the runs that file pooled, "figures", "within", "far_outside"}``.
REPRODUCED = "reproduced"
#: How far outside its stated range a median is counted ``far_outside``: by more than this
#: share of the range's nearer end.
FAR = 0.10


def machine_kind() -> dict[str, Any]:
    """What makes two machines one kind for pooling: these machines' CPUs differ by about
    3x in the same figure (an Intel Xeon and an AMD EPYC here), so their runs never
    pool; nor do those of two generations the hypervisor names alike (two "AMD EPYC"
    machines here ran one Python loop in 32 and 40 ms and numpy's sort in 278 and 99 ms).
    A kind stamped before the generation was (2026-12-06) has none: another kind."""
    kind: dict[str, Any] = {"cpu": cpu_model()}
    if (generation := cpu_generation()) is not None:
        kind["generation"] = generation
    return {**kind, "cpus": os.cpu_count(), "python": platform.python_version()}


def cpu_generation(path: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's family and model numbers (``family 25 model 1``: what ``/proc/cpuinfo``
    says on x86), None where it does not say them."""
    fields = cpuinfo(path)
    family, model = fields.get("cpu family"), fields.get("model")
    return f"family {family} model {model}" if family and model else None


def kind_name(kind: Mapping[str, Any]) -> str:
    """A kind of machine as the README names it: ``AMD EPYC (family 25 model 1) x2,
    Python 3.11.7``."""
    generation = f" ({kind['generation']})" if kind.get("generation") else ""
    return f"{kind.get('cpu')}{generation} x{kind.get('cpus')}, Python {kind.get('python')}"


def kind_of(data: Any) -> Mapping[str, Any] | None:
    """The kind of machine a results file's last whole run was on; None: not stamped."""
    runs = data.get(RUNS) if isinstance(data, Mapping) else None
    last = runs[-1] if isinstance(runs, list) and runs else None
    kind = last.get("kind") if isinstance(last, Mapping) else None
    return kind if isinstance(kind, Mapping) else None


def kind_folder(kind: Mapping[str, Any]) -> str:
    """A kind of machine's folder name: ``amd-epyc-family-25-model-1-2cpus-python3.11.7``
    (without a generation stamped: ``intel-xeon-processor-2cpus-python3.11.7``)."""
    cpu = re.sub(r"\((r|tm)\)", " ", str(kind.get("cpu")), flags=re.IGNORECASE).lower()
    words = re.findall(r"[a-z0-9]+", f"{cpu} {kind.get('generation') or ''}")
    return "-".join([*words, f"{kind.get('cpus')}cpus", f"python{kind.get('python')}"])


def _mappings(
    data: Any, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], MutableMapping[str, Any]]]:
    """Every mapping in a results tree and its keys (a list's items by their place)."""
    if isinstance(data, list):
        for place, item in enumerate(data):
            yield from _mappings(item, (*path, str(place)))
    elif isinstance(data, MutableMapping):
        yield path, data
        for key, value in data.items():
            yield from _mappings(value, (*path, str(key)))


def figures(
    data: Any,
) -> Iterator[tuple[tuple[str, ...], MutableMapping[str, Any], tuple[str, str, str]]]:
    """Every figure in a results tree: its keys, its mapping and the keys of its middle,
    least and greatest."""
    for path, found in _mappings(data):
        shape = next((k for k in SHAPES if all(is_number(found.get(key)) for key in k)), None)
        if shape is not None:
            yield path, found, shape


def moments(
    data: Any,
) -> Iterator[tuple[tuple[str, ...], MutableMapping[str, Any], list[str]]]:
    """Every mapping in a results tree that holds moments (things measured once a run):
    its keys, the mapping and the moments' keys in it."""
    for path, found in _mappings(data):
        under = bool(path) and path[-1] == MOMENTS_UNDER
        keys = [
            key
            for key, value in found.items()
            if is_number(value) and (key.endswith(MOMENT_SUFFIX) or (under and key.endswith("_ms")))
        ]
        if keys:
            yield path, found, keys


def moment_range(found: Mapping[str, Any], key: str) -> tuple[float, float, int]:
    """A moment's least and greatest over this run and the earlier runs' values, and how
    many whole runs that covers."""
    earlier = (found.get(EARLIER_VALUES) or {}).get(key) or []
    values = [float(found[key]), *(float(v) for v in earlier if is_number(v))]
    return min(values), max(values), len(values)


def is_number(value: Any) -> bool:
    """A measured number in a results file (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def stated_range(figure: Mapping[str, Any], keys: tuple[str, str, str]) -> tuple[float, float, int]:
    """The least and greatest over this run's repetitions and the earlier runs' ranges,
    and how many whole runs that covers."""
    low, high = float(figure[keys[1]]), float(figure[keys[2]])
    earlier = [pair for pair in figure.get(EARLIER) or [] if _pair(pair)]
    for least, greatest in earlier:
        low, high = min(low, float(least)), max(high, float(greatest))
    return low, high, 1 + len(earlier)


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value)


def carry(
    previous: Mapping[str, Any] | None, latest: MutableMapping[str, Any], kind: Mapping[str, Any]
) -> int:
    """Give each figure of ``latest`` (a run's results, measured on a machine of ``kind``)
    the ranges of the same figure in ``previous`` (the run before's, as it was stored),
    where that run was on the same kind of machine; returns how many whole runs the
    file now pools. Up to ``KEPT_RUNS``: the oldest is dropped."""
    earlier_runs = _pooled_runs(previous, kind)
    if earlier_runs:
        _carry_figures(previous, latest)
        _carry_moments(previous, latest)
    runs = [*earlier_runs, {"at": datetime.now(UTC).isoformat(timespec="seconds"), "kind": kind}]
    latest[RUNS] = runs[-KEPT_RUNS:]
    return len(latest[RUNS])


def _carry_figures(previous: Any, latest: Any) -> None:
    """Each figure of ``latest`` gets the earlier ranges of the same figure in ``previous``
    and that run's own range."""
    before = {where: (figure, keys) for where, figure, keys in figures(previous)}
    for where, figure, _ in figures(latest):
        if where in before:
            old, keys = before[where]
            kept = [pair for pair in old.get(EARLIER) or [] if _pair(pair)]
            kept.append([old[keys[1]], old[keys[2]]])
            figure[EARLIER] = kept[-(KEPT_RUNS - 1) :]


def _carry_moments(previous: Any, latest: Any) -> None:
    """Each moment of ``latest`` gets the earlier values of the same moment in
    ``previous`` and that run's value."""
    before = {where: (found, keys) for where, found, keys in moments(previous)}
    for where, found, keys in moments(latest):
        if where in before:
            old, old_keys = before[where]
            values = old.get(EARLIER_VALUES) or {}
            found[EARLIER_VALUES] = {
                key: [*(values.get(key) or []), old[key]][-(KEPT_RUNS - 1) :]
                for key in keys
                if key in old_keys
            }


def _pooled_runs(previous: Mapping[str, Any] | None, kind: Mapping[str, Any]) -> list[Any]:
    """The whole runs ``previous`` pooled, where its last was on a machine of ``kind``."""
    if previous is None or kind_of(previous) != dict(kind):
        return []
    return list(previous[RUNS])
