"""Bootstrap intervals, rank-first probabilities, and their reproducibility."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scoring import (
    ScoringError,
    bootstrap,
    compute,
    draw,
    dynascore,
    resample,
    statistics,
)
from scoring.bootstrap import _medians
from tests.helpers.counting import CountedName

LABELS = ["neg", "neu", "pos"]


def correct(rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
    return (rng.random(n) < rate).astype(np.float64)


@pytest.fixture
def examples() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {
        "good": {"r1": correct(rng, 0.80, 800), "r2": correct(rng, 0.70, 400)},
        "close": {"r1": correct(rng, 0.79, 800), "r2": correct(rng, 0.70, 400)},
        "poor": {"r1": correct(rng, 0.50, 800), "r2": correct(rng, 0.40, 400)},
    }


def test_estimates_are_the_dataset_weighted_means(examples: dict) -> None:
    result = bootstrap(examples, dataset_weights={"r1": 3, "r2": 1}, n_resamples=50)
    for model, per_dataset in examples.items():
        expected = (3 * 100 * per_dataset["r1"].mean() + 100 * per_dataset["r2"].mean()) / 4
        assert result.perf[model].estimate == pytest.approx(expected, abs=1e-12)


def test_intervals_hold_the_estimate_and_have_the_expected_width() -> None:
    rng = np.random.default_rng(1)
    scores = correct(rng, 0.7, 2000)
    result = bootstrap({"m": {"test": scores}}, n_resamples=2000, seed=3)
    interval = result.perf["m"]
    assert interval.low < interval.estimate < interval.high
    p = scores.mean()
    normal_width = 2 * 1.96 * 100 * np.sqrt(p * (1 - p) / 2000)
    assert interval.high - interval.low == pytest.approx(normal_width, rel=0.1)


def test_same_seed_same_result_other_seed_other_result(examples: dict) -> None:
    first = bootstrap(examples, n_resamples=100, seed=11)
    assert bootstrap(examples, n_resamples=100, seed=11) == first
    assert bootstrap(examples, n_resamples=100, seed=12).perf != first.perf


def test_rank_first_probabilities(examples: dict) -> None:
    result = bootstrap(examples, n_resamples=400, seed=5)
    assert sum(result.p_first.values()) == pytest.approx(1.0)
    assert sum(result.p_first_perf.values()) == pytest.approx(1.0)
    assert result.p_first["poor"] == 0.0
    # good and close are about a point apart: each leads in a fair share of the
    # resamples, the one ahead on the full data in most of them.
    ahead, behind = sorted(["good", "close"], key=lambda m: -result.perf[m].estimate)
    assert 0.5 < result.p_first_perf[ahead] < 1.0
    assert 0.0 < result.p_first_perf[behind] < 0.5


def test_dynascore_intervals_follow_the_table(examples: dict) -> None:
    table = {
        "good": {"memory": 9.0, "speed": 10.0},
        "close": {"memory": 2.0, "speed": 30.0},
        "poor": {"memory": 1.0, "speed": 40.0},
    }
    kwargs = {"directions": {"memory": -1.0}, "offsets": {"memory": 16.0}}
    weights = {"perf": 4.0, "memory": 1.0, "speed": 1.0}
    result = bootstrap(examples, table=table, weights=weights, n_resamples=300, **kwargs)
    with_perf = {m: {**row, "perf": result.perf[m].estimate} for m, row in table.items()}
    expected = dynascore(with_perf, weights=weights, **kwargs)
    for model, value in expected.items():
        interval = result.dynascore[model]
        assert interval.estimate == pytest.approx(value, abs=1e-12)
        assert interval.low <= interval.high


def test_macro_f1_is_recomputed_on_each_resample() -> None:
    rng = np.random.default_rng(2)
    golds = [LABELS[i] for i in rng.integers(0, 3, 300)]
    predictions = {
        "m1": [g if rng.random() < 0.7 else LABELS[rng.integers(0, 3)] for g in golds],
        "m2": [g if rng.random() < 0.5 else "neg" for g in golds],
    }
    examples = {
        m: {"test": statistics("macro_f1", p, golds, labels=LABELS)} for m, p in predictions.items()
    }
    result = bootstrap(examples, metric="macro_f1", n_resamples=300, seed=1)
    for model, p in predictions.items():
        interval = result.perf[model]
        assert interval.estimate == pytest.approx(compute("macro_f1", p, golds, labels=LABELS))
        assert interval.low < interval.estimate < interval.high


def test_misaligned_examples_are_refused() -> None:
    with pytest.raises(ScoringError, match="same non-empty list of examples"):
        bootstrap({"a": {"t": np.ones(3)}, "b": {"t": np.ones(4)}})
    with pytest.raises(ScoringError, match="has no examples of dataset 't'"):
        bootstrap({"a": {"t": np.ones(3)}, "b": {"u": np.ones(3)}})
    with pytest.raises(ScoringError, match="not the examples' models"):
        bootstrap({"a": {"t": np.ones(3)}}, table={"b": {"speed": 1.0}})
    with pytest.raises(ScoringError, match="n_resamples >= 1"):
        bootstrap({"a": {"t": np.ones(3)}}, n_resamples=0)


def _bootstrap_comparisons(n: int) -> int:
    names = [CountedName(f"model-{i:05d}") for i in range(n)]
    rng = np.random.default_rng(0)
    examples = {m: {"test": correct(rng, 0.7, 20)} for m in names}
    others = {m: {"throughput": float(i + 1)} for i, m in enumerate(names)}
    repeats = {m: {"throughput": [i + 1.0, i + 1.5, i + 0.5]} for i, m in enumerate(names)}
    CountedName.reset()
    bootstrap(examples, table=others, repeats=repeats, n_resamples=2, seed=0)
    return CountedName.compared


def test_the_board_bootstrap_compares_model_names_n_log_n_times() -> None:
    # Sorting the names: about 14x for 10x the models; a lookup by list.index per model
    # (as repeated measurements once were found) makes it about 100x.
    small, large = _bootstrap_comparisons(100), _bootstrap_comparisons(1_000)
    assert 0 < small
    assert large < 20 * small, (small, large)


@pytest.mark.parametrize("dataset_weights", [{"r1": 1, "r2": 1}, {"r1": 0.25, "r2": 3}])
def test_kept_draws_give_what_drawing_again_gives(
    examples: dict, dataset_weights: dict[str, float]
) -> None:
    # Draws kept from other dataset weights (leaderboard.intervals keeps them): the same
    # result to the last bit, the resampled sums not taken again.
    arguments = _board_arguments(examples, dataset_weights)
    kept = draw(
        examples,
        dataset_weights={"r1": 5, "r2": 1},
        repeats=arguments["repeats"],
        n_resamples=120,
        seed=4,
    )
    weights = {"perf": 4, "throughput": 1, "memory": 1}
    assert bootstrap(examples, **arguments, weights=weights, draws=kept) == bootstrap(
        examples, **arguments, weights=weights
    )


def _board_arguments(examples: dict, dataset_weights: dict[str, float]) -> dict[str, Any]:
    """A board's other metrics, their directions, offsets and repeated throughputs."""
    return dict(
        table={m: {"throughput": 10.0 + i, "memory": 4.0 - i} for i, m in enumerate(examples)},
        directions={"memory": -1},
        offsets={"memory": 16},
        dataset_weights=dataset_weights,
        repeats={"good": {"throughput": [9.0, 10.0, 11.5]}, "poor": {"throughput": [12.0, 12.5]}},
        n_resamples=120,
        seed=4,
    )


