"""The leaderboard API: ranking, weights, intervals, baselines, downloads."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from leaderboard import build_leaderboard, load_table
from scoring import METRICS, rank
from tests.leaderboard.seeding import MODELS, TASK, Seeded

pytestmark = pytest.mark.anyio

OWNER_DEFAULT = "perf:4,throughput:1,memory:1,fairness:1,robustness:1"


async def test_leaderboard_ranks_every_complete_model(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/tasks/{TASK}/leaderboard")
    assert response.status_code == 200
    board = response.json()
    ranked = [row for row in board["rows"] if row["rank"] is not None]
    assert sorted(r["name"] for r in ranked) == sorted(m.name for m in MODELS)
    assert [r["rank"] for r in ranked] == [1, 2, 3, 4]
    scores = [r["dynascore"] for r in ranked]
    assert scores == sorted(scores, reverse=True)
    assert {p["name"]: p["status"] for p in board["pending"]} == {
        "distilbert": "queued",
        "broken-model": "failed",
    }
    directions = {m["name"]: m["direction"] for m in board["metrics"]}
    assert directions["perf"] == "higher" and directions["memory"] == "lower"


async def test_the_metrics_are_described_by_the_vocabulary(client: httpx.AsyncClient) -> None:
    board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    assert board["metrics"]
    for shown in board["metrics"]:
        metric = METRICS[shown["name"]]
        assert (shown["label"], shown["unit"], shown["direction"], shown["measured"]) == (
            metric.label,
            metric.unit,
            metric.direction,
            metric.measured,
        )
        assert shown["offset"] == (16.0 if shown["name"] == "memory" else 0.0)


async def test_the_ranking_is_the_scoring_packages(
    client: httpx.AsyncClient, shared: Seeded
) -> None:
    weights = {"perf": 1.0, "throughput": 3.0, "memory": 2.0, "fairness": 0.5, "robustness": 0}
    query = ",".join(f"{k}:{v}" for k, v in weights.items())
    board = (await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": query})).json()
    table = load_table(shared.ctx, TASK)
    grid = {
        m.key: {k: m.metrics[k] for k in ("perf", "throughput", "memory", "fairness", "robustness")}
        for m in table.ranked
    }
    expected = rank(grid, weights=weights, directions={"memory": -1}, offsets={"memory": 16})
    assert [r["key"] for r in board["rows"] if r["rank"]] == expected
    assert board["weights"] == weights


async def test_weights_change_the_order(client: httpx.AsyncClient) -> None:
    default = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    fast = (
        await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "perf:1,throughput:10"})
    ).json()
    first = [r["name"] for r in default["rows"] if r["rank"]]
    second = [r["name"] for r in fast["rows"] if r["rank"]]
    assert first[0] == "roberta-large"
    assert second[0] == "bow-logreg" and first != second


@pytest.mark.parametrize(
    ("weights", "says"),
    [
        ("perf:x", "'x' is not a number"),
        ("speed:1", "Unknown metric 'speed'"),
        ("perf:-1", "perf:-1 is negative"),
        ("perf", "not METRIC:NUMBER"),
        ("perf:0", "Every metric weight is 0"),
        ("perf:0,memory:0", "Every metric weight is 0"),
        ("perf:inf", "perf:inf is not a finite number"),
        ("perf:nan", "perf:nan is not a finite number"),
        ("perf:1e308,throughput:1e308", "sum to infinity"),
    ],
)
async def test_bad_weights_are_refused_with_the_fix(
    client: httpx.AsyncClient, weights: str, says: str
) -> None:
    for path in ("leaderboard", "leaderboard.csv", "leaderboard.json"):
        response = await client.get(f"/tasks/{TASK}/{path}", params={"weights": weights})
        assert response.status_code == 422
        assert says in response.json()["detail"]
        assert "perf" in response.json()["detail"]


async def test_intervals_bracket_the_estimates(client: httpx.AsyncClient) -> None:
    board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    for row in (r for r in board["rows"] if r["rank"]):
        perf = row["intervals"]["perf"]
        assert perf["low"] < row["metrics"]["perf"] < perf["high"]
        gap = row["intervals"]["gap_to_leader"]
        assert gap["low"] <= row["dynascore"] - ranked_first(board)["dynascore"] <= gap["high"]
        best, worst = row["rank_interval"]
        assert best <= row["rank"] <= worst
        assert 0 <= row["p_first"] <= 1
        assert 0.0 <= row["p_first"] <= 1.0


async def test_baselines_are_marked_and_majority_is_not_ranked(
    client: httpx.AsyncClient,
) -> None:
    rows = (await client.get(f"/tasks/{TASK}/leaderboard")).json()["rows"]
    kinds = {r["name"]: r["kind"] for r in rows}
    assert kinds["vader-lexicon"] == "baseline" and kinds["roberta-large"] == "model"
    majority = next(r for r in rows if r["kind"] == "majority")
    assert majority["rank"] is None and majority["dynascore"] is None
    assert set(k for k, v in majority["metrics"].items() if v is not None) == {"perf"}
    # Majority class on a three-way macro-F1: about a third of one class's F1.
    assert 10 < majority["metrics"]["perf"] < 35


async def test_contributions_sum_to_the_dynascore(client: httpx.AsyncClient) -> None:
    rows = (await client.get(f"/tasks/{TASK}/leaderboard")).json()["rows"]
    for row in (r for r in rows if r["rank"]):
        assert sum(row["contributions"].values()) == pytest.approx(row["dynascore"], rel=1e-9)


async def test_csv_download_holds_the_same_table(client: httpx.AsyncClient) -> None:
    board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    response = await client.get(f"/tasks/{TASK}/leaderboard.csv")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [r["name"] for r in rows] == [r["name"] for r in board["rows"]]
    assert float(rows[0]["dynascore"]) == pytest.approx(board["rows"][0]["dynascore"], rel=1e-5)
    assert {"perf", "throughput", "memory", "fairness", "robustness"} <= set(rows[0])


async def test_json_download_is_the_api_answer(client: httpx.AsyncClient) -> None:
    api = (await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "perf:1"})).json()
    response = await client.get(f"/tasks/{TASK}/leaderboard.json", params={"weights": "perf:1"})
    assert "attachment" in response.headers["content-disposition"]
    assert response.json() == api


async def test_unknown_task_names_the_known_ones(client: httpx.AsyncClient) -> None:
    response = await client.get("/tasks/nope/leaderboard")
    assert response.status_code == 404
    assert "sentiment" in response.json()["detail"]


def test_a_task_without_results_has_an_empty_board(shared: Seeded) -> None:
    board = build_leaderboard(shared.ctx, load_table(shared.ctx, shared.other_task))
    assert [r for r in board.rows if r.rank] == [] and board.pending == []


async def test_owner_sets_default_weights_and_the_board_follows(
    app: object, seeded: Seeded
) -> None:
    from tests.leaderboard.conftest import make_client

    async with make_client(app, seeded.tokens["owner"]) as owner:  # type: ignore[arg-type]
        for bad, says in [
            ({"perf": 1e308, "throughput": 1e308}, "less than or equal to 1000000"),  # schema
            ({"perf": 0, "memory": 0}, "Every metric weight is 0"),
            ({"perf": -1}, "greater than or equal to 0"),  # schema
            ({"acc": 1}, "Unknown metric 'acc'"),
        ]:
            refused = await owner.put(f"/tasks/{TASK}/weights", json={"weights": bad})
            assert refused.status_code == 422 and says in str(refused.json()["detail"]), bad
        response = await owner.put(
            f"/tasks/{TASK}/weights", json={"weights": {"perf": 1, "throughput": 10}}
        )
        assert response.status_code == 200, response.text
        board = (await owner.get(f"/tasks/{TASK}/leaderboard")).json()
    assert board["weights"] == {"perf": 1.0, "throughput": 10.0}
    assert board["rows"][0]["name"] == "bow-logreg"


def ranked_first(board: dict) -> dict:
    return next(r for r in board["rows"] if r["rank"] == 1)


async def test_viewers_reweigh_datasets_and_hidden_sets_stay_unnamed(
    client: httpx.AsyncClient, shared: Seeded
) -> None:
    board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    assert board["dataset_weights"] == {"test": 1.0}  # hidden-test is scored, never named
    assert board["hidden_sets_left_out"] == 0
    half = await client.get(f"/tasks/{TASK}/leaderboard", params={"dataset_weights": "test:0.5"})
    assert half.status_code == 200 and half.json()["dataset_weights"] == {"test": 0.5}
    # A viewer's weights leave the hidden set out: kept at the owner's weight, two
    # weightings would solve for each model's score on it (which only the owner may see).
    assert half.json()["hidden_sets_left_out"] == 1
    on_test = {m.key: m.per_dataset["test"]["perf"] for m in load_table(shared.ctx, TASK).ranked}
    before = {r["key"]: r["metrics"]["perf"] for r in board["rows"] if r["rank"]}
    after = {r["key"]: r["metrics"]["perf"] for r in half.json()["rows"] if r["rank"]}
    assert before.keys() == after.keys() == on_test.keys() and before != after
    assert after == pytest.approx(on_test)
    for params, says in [
        ({"dataset_weights": "hidden-test:2"}, "Unknown dataset 'hidden-test' in the weights"),
        ({"dataset_weights": "test:-1"}, "test:-1 is negative"),
        ({"dataset_weights": "test:1e400"}, "not a finite number"),
        # Not the hidden set alone: every set a viewer may weigh at 0 is refused.
        ({"dataset_weights": "test:0"}, "Every dataset you may weigh would weigh 0"),
    ]:
        response = await client.get(f"/tasks/{TASK}/leaderboard", params=params)
        assert response.status_code == 422
        assert says in response.json()["detail"] and "hidden-test" not in response.json()[
            "detail"
        ].replace("'hidden-test' in", "")


async def test_every_ranked_row_has_its_rank_interval_p_first_and_contributions(
    client: httpx.AsyncClient,
) -> None:
    board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    ranked = [r for r in board["rows"] if r["rank"]]
    assert sum(r["p_first"] for r in ranked) == pytest.approx(1.0)
    for row in ranked:
        assert row["rank_interval"][0] <= row["rank"] <= row["rank_interval"][1]
        assert row["not_above_baseline"] is False and row["reason"] is None
    assert (
        board["baseline_perf"]
        == next(r for r in board["rows"] if r["kind"] == "majority")["metrics"]["perf"]
    )
    assert board["amrs"]["perf"] == 1.0


async def test_the_owner_sets_a_dataset_weight_and_copies_follow(
    app: object, seeded: Seeded
) -> None:
    from tests.leaderboard.conftest import make_client

    async with make_client(app, seeded.tokens["alice"]) as alice:  # type: ignore[arg-type]
        refused = await alice.patch(f"/tasks/{TASK}/datasets/test", json={"weight": 2})
        assert refused.status_code == 403
    async with make_client(app, seeded.tokens["owner"]) as owner:  # type: ignore[arg-type]
        response = await owner.patch(f"/tasks/{TASK}/datasets/test", json={"weight": 0.25})
        assert response.status_code == 200, response.text
        assert response.json()["weight"] == 0.25
        copy = (await owner.get(f"/tasks/{TASK}/datasets/robustness-test")).json()
        assert copy["weight"] == 0.25
        for body in ({"weight": 0}, {"weight": "x"}, {"weight": 1e9}, {}):
            bad = await owner.patch(f"/tasks/{TASK}/datasets/test", json=body)
            assert bad.status_code == 422, body
        bad = await owner.patch(f"/tasks/{TASK}/datasets/robustness-test", json={"weight": 2})
        assert bad.status_code == 400 and "follows its original" in bad.json()["detail"]
        board = (await owner.get(f"/tasks/{TASK}/leaderboard")).json()
    assert board["dataset_weights"] == {"test": 0.25}


async def test_timed_runs_give_a_spread_and_a_busy_worker_is_marked(
    app: object, seeded: Seeded
) -> None:
    from sqlalchemy import select

    from evalboard.core.tables import Dataset, Result
    from leaderboard.table import load_table
    from tests.helpers.entries import throughput_runs
    from tests.leaderboard.conftest import make_client

    bow = seeded.submissions["bow-logreg"]
    with seeded.ctx.db.session() as session:
        results = session.scalars(
            select(Result)
            .join(Dataset, Result.dataset_id == Dataset.id)
            .where(Result.submission_id == bow, Dataset.perturbation.is_(None))
        ).all()
        for result in results:
            runs = [0.5 * result.metrics["throughput"], result.metrics["throughput"], 2000.0]
            result.metrics = {
                **result.metrics,
                "throughput_runs": runs,
                "latency_p50_runs": [0.01, 0.01, 0.02],
                "load": {"others_cpu_share": 0.6, "loadavg_1m": 3.1, "cpus": 2, "contended": True},
            }
    async with make_client(app) as client:  # type: ignore[arg-type]
        board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
        page = (await client.get(f"/ui/tasks/{TASK}")).text
        reweighed = (await client.get(f"/tasks/{TASK}/leaderboard?dataset_weights=test:0.2")).json()
    row = next(r for r in board["rows"] if r["name"] == "bow-logreg")
    assert row["contended"] is True and "60% of the worker's CPU" in row["load_note"]
    assert row["spread"]["throughput"]["low"] < row["spread"]["throughput"]["high"]
    # The slowest and fastest run under each board's dataset weights, as the row's own runs
    # (the hidden set: the owner's weight on the owner's board, left out on a viewer's).
    entry = next(m for m in load_table(seeded.ctx, TASK).models if m.name == "bow-logreg")
    for shown, hidden in ((board, {}), (reweighed, {"hidden-test": 0.0})):
        runs = throughput_runs(entry, {**shown["dataset_weights"], **hidden})
        spread = next(r for r in shown["rows"] if r["name"] == "bow-logreg")["spread"]
        assert spread["throughput"] == {"low": min(runs), "high": max(runs)}
    others = [r for r in board["rows"] if r["rank"] and r["name"] != "bow-logreg"]
    assert all(not r["contended"] and r["spread"] == {} for r in others)
    assert "busy worker" in page and "60% of the worker" in page
