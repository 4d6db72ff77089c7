"""Request bodies a route never should see: JSON over its own cap (it is parsed in memory),
JSON nested deep enough to exhaust recursion, and NaN or Infinity (which Python's parser
reads and strict JSON cannot echo back)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from evalboard.core.context import Context
from evalboard.core.settings import Settings
from leaderboard import create_app
from leaderboard.accounts import create_token, create_user
from leaderboard.strict_text import MAX_JSON_DEPTH, json_depth
from tests.conftest import make_settings
from tests.leaderboard.conftest import make_client, serve
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio

JSON = {"content-type": "application/json"}
SHARED_DATASETS = Path(__file__).parents[3] / "shared" / "datasets"


# The JSON cap ------------------------------------------------------------------------------

JSON_CAP = 256 * 1024  # above the anonymous 64 KiB, so only the JSON cap can refuse


@pytest.fixture
def capped(ctx: Context) -> tuple[FastAPI, str]:
    """An app whose JSON cap is ``JSON_CAP``, and a signed-in researcher's token."""
    ctx.settings.max_json_bytes = JSON_CAP
    create_user(ctx, "rita")
    return create_app(ctx), create_token(ctx, "rita")[0]


def _over(cap: int) -> bytes:
    return b'{"label": "' + b"y" * cap + b'"}'


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 16 * 1024):
        yield body[start : start + 16 * 1024]


@pytest.mark.parametrize("streamed", [False, True], ids=["declared", "streamed"])
@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/vnd.api+json; charset=utf-8", "Application/JSON"],
)
async def test_a_json_body_over_its_cap_is_413_even_signed_in(
    capped: tuple[FastAPI, str], content_type: str, streamed: bool
) -> None:
    app, token = capped
    body = _over(JSON_CAP)
    async with make_client(app, token) as rita:
        answer = await rita.post(
            "/users/me/tokens",
            content=_chunks(body) if streamed else body,
            headers={"content-type": content_type},
        )
    assert answer.status_code == 413, answer.text[:300]
    detail = answer.json()["detail"]
    assert f"{JSON_CAP} bytes" in detail and "multipart/form-data" in detail, detail
    assert "/uploads" in detail and "EVALBOARD_MAX_JSON_BYTES" in detail, detail


async def test_a_url_encoded_form_over_the_json_cap_is_413(capped: tuple[FastAPI, str]) -> None:
    app, token = capped
    form = {"content-type": "application/x-www-form-urlencoded"}
    async with make_client(app, token) as rita:
        answer = await rita.post("/ui/login", content=b"x" * (JSON_CAP + 1), headers=form)
    assert answer.status_code == 413 and f"{JSON_CAP} bytes" in answer.json()["detail"]


