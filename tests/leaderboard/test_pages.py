"""The pages: signing in with CSRF-safe forms, and every page rendering for its audience."""

from __future__ import annotations

import html
import json
import re

import httpx
import pytest
from fastapi import FastAPI

from leaderboard.app import PLOTLY_JS
from scoring import METRICS
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import PASSWORD, TASK, Seeded

pytestmark = pytest.mark.anyio


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF token in the form"
    return match.group(1)


async def _sign_in(client: httpx.AsyncClient, name: str) -> None:
    page = await client.get("/ui/login")
    response = await client.post(
        "/ui/login",
        data={"name": name, "password": PASSWORD, "csrf_token": _csrf(page.text), "next": "/ui"},
    )
    assert response.status_code == 303, response.text


async def test_sign_in_needs_the_forms_csrf_token(app: FastAPI) -> None:
    async with make_client(app) as client:
        await client.get("/ui/login")
        forged = await client.post("/ui/login", data={"name": "alice", "password": PASSWORD})
        assert forged.status_code == 403 and "CSRF" in forged.text
        page = await client.get("/ui/login")
        wrong = await client.post(
            "/ui/login",
            data={"name": "alice", "password": "nope-nope", "csrf_token": _csrf(page.text)},
        )
        assert wrong.status_code == 401 and "Wrong name or password" in wrong.text


async def test_session_cookie_is_signed_lax_and_api_writes_need_csrf(app: FastAPI) -> None:
    async with make_client(app) as client:
        await _sign_in(client, "owner")
        cookie = next(iter(client.cookies.jar))
        assert cookie.name == "evalboard_session"
        me = await client.get("/users/me")
        assert me.json()["name"] == "owner"
        # A cross-site form post carries the cookie but not the token: refused.
        forged = await client.put(f"/tasks/{TASK}/weights", json={"weights": {"perf": 1}})
        assert forged.status_code == 403
        page = await client.get(f"/ui/tasks/{TASK}")
        ok = await client.put(
            f"/tasks/{TASK}/weights",
            json={"weights": {"perf": 1}},
            headers={"X-CSRF-Token": _csrf(page.text)},
        )
        assert ok.status_code == 200
    async with make_client(app) as client:
        await _sign_in(client, "owner")
        response = await client.get("/ui/login")
        assert "samesite=lax" in response.headers.get("set-cookie", "samesite=lax").lower()


async def test_pages_render_for_viewers(client: httpx.AsyncClient, shared: Seeded) -> None:
    index = await client.get("/ui")
    assert index.status_code == 200 and "Three-way sentiment" in index.text
    task = await client.get(f"/ui/tasks/{TASK}")
    assert task.status_code == 200
    for marker in (
        "roberta-large",
        "↑",
        "↓",
        'type="range"',
        "dynascore.js",
        "majority-class",
        "leaderboard.csv",
        "distilbert",
    ):
        assert marker in task.text, marker
    assert "hidden-test" not in task.text
    roberta = shared.submissions["roberta-large"]
    model = await client.get(f"/ui/tasks/{TASK}/models/{roberta}")
    assert model.status_code == 200
    for marker in (
        "chart-contributions",
        "chart-pareto_throughput",
        "chart-pareto_memory",
        "chart-datasets",
        "chart-rounds",
        "/static/model.js",
    ):
        assert marker in model.text, marker
    assert "hidden-test" not in model.text
    wrong = await client.get(
        f"/ui/tasks/{TASK}/models/{roberta}", params={"dataset": "dev", "wrong_only": "true"}
    )
    assert wrong.status_code == 200 and 'class="wrong"' in wrong.text
    status = await client.get(f"/ui/submissions/{shared.submissions['distilbert']}")
    # Unfinished: the page updates itself in place (static/submission.js), never reloads.
    assert status.status_code == 200 and 'data-active="true"' in status.text
    assert 'http-equiv="refresh"' not in status.text and "/static/submission.js" in status.text
    # Each finished job says which sandbox ran it (from its result's provenance).
    done = await client.get(f"/ui/submissions/{roberta}")
    assert done.status_code == 200 and "sandbox gvisor" in done.text
    # Its figures are named as on the board: memory, not the evaluator's memory_gib.
    assert 'title="Memory (GiB peak), lower is better">memory ' in done.text
    api = await client.get(f"/submissions/{roberta}")
    assert {job["sandbox"] for job in api.json()["jobs"]} == {"gvisor"}


