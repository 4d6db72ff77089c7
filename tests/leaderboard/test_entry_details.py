"""A board row's packed per-dataset figures and outcomes (``leaderboard.entry.EntryDetails``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalboard.core.cache import MemoryCache, approximate_size
from evaluator import DatasetOutcome, summarize
from evaluator.load import WorkerLoad
from evaluator.result import DatasetMetrics
from leaderboard.entry import EntryDetails, board_metrics, figure_arrays_of
from leaderboard.paging import BoardQuery
from leaderboard.ranking import build_leaderboard
from leaderboard.table import (
    RankedFigures,
    TaskTable,
    _counted,
    _reaveraged,
    own_timed_runs,
    timed_runs,
)
from scoring import METRICS, figure_arrays
from tests.helpers.entries import finished_entry, throughput_runs
from tests.helpers.tasks import sentiment_spec


def _metrics(throughput_runs: list[float], share: float | None = None) -> DatasetMetrics:
    return DatasetMetrics(
        perf=80.0,
        perf_metric="accuracy",
        examples=500,
        throughput=sorted(throughput_runs)[len(throughput_runs) // 2],
        batch_size=32,
        predict_s=1.0,
        memory_gib=1.0,
        throughput_runs=throughput_runs,
        load=None
        if share is None
        else WorkerLoad(others_cpu_share=share, cpus=2, contended=share > 0.25),
    )


def _outcome(name: str, runs: list[float], share: float | None, **fields: Any) -> DatasetOutcome:
    return DatasetOutcome(dataset=name, sha256="0" * 64, metrics=_metrics(runs, share), **fields)


def _outcomes() -> list[DatasetOutcome]:
    return [
        _outcome("r1", [100.0, 110.0, 120.0], 0.1, weight=2.0),
        _outcome("r2", [200.0, 180.0, 190.0], 0.3, weight=0.5),
        # A perturbed copy: timed too, but neither its runs nor its load are the model's.
        _outcome("r1-typos", [5.0, 6.0, 7.0], 0.9, perturbation="robustness", derived_from="r1"),
    ]


def test_packed_details_unpack_to_what_was_packed_nan_and_infinity_included() -> None:
    per_dataset = {
        "r1": {"perf": 80.0, "ece": math.nan, "energy_j_per_1k": math.inf, "note": "é"},
        "hidden": {"perf": 1.0},
    }
    outcomes = _outcomes()
    details = EntryDetails.of(per_dataset, outcomes)
    unpacked = details.per_dataset
    assert unpacked.keys() == per_dataset.keys() and unpacked["hidden"] == {"perf": 1.0}
    assert math.isnan(unpacked["r1"]["ece"]) and unpacked["r1"]["energy_j_per_1k"] == math.inf
    assert unpacked["r1"]["note"] == "é"
    assert details.outcomes == outcomes
    # Each read unpacks anew: a caller changing what it read changes nothing kept.
    details.per_dataset["r1"]["perf"] = 0.0
    assert details.per_dataset["r1"]["perf"] == 80.0


def test_no_results_pack_to_nothing() -> None:
    details = EntryDetails.of({}, [])
    assert not details and details.per_dataset == {} and details.outcomes == []
    assert details.busiest_load is None and details.timed == ()
    assert EntryDetails.of({"r1": {"perf": 1.0}}, [])


def test_the_load_and_runs_kept_beside_are_the_originals() -> None:
    details = EntryDetails.of({}, _outcomes())
    assert details.busiest_load == 0.3  # the perturbed copy's 0.9 is not the model's
    assert details.timed == (
        ("r1", 2.0, (100.0, 110.0, 120.0)),
        ("r2", 0.5, (200.0, 180.0, 190.0)),
    )
    assert EntryDetails.of({}, [_outcome("r1", [1.0], None)]).busiest_load is None


def test_packed_details_are_a_small_part_of_what_they_unpack_to() -> None:
    # Measured by the cache's own rule: a 100,000-row board fits its budget only so.
    per_dataset = {f"d{i}": {f"figure_{k}": 0.1 * k + i for k in range(23)} for i in range(3)}
    outcomes = [_outcome(f"d{i}", [100.0 + i, 110.0, 120.0], 0.1) for i in range(3)]
    details = EntryDetails.of(per_dataset, outcomes)
    unpacked = approximate_size(details.per_dataset) + approximate_size(details.outcomes)
    assert approximate_size(details) * 4 < unpacked


def test_the_counted_figures_are_summarize_s_to_the_last_bit() -> None:
    outcomes = _outcomes()
    counted = EntryDetails.of({}, outcomes).counted()
    assert counted is not None
    names, weights, figures = counted
    assert names == ("r1", "r2", "r1") and weights == (2.0, 0.5, 1.0)
    assert figures.shape == (3, len(METRICS)) and not figures.flags.writeable
    for j, outcome in enumerate(outcomes):
        alone = {o.dataset: 1.0 if o is outcome else 0.0 for o in outcomes}
        expected = board_metrics(summarize(outcomes, weights=alone))
        for k, name in enumerate(METRICS):
            value = expected[name]
            assert (math.isnan(figures[j, k]) and value is None) or figures[j, k] == value
    # A repeated name cannot be weighed by name: the row is re-averaged from its outcomes.
    twice = [*outcomes, _outcome("r2", [1.0, 2.0], None)]
    assert EntryDetails.of({}, twice).counted() is None


RUNS = st.lists(st.floats(1.0, 1e5), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(
    timed=st.lists(
        st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.floats(0.0, 10.0), RUNS)),
        min_size=1,
        max_size=6,
    ),
    weights=st.dictionaries(st.sampled_from(["r1", "r2", "r3"]), st.floats(0.0, 10.0)),
)
def test_every_rows_timed_runs_at_once_are_each_rows_own_to_the_last_bit(
    timed: list[list[tuple[str, float, list[float]]]], weights: dict[str, float]
) -> None:
    """``leaderboard.table.timed_runs`` re-weighs every row's runs in arrays: what each
    row's :meth:`ModelEntry.throughput_runs` gives, bit for bit, whatever its originals
    (none, one timed once, different counts of runs, weights of 0)."""
    entries = []
    for i, datasets in enumerate(timed):
        named = {name: (weight, runs) for name, weight, runs in datasets}  # names distinct
        outcomes = [
            _outcome(name, runs, None, weight=weight) for name, (weight, runs) in named.items()
        ]
        entries.append(finished_entry(f"m{i}", i, outcomes))
    figures = RankedFigures.of(list(range(len(entries))), entries, weights, None)
    table = TaskTable(
        task=sentiment_spec(),
        default_weights={},
        owner_id=None,
        datasets=[],
        scoring=[],
        models=entries,
        majority_by_dataset=None,
    )
    found = timed_runs(table, figures)
    for r, (entry, row) in enumerate(zip(entries, found, strict=True)):
        expected = throughput_runs(entry, weights)
        assert row[~np.isnan(row)].tolist() == expected
        assert np.isnan(row[len(expected) :]).all()
        (alone,) = own_timed_runs(figures, [r])  # as a page's row has them, the others unread
        assert alone[~np.isnan(alone)].tolist() == expected


def _board_of(entries: list[Any]) -> TaskTable:
    return TaskTable(
        task=sentiment_spec(),
        default_weights={"perf": 1.0, "throughput": 1.0},
        owner_id=None,
        datasets=[],
        scoring=[],
        models=entries,
        majority_by_dataset=None,
    )


def test_a_pages_throughput_spreads_are_the_whole_boards() -> None:
    """A page of a few rows takes their spreads from their own runs alone, a long page
    from every row's at once: the same spreads either way."""
    entries = [
        finished_entry(
            f"m{i:02d}",
            i,
            [_outcome("r1", [100.0 + i, 90.0 + 2 * i, 130.0], None, weight=1.0)]
            + ([_outcome("r2", [50.0, 60.0 + i], None, weight=0.5)] if i % 3 else []),
            metrics={"perf": 50.0 + i, "throughput": 100.0 + i},
        )
        for i in range(30)
    ]
    whole = build_leaderboard(None, _board_of(entries), query=BoardQuery(limit=100))
    spreads = {r.key: r.spread for r in whole.rows}
    assert all(s for s in spreads.values())
    for offset in (0, 7, 29):  # a row in 20 of the board or fewer: each its own
        (row,) = build_leaderboard(
            None, _board_of(entries), query=BoardQuery(limit=1, offset=offset)
        ).rows[:1]
        assert row.spread == spreads[row.key]