async def test_a_json_body_under_its_cap_is_read(capped: tuple[FastAPI, str]) -> None:
    app, token = capped
    async with make_client(app, token) as rita:
        answer = await rita.post("/users/me/tokens", json={"label": "y" * (JSON_CAP // 2)})
    assert answer.status_code == 422, answer.text[:300]  # read: the label is too long
    assert answer.json()["detail"][0]["loc"] == ["body", "label"]


async def test_uploads_and_multipart_forms_may_pass_the_json_cap(
    capped: tuple[FastAPI, str],
) -> None:
    app, token = capped
    assert app.state.ctx.settings.max_json_bytes == JSON_CAP
    big = b"x" * (JSON_CAP * 2)
    async with make_client(app, token) as rita:
        chunk = await rita.patch(
            "/uploads/no-such-upload",
            params={"offset": 0},
            content=big,
            headers={"content-type": "application/octet-stream"},
        )
        form = await rita.post(
            f"/tasks/{TASK}/datasets", files={"file": ("d.jsonl", big)}, data={"name": "d"}
        )
    assert chunk.status_code == 404, chunk.text[:300]  # read as far as the route
    assert form.status_code == 404, form.text[:300]  # no such task on this platform


async def test_a_multipart_form_over_the_request_cap_names_that_cap(ctx: Context) -> None:
    ctx.settings.max_json_bytes = JSON_CAP
    ctx.settings.max_request_bytes = 2 * JSON_CAP
    create_user(ctx, "rita")
    token = create_token(ctx, "rita")[0]
    async with make_client(create_app(ctx), token) as rita:
        answer = await rita.post(
            f"/tasks/{TASK}/datasets",
            files={"file": ("d.jsonl", b"x" * (3 * JSON_CAP))},
            data={"name": "d"},
        )
    assert answer.status_code == 413
    assert "EVALBOARD_MAX_REQUEST_BYTES" in answer.json()["detail"], answer.text


def test_the_default_json_cap_holds_the_largest_shared_predictions_five_times() -> None:
    texts = SHARED_DATASETS / "tweeteval" / "sentiment" / "test_text.txt"
    if not texts.is_file():
        pytest.skip(f"the shared datasets are absent ({texts})")
    count = len(texts.read_text(encoding="utf-8").splitlines())
    probs = {"negative": 0.123456789012345, "neutral": 0.2345678901234567, "positive": 0.5}
    rows = [
        {"uid": f"tweeteval-sentiment-test-{i}", "label": "positive", "probs": probs}
        for i in range(count)
    ]
    sets = ("test", "robustness-test", "fairness-test")  # with two perturbed copies
    body = json.dumps({"name": "x", "predictions": dict.fromkeys(sets, rows)}).encode()
    default = Settings.model_fields["max_json_bytes"].default
    assert 5 * len(body) < default < Settings.model_fields["max_request_bytes"].default


# Deeply nested JSON ------------------------------------------------------------------------


def _nested(depth: int, *, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b'{"a": [1, {"b": "]]"}], "c": []}', 3),
        (b'{"a": "\\"[[[\\\\", "b": [[]]}', 3),  # an escaped quote does not end the string
        (b'["]]]]", [["}}"]]]', 3),
        (b"[[[[", 4),  # an unclosed body is as deep as a parser would go
        (b"", 0),
    ],
)
def test_json_depth_counts_brackets_outside_strings(body: bytes, depth: int) -> None:
    assert json_depth(body) == depth


#: Bodies that overflowed recursion: in the NUL check's second parse, FastAPI's parse, or
#: the 422's echo of the bad input.
DEEP_BODIES = {
    "nul-5000": '{"a":"\\u0000","b":' + _nested(5000) + "}",
    "plain-5000": '{"b":' + _nested(5000) + "}",
    "unclosed-5000": '{"label":' + "[" * 5000,
    "parses-900": '{"label":' + _nested(900) + "}",
    "brackets-hidden-in-strings": '{"label":' + _nested(900, inner='"' + "]" * 900 + '"') + "}",
}


@pytest.mark.parametrize("text", DEEP_BODIES.values(), ids=DEEP_BODIES.keys())
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
async def test_deeply_nested_json_is_422_for_an_api_route(
    shared_app: FastAPI, shared: Seeded, text: str, encoding: str
) -> None:
    async with make_client(shared_app, shared.tokens["alice"]) as alice:
        answer = await alice.post("/users/me/tokens", content=text.encode(encoding), headers=JSON)
    assert answer.status_code == 422, answer.text[:300]
    problem = answer.json()["detail"][0]
    assert problem["type"] == "json_too_deep", problem
    assert f"more than {MAX_JSON_DEPTH} levels" in problem["msg"]


@pytest.mark.parametrize("text", DEEP_BODIES.values(), ids=DEEP_BODIES.keys())
async def test_deeply_nested_json_is_422_for_a_page_unauthenticated(
    client: httpx.AsyncClient, text: str
) -> None:
    answer = await client.post("/ui/login", content=text.encode(), headers=JSON)
    assert answer.status_code == 422, answer.text[:300]
    assert "<html" in answer.text and f"more than {MAX_JSON_DEPTH} levels" in answer.text


async def test_deep_json_inside_a_prediction_is_422(shared_app: FastAPI, shared: Seeded) -> None:
    row = {"uid": "a", "label": json.loads(_nested(200))}
    body = {"name": "deep", "predictions": {"test": [row]}}
    async with make_client(shared_app, shared.tokens["alice"]) as alice:
        answer = await alice.post(f"/tasks/{TASK}/predictions", json=body)
    assert answer.status_code == 422, answer.text[:300]
    assert answer.json()["detail"][0]["type"] == "json_too_deep"


async def test_json_at_the_depth_limit_reaches_the_route(
    shared_app: FastAPI, shared: Seeded
) -> None:
    answers = {}
    async with make_client(shared_app, shared.tokens["alice"]) as alice:
        for depth in (MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1):
            body = '{"label":' + _nested(depth - 1) + "}"  # the object is a level too
            answer = await alice.post("/users/me/tokens", content=body, headers=JSON)
            answers[depth] = (answer.status_code, answer.json()["detail"][0]["type"])
    assert answers == {
        MAX_JSON_DEPTH: (422, "string_type"),
        MAX_JSON_DEPTH + 1: (422, "json_too_deep"),
    }


# NaN and Infinity --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "echoed"),
    [
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e400", "Infinity"),
        ("[1, NaN]", [1, "NaN"]),
        ('{"x": -1e999}', {"x": "-Infinity"}),
    ],
)
async def test_a_non_finite_number_is_a_422_that_names_it(
    shared_app: FastAPI, shared: Seeded, literal: str, echoed: object
) -> None:
    async with make_client(shared_app, shared.tokens["alice"]) as alice:
        answer = await alice.post(
            "/users/me/tokens", content=f'{{"label": {literal}}}', headers=JSON
        )
    assert answer.status_code == 422, answer.text[:300]
    problem = answer.json()["detail"][0]
    assert problem["loc"] == ["body", "label"] and problem["input"] == echoed, problem