async def test_the_task_page_reads_the_metric_vocabulary(client: httpx.AsyncClient) -> None:
    page = html.unescape((await client.get(f"/ui/tasks/{TASK}")).text)
    found = re.search(r'<script id="board-data" type="application/json">(.*?)</script>', page)
    assert found is not None
    data = json.loads(found.group(1))
    # The browser's Dynascore gets its goods from scoring.METRICS through the page.
    assert data["directions"] == {"memory": -1.0} and data["offsets"] == {"memory": 16.0}
    for name in data["metrics"]:
        metric = METRICS[name]
        explained = f'<div id="explain-{name}">'
        assert explained in page, name
        text = page.split(explained, 1)[1].split("</div>", 1)[0]
        assert metric.measured in text and metric.caveat in text, name


async def test_nothing_is_loaded_from_elsewhere(client: httpx.AsyncClient, shared: Seeded) -> None:
    roberta = shared.submissions["roberta-large"]
    for path in ("/ui", f"/ui/tasks/{TASK}", f"/ui/tasks/{TASK}/models/{roberta}"):
        html = (await client.get(path)).text
        assert not re.search(r'(src|href)="(https?:)?//', html), path
    # The basic bundle, gzip-compressed for a browser that takes it, plain for one that does not.
    for encoding in ("gzip", "identity"):
        plotly_js = await client.get(
            "/static/vendor/plotly-basic.min.js", headers={"Accept-Encoding": encoding}
        )
        assert plotly_js.status_code == 200 and plotly_js.content == PLOTLY_JS.read_bytes()
        assert plotly_js.headers.get("content-encoding", "identity") == encoding
    assert (await client.get("/static/dynascore.js")).status_code == 200


