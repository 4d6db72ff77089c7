"""Weight ranges, Pareto fronts, z-scores and win rates."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import (
    dynascore,
    mean_win_rate,
    mean_z_score,
    pareto_front,
    pareto_fronts,
    rank,
    weight_ranges,
)
from tests.scoring.test_dynascore import DIRECTIONS, TABLE, tables, weights_for


def test_weight_ranges_by_hand() -> None:
    table = {
        "big": {"perf": 90.0, "memory": 12.0, "speed": 1.0},
        "small": {"perf": 80.0, "memory": 2.0, "speed": 1.0},
    }
    # AMRS(memory) = |4 - 14| / 10 = 1; speed is equal everywhere and contributes 0.
    # With perf weight 4 (memory 1): big 360 + t*4, small 320 + t*14 in memory's weight t:
    # big leads for t <= 4; in perf's weight u: big 90u + 4, small 80u + 14: u >= 1.
    result = weight_ranges(
        table,
        weights={"perf": 4, "memory": 1, "speed": 1},
        directions={"memory": -1},
        offsets={"memory": 16},
    )
    assert result.leader == "big"
    assert result.ranges["memory"].low == 0.0
    assert result.ranges["memory"].high == pytest.approx(4.0)
    assert result.ranges["perf"].low == pytest.approx(1.0)
    assert result.ranges["perf"].high == math.inf
    assert result.ranges["speed"].low == 0.0 and result.ranges["speed"].high == math.inf


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_weight_ranges_are_where_the_leader_leads(data: st.DataObject) -> None:
    table = data.draw(tables(min_models=2))
    weights = data.draw(weights_for(table))
    result = weight_ranges(table, weights=weights)
    assert result.leader == rank(table, weights=weights)[0]
    for metric, span in result.ranges.items():
        assert span.low <= span.weight <= span.high
        probes = [(span.low + min(span.high, span.low + 100)) / 2]
        for t in probes:
            moved = {**weights, metric: t}
            if sum(moved.values()) <= 0:
                continue
            scores = dynascore(table, weights=moved)
            assert scores[result.leader] >= max(scores.values()) - 1e-9 * (
                1 + abs(max(scores.values()))
            )
        for t in [span.low * (1 - 1e-6) - 1e-6, span.high * (1 + 1e-6) + 1e-6]:
            if t < 0 or math.isinf(t) or sum({**weights, metric: t}.values()) <= 0:
                continue
            scores = dynascore(table, weights={**weights, metric: t})
            # Just outside, someone is ahead of the leader (unless it is a rounding tie).
            assert max(scores.values()) >= scores[result.leader]


def test_pareto_fronts_by_hand() -> None:
    fronts = pareto_fronts(TABLE, directions=DIRECTIONS)
    # perf vs memory goods (16 - used): a (70, 12), b (80, 8), c (80, 11), d (90, 6):
    # b is beaten by c (same perf, more free memory).
    assert fronts["memory"] == ["d", "c", "a"]
    # fairness is equal everywhere: only perf decides.
    assert fronts["fairness"] == ["d"]
    assert pareto_front(TABLE, metrics=["throughput", "perf"]) == ["a", "c", "d"]
    twins = {"x": {"perf": 1.0, "c": 1.0}, "y": {"perf": 1.0, "c": 1.0}}
    assert pareto_front(twins) == ["x", "y"]


def _beaten(goods: dict[str, tuple[float, ...]], name: str) -> bool:
    mine = goods[name]
    return any(
        all(o >= m for o, m in zip(other, mine, strict=True)) and other != mine
        for other in goods.values()
    )


# Few distinct values, so that ties in one metric or both are common.
_pairs = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=3),
    st.tuples(st.sampled_from([0.0, 1.0, 1.5, 2.0, 7.0]), st.sampled_from([-3.0, 0.0, 2.5, 4.0])),
    min_size=1,
    max_size=30,
)


@given(_pairs, st.booleans())
@settings(max_examples=300, deadline=None)
def test_a_front_of_two_metrics_is_the_models_no_other_beats(
    pairs: dict[str, tuple[float, float]], lower_memory: bool
) -> None:
    """Two metrics take a sweep, not every pair compared: the front must be the same."""
    table = {name: {"perf": p, "memory": m} for name, (p, m) in pairs.items()}
    sign = -1.0 if lower_memory else 1.0
    goods = {name: (p, sign * m) for name, (p, m) in pairs.items()}
    expected = sorted(
        (name for name in goods if not _beaten(goods, name)), key=lambda n: (-goods[n][0], n)
    )
    directions = {"memory": -1.0} if lower_memory else None
    assert pareto_front(table, metrics=["perf", "memory"], directions=directions) == expected


def test_mean_z_score_by_hand() -> None:
    table = {
        "a": {"perf": 1.0, "mem": 3.0},
        "b": {"perf": 3.0, "mem": 1.0},
        "c": {"perf": 2.0, "mem": 2.0},
    }
    # perf: mean 2, std sqrt(2/3); memory (lower is better) mirrors it.
    z = 1 / math.sqrt(2 / 3)
    assert mean_z_score(table) == pytest.approx({"a": 0.0, "b": 0.0, "c": 0.0}, abs=1e-12)
    assert mean_z_score(table, directions={"mem": -1}) == pytest.approx(
        {"a": -z, "b": z, "c": 0.0}, abs=1e-12
    )
    assert mean_z_score(table, weights={"perf": 3, "mem": 1}) == pytest.approx(
        {"a": -z / 2, "b": z / 2, "c": 0.0}, abs=1e-12
    )


def test_mean_win_rate_counts_ties_half() -> None:
    table = {
        "a": {"perf": 1.0, "x": 5.0},
        "b": {"perf": 2.0, "x": 5.0},
        "c": {"perf": 2.0, "x": 1.0},
    }
    # perf: a 0/2, b 1.5/2, c 1.5/2; x: a 1.5/2, b 1.5/2, c 0/2
    assert mean_win_rate(table) == pytest.approx(
        {"a": (0 + 0.75) / 2, "b": (0.75 + 0.75) / 2, "c": (0.75 + 0) / 2}
    )
    assert mean_win_rate(table, metrics=["perf"]) == pytest.approx({"a": 0.0, "b": 0.75, "c": 0.75})
    assert math.isnan(mean_win_rate({"only": {"perf": 1.0}})["only"])
