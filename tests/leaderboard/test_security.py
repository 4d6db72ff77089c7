"""Web hardening: security headers, no inline script, safe redirects, sign-in throttling
and timing, hidden sets' logs and per-round scores, upload checksums, re-run quotas."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from datasets_registry import add_dataset
from evalboard.core.errors import InvalidDataset, UsageError
from evalboard.core.tables import Submission
from leaderboard.accounts import authenticate, create_user
from leaderboard.body_limit import ANONYMOUS_MAX_BYTES
from tests.helpers.tasks import write_jsonl
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import PASSWORD, TASK, Seeded
from tests.leaderboard.test_pages import _csrf
from tests.leaderboard.test_uploads import make_bundle

pytestmark = pytest.mark.anyio

HIDDEN = "hidden-test"


@pytest.mark.parametrize("path", ["/ui", f"/ui/tasks/{TASK}", f"/tasks/{TASK}", "/static/task.js"])
async def test_every_response_carries_the_security_headers(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";", 1)[0]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"


async def test_error_responses_carry_the_headers_too(client: httpx.AsyncClient) -> None:
    response = await client.get("/ui/tasks/nope")
    assert response.status_code == 404
    assert response.headers["x-frame-options"] == "DENY"
    assert "script-src 'self'" in response.headers["content-security-policy"]


async def test_pages_hold_no_inline_script_or_event_handler(
    client: httpx.AsyncClient, shared: Seeded
) -> None:
    roberta = shared.submissions["roberta-large"]
    for path in ["/ui", f"/ui/tasks/{TASK}", f"/ui/tasks/{TASK}/models/{roberta}", "/ui/login"]:
        html = (await client.get(path)).text
        for script in re.findall(r"<script([^>]*)>", html):
            assert "src=" in script or 'type="application/json"' in script, (path, script)
        assert not re.search(r"\son[a-z]+=", html), path


@pytest.mark.parametrize(
    "target",
    ["//evil.example", "/\\evil.example", "/\\/evil.example", "/\t/evil.example", "https://e.x"],
)
async def test_sign_in_never_redirects_off_site(app: FastAPI, target: str) -> None:
    async with make_client(app) as client:
        page = await client.get("/ui/login")
        response = await client.post(
            "/ui/login",
            data={
                "name": "alice",
                "password": PASSWORD,
                "csrf_token": _csrf(page.text),
                "next": target,
            },
        )
    assert response.status_code == 303
    assert response.headers["location"] == "/ui"


async def test_sign_in_keeps_a_local_next(app: FastAPI) -> None:
    async with make_client(app) as client:
        page = await client.get("/ui/login")
        response = await client.post(
            "/ui/login",
            data={
                "name": "alice",
                "password": PASSWORD,
                "csrf_token": _csrf(page.text),
                "next": f"/ui/tasks/{TASK}",
            },
        )
    assert response.headers["location"] == f"/ui/tasks/{TASK}"


async def test_repeated_wrong_passwords_are_throttled(app: FastAPI) -> None:
    async with make_client(app) as client:
        page = await client.get("/ui/login")
        token = _csrf(page.text)

        async def attempt(name: str, password: str) -> httpx.Response:
            return await client.post(
                "/ui/login", data={"name": name, "password": password, "csrf_token": token}
            )

        for _ in range(10):
            assert (await attempt("alice", "wrong-guess")).status_code == 401
        locked = await attempt("alice", PASSWORD)
        assert locked.status_code == 429 and "Too many wrong passwords" in locked.text
        # Another account from the same client is not locked by alice's failures.
        assert (await attempt("bob", PASSWORD)).status_code == 303


async def test_guessing_through_a_password_change_is_throttled(
    app: FastAPI, seeded: Seeded
) -> None:
    """A stolen token or session must not guess the account's password at full speed."""
    async with make_client(app, seeded.tokens["alice"]) as alice:

        async def change(current: str) -> httpx.Response:
            return await alice.put(
                "/users/me/password", json={"current": current, "new": "a-new-long-password"}
            )

        for _ in range(10):
            assert (await change("wrong-guess")).status_code == 403
        locked = await change(PASSWORD)
        assert locked.status_code == 429 and "Too many wrong passwords" in locked.text
    # The sign-in form counts the same failures: one limit per name and client.
    async with make_client(app) as client:
        token = _csrf((await client.get("/ui/login")).text)
        form = {"name": "alice", "password": PASSWORD, "csrf_token": token}
        assert (await client.post("/ui/login", data=form)).status_code == 429


def test_an_unknown_name_costs_as_much_as_a_wrong_password(seeded: Seeded) -> None:
    def fastest(name: str) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            assert authenticate(seeded.ctx, name, "wrong-guess") is None
            times.append(time.perf_counter() - started)
        return min(times)

    known, unknown = fastest("alice"), fastest("nobody-by-this-name")
    assert unknown > known / 3, (known, unknown)