def test_an_entrys_figures_are_packed_once_and_read_as_the_metrics_give_them() -> None:
    rows = [{"perf": 80.0, "memory": None}, {"perf": math.nan, "ece": math.inf}, {}]
    entries = [finished_entry(f"m{i}", i, [], metrics=m) for i, m in enumerate(rows)]
    values, missing = figure_arrays_of(entries)
    expected_values, expected_missing = figure_arrays(rows, list(METRICS))
    np.testing.assert_array_equal(values, expected_values)
    assert missing.tolist() == expected_missing.tolist()
    packed = [e.packed for e in entries]
    assert all(packed) and figure_arrays_of(entries[:1])[0].shape == (1, len(METRICS))
    assert [e.packed for e in entries] == packed and entries[0].packed is packed[0]
    # A copy with other averages (dataset weights) reads its own metrics, not the packing.
    figures = RankedFigures(
        [0],
        entries[:1],
        {},
        None,
        np.full((1, len(METRICS)), 1.0),
        np.zeros((1, len(METRICS)), bool),
        fresh=True,
    )
    copy = figures.entry(0)
    assert copy.packed is None and figure_arrays_of([copy])[0].tolist() == [[1.0] * len(METRICS)]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.lists(
            st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.floats(0.1, 10.0), st.floats(0, 100))
        ),
        min_size=1,
        max_size=8,
    ),
    weights=st.dictionaries(st.sampled_from(["r1", "r2", "r3"]), st.floats(0.0, 10.0)),
)
def test_the_counted_arrays_of_every_row_at_once_are_each_rows_own(
    rows: list[list[tuple[str, float, float]]], weights: dict[str, float]
) -> None:
    """``_counted`` reads rows of different outcomes (other datasets, none) group by
    group: each row's re-weighed averages are those of the row alone, to the last bit."""
    entries = []
    for i, datasets in enumerate(rows):
        named = {name: (weight, perf) for name, weight, perf in datasets}  # names distinct
        outcomes = [
            DatasetOutcome(
                dataset=name,
                sha256="0" * 64,
                weight=weight,
                metrics=_metrics([100.0 + perf, 90.0]).model_copy(update={"perf": perf}),
            )
            for name, (weight, perf) in named.items()
        ]
        entries.append(finished_entry(f"m{i}", i, outcomes))
    together = _counted(_board_of(entries), MemoryCache())
    assert together is not None
    found = together.means(weights)
    for entry, row in zip(entries, found, strict=True):
        alone = _counted(_board_of([entry]), MemoryCache())
        assert alone is not None
        np.testing.assert_array_equal(row, alone.means(weights)[0])
        # And the row's averages as its outcomes give them, re-averaged (None: NaN).
        averaged = _reaveraged(entry, weights).metrics
        expected = [averaged.get(name) for name in METRICS]
        assert [None if math.isnan(v) else v for v in row.tolist()] == expected