async def test_a_non_finite_weight_is_a_422(shared_app: FastAPI, shared: Seeded) -> None:
    async with make_client(shared_app, shared.tokens["owner"]) as owner:
        answer = await owner.put(
            f"/tasks/{TASK}/weights", content=b'{"weights": {"perf": NaN}}', headers=JSON
        )
    assert answer.status_code == 422, answer.text[:300]
    problem = answer.json()["detail"][0]
    assert problem["type"] == "finite_number" and problem["input"] == "NaN", problem


# Against a real server ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """``evalboard serve`` with a 1 MiB JSON cap: its URL, a researcher's token, its log."""
    tmp = tmp_path_factory.mktemp("live-bodies")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    create_user(ctx, "rita")
    token = create_token(ctx, "rita")[0]
    ctx.db.dispose()
    log = tmp / "server.log"
    env = {"EVALBOARD_MAX_JSON_BYTES": str(1024**2)}
    with serve(settings.data_dir, log, env=env, args=("--no-worker",)) as (url, _):
        yield url, token, log


@pytest.mark.slow
def test_the_bodies_a_real_server_refuses(small_json_server: tuple[str, str, Path]) -> None:
    url, token, log = small_json_server
    auth = {"Authorization": f"Bearer {token}", **JSON}
    nul_deep = '{"a":"\\u0000","b":' + _nested(5000) + "}"
    answers = [
        httpx.post(f"{url}/ui/login", content=nul_deep, headers=JSON),
        httpx.post(f"{url}/users/me/tokens", content=_nested(5000), headers=auth),
        httpx.post(f"{url}/users/me/tokens", content=b'{"label": NaN}', headers=auth),
        httpx.post(f"{url}/users/me/tokens", content=b'{"label": 1e400}', headers=auth),
        httpx.post(f"{url}/users/me/tokens", content=_over(1024**2), headers=auth),
    ]
    assert [a.status_code for a in answers] == [422, 422, 422, 422, 413], [
        a.text[:200] for a in answers
    ]
    assert "1048576 bytes" in answers[-1].json()["detail"]
    assert "Traceback" not in log.read_text()
