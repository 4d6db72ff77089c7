"""The baseline floor, rank intervals and gaps to the leader (scoring.floor, scoring.bootstrap)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import bootstrap, floor_order, not_above_baseline, rank_interval
from scoring.floor import rank_intervals

DIRECTIONS = {"memory": -1.0}
OFFSETS = {"memory": 16.0}


def dynaboard(table: dict, weights: dict) -> dict[str, float]:
    """Dynaboard's formula written out plainly, as in ScoreModel.dynascore: goods, AMRS
    over adjacent pairs sorted by perf, weights normalised, sum of w * good / AMRS."""
    models = sorted(table)
    metrics = sorted(table[models[0]])
    goods = {
        m: {k: OFFSETS.get(k, 0.0) + DIRECTIONS.get(k, 1.0) * table[m][k] for k in metrics}
        for m in models
    }
    by_perf = sorted(models, key=lambda m: goods[m]["perf"])  # stable: ties in name order
    top = max(abs(goods[m]["perf"]) for m in models)
    amrs = {}
    for k in metrics:
        ratios = []
        for lo, hi in zip(by_perf, by_perf[1:], strict=False):
            gap = goods[hi]["perf"] - goods[lo]["perf"]
            if gap > 1e-4 * top:
                ratios.append(abs(goods[hi][k] - goods[lo][k]) / gap)
        amrs[k] = 1.0 if k == "perf" else (sum(ratios) / len(ratios) if ratios else 0.0)
    total = sum(weights.values())
    return {
        m: sum(weights.get(k, 0) / total * goods[m][k] / amrs[k] for k in metrics if amrs[k] > 0)
        for m in models
    }


@st.composite
def boards(draw: st.DrawFn) -> dict:
    n_models = draw(st.integers(1, 6))
    n = draw(st.integers(5, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rates = [draw(st.sampled_from([0.0, 0.3, 0.5, 0.5, 0.7, 1.0])) for _ in range(n_models)]
    examples = {
        f"m{i}": {"test": (rng.random(n) < rate).astype(float)} for i, rate in enumerate(rates)
    }
    others = {
        f"m{i}": {
            "throughput": draw(st.floats(1, 5000)),
            "memory": draw(st.floats(0.01, 8)),
            "robustness": draw(st.sampled_from([50.0, 90.0, 100.0])),
        }
        for i in range(n_models)
    }
    weights = {
        "perf": draw(st.floats(0.1, 5)),
        "throughput": draw(st.sampled_from([0.0, 1.0])),
        "memory": draw(st.sampled_from([0.0, 1.0, 3.0])),
        "robustness": draw(st.sampled_from([0.0, 1.0])),
    }
    baseline: object = draw(st.sampled_from([None, 30.0, 50.0, 70.0, "paired"]))
    if baseline == "paired":  # the majority label's hits, paired with the models'
        hits = (rng.random(n) < 0.5).astype(float)
        baseline = [{"test": hits}, {"test": 1 - hits}]
    return {"examples": examples, "others": others, "weights": weights, "baseline": baseline}


@settings(max_examples=60, deadline=None)
@given(boards())
def test_floor_rank_intervals_and_the_dynascore_hold_on_random_boards(board: dict) -> None:
    result = bootstrap(
        board["examples"],
        table=board["others"],
        weights=board["weights"],
        directions=DIRECTIONS,
        offsets=OFFSETS,
        baseline=board["baseline"],
        n_resamples=60,
        seed=1,
    )
    order = result.order
    flagged = [m for m in order if result.not_above_baseline[m]]
    # Rows not above the baseline never precede a row above it.
    assert order == [m for m in order if m not in flagged] + flagged
    for m in order:
        if board["baseline"] is None:
            assert not result.not_above_baseline[m]
        else:
            high = result.above_baseline[m].high
            assert result.not_above_baseline[m] == (high <= 1e-9)
    # The rank shown lies in the rank interval shown.
    for position, m in enumerate(order, start=1):
        best, worst = result.rank_interval[m]
        assert 1 <= best <= position <= worst <= len(order)
    assert sum(result.p_first.values()) == pytest.approx(1.0)
    # The Dynascore is still Dynaboard's formula, and the order inside each group is its.
    table = {m: {"perf": result.perf[m].estimate, **board["others"][m]} for m in order}
    expected_scores = dynaboard(table, board["weights"])
    for m in order:
        assert result.dynascore[m].estimate == pytest.approx(expected_scores[m], rel=1e-9, abs=1e-9)
    for group in (
        [m for m in order if m not in flagged],
        flagged,
    ):
        scores = [expected_scores[m] for m in group]
        assert all(
            a >= b - 1e-9 * max(1.0, abs(a)) for a, b in zip(scores, scores[1:], strict=False)
        )
    leader = order[0]
    assert result.gap_to_leader[leader].estimate == 0.0
    for m in order:
        gap = result.gap_to_leader[m]
        assert gap.estimate == pytest.approx(
            result.dynascore[m].estimate - result.dynascore[leader].estimate
        )


def test_a_constant_model_is_flagged_and_ranked_last_even_with_the_best_score() -> None:
    rng = np.random.default_rng(3)
    gold_is_majority = (rng.random(400) < 0.6).astype(float)  # always answering the majority
    examples = {
        "constant": {"test": gold_is_majority},
        "weak": {"test": (rng.random(400) < 0.68).astype(float)},
        "strong": {"test": (rng.random(400) < 0.8).astype(float)},
    }
    others = {
        "constant": {"throughput": 90_000.0, "robustness": 100.0},
        "weak": {"throughput": 900.0, "robustness": 80.0},
        "strong": {"throughput": 50.0, "robustness": 70.0},
    }
    weights = {"perf": 1, "throughput": 3, "robustness": 3}
    plain = bootstrap(examples, table=others, weights=weights, n_resamples=200)
    assert plain.order[0] == "constant"  # the formula alone lets it win
    # An unpaired floor (the baseline's perf on the full data) misses it: the constant
    # model's perf moves with the resample, so its interval reaches above that figure.
    unpaired = bootstrap(
        examples, table=others, weights=weights, baseline=100 * gold_is_majority.mean()
    )
    assert unpaired.not_above_baseline["constant"] is False
    floored = bootstrap(
        examples,
        table=others,
        weights=weights,
        baseline=[{"test": gold_is_majority}, {"test": 1 - gold_is_majority}],
        n_resamples=200,
    )
    assert floored.above_baseline["constant"].estimate == 0.0
    assert floored.above_baseline["constant"].high == 0.0
    assert floored.not_above_baseline == {"constant": True, "weak": False, "strong": False}
    assert floored.order[-1] == "constant"
    assert floored.p_first["constant"] == 0.0
    assert floored.rank_interval["constant"] == (3, 3)
    assert floored.dynascore["constant"] == plain.dynascore["constant"]  # the score is kept


def test_gaps_to_the_leader_are_narrower_than_the_scores_own_intervals() -> None:
    # The case: a memory term made huge by a tiny AMRS moves every score together.
    rng = np.random.default_rng(5)
    examples = {
        f"m{i}": {"test": (rng.random(1000) < rate).astype(float)}
        for i, rate in enumerate([0.6, 0.65, 0.7])
    }
    others = {"m0": {"memory": 0.200}, "m1": {"memory": 0.201}, "m2": {"memory": 0.203}}
    result = bootstrap(
        examples,
        table=others,
        weights={"perf": 4, "memory": 1},
        directions=DIRECTIONS,
        offsets=OFFSETS,
        n_resamples=300,
    )
    for m in ("m0", "m1"):
        own = result.dynascore[m].high - result.dynascore[m].low
        gap = result.gap_to_leader[m].high - result.gap_to_leader[m].low
        assert gap < own / 2


def test_repeated_measurements_widen_the_rank_interval() -> None:
    examples = {m: {"test": np.ones(50)} for m in ("a", "b")}
    others = {"a": {"throughput": 100.0}, "b": {"throughput": 101.0}}
    weights = {"perf": 1, "throughput": 1}
    fixed = bootstrap(examples, table=others, weights=weights, n_resamples=200)
    assert fixed.rank_interval == {"a": (2, 2), "b": (1, 1)}
    noisy = bootstrap(
        examples,
        table=others,
        weights=weights,
        repeats={"a": {"throughput": [80.0, 100.0, 120.0]}, "b": {"throughput": [99, 101, 103]}},
        n_resamples=200,
    )
    assert noisy.rank_interval == {"a": (1, 2), "b": (1, 2)}
    assert 0 < noisy.p_first["a"] < 1


def test_floor_helpers() -> None:
    assert not_above_baseline(high=50.0, baseline=None) is False
    assert not_above_baseline(high=50.0, baseline=50.0) is True
    assert not_above_baseline(high=50.1, baseline=50.0) is False
    assert floor_order(["a", "b", "c", "d"], {"a", "c"}) == ["b", "d", "a", "c"]
    assert rank_interval(np.array([2] * 99 + [5]), observed=1, level=0.95) == (1, 2)


@pytest.mark.parametrize("resamples", [1, 2, 7, 40, 999, 1000])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_rank_intervals_are_numpys_lower_and_higher_quantiles(resamples: int, level: float) -> None:
    # One partition for both ends: the same order statistics as np.quantile's methods.
    rng = np.random.default_rng(resamples)
    samples = rng.integers(1, 30, size=(resamples, 9))
    observed = rng.integers(1, 30, size=9)
    tail = (1 - level) / 2
    best = np.minimum(np.quantile(samples, tail, axis=0, method="lower"), observed)
    worst = np.maximum(np.quantile(samples, 1 - tail, axis=0, method="higher"), observed)
    assert rank_intervals(samples, observed=observed, level=level) == [
        (int(b), int(w)) for b, w in zip(best, worst, strict=True)
    ]
