"""Does a run reproduce another? Each figure's new median against the reference's range.

Run: ``.venv/bin/python -m benchmarks.reproduce REFERENCE [RESULTS]``: ``REFERENCE`` a
folder of results (``benchmarks/results`` as committed, say ``git worktree`` or ``git
show`` into a temporary folder), ``RESULTS`` the run to check (default:
``benchmarks/results``). Every figure measured several times in both, a spread
(``{"median", "min", "max"}``) or a leaderboard timing (``{"p50_ms", "min_ms",
"max_ms"}``), or measured once a run over several whole runs (a restarted server's first
request, one model's spread over its evaluations), found at the same place in the same
file, is reproduced where the new median lies within the reference's least and greatest,
over its repetitions and the earlier whole runs the reference carries
(``benchmarks/whole_runs.py``): the range the README states. Each file is checked against
the reference measured on the same kind of machine as the run: the reference's own file,
or the one its ``machines/KIND/`` keeps (a file of a kind the reference never ran on is
named, not checked). Prints the figures outside and a count; the machines' speeds (each
file's ``reference_ms``) come first, since a figure in seconds moves with the machine
(these differ by about 3x) and a ratio should not.

``python -m benchmarks`` makes the same check of each file it writes against the file it
replaces, before pooling them (:func:`tally`, the README's line on how the run reproduced).
Exit 0 (it is a report), 2 where a folder is missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.figures import read_results, speeds
from benchmarks.whole_runs import (
    FAR,
    MACHINES,
    figures,
    kind_folder,
    kind_of,
    moment_range,
    moments,
    stated_range,
)

__all__ = ["Comparison", "compare", "compare_file", "measured", "tally"]

RESULTS = Path(__file__).resolve().parent / "results"
#: Where a figure is (its keys) and its middle, least and greatest.
Figure = tuple[tuple[str, ...], tuple[float, float, float]]


@dataclass(frozen=True)
class Comparison:
    """One figure in both runs."""

    where: str  # file and keys, ``leaderboard.json: sizes/10000/warm/api``
    low: float
    high: float
    median: float  # the new run's

    @property
    def within(self) -> bool:
        return self.low <= self.median <= self.high

    @property
    def off(self) -> float:
        """How far outside the range, a share of the nearer end (0 within)."""
        if self.within:
            return 0.0
        end = self.low if self.median < self.low else self.high
        return abs(self.median - end) / abs(end) if end else float("inf")


def measured(data: Any, *, every_moment: bool = False) -> Iterator[Figure]:
    """Every figure in a results tree: its keys (a list's items by their place) and
    (middle, least, greatest), the range over the earlier whole runs it carries
    (:func:`benchmarks.whole_runs.stated_range`, as the README states it); and each
    moment (a thing measured once a run) with its range over the whole runs, where there
    were several (``every_moment``: those of one run too, as the run to check)."""
    for path, figure, keys in figures(data):
        low, high, _ = stated_range(figure, keys)
        yield path, (float(figure[keys[0]]), low, high)
    for path, found, names in moments(data):
        for name in names:
            low, high, whole = moment_range(found, name)
            if whole > 1 or every_moment:  # once in one run: no range stated
                yield (*path, name), (float(found[name]), low, high)


def _read(folder: Path) -> dict[str, Any]:
    return {path.name: read_results(folder, path.stem) for path in sorted(folder.glob("*.json"))}


def compare_file(name: str, before: Any, after: Any) -> list[Comparison]:
    """Every figure of one results file measured in both, the new median against the
    range ``before`` states."""
    new = dict(measured(after, every_moment=True))
    return [
        Comparison(f"{name}: {'/'.join(keys)}", low, high, new[keys][0])
        for keys, (_, low, high) in measured(before)
        if keys in new
    ]


def _reference(reference: Path, name: str, after: Any) -> Any:
    """The reference's file ``name`` measured on the same kind of machine as ``after``
    (the reference folder's own, else its ``machines/KIND/``'s); None: none was."""
    own = read_results(reference, name.removesuffix(".json"))
    kind = kind_of(after)
    if kind is None or kind_of(own) in (None, kind):
        return own or None
    return (
        read_results(reference / MACHINES / kind_folder(kind), name.removesuffix(".json")) or None
    )


def _paired(reference: Path, results: Path) -> Iterator[tuple[str, Any, Any]]:
    """Each results file's name, its reference (None: none of its kind) and itself."""
    for name, after in _read(results).items():
        yield name, _reference(reference, name, after), after


def compare(reference: Path, results: Path) -> list[Comparison]:
    """Every figure measured in both folders' results, the new median against the range."""
    return [
        found
        for name, before, after in _paired(reference, results)
        if before is not None
        for found in compare_file(name, before, after)
    ]


def tally(found: list[Comparison]) -> dict[str, int]:
    """How many figures were checked, within, and outside by more than :data:`FAR`."""
    return {
        "figures": len(found),
        "within": sum(c.within for c in found),
        "far_outside": sum(c.off > FAR for c in found),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="the results to reproduce")
    parser.add_argument("results", type=Path, nargs="?", default=RESULTS, help="the new run's")
    args = parser.parse_args(argv)
    for folder in (args.reference, args.results):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder of results", file=sys.stderr)
            return 2
    print(f"machine speed (ms of a Python loop / a sort), reference: {speeds(args.reference)}")
    print(f"machine speed, this run: {speeds(args.results)}")
    found, unmatched = [], []
    for name, before, after in _paired(args.reference, args.results):
        if before is None:
            unmatched.append(name)
        else:
            found.extend(compare_file(name, before, after))
    for c in found:
        if not c.within:
            print(f"outside: {c.where}: {c.median:.4g} not in {c.low:.4g}-{c.high:.4g}")
    if unmatched:
        print(f"no reference on this kind of machine: {', '.join(unmatched)}")
    counts = tally(found)
    print(
        f"{counts['within']} of {counts['figures']} figures within the reference's range "
        f"({counts['far_outside']} more than {FAR:.0%} outside)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
