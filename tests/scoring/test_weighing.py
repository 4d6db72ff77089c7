"""One weighting's rows: ranking only the contenders gives what ranking every model gives."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from scoring import Resamples, bootstrap, resample, statistics, weigh
from scoring.dynascore import scores_batch
from scoring.weighing import _bounds, _counted_ranks

LABELS = ["a", "b", "c"]


def _board(
    seed: int,
    models: int,
    *,
    twins: bool = False,
    constant: bool = False,
    accuracies: tuple[float, float] = (0.3, 0.95),
) -> dict[str, Any]:
    """``models`` classifiers of spread accuracy on 120 examples, with the other metrics
    and repeated throughput a board has; ``twins``: three models answer exactly as
    three others (ties in every resample); ``constant``: two always say "a" (flagged)."""
    rng = np.random.default_rng(seed)
    golds = [LABELS[i] for i in rng.integers(0, 3, 120)]
    examples, table, repeats = {}, {}, {}
    for m in range(models):
        accuracy = rng.uniform(*accuracies)
        predictions = [g if rng.random() < accuracy else LABELS[rng.integers(0, 3)] for g in golds]
        if constant and m < 2:
            predictions = ["a"] * len(golds)
        name = f"m{m:03d}"
        examples[name] = {"test": statistics("macro_f1", predictions, golds, labels=LABELS)}
        table[name] = {
            "throughput": float(rng.uniform(10, 900)),
            "memory": float(rng.uniform(0, 4)),
        }
        repeats[name] = {"throughput": list(rng.uniform(10, 900, 3))}
    if twins:
        for name in list(examples)[:3]:
            examples[f"{name}-twin"] = examples[name]
            table[f"{name}-twin"] = dict(table[name])
            repeats[f"{name}-twin"] = repeats[name]
    baseline = [
        {"test": statistics("macro_f1", [label] * len(golds), golds, labels=LABELS)}
        for label in LABELS
    ]
    return {
        "examples": examples,
        "metric": "macro_f1",
        "table": table,
        "repeats": repeats,
        "baseline": baseline,
        "directions": {"memory": -1.0},
        "offsets": {"memory": 16.0},
        "n_resamples": 300,
        "seed": seed,
    }


def _resamples(board: dict[str, Any]) -> Resamples:
    arguments = dict(board)
    return resample(arguments.pop("examples"), **arguments)


@pytest.mark.parametrize(
    ("seed", "models", "twins", "constant"),
    [(0, 40, False, False), (1, 60, True, False), (2, 50, False, True), (3, 80, True, True)],
)
def test_a_pages_rows_are_what_ranking_every_model_gives(
    seed: int, models: int, twins: bool, constant: bool
) -> None:
    board = _board(seed, models, twins=twins, constant=constant)
    resamples = _resamples(board)
    weights = {"perf": 4.0, "throughput": 1.0, "memory": 1.0}
    weighed = weigh(resamples, weights)
    everyone = weighed.rows(resamples, range(len(weighed.models)))
    pages = [weighed.observed[start : start + 10] for start in range(0, len(weighed.models), 10)]
    for page in [*pages, weighed.observed[::7], np.array([weighed.leader])]:
        rows = weighed.rows(resamples, page.tolist())
        assert rows.ranks == [everyone.ranks[i] for i in page]
        assert np.array_equal(rows.gaps, everyone.gaps[:, page])
        assert np.array_equal(rows.scores, everyone.scores[:, page])


def test_the_weighting_is_what_the_bootstrap_reports() -> None:
    """bootstrap() is a weighing of its resamples with every row asked."""
    board = _board(4, 30, constant=True)
    result = bootstrap(
        board["examples"],
        weights={"perf": 1.0, "memory": 1.0},
        **{k: v for k, v in board.items() if k != "examples"},
    )
    resamples = _resamples(board)
    weighed = weigh(resamples, {"perf": 1.0, "memory": 1.0})
    models = list(weighed.models)
    assert result.order == [models[i] for i in weighed.observed]
    first_counts = weighed.rows(resamples, [weighed.leader], firsts=True).first_counts
    assert first_counts is not None
    assert result.p_first == dict(
        zip(models, (first_counts / resamples.n_resamples).tolist(), strict=True)
    )
    assert sum(result.p_first.values()) == pytest.approx(1.0)
    assert not any(result.p_first[m] for m in models if result.not_above_baseline[m])


def test_a_page_far_from_the_top_ranks_few_models() -> None:
    """With scores spread wide, a page's contenders are a few of the board's models."""
    board = _board(5, 200)
    resamples = _resamples(board)
    weighed = weigh(resamples, {"perf": 1.0})
    page = weighed.observed[:5]
    ranked, above = weighed._contenders(np.flatnonzero(resamples.flagged == 0), page)
    assert len(ranked) < 100 and above == 0


def test_rows_refuse_other_resamples() -> None:
    weighed = weigh(_resamples(_board(6, 20)))
    with pytest.raises(ValueError, match="not the ones"):
        weighed.rows(_resamples(_board(7, 21)), [0])


def test_counted_ranks_are_the_sorted_ranks_and_decline_ties() -> None:
    """A few rows' ranks by counting the scores above them, as a full sort gives them;
    None (the tie-breaks decide) where a row's score ties another's."""
    rng = np.random.default_rng(8)
    scores = rng.normal(size=(50, 400))
    at = np.array([3, 17, 200, 399])
    expected = (-scores).argsort(axis=-1).argsort(axis=-1)[:, at] + 1
    assert np.array_equal(_counted_ranks(scores, at), expected)
    tied = scores.copy()
    tied[7, 100] = tied[7, 17]
    assert _counted_ranks(tied, at) is None
    twins = scores.copy()
    twins[:, 200] = twins[:, 3]
    assert _counted_ranks(twins, at) is None
    # The lowest score of its resample, alone and then tied (the first two places).
    lowest = scores.copy()
    lowest[9, 17] = lowest[9].min() - 1.0
    assert np.array_equal(
        _counted_ranks(lowest, at), (-lowest).argsort(axis=-1).argsort(axis=-1)[:, at] + 1
    )
    lowest[9, 50] = lowest[9, 17]
    assert _counted_ranks(lowest, at) is None


def _sorted_ranks(scores: np.ndarray, at: np.ndarray) -> np.ndarray:
    return (-scores).argsort(axis=-1, kind="stable").argsort(axis=-1)[:, at] + 1


@pytest.mark.parametrize("near", [3, 200], ids=["a-few-near-ties", "many-near-ties"])
@pytest.mark.parametrize("resamples", [40, 800], ids=["in-one-part", "split-over-cores"])
def test_counted_ranks_are_exact_where_single_precision_cannot_tell(
    near: int, resamples: int
) -> None:
    """Scores a few units of the last place apart in double are equal in single: those
    rows are counted in double (a few), or every row is (many); the ranks are the full
    sort's either way, and an exact tie among them still declines. 800 resamples of 500
    scores are counted in parts, on as many cores as there are (scoring.parallel)."""
    rng = np.random.default_rng(11)
    scores = rng.normal(size=(resamples, 500)) * 10
    at = np.array([0, 5, 250, 499])
    for column in rng.choice(np.arange(6, 250), size=near, replace=False):
        row = rng.integers(0, resamples)
        target = at[rng.integers(0, len(at))]
        # 1 to 3 units of the last place above or below the row's: the same single.
        steps = rng.integers(1, 4)
        towards = np.inf if rng.random() < 0.5 else -np.inf
        value = scores[row, target]
        for _ in range(steps):
            value = np.nextafter(value, towards)
        scores[row, column] = value
    assert np.float32(scores[row, column]) == np.float32(scores[row, target])
    assert np.array_equal(_counted_ranks(scores, at), _sorted_ranks(scores, at))
    tied = scores.copy()
    tied[row, column] = tied[row, target]
    assert _counted_ranks(tied, at) is None


def test_a_large_boards_small_pages_are_what_ranking_every_model_gives() -> None:
    """Pages of a few rows among hundreds of contenders: ranked by counting."""
    board = _board(9, 400, twins=True, constant=True)
    board["n_resamples"] = 200
    resamples = _resamples(board)
    weighed = weigh(resamples, {"perf": 1.0, "throughput": 0.5})
    everyone = weighed.rows(resamples, range(len(weighed.models)))
    for start in [0, 3, 150, 390]:
        page = weighed.observed[start : start + 4]
        rows = weighed.rows(resamples, page.tolist())
        assert rows.ranks == [everyone.ranks[i] for i in page]
        assert np.array_equal(rows.gaps, everyone.gaps[:, page])


def _full_firsts(resamples: Resamples, weights: dict[str, float]) -> np.ndarray:
    """How many resamples each model leads, by sorting every resample's exact scores
    with the floor and the tie-breaks."""
    normalised = resamples.normalised
    w = normalised.weight_vector(weights)
    scores = scores_batch(list(resamples.columns), resamples.amrs, w)
    goods = np.stack([np.broadcast_to(c, scores.shape) for c in resamples.columns], axis=-1)
    ids = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    keys = dataclasses.replace(normalised, goods=goods).tiebreak_keys()[1:]
    flagged = np.broadcast_to(resamples.flagged, scores.shape)
    firsts = np.lexsort([ids, *keys, -scores, flagged], axis=-1)[:, 0]
    return np.bincount(firsts, minlength=scores.shape[1])


@pytest.mark.parametrize(
    ("seed", "twins", "close"), [(10, False, False), (11, True, False), (12, False, True)]
)
def test_the_first_of_each_resample_is_the_full_rankings_first(
    seed: int, twins: bool, close: bool
) -> None:
    """P(first) from exact scores, counted with any page (the first page's contenders
    hold every model that can lead; a page far down or of flagged models does not): what
    sorting every resample's exact scores with the floor and the tie-breaks gives.
    ``close``: 300 models of about the same accuracy, many of which can lead, in 1,000
    resamples (the leaders found in parts, scoring.parallel)."""
    board = _board(seed, 120, constant=True)
    if close:
        board = _board(seed, 300, constant=True, accuracies=(0.6, 0.62))
        board["n_resamples"] = 1000
    weights = {"perf": 2.0, "throughput": 1.0, "memory": 0.5}
    if twins:  # the leader's twin ties with it in every resample: the tie-breaks decide
        leader = weigh(_resamples(board), weights)
        name = leader.models[leader.leader]
        for part in ("examples", "table", "repeats"):
            board[part][f"{name}-twin"] = board[part][name]
    resamples = _resamples(board)
    weighed = weigh(resamples, weights)
    expected = _full_firsts(resamples, weights)
    assert expected.max() < resamples.n_resamples  # more than one model leads somewhere
    flagged = np.flatnonzero(resamples.flagged)
    assert len(flagged) == 2
    for page in (weighed.observed[:10], weighed.observed[60:70], flagged, [weighed.leader]):
        rows = weighed.rows(resamples, list(page), firsts=True)
        assert rows.first_counts is not None
        assert np.array_equal(rows.first_counts, expected)
    assert weighed.rows(resamples, [weighed.leader]).first_counts is None  # not asked


@pytest.mark.parametrize(
    "weights",
    [
        {"perf": 4.0, "throughput": 1.0, "memory": 1.0},
        {"perf": 1.0, "throughput": 2.0, "memory": 0.0},
        {"perf": 0.0, "memory": 3.0},
        {"perf": 1e-12, "throughput": 1e12},
    ],
)
def test_every_resampled_score_lies_within_its_models_bounds(weights: dict[str, float]) -> None:
    """The bounds summed from the terms' extremes hold every exact resampled score, with
    zero weights, and some resamples' AMRS unusable (their term adds 0)."""
    resamples = _resamples(_board(12, 90, twins=True, constant=True))
    amrs = resamples.amrs.copy()
    amrs[::7, resamples.normalised.metrics.index("memory")] = np.nan
    amrs[3::11, resamples.normalised.metrics.index("throughput")] = 0.0
    resamples = dataclasses.replace(resamples, amrs=amrs)
    w = resamples.normalised.weight_vector(weights)
    low, high = _bounds(resamples, w)
    scores = scores_batch(list(resamples.columns), resamples.amrs, w)
    assert np.all(scores >= low) and np.all(scores <= high)
    # Not loose: each bound is within a hair of the scores' own extreme, or of a sum of
    # the terms' extremes (which no one resample need reach).
    assert np.all(high - scores.max(axis=0) <= (high - low))


