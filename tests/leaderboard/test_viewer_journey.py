"""The viewer's journey in headless Chromium against a real ``evalboard serve`` (issue 19),
at desktop (1366x900) and mobile (390x844) sizes: the task page's ranking follows the
sliders with recomputed intervals, sorts, searches, filters and chooses columns without
losing the rest of the address; the model page's charts are light, uncut and clear of
the toolbar; the drill-down changes dataset, searches, sorts and pages without a reload.

One server for the module. Every page is watched: a console error, a failed request or a
4xx/5xx answer fails the test that loaded it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from evalboard.core.states import ExampleStatus, RoundStatus
from evalboard.core.tables import Example, Round
from tests.helpers.browser import SIZES, Watched, page_at
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The weights every test moves to: throughput first, so the seeded order changes.
FAST = {"perf": 1.0, "throughput": 10.0, "memory": 1.0, "fairness": 1.0, "robustness": 1.0}


@pytest.fixture(params=list(SIZES))
def watched(browser: Any, request: pytest.FixtureRequest) -> Iterator[Watched]:
    with page_at(browser, request.param) as watched:
        yield watched
        watched.assert_clean()


def _api(server: LiveServer, **params: Any) -> dict[str, Any]:
    answer = httpx.get(f"{server.url}/tasks/{TASK}/leaderboard", params=params)
    assert answer.status_code == 200, answer.text
    board: dict[str, Any] = answer.json()
    return board


def _weights(weights: dict[str, float]) -> str:
    return ",".join(f"{k}:{v:g}" for k, v in weights.items())


def _rows(page: Any) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = page.eval_on_selector_all(
        "#board tbody tr:not([data-kind=majority])",
        """rows => rows.map(r => ({
            key: r.dataset.key,
            rank: r.querySelector('.rank').textContent.trim(),
            rank_iv: r.querySelector('.rank-iv').textContent.trim(),
            p_first: r.querySelector('.p-first').textContent.trim(),
            hidden: String(r.querySelector('.rank-iv').hidden),
        }))""",
    )
    return rows


def _query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def _mark_no_reload(page: Any) -> None:
    # A full load would drop this; a swapped-in part keeps it.
    page.evaluate("() => { window.__sameDocument = true; }")


def _still_same_document(page: Any) -> bool:
    return bool(page.evaluate("() => window.__sameDocument === true"))


def _move(page: Any, metric: str, value: float) -> None:
    """Move a slider as a person does: input events, then the release (change)."""
    page.fill(f"#w-{metric}", f"{value:g}")


def _wait_ranked(page: Any, keys: list[str]) -> None:
    page.wait_for_function(
        """keys => {
            const section = document.getElementById('ranking');
            const rows = Array.from(document.querySelectorAll(
                '#board tbody tr:not([data-kind=majority])')).map(r => r.dataset.key);
            return !section.hasAttribute('aria-busy') && rows.join() === keys.join()
                && document.getElementById('stale-note').hidden;
        }""",
        arg=keys,
        timeout=15_000,
    )


def test_intervals_follow_the_sliders(watched: Watched, live_server: LiveServer) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    _mark_no_reload(page)
    for metric, value in FAST.items():
        _move(page, metric, value)
    expected = _api(live_server, weights=_weights(FAST))
    ranked = [r for r in expected["rows"] if r["rank"] is not None]
    _wait_ranked(page, [r["key"] for r in ranked])
    shown = {r["key"]: r for r in _rows(page)}
    for row in ranked:
        # The server's bootstrap for the new weights, shown (not emptied, not the old one).
        best, worst = row["rank_interval"]
        assert shown[row["key"]]["rank_iv"] == f"{best}–{worst}"
        assert shown[row["key"]]["p_first"] == f"{row['p_first']:.2f}"
        assert shown[row["key"]]["hidden"] == "false"
    assert _query(page)["weights"] == [_weights(FAST)]
    assert "Intervals recomputed" in page.inner_text("#rank-announce")
    assert _still_same_document(page)


def test_a_slider_keeps_the_search_the_order_the_page_and_the_filters(
    watched: Watched, live_server: LiveServer
) -> None:
    page = watched.page
    address = f"/ui/tasks/{TASK}?q=e&sort=-perf&limit=2&runtime=python&hide=latency_p50"
    page.goto(live_server.url + address)
    before = _query(page)
    _move(page, "throughput", 10)
    page.wait_for_function("() => new URLSearchParams(location.search).has('weights')")
    page.wait_for_function("() => !document.getElementById('ranking').hasAttribute('aria-busy')")
    after = _query(page)
    for name in ("q", "sort", "limit", "runtime", "hide"):
        assert after[name] == before[name], name
    weights = after["weights"][0]
    expected = _api(live_server, weights=weights, q="e", sort="-perf", limit=2, runtime="python")
    assert [r["key"] for r in _rows(page)] == [
        r["key"] for r in expected["rows"] if r["rank"] is not None
    ]
    assert page.inner_text("#pager-range").startswith(f"Models 1–2 of {expected['total']}")
    assert page.locator("th[data-col=latency_p50]").is_hidden()


def test_columns_sort_search_and_filter_in_place(watched: Watched, live_server: LiveServer) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}?weights={_weights(FAST)}")
    _mark_no_reload(page)
    # Sort by perf: best first, then the other way; the header says which.
    page.click("th[data-metric=perf] a.sort")
    by_perf = [r["key"] for r in _api(live_server, weights=_weights(FAST), sort="-perf")["rows"]]
    _wait_ranked(page, [k for k in by_perf if k != "majority"])
    assert page.get_attribute("th[data-metric=perf]", "aria-sort") == "descending"
    assert page.evaluate("() => document.activeElement.dataset.focus") == "sort-perf"
    page.click("th[data-metric=perf] a.sort")
    page.wait_for_function(
        "() => document.querySelector('th[data-metric=perf]').getAttribute('aria-sort')"
        " === 'ascending'"
    )
    assert _query(page)["sort"] == ["perf"] and "weights" in _query(page)
    # Filters: leave out the baselines.
    page.locator("details.tool summary", has_text="Filters").click()
    page.check("input[name=baselines]")
    page.click("#filter-go")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('baselines') === 'false'"
    )
    page.wait_for_function("() => !document.getElementById('ranking').hasAttribute('aria-busy')")
    assert page.locator("#board tr.baseline").count() == 0
    kept = _api(live_server, weights=_weights(FAST), sort="perf", baselines="false")
    assert [r["key"] for r in _rows(page)] == [
        r["key"] for r in kept["rows"] if r["rank"] is not None
    ]
    # Search by name, the filter kept: only the matches, with their count, announced.
    page.fill("#q", "LOG")
    page.press("#q", "Enter")
    page.wait_for_function(
        "() => document.getElementById('pager-range').textContent.includes('1–1')"
    )
    assert [r["key"] for r in _rows(page)] == [
        r["key"]
        for r in _api(live_server, weights=_weights(FAST), q="LOG", sort="perf", baselines="false")[
            "rows"
        ]
        if r["rank"] is not None
    ]
    assert "of 1" in page.inner_text("#rank-announce")
    # Columns: hide throughput; the address remembers it, a reload keeps it hidden.
    page.locator("details.tool summary", has_text="Columns").click()
    page.uncheck("input[data-col-toggle=throughput]")
    assert page.locator("th[data-metric=throughput]").is_hidden()
    assert _query(page)["hide"] == ["throughput"]
    assert _still_same_document(page)
    page.reload()
    assert page.locator("th[data-metric=throughput]").is_hidden()
    assert page.locator("th[data-metric=memory]").is_visible()


def test_metric_headers_are_explained_with_their_caveats(
    watched: Watched, live_server: LiveServer
) -> None:
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    for metric in ("fairness", "robustness"):
        described = page.get_attribute(f"th[data-metric={metric}]", "aria-describedby")
        text = page.inner_text(f"#{described}")
        assert "higher is better" in text and "stability, not correctness" in text
    assert "lower is better" in page.inner_text("#explain-memory")


def test_the_task_page_shows_rounds_with_their_vmer(
    watched: Watched, live_server: LiveServer
) -> None:
    ctx = live_server.seeded.ctx
    with ctx.db.session() as session:
        existing = session.query(Round).filter_by(task_id=TASK, number=7).one_or_none()
        if existing is None:
            round_ = Round(task_id=TASK, number=7, status=RoundStatus.OPEN.value)
            session.add(round_)
            session.flush()
            for i, (fooled, status) in enumerate(
                [(True, ExampleStatus.VERIFIED), (True, ExampleStatus.PENDING), (False, "pending")]
                + [(False, ExampleStatus.PENDING)]
            ):
                session.add(
                    Example(
                        task_id=TASK,
                        round_id=round_.id,
                        inputs={"statement": f"example {i}"},
                        gold={"label": "neutral"},
                        fooled=fooled,
                        status=str(status),
                    )
                )
    vmer = httpx.get(f"{live_server.url}/tasks/{TASK}/rounds/7/vmer").json()
    page = watched.page
    page.goto(f"{live_server.url}/ui/tasks/{TASK}")
    row = page.locator("#rounds tbody tr", has_text="open").first
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == "7" and cells[3] == str(vmer["collected"]) == "4"
    assert cells[5] == "1" and cells[6] == "25.0%"


def test_the_model_page_is_light_and_its_charts_uncut(
    watched: Watched, live_server: LiveServer
) -> None:
    page = watched.page
    sizes: list[int] = []
    page.on("requestfinished", lambda request: sizes.append(request.sizes()["responseBodySize"]))
    roberta = live_server.seeded.submissions["roberta-large"]
    page.goto(f"{live_server.url}/ui/tasks/{TASK}/models/{roberta}")
    page.wait_for_selector("#chart-pareto_memory .main-svg", timeout=20_000)
    page.wait_for_load_state("networkidle")
    # What went over the wire (compressed where it was), every request of the page.
    assert sum(sizes) < 1_000_000, sizes
    mobile = page.viewport_size["width"] < 600
    for name in ("contributions", "datasets", "rounds", "pareto_throughput", "pareto_memory"):
        chart = page.locator(f"#chart-{name}")
        chart.scroll_into_view_if_needed()
        if not mobile:
            chart.hover()  # plotly shows its toolbar on hover
        problems = chart.evaluate(_CUT_OR_COVERED)
        assert problems == [], (name, problems)
        assert (page.locator(f"#chart-{name} .modebar").count() == 0) == mobile


#: Every text of a chart inside the chart's own box, and none under the toolbar.
_CUT_OR_COVERED = """
el => {
  const svg = el.querySelector('.main-svg').getBoundingClientRect();
  const bar = el.querySelector('.modebar');
  const barBox = bar && bar.getBoundingClientRect();
  const problems = [];
  el.querySelectorAll('text').forEach(t => {
    const b = t.getBoundingClientRect();
    if (!t.textContent.trim() || b.width === 0) return;
    if (b.left < svg.left - 1 || b.right > svg.right + 1 || b.top < svg.top - 1
        || b.bottom > svg.bottom + 1) problems.push('cut: ' + t.textContent);
    const under = barBox && barBox.width > 0 && b.left < barBox.right && b.right > barBox.left
        && b.top < barBox.bottom && b.bottom > barBox.top;
    if (under) problems.push('covered: ' + t.textContent);
  });
  return problems;
}
"""


def test_the_drill_down_changes_dataset_without_a_reload(
    watched: Watched, live_server: LiveServer
) -> None:
    page = watched.page
    roberta = live_server.seeded.submissions["roberta-large"]
    weights = _weights(FAST)
    page.goto(f"{live_server.url}/ui/tasks/{TASK}/models/{roberta}?weights={weights}")
    _mark_no_reload(page)
    first = page.input_value("#ex-dataset")
    page.focus("#ex-dataset")
    page.keyboard.press("ArrowDown")  # Chromium changes a closed select at once
    page.wait_for_function(
        "first => new URLSearchParams(location.search).get('dataset') !== null"
        " && new URLSearchParams(location.search).get('dataset') !== first",
        arg=first,
    )
    page.wait_for_function("() => !document.getElementById('examples').hasAttribute('aria-busy')")
    assert _still_same_document(page)
    assert page.evaluate("() => document.activeElement.id") == "ex-dataset"
    chosen = page.input_value("#ex-dataset")
    assert chosen != first and _query(page)["weights"] == [weights]
    api = f"{live_server.url}/submissions/{roberta}/examples/{chosen}"
    everything = httpx.get(api, params={"limit": 500}).json()
    assert f"of {len(everything)}" in page.inner_text("#examples-count")
    # Sort by score: the mistakes first; search: only matching examples, counted.
    page.select_option("#ex-sort", "score")
    page.wait_for_function("() => new URLSearchParams(location.search).get('sort') === 'score'")
    page.wait_for_function("() => !document.getElementById('examples').hasAttribute('aria-busy')")
    scores = page.locator("table.examples tbody tr td:last-child").all_inner_texts()
    assert scores == sorted(scores, key=float)
    word = "loved"
    page.fill("#ex-q", word)
    page.press("#ex-q", "Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('q') === 'loved'")
    page.wait_for_function("() => !document.getElementById('examples').hasAttribute('aria-busy')")
    matching = page.locator("table.examples tbody tr").all_inner_texts()
    assert matching and all(word in row.lower() for row in matching)
    assert f"of {len(matching)} matching" in page.inner_text("#examples-count")
    assert page.inner_text("#examples-announce") == page.inner_text("#examples-count")
    assert _still_same_document(page) and _query(page)["weights"] == [weights]
    # Back to the board: the same weights.
    back = page.get_attribute("#back-to-board", "href") or ""
    assert parse_qs(urlsplit(back).query)["weights"] == [weights]


def test_the_drill_down_pages_with_a_total(watched: Watched, live_server: LiveServer) -> None:
    page = watched.page
    roberta = live_server.seeded.submissions["roberta-large"]
    page.goto(f"{live_server.url}/ui/tasks/{TASK}/models/{roberta}?dataset=test")
    _mark_no_reload(page)
    total = len(
        httpx.get(
            f"{live_server.url}/submissions/{roberta}/examples/test", params={"limit": 500}
        ).json()
    )
    assert page.inner_text("#examples-count").startswith(f"Examples 1–25 of {total}")
    page.click("#examples a[rel=next]")
    page.wait_for_function(
        "() => document.getElementById('examples-count').textContent.startsWith('Examples 26')"
    )
    assert _query(page)["offset"] == ["25"] and _still_same_document(page)
    assert page.evaluate("() => document.activeElement.getAttribute('rel')") == "next"
