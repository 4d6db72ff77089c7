"""Energy on the board: weighable, off by default, lower is better, a missing figure ranked
as the worst and shown as missing; through the ranking, the API, the CSV and the page."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.tables import Job, Result, Submission
from evaluator import DatasetMetrics, DatasetOutcome
from leaderboard import build_leaderboard
from leaderboard.entry import ModelEntry
from leaderboard.schemas import LeaderboardPublic
from leaderboard.table import TaskTable
from scoring import DEFAULT_WEIGHTS
from tests.helpers.entries import finished_entry
from tests.helpers.tasks import sentiment_spec
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

# perf falls as energy falls: more perf costs more energy, the trade-off energy weighs.
_ROWS = {"a": (82.0, 300.0), "b": (81.0, 200.0), "c": (80.0, 100.0)}


def _entry(key: str, perf: float, energy: float | None) -> ModelEntry:
    metrics = DatasetMetrics(
        perf=perf,
        perf_metric="accuracy",
        examples=100,
        throughput=100.0,
        batch_size=32,
        predict_s=1.0,
        memory_gib=1.0,
        energy_j_per_1k=energy,
        energy_method="estimated" if energy is not None else None,
    )
    return finished_entry(
        key,
        ord(key),
        [DatasetOutcome(dataset="test", sha256="0" * 64, metrics=metrics)],
        metrics={"perf": perf, "throughput": 100.0, "memory": 1.0, "energy": energy},
        methods={"energy": "estimated"} if energy is not None else {},
    )


def _table(rows: dict[str, tuple[float, float | None]]) -> TaskTable:
    return TaskTable(
        task=sentiment_spec(),
        default_weights=dict(DEFAULT_WEIGHTS),
        owner_id=None,
        datasets=[],
        scoring=[],
        models=[_entry(key, perf, energy) for key, (perf, energy) in rows.items()],
        majority_by_dataset=None,
        dataset_weights={"test": 1.0},
    )


def _order(table: TaskTable, weights: dict[str, float] | None = None) -> list[str]:
    board = build_leaderboard(cast(Context, None), table, weights, intervals=False)
    return [r.key for r in board.rows if r.rank is not None]


def test_energy_is_weighable_and_weighs_nothing_by_default() -> None:
    table = _table(_ROWS)
    board = build_leaderboard(cast(Context, None), table, intervals=False)
    energy = next(m for m in board.metrics if m.name == "energy")
    assert energy.weighable and energy.direction == "lower" and energy.unit == "J/1k examples"
    assert energy.caveat  # the page's explanation and the API's carry the caveats
    assert board.weights["energy"] == 0.0
    assert all(r.contributions.get("energy", 0.0) == 0.0 for r in board.rows)
    assert all(r.methods == {"energy": "estimated"} for r in board.rows)
    assert _order(table) == ["a", "b", "c"]  # by perf alone


def test_weighing_energy_puts_the_frugal_models_first() -> None:
    table = _table(_ROWS)
    assert _order(table, {"perf": 1, "energy": 10}) == ["c", "b", "a"]
    assert _order(table, {"perf": 1, "energy": 0}) == ["a", "b", "c"]


def test_a_missing_figure_ranks_as_the_worst_and_shows_as_missing() -> None:
    # d is c (the most frugal) without an energy figure: weighed, it must not keep c's place.
    table = _table({**_ROWS, "d": (80.0, None)})
    board = build_leaderboard(
        cast(Context, None), table, {"perf": 1, "energy": 10}, intervals=False
    )
    rows = {r.key: r for r in board.rows}
    order = [r.key for r in board.rows if r.rank is not None]
    assert order.index("d") > order.index("c")
    assert rows["d"].metrics["energy"] is None and rows["d"].methods == {}
    assert rows["d"].ranked_as_worst == ["energy"]
    assert all(rows[k].ranked_as_worst == [] for k in "abc")
    # It weighs in as a's (the board's worst) figure, not as zero (the best possible).
    assert rows["d"].contributions["energy"] == pytest.approx(rows["a"].contributions["energy"])
    # Unweighed, nothing is said about it.
    default = build_leaderboard(cast(Context, None), table, intervals=False)
    assert all(r.ranked_as_worst == [] for r in default.rows)


def test_a_board_without_any_energy_figure_shows_no_energy_column() -> None:
    table = _table({key: (perf, None) for key, (perf, _) in _ROWS.items()})
    board = build_leaderboard(cast(Context, None), table, {"perf": 1, "energy": 5}, intervals=False)
    assert "energy" not in [m.name for m in board.metrics]
    assert [r.key for r in board.rows] == ["a", "b", "c"]  # the energy weight has nothing to weigh


# Through the API and the page, on the seeded task: every model gets an energy figure but
# the lexicon baseline (an old result).

_ENERGY = {"roberta-large": 900.0, "minilm-head": 60.0, "bow-logreg": 4.0}


def _give_energy(ctx: Context) -> None:
    with ctx.db.session() as session:
        for job in session.scalars(select(Job).join(Submission)).all():
            energy = _ENERGY.get(job.submission.name)
            if energy is None or job.result is None:
                continue
            result: Result = job.result
            result.metrics = {
                **result.metrics,
                "energy_j_per_1k": energy,
                "energy_method": "measured" if job.submission.name == "bow-logreg" else "estimated",
            }


@pytest.fixture
async def energy_client(seeded: Seeded, app: Any) -> Any:
    _give_energy(seeded.ctx)
    async with make_client(app) as client:
        yield client


@pytest.mark.anyio
async def test_the_api_lists_energy_off_by_default_with_each_rows_method(
    energy_client: httpx.AsyncClient,
) -> None:
    task = (await energy_client.get(f"/tasks/{TASK}")).json()
    assert task["default_weights"].get("energy", 0.0) == 0.0
    board = (await energy_client.get(f"/tasks/{TASK}/leaderboard")).json()
    energy = next(m for m in board["metrics"] if m["name"] == "energy")
    assert energy["weighable"] and energy["direction"] == "lower"
    rows = {r["name"]: r for r in board["rows"] if r["rank"]}
    assert rows["bow-logreg"]["methods"] == {"energy": "measured"}
    assert rows["roberta-large"]["methods"] == {"energy": "estimated"}
    assert rows["vader-lexicon"]["metrics"]["energy"] is None
    assert rows["vader-lexicon"]["methods"] == {}


@pytest.mark.anyio
async def test_weighing_energy_through_the_api_reorders_and_ranks_missing_last_on_it(
    energy_client: httpx.AsyncClient,
) -> None:
    board = (
        await energy_client.get(
            f"/tasks/{TASK}/leaderboard", params={"weights": "perf:1,energy:20"}
        )
    ).json()
    order = [r["name"] for r in board["rows"] if r["rank"]]
    assert order.index("bow-logreg") < order.index("minilm-head") < order.index("roberta-large")
    lexicon = next(r for r in board["rows"] if r["name"] == "vader-lexicon")
    assert lexicon["ranked_as_worst"] == ["energy"]
    assert lexicon["contributions"]["energy"] == pytest.approx(
        next(r for r in board["rows"] if r["name"] == "roberta-large")["contributions"]["energy"]
    )


@pytest.mark.anyio
async def test_the_csv_carries_energy_and_how_it_was_obtained(
    energy_client: httpx.AsyncClient,
) -> None:
    text = (await energy_client.get(f"/tasks/{TASK}/leaderboard.csv")).text
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert float(rows["bow-logreg"]["energy"]) == 4.0
    assert rows["bow-logreg"]["energy_method"] == "measured"
    assert rows["vader-lexicon"]["energy"] == "" and rows["vader-lexicon"]["energy_method"] == ""


@pytest.mark.anyio
async def test_the_task_page_shows_the_column_its_mark_and_a_missing_figure(
    energy_client: httpx.AsyncClient,
) -> None:
    page = (
        await energy_client.get(f"/ui/tasks/{TASK}", params={"weights": "perf:4,energy:1"})
    ).text
    assert 'data-metric="energy"' in page and "J/1k examples" in page
    assert 'data-method="measured"' in page and 'data-method="estimated"' in page
    assert "no figure" in page  # the lexicon's missing figure, weighed as the worst
    assert 'id="explain-energy"' in page
    # The browser re-ranks with the values the server ranked by: the worst, not null.
    data = json.loads(
        page.split('<script id="board-data" type="application/json">')[1].split("</script>")[0]
    )
    names = {r.key: r.name for r in (await _board(energy_client)).rows}
    by_name = {names[key]: row for key, row in data["table"].items()}
    assert by_name["vader-lexicon"]["energy"] == by_name["roberta-large"]["energy"] == 900.0
    assert data["weights"]["energy"] == 1.0 and data["owner_weights"]["energy"] == 0.0


async def _board(client: httpx.AsyncClient) -> LeaderboardPublic:
    answer = await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "perf:4,energy:1"})
    return LeaderboardPublic.model_validate(answer.json())


def test_energy_alone_ranks_a_missing_figure_level_with_the_worst_real_one() -> None:
    table = _table({**_ROWS, "d": (90.0, None)})  # the best perf, no figure
    board = build_leaderboard(cast(Context, None), table, {"perf": 0, "energy": 1}, intervals=False)
    order = [r.key for r in board.rows if r.rank is not None]
    scores = {r.key: r.dynascore for r in board.rows}
    # Below every better real figure; level with the worst (a's), the tie then going to
    # the better perf as every tie does.
    assert order == ["c", "b", "d", "a"] and scores["d"] == scores["a"]


@pytest.mark.anyio
async def test_weighing_only_energy_on_a_board_without_figures_is_refused_with_the_fix(
    client: httpx.AsyncClient,
) -> None:
    # The shared seeded board has no energy figure: energy alone leaves nothing to rank by.
    response = await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "perf:0,energy:1"})
    assert 400 <= response.status_code < 500
    assert "needs a weight above 0" in response.text and "perf" in response.text
    board = (
        await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "energy:3,perf:1"})
    ).json()
    assert "energy" not in [m["name"] for m in board["metrics"]]
    assert all(r["ranked_as_worst"] == [] for r in board["rows"])


@pytest.mark.anyio
async def test_the_model_page_shows_energy_with_its_mark(
    energy_client: httpx.AsyncClient, seeded: Seeded
) -> None:
    page = (
        await energy_client.get(f"/ui/tasks/{TASK}/models/{seeded.submissions['bow-logreg']}")
    ).text
    assert "Energy" in page and "J/1k examples" in page and 'data-method="measured"' in page