def test_draws_of_other_examples_are_not_used(examples: dict) -> None:
    others = draw({"good": examples["good"]}, n_resamples=50, seed=2)
    assert bootstrap(examples, n_resamples=50, seed=2, draws=others) == bootstrap(
        examples, n_resamples=50, seed=2
    )
    other_seed = draw(examples, n_resamples=50, seed=3)
    assert bootstrap(examples, n_resamples=50, seed=2, draws=other_seed) == bootstrap(
        examples, n_resamples=50, seed=2
    )


def test_draws_of_another_metric_do_not_fit(examples: dict) -> None:
    # Their perf is the other metric's reduce: a bootstrap given them must draw again.
    kept = draw(examples, metric="accuracy", n_resamples=20, seed=2)
    sizes = {key: picks.shape[1] for key, picks in kept.picks.items()}
    same = (list(kept.columns), list(kept.datasets), sizes)
    assert kept.fits("accuracy", *same, n=20, seed=2)
    assert not kept.fits("macro_f1", *same, n=20, seed=2)


def test_draws_for_one_more_model_copy_the_kept_columns(examples: dict) -> None:
    # A board that gains a model (leaderboard.intervals): the others' columns and picks
    # are copied, and the whole is what drawing every column again gives, to the last bit.
    arguments = _board_arguments(examples, {"r1": 2, "r2": 1})
    repeats = arguments["repeats"]
    options = dict(repeats=repeats, n_resamples=120, seed=4)
    without = {m: v for m, v in examples.items() if m != "close"}
    earlier = draw(without, **options)
    extended = draw(examples, **options, previous=earlier, kept={"good", "poor"})
    again = draw(examples, **options)
    assert extended.columns == again.columns == ("close", "good", "poor")
    for got, expected in zip(
        extended.perf + extended.estimate, again.perf + again.estimate, strict=True
    ):
        assert np.array_equal(got, expected)
    assert extended.picks.keys() == again.picks.keys()
    assert all(np.array_equal(extended.picks[k], again.picks[k]) for k in again.picks)
    assert extended.picks["good", "throughput"] is earlier.picks["good", "throughput"]
    weights = {"perf": 4, "throughput": 1, "memory": 1}
    assert bootstrap(examples, **arguments, weights=weights, draws=extended) == bootstrap(
        examples, **arguments, weights=weights
    )