async def test_the_submitter_does_not_see_logs_on_hidden_sets(
    shared_app: FastAPI, shared: Seeded
) -> None:
    """A model reads a hidden set's inputs and could print them into its log."""
    broken = shared.submissions["broken-model"]
    async with make_client(shared_app, shared.tokens["alice"]) as alice:
        status = (await alice.get(f"/submissions/{broken}")).json()
        page = (await alice.get(f"/ui/submissions/{broken}")).text
    hidden = [j for j in status["jobs"] if j["dataset"].startswith("hidden-")]
    shown = [j for j in status["jobs"] if not j["dataset"].startswith("hidden-")]
    assert hidden and shown
    assert all(j["log_tail"] is None and j["message"] is None for j in hidden)
    assert all(j["reason"] == "oom" for j in hidden)
    assert all("Killed" in j["log_tail"] for j in shown)
    assert page.count("Last log lines") == len(shown)


def _charts(html: str) -> dict:
    match = re.search(r'<script id="charts-data" type="application/json">(.*?)</script>', html)
    assert match
    return json.loads(match.group(1))  # type: ignore[no-any-return]


async def test_the_per_round_chart_leaves_hidden_sets_out(
    shared_app: FastAPI, shared: Seeded
) -> None:
    roberta = shared.submissions["roberta-large"]
    path = f"/ui/tasks/{TASK}/models/{roberta}"
    async with make_client(shared_app, shared.tokens["owner"]) as owner:
        jobs = (await owner.get(f"/submissions/{roberta}")).json()["jobs"]
        owner_round = _charts((await owner.get(path)).text)["rounds"]["data"][0]["y"]
    async with make_client(shared_app) as anonymous:
        public_round = _charts((await anonymous.get(path)).text)["rounds"]["data"][0]["y"]
    perf = {j["dataset"]: j["metrics"]["perf"] for j in jobs if j["metrics"]}
    assert perf["test"] != pytest.approx(perf[HIDDEN], abs=1e-3)
    assert public_round == [pytest.approx(perf["test"], abs=1e-3)]
    assert owner_round != public_round  # the owner's blends in the hidden set