def test_a_term_not_finite_bounds_nothing() -> None:
    resamples = _resamples(_board(13, 30))
    columns = list(resamples.columns)
    perf = resamples.normalised.metrics.index("perf")
    columns[perf] = columns[perf].copy()
    columns[perf][5, 3] = np.inf
    resamples = dataclasses.replace(resamples, columns=tuple(columns))
    low, high = _bounds(resamples, resamples.normalised.weight_vector({"perf": 1.0}))
    assert np.isnan(low).all() and np.isnan(high).all()


def test_pages_ranked_at_once_from_many_threads_are_the_pages_ranked_alone() -> None:
    """Requests share the row pool (scoring.parallel): sixteen pages under four weightings,
    ranked from eight threads at once, are each what ranking it alone gives."""
    board = _board(13, 300, constant=True, accuracies=(0.55, 0.65))
    board["n_resamples"] = 1000
    resamples = _resamples(board)
    weighings = [
        weigh(resamples, {"perf": 1.0 + k, "throughput": 0.5, "memory": k / 4}) for k in range(4)
    ]
    asks = [
        (w, w.observed[start : start + 5].tolist())
        for w in weighings
        for start in (0, 40, 120, 250)
    ]

    def ranked(ask: tuple[Any, list[int]]) -> tuple[list[tuple[int, int]], np.ndarray, Any]:
        weighed, page = ask
        rows = weighed.rows(resamples, page, firsts=True)
        return rows.ranks, rows.gaps, rows.first_counts

    alone = [ranked(ask) for ask in asks]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(ranked, asks * 3))
    for i, (ranks, gaps, firsts) in enumerate(together):
        expected = alone[i % len(asks)]
        assert ranks == expected[0]
        assert np.array_equal(gaps, expected[1])
        assert np.array_equal(firsts, expected[2])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing is split")
def test_resamples_made_on_every_core_are_those_made_on_one() -> None:
    """The resampling's rows split over the cores (scoring.parallel) give every array that
    the same resampling on one core gives (a thread held to one core splits nothing)."""
    board = _board(14, 300, constant=True)
    board["n_resamples"] = 1000
    split = _resamples(board)
    everywhere = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(everywhere)})  # this thread only
    try:
        alone = _resamples(board)
    finally:
        os.sched_setaffinity(0, everywhere)
    for name in ("amrs", "perf_q", "above_q", "flagged", "first_perf_counts", "estimate"):
        assert np.array_equal(getattr(split, name), getattr(alone, name), equal_nan=True), name
    assert len(split.columns) == len(alone.columns)
    for ours, theirs in zip(split.columns, alone.columns, strict=True):
        assert np.array_equal(ours, theirs, equal_nan=True)