def test_columns_not_kept_are_drawn_again(examples: dict) -> None:
    # "poor" answered otherwise before (a re-run): not named as kept, it is drawn anew.
    before = {**examples, "poor": {"r1": examples["good"]["r1"], "r2": examples["good"]["r2"]}}
    earlier = draw(before, n_resamples=60, seed=1)
    extended = draw(examples, n_resamples=60, seed=1, previous=earlier, kept={"good", "close"})
    again = draw(examples, n_resamples=60, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(extended.perf, again.perf, strict=True))
    other_seed = draw(examples, n_resamples=60, seed=2, previous=earlier, kept=set(examples))
    assert all(
        np.array_equal(a, b)
        for a, b in zip(other_seed.perf, draw(examples, n_resamples=60, seed=2).perf, strict=True)
    )


def test_fractional_statistics_are_summed_again_for_every_column() -> None:
    # Per-example F1 in [0, 1]: a model's sums taken with other columns may round
    # otherwise in the last bit, so kept columns are not copied, and the result is still
    # what drawing again gives.
    rng = np.random.default_rng(5)
    scores = {f"m{i:02d}": {"d": rng.random(300)} for i in range(40)}
    earlier = draw({m: v for m, v in scores.items() if m != "m07"}, n_resamples=200, seed=3)
    assert not earlier.whole
    extended = draw(scores, n_resamples=200, seed=3, previous=earlier, kept=set(scores))
    assert np.array_equal(extended.perf[0], draw(scores, n_resamples=200, seed=3).perf[0])


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_medians_are_numpys_to_the_last_bit(size: int) -> None:
    rng = np.random.default_rng(size)
    drawn = np.round(rng.random((40, 30, size)) * 4) / 4  # many ties
    assert np.array_equal(_medians(drawn), np.median(drawn, axis=-1))


@pytest.mark.parametrize("weights", [{"perf": 1}, {"perf": 1, "memory": 3}, {"throughput": 1}])
def test_kept_resamples_give_what_resampling_again_gives(
    examples: dict, weights: dict[str, float]
) -> None:
    # Resamples kept from other metric weights (leaderboard.intervals keeps them): the
    # same result to the last bit.
    arguments = _board_arguments(examples, {"r1": 2, "r2": 1})
    kept = resample(examples, **arguments)
    assert bootstrap(examples, **arguments, weights=weights, resamples=kept) == bootstrap(
        examples, **arguments, weights=weights
    )


def test_resamples_of_other_shares_or_models_are_not_used(examples: dict) -> None:
    kept = resample(examples, dataset_weights={"r1": 2, "r2": 1}, n_resamples=50, seed=2)
    same_shares = {"r1": 4, "r2": 2}
    assert kept.fits(examples, same_shares, n=50, level=0.95, seed=2)
    for dataset_weights in [{"r1": 1, "r2": 1}, {"r1": 2, "r2": 1.5}]:
        assert not kept.fits(examples, dataset_weights, n=50, level=0.95, seed=2)
        arguments = dict(dataset_weights=dataset_weights, n_resamples=50, seed=2)
        assert bootstrap(examples, **arguments, resamples=kept) == bootstrap(examples, **arguments)
    fewer = {m: examples[m] for m in ["good", "poor"]}
    assert not kept.fits(fewer, same_shares, n=50, level=0.95, seed=2)
    assert bootstrap(
        fewer, dataset_weights=same_shares, n_resamples=50, seed=2, resamples=kept
    ) == bootstrap(fewer, dataset_weights=same_shares, n_resamples=50, seed=2)