async def test_the_owner_page_adds_datasets_sets_weights_and_baselines(
    app: FastAPI, seeded: Seeded
) -> None:
    async with make_client(app) as client:
        anonymous = await client.get(f"/ui/tasks/{TASK}/manage")
        assert anonymous.status_code == 303 and "/ui/login" in anonymous.headers["location"]
        await _sign_in(client, "alice")
        assert (await client.get(f"/ui/tasks/{TASK}/manage")).status_code == 403
    async with make_client(app) as client:
        await _sign_in(client, "owner")
        page = await client.get(f"/ui/tasks/{TASK}/manage")
        assert page.status_code == 200 and "hidden-test" in page.text
        token = _csrf(page.text)
        saved = await client.post(
            f"/ui/tasks/{TASK}/manage/weights",
            data={"csrf_token": token, "w_perf": "2", "w_throughput": "1", "w_memory": "0"},
        )
        assert saved.status_code == 303
        assert (await client.get(f"/tasks/{TASK}/weights")).json()["weights"] == {
            "perf": 2.0,
            "throughput": 1.0,
        }
        # A typo: the form again, the error beside it, what was typed kept; nothing saved.
        typo = await client.post(
            f"/ui/tasks/{TASK}/manage/weights",
            data={"csrf_token": token, "w_perf": "2x", "w_throughput": "1"},
        )
        assert typo.status_code == 200 and 'id="weights-error"' in typo.text
        assert 'name="w_perf" min="0" step="0.5" value="2x"' in typo.text
        assert (await client.get(f"/tasks/{TASK}/weights")).json()["weights"]["perf"] == 2.0
        reweighed = await client.post(
            f"/ui/tasks/{TASK}/manage/datasets/test/weight",
            data={"csrf_token": token, "weight": "0.5"},
        )
        assert reweighed.status_code == 303
        assert (await client.get(f"/tasks/{TASK}/datasets/robustness-test")).json()["weight"] == 0.5
        refused = await client.post(
            f"/ui/tasks/{TASK}/manage/datasets/test/weight",
            data={"csrf_token": token, "weight": "nan"},
            headers={"Referer": f"http://testserver/ui/tasks/{TASK}/manage"},
        )
        assert refused.status_code == 400 and "finite number above 0" in refused.text
        assert "Not saved" in refused.text and "Back to the form" in refused.text
        assert f'href="/ui/tasks/{TASK}/manage" id="back"' in refused.text
        rows = '{"uid": "n1", "statement": "It rained on Tuesday.", "label": "neutral"}\n'
        added = await client.post(
            f"/ui/tasks/{TASK}/manage/datasets",
            data={
                "csrf_token": token,
                "name": "r2-test",
                "round": "2",
                "access": "scoring",
                "weight": "1",
            },
            files={"file": ("r2.jsonl", rows.encode(), "application/json")},
        )
        assert added.status_code == 303
        listed = (await client.get(f"/tasks/{TASK}/datasets")).json()
        assert "r2-test" in {d["name"] for d in listed}
        # Every submission gets a job on the new dataset: the ranked models are pending now.
        board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
        assert "roberta-large" in {p["name"] for p in board["pending"]}
        bow = seeded.submissions["bow-logreg"]
        marked = await client.post(
            f"/ui/tasks/{TASK}/manage/baseline/{bow}",
            data={"csrf_token": token, "is_baseline": "true"},
        )
        assert marked.status_code == 303
        assert (await client.get(f"/submissions/{bow}")).json()["is_baseline"] is True


async def test_errors_are_pages_for_browsers_and_json_for_the_api(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/ui/tasks/nope", headers={"Accept": "text/html"})
    assert page.status_code == 404 and "<html" in page.text and "sentiment" in page.text
    # Followed from a page of this site: the error page leads back there, not only home.
    came = await client.get(
        "/ui/tasks/nope", headers={"Referer": f"http://testserver/ui/tasks/{TASK}?weights=perf:1"}
    )
    assert f'href="/ui/tasks/{TASK}?weights=perf:1" id="back"' in came.text
    assert "Back to where you were" in came.text
    foreign = await client.get("/ui/tasks/nope", headers={"Referer": "http://evil.test/ui/x"})
    assert 'id="back"' not in foreign.text
    api = await client.get("/tasks/nope", headers={"Accept": "text/html"})
    assert api.status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/ui/me",
        "/ui/me/tokens",
        f"/ui/tasks/{TASK}/upload",
        f"/ui/tasks/{TASK}/manage",
        f"/ui/tasks/{TASK}/drift?check=1",
        f"/ui/tasks/{TASK}/collect",
        f"/ui/tasks/{TASK}/validate?flagged=true",
        f"/ui/tasks/{TASK}/rounds",
        "/ui/examples/1/edit",
        "/ui/admin",
        "/ui/admin/users",
        "/ui/admin/tokens",
        "/ui/admin/quotas",
        "/ui/admin/jobs?status=failed",
        "/ui/admin/failures",
    ],
)
async def test_a_page_for_the_signed_in_sends_a_visitor_to_sign_in_and_back(
    client: httpx.AsyncClient, path: str
) -> None:
    away = await client.get(path)
    assert away.status_code == 303
    assert away.headers["location"] == "/ui/login?next=" + path.split("?")[0]


@pytest.mark.parametrize("page", ["manage", "drift", "collect", "validate", "rounds", "upload"])
async def test_a_page_of_an_unknown_task_is_a_404_even_signed_out(
    client: httpx.AsyncClient, page: str
) -> None:
    assert (await client.get(f"/ui/tasks/no-such-task/{page}")).status_code == 404
