"""A model's page ranks the board but builds only its own row: the same row, rank and
figures as the whole board's, and Pareto charts that stay small on a large board."""

from __future__ import annotations

import random

import numpy as np
import pytest

from leaderboard.app import create_app
from leaderboard.charts import MAX_SCATTER_POINTS, pareto_figure
from leaderboard.ranking import (
    Scatter,
    build_leaderboard,
    model_standing,
    parse_dataset_weights,
)
from leaderboard.schemas import MetricPublic
from leaderboard.table import load_table
from scoring import pareto_front
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("weighted", [False, True], ids=["owners-weights", "new-weights"])
def test_a_models_standing_is_its_row_on_the_whole_board(seeded: Seeded, weighted: bool) -> None:
    ctx = seeded.ctx
    table = load_table(ctx, TASK)
    weights = {"perf": 1.0, "memory": 3.0, "throughput": 0.5} if weighted else None
    dataset_weights = parse_dataset_weights(table, "test:0.25") if weighted else None
    board = build_leaderboard(ctx, table, weights, dataset_weights=dataset_weights)
    ranked = [row for row in board.rows if row.rank is not None]
    assert len(ranked) > 3 and ranked[0].rank_interval is not None  # intervals: compared too
    for row in ranked:
        assert row.submission_id is not None
        standing = model_standing(
            ctx, table, row.submission_id, weights, dataset_weights=dataset_weights
        )
        assert standing.row == row
        assert standing.ranked == len(ranked)
        assert standing.board.metrics == board.metrics
        assert standing.board.weights == board.weights
    assert set(standing.scatters) == {"throughput", "memory"}
    for metric, scatter in standing.scatters.items():
        expected = [
            (row.key, row.name, row.metrics.get("perf") or 0.0, row.metrics[metric])
            for row in ranked
            if row.metrics.get(metric) is not None
        ]
        found = zip(scatter.keys, scatter.names, scatter.perf, scatter.values, strict=True)
        assert list(found) == expected


def test_an_unranked_model_has_no_row(seeded: Seeded) -> None:
    table = load_table(seeded.ctx, TASK)
    standing = model_standing(seeded.ctx, table, seeded.submissions["distilbert"])
    assert standing.row is None and standing.ranked > 0


async def test_the_model_page_says_its_rank_among_every_ranked_model(seeded: Seeded) -> None:
    async with make_client(create_app(seeded.ctx)) as client:
        board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
        second = board["rows"][1]
        page = await client.get(f"/ui/tasks/{TASK}/models/{second['submission_id']}")
    assert page.status_code == 200
    assert f"<dd>2 of {board['total']}</dd>" in page.text


def _scatter(count: int, seed: int = 7) -> Scatter:
    rng = random.Random(seed)
    keys = [f"m{i:05d}" for i in range(count)]
    # Coarse values: ties on either axis are common, as they are on a real board.
    perf = [round(rng.uniform(40, 90), 1) for _ in keys]
    memory = [round(rng.uniform(0.5, 8), 1) for _ in keys]
    names = [f"model {k}" for k in keys]
    return Scatter("memory", keys, names, np.array(perf), np.array(memory))


def test_a_large_pareto_chart_draws_its_front_and_model_and_thins_the_rest() -> None:
    scatter = _scatter(4_500)
    mine = scatter.keys[2_345]
    memory = MetricPublic(
        name="memory", label="Memory", unit="GiB", direction="lower", weighable=True
    )
    others, front, highlighted = pareto_figure(scatter, memory, mine)["data"]
    table = {
        key: {"perf": p, "memory": m}
        for key, p, m in zip(scatter.keys, scatter.perf, scatter.values, strict=True)
    }
    expected = pareto_front(table, metrics=["perf", "memory"], directions={"memory": -1.0})
    assert len(expected) > 1 and sorted(front["text"]) == sorted(f"model {k}" for k in expected)
    assert highlighted["text"] == [f"model {mine}"]
    # 4,499 others: every third kept, and the legend says so.
    assert others["name"] == "models (1 in 3, by rank)"
    assert len(others["x"]) == 1_500 <= MAX_SCATTER_POINTS
    assert others["text"][:2] == ["model m00000", "model m00003"]


def test_a_small_pareto_chart_draws_every_model() -> None:
    scatter = _scatter(50)
    others, _, highlighted = pareto_figure(scatter, None, scatter.keys[0])["data"]
    assert others["name"] == "models" and len(others["x"]) == 49
    assert highlighted["x"] == [scatter.values[0]]
