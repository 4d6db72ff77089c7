"""The task page's ranking part and the model page's drill-down part, in process: what the
address says is what is rendered, and a bad or hostile address is a clear 4xx (issue 19)."""

from __future__ import annotations

import html

import httpx
import pytest

from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio


async def test_the_ranking_part_is_the_pages_ranking(client: httpx.AsyncClient) -> None:
    params = {"weights": "perf:1,throughput:10", "sort": "-perf", "q": "e"}
    page = (await client.get(f"/ui/tasks/{TASK}", params=params)).text
    part = await client.get(f"/ui/tasks/{TASK}/ranking", params=params)
    assert part.status_code == 200 and "<html" not in part.text
    table = part.text.split('<table class="board" id="board">', 1)[1].split("</table>", 1)[0]
    assert table in page
    # Its links lead to the page (not to the part), every parameter kept.
    assert f'href="/ui/tasks/{TASK}/ranking' not in part.text
    sort_link = html.unescape(
        part.text.split('data-focus="sort-name"', 1)[0].rsplit('href="', 1)[1]
    )
    assert sort_link.startswith(f"/ui/tasks/{TASK}?") and "weights=perf" in sort_link
    assert "q=e" in sort_link and "sort=name" in sort_link


async def test_flags_filter_the_page_and_the_api_alike(client: httpx.AsyncClient) -> None:
    api = (await client.get(f"/tasks/{TASK}/leaderboard", params={"baselines": "false"})).json()
    assert all(r["kind"] != "baseline" for r in api["rows"]) and api["total"] == 3
    whole = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    # Rows keep their rank on the whole board.
    ranks = {r["key"]: r["rank"] for r in whole["rows"]}
    assert all(ranks[r["key"]] == r["rank"] for r in api["rows"])
    page = (await client.get(f"/ui/tasks/{TASK}", params={"baselines": "false"})).text
    assert 'class="baseline' not in page and "Filters (on)" in page


async def test_hidden_columns_are_rendered_hidden(client: httpx.AsyncClient) -> None:
    page = (await client.get(f"/ui/tasks/{TASK}", params={"hide": "throughput,p_first"})).text
    assert 'data-col="throughput" class="col-hidden"' in page
    assert 'data-col="p_first" class="col-hidden"' in page
    assert 'data-col="memory" class="col-hidden"' not in page


async def test_the_drill_down_part_searches_sorts_and_counts(
    client: httpx.AsyncClient, shared: Seeded
) -> None:
    roberta = shared.submissions["roberta-large"]
    url = f"/ui/tasks/{TASK}/models/{roberta}/examples"
    everything = await client.get(f"/submissions/{roberta}/examples/test", params={"limit": 500})
    total = len(everything.json())
    part = await client.get(url, params={"dataset": "test"})
    assert part.status_code == 200 and f"Examples 1–25 of {total} on test." in part.text
    loved = await client.get(url, params={"dataset": "test", "q": "LOVED", "sort": "-score"})
    expected = [
        e for e in everything.json() if "loved" in " ".join(map(str, e["inputs"].values())).lower()
    ]
    assert f"of {len(expected)} matching “LOVED”" in loved.text
    mistakes = await client.get(url, params={"dataset": "test", "sort": "score"})
    first_row = mistakes.text.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert 'class="wrong"' in first_row  # the lowest score first


@pytest.mark.parametrize(
    ("path", "params", "words"),
    [
        (f"/ui/tasks/{TASK}", {"hide": "perf"}, "Unknown column 'perf' in hide"),
        (f"/ui/tasks/{TASK}/ranking", {"hide": "nope"}, "known: rank_interval"),
        (f"/ui/tasks/{TASK}/ranking", {"sort": "bogus"}, "Unknown sort"),
        (f"/ui/tasks/{TASK}/ranking", {"q": "x" * 201}, ""),
        (f"/ui/tasks/{TASK}/ranking", {"min_params": "-1"}, ""),
        (f"/ui/tasks/{TASK}/ranking", {"baselines": "maybe"}, ""),
        (f"/ui/tasks/{TASK}/ranking", {"runtime": "cobol"}, "Unknown runtime"),
        ("/ui/tasks/nope/ranking", {}, "nope"),
    ],
)
async def test_a_bad_ranking_address_is_a_clear_error(
    client: httpx.AsyncClient, path: str, params: dict[str, str], words: str
) -> None:
    answer = await client.get(path, params=params)
    assert answer.status_code in (400, 404, 422), answer.text[:300]
    assert words in html.unescape(answer.text)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"sort": "score; drop"}, "Unknown example order"),
        ({"offset": "-5"}, ""),
        ({"q": "x" * 201}, ""),
        ({"dataset": "hidden-test"}, ""),  # not browsable: falls back to a dataset one may see
    ],
)
async def test_a_bad_drill_down_address_is_refused_or_harmless(
    client: httpx.AsyncClient, shared: Seeded, params: dict[str, str], words: str
) -> None:
    roberta = shared.submissions["roberta-large"]
    answer = await client.get(f"/ui/tasks/{TASK}/models/{roberta}/examples", params=params)
    if params.get("dataset") == "hidden-test":
        assert answer.status_code == 200 and "hidden-test" not in answer.text
        return
    assert answer.status_code == 422 and words in html.unescape(answer.text)


async def test_a_nul_byte_in_a_search_is_refused(client: httpx.AsyncClient) -> None:
    answer = await client.get(f"/ui/tasks/{TASK}/ranking", params={"q": "a\x00b"})
    assert answer.status_code in (400, 422)