async def test_a_known_sha256_does_not_stand_in_for_the_bytes(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    """Bob announces alice's archive (its sha256 and size) but sends other bytes."""
    archive = make_bundle(tmp_path)
    data = archive.read_bytes()
    announce = {
        "task": TASK,
        "filename": archive.name,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    async with make_client(app, seeded.tokens["alice"]) as alice:
        upload = (await alice.post("/uploads", json=announce)).json()
        await alice.patch(f"/uploads/{upload['id']}", params={"offset": 0}, content=data)
        assert (await alice.post(f"/uploads/{upload['id']}/complete")).status_code == 200
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = (await bob.post("/uploads", json=announce)).json()
        await bob.patch(f"/uploads/{upload['id']}", params={"offset": 0}, content=b"x" * len(data))
        response = await bob.post(f"/uploads/{upload['id']}/complete")
    assert response.status_code == 400 and "Upload it again" in response.json()["detail"]
    with seeded.ctx.db.session() as session:
        made = session.query(Submission).filter(Submission.name == "always-positive").count()
    assert made == 1  # alice's; bob's bytes made none


async def test_re_running_a_platform_fault_needs_quota_room(app: FastAPI, seeded: Seeded) -> None:
    """Else a submission left out of the quota by a platform fault runs free."""
    broken = seeded.submissions["broken-model"]
    with seeded.ctx.db.session() as session:
        submission = session.get(Submission, broken)
        assert submission is not None
        submission.platform_fault = True
    seeded.ctx.settings.daily_upload_quota = 2  # alice's two others fill it
    async with make_client(app, seeded.tokens["alice"]) as alice:
        refused = await alice.post(f"/submissions/{broken}/rerun")
        assert refused.status_code == 429
        seeded.ctx.settings.daily_upload_quota = 3
        assert (await alice.post(f"/submissions/{broken}/rerun")).status_code == 200
    with seeded.ctx.db.session() as session:
        submission = session.get(Submission, broken)
        assert submission is not None and submission.platform_fault is False


async def test_an_anonymous_large_form_is_refused_before_it_is_read(app: FastAPI) -> None:
    big = b"x" * (ANONYMOUS_MAX_BYTES + 1)
    async with make_client(app) as anonymous:
        response = await anonymous.post(
            f"/tasks/{TASK}/datasets", files={"file": ("d.jsonl", big)}, data={"name": "d"}
        )
    assert response.status_code == 413
    assert "sign in" in response.json()["detail"]


async def test_a_body_without_a_declared_length_is_cut_off_at_the_cap(app: FastAPI) -> None:
    async def chunks() -> Any:
        for _ in range(ANONYMOUS_MAX_BYTES // 1024 + 2):
            yield b"x" * 1024

    async with make_client(app) as anonymous:
        response = await anonymous.post(
            "/ui/login",
            content=chunks(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code == 413


async def test_a_signed_in_caller_may_send_a_larger_form(app: FastAPI, seeded: Seeded) -> None:
    rows = "".join(
        json.dumps({"uid": str(i), "statement": "x" * 200, "label": "positive"}) + "\n"
        for i in range(400)
    ).encode()
    assert len(rows) > ANONYMOUS_MAX_BYTES
    async with make_client(app, seeded.tokens["owner"]) as owner:
        response = await owner.post(
            f"/tasks/{TASK}/datasets", files={"file": ("big.jsonl", rows)}, data={"name": "big"}
        )
    assert response.status_code != 413, response.text


@pytest.mark.parametrize(
    ("name", "filename"),
    [("../../../../{target}", "evil.sh"), ("ok-name", "../../../{target}.jsonl")],
)
async def test_a_dataset_upload_writes_nothing_outside_its_scratch_folder(
    app: FastAPI, seeded: Seeded, tmp_path: Path, name: str, filename: str
) -> None:
    # Review finding: the file was written as TMP/<name><suffix> before the name was checked.
    target = tmp_path / "planted"
    rows = json.dumps({"uid": "1", "statement": "fine", "label": "positive"}).encode() + b"\n"
    async with make_client(app, seeded.tokens["owner"]) as owner:
        response = await owner.post(
            f"/tasks/{TASK}/datasets",
            files={"file": (filename.format(target=target), rows)},
            data={"name": name.format(target=target)},
        )
    assert response.status_code < 500, response.text
    assert not list(tmp_path.glob("planted*"))


@pytest.mark.parametrize("bad", ["go\\u0000od", "bad\\ud800"])
async def test_a_dataset_row_with_a_nul_or_lone_surrogate_is_refused_plainly(
    app: FastAPI, seeded: Seeded, bad: str
) -> None:
    row = '{"uid": "1", "statement": "' + bad + '", "label": "positive"}\n'
    async with make_client(app, seeded.tokens["owner"]) as owner:
        response = await owner.post(
            f"/tasks/{TASK}/datasets",
            files={"file": ("d.jsonl", row.encode())},
            data={"name": "nul-rows"},
        )
    assert response.status_code == 400, response.text
    assert "line 1" in response.text and "NUL character or an unpaired surrogate" in response.text


async def test_a_weight_given_twice_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/tasks/{TASK}/leaderboard", params={"weights": "perf:1,perf:0"})
    assert response.status_code == 422
    assert "given twice" in response.text


async def test_a_hidden_dataset_reads_as_a_missing_one(app: FastAPI, seeded: Seeded) -> None:
    """Neither the names offered nor the wording tells a hidden set's name to a viewer."""
    async with make_client(app) as viewer:
        hidden = await viewer.get(f"/tasks/{TASK}/datasets/hidden-test")
        missing = await viewer.get(f"/tasks/{TASK}/datasets/no-such-set")
    assert hidden.status_code == missing.status_code == 404
    assert "hidden" not in missing.json()["detail"]
    assert hidden.json()["detail"] == missing.json()["detail"].replace(
        "'no-such-set'", "'hidden-test'"
    )
    async with make_client(app, seeded.tokens["owner"]) as owner:
        assert (await owner.get(f"/tasks/{TASK}/datasets/hidden-test")).status_code == 200
        missing = await owner.get(f"/tasks/{TASK}/datasets/no-such-set")
    assert "hidden-test" in missing.json()["detail"]  # the owner's own, named


async def test_another_users_unpublished_submission_reads_as_missing(
    app: FastAPI, seeded: Seeded
) -> None:
    """Managing it answers as reading it does: "not yours" would tell that it exists."""
    roberta = seeded.submissions["roberta-large"]  # alice's
    with seeded.ctx.db.session() as session:
        submission = session.get(Submission, roberta)
        assert submission is not None
        submission.published = False
    async with make_client(app, seeded.tokens["bob"]) as bob:
        answers = [
            await bob.get(f"/submissions/{roberta}"),
            await bob.post(f"/submissions/{roberta}/cancel"),
            await bob.post(f"/submissions/{roberta}/rerun"),
            await bob.put(f"/submissions/{roberta}/baseline", json={"is_baseline": True}),
        ]
    assert [a.status_code for a in answers] == [404] * 4
    assert {a.json()["detail"] for a in answers} == {f"No submission {roberta}"}
    async with make_client(app, seeded.tokens["bob"]) as bob:  # a published one: it exists
        refused = await bob.post(f"/submissions/{seeded.submissions['bow-logreg']}/cancel")
    assert refused.status_code == 403


@pytest.mark.parametrize("name", ["newline\n", "a\nb", "trailing\r\n"])
def test_a_name_with_a_line_break_is_refused(seeded: Seeded, tmp_path: Path, name: str) -> None:
    """A dataset so named could never be downloaded (a header cannot hold it)."""
    rows = [{"uid": "1", "statement": "fine", "label": "positive"}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(InvalidDataset, match="must be letters"):
        add_dataset(seeded.ctx, task_id=TASK, name=name, path=path)
    with pytest.raises(UsageError, match="User name"):
        create_user(seeded.ctx, name, password="a-long-enough-password")
