"""GET /tasks/T/leaderboard a page at a time: limit, offset, sort and a name search."""

from __future__ import annotations

import httpx
import pytest

from leaderboard.paging import BoardQuery, parse_board_query
from tests.leaderboard.seeding import TASK

URL = f"/tasks/{TASK}/leaderboard"

pytestmark = pytest.mark.anyio


def _ranked(board: dict) -> list[dict]:
    return [row for row in board["rows"] if row["rank"] is not None]


async def test_pages_follow_one_another_in_rank_order(client: httpx.AsyncClient) -> None:
    whole = (await client.get(URL)).json()
    first = (await client.get(URL, params={"limit": 2})).json()
    second = (await client.get(URL, params={"limit": 2, "offset": 2})).json()
    assert whole["total"] == first["total"] == second["total"] == len(_ranked(whole)) == 4
    assert [r["rank"] for r in _ranked(first)] == [1, 2]
    assert [r["rank"] for r in _ranked(second)] == [3, 4]
    assert _ranked(first) + _ranked(second) == _ranked(whole)
    assert first["rows"][-1]["kind"] == "majority"  # the floor is shown on the first page
    assert all(r["kind"] != "majority" for r in second["rows"])


@pytest.mark.parametrize(
    ("sort", "key", "reverse"),
    [("-perf", "perf", True), ("memory", "memory", False), ("-dynascore", None, True)],
)
async def test_rows_sort_by_a_metric_or_the_dynascore(
    client: httpx.AsyncClient, sort: str, key: str | None, reverse: bool
) -> None:
    rows = _ranked((await client.get(URL, params={"sort": sort})).json())
    values = [r["metrics"][key] if key else r["dynascore"] for r in rows]
    assert values == sorted(values, reverse=reverse) and len(set(values)) == 4


async def test_sorting_by_name_keeps_each_rows_rank(client: httpx.AsyncClient) -> None:
    ranks = {r["name"]: r["rank"] for r in _ranked((await client.get(URL)).json())}
    rows = _ranked((await client.get(URL, params={"sort": "name"})).json())
    assert [r["name"] for r in rows] == sorted(ranks)
    assert {r["name"]: r["rank"] for r in rows} == ranks


async def test_a_name_search_counts_and_sends_only_the_matches(
    client: httpx.AsyncClient,
) -> None:
    whole = {r["name"]: r["rank"] for r in _ranked((await client.get(URL)).json())}
    found = (await client.get(URL, params={"q": "ROBERTA"})).json()
    assert found["total"] == 1
    assert [(r["name"], r["rank"]) for r in found["rows"]] == [
        ("roberta-large", whole["roberta-large"])
    ]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "5000"}, "limit"),
        ({"limit": "ten"}, "'ten'"),
        ({"offset": "-1"}, "offset"),
        ({"sort": "accuracy"}, "'accuracy'"),
        ({"sort": "--perf"}, "'--perf'"),
        ({"q": "x" * 150}, "q"),
    ],
)
async def test_a_bad_paging_value_is_one_line_of_422(
    client: httpx.AsyncClient, params: dict[str, str], named: str
) -> None:
    response = await client.get(URL, params=params)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and named in detail


async def test_the_downloads_default_is_every_row() -> None:
    assert parse_board_query(default_limit=None) == BoardQuery(limit=None)
    assert parse_board_query(limit="", q="  ") == BoardQuery(limit=100, q=None)


async def test_the_task_page_renders_one_page_with_links_to_the_next(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get(f"/ui/tasks/{TASK}", params={"limit": 2, "weights": "perf:1"})
    assert page.status_code == 200
    assert "Models 1–2 of 4" in page.text
    assert 'rel="next" href="/ui/tasks/sentiment?weights=perf%3A1&amp;offset=2&amp;limit=2"' in (
        page.text
    )
    assert 'rel="prev"' not in page.text
    assert '"paged": true' in page.text
    second = await client.get(f"/ui/tasks/{TASK}", params={"limit": 2, "offset": 2})
    assert "Models 3–4 of 4" in second.text and 'rel="prev"' in second.text
    assert 'rel="next"' not in second.text


async def test_the_whole_board_on_one_page_is_ranked_in_the_browser(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get(f"/ui/tasks/{TASK}")
    assert "Models 1–4 of 4" in page.text and '"paged": false' in page.text


async def test_a_bad_limit_on_the_page_is_a_422(client: httpx.AsyncClient) -> None:
    page = await client.get(f"/ui/tasks/{TASK}", params={"limit": "lots"})
    assert page.status_code == 422 and "limit must be a whole number" in page.text
