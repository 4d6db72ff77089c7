"""Issue 11's attacks, tried against a real ``evalboard serve`` on PostgreSQL, each held.

Races use real threads against the server process; the database is inspected from here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from itsdangerous import TimestampSigner
from sqlalchemy import func, select

from datasets_registry import create_task
from evalboard.core.context import Context
from evalboard.core.states import Role
from evalboard.core.tables import Submission, User
from leaderboard.accounts import create_token, create_user
from leaderboard.signing_key import KEY_FILE
from tests.conftest import make_settings, postgres_database
from tests.helpers.tasks import sentiment_spec
from tests.leaderboard.conftest import PG_MAX_OPEN_UPLOADS, PG_QUOTA, LiveServer, serve
from tests.leaderboard.seeding import PASSWORD, TASK
from tests.leaderboard.test_attacks_new import pending_examples, retract_and_judge_at_once
from tests.leaderboard.test_pages import _csrf
from tests.leaderboard.test_uploads import make_bundle

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

OLD_DEFAULT_SECRET = "evalboard-development-secret-change-me"


def _new_user(server: LiveServer, name: str) -> tuple[int, dict[str, str]]:
    """A fresh researcher (no submissions today) and its Bearer header."""
    user = create_user(server.seeded.ctx, name, password=PASSWORD)
    token, _ = create_token(server.seeded.ctx, name)
    return user.id, {"Authorization": f"Bearer {token}"}


def _sent_upload(
    server: LiveServer, auth: dict[str, str], archive: Path, *, sha256: str | None = None
) -> str:
    """Start an upload and send all its bytes; returns its id."""
    data = archive.read_bytes()
    started = httpx.post(
        f"{server.url}/uploads",
        headers=auth,
        json={
            "task": TASK,
            "filename": archive.name,
            "size": len(data),
            "sha256": sha256 or hashlib.sha256(data).hexdigest(),
        },
    )
    assert started.status_code == 201, started.text
    upload_id = str(started.json()["id"])
    sent = httpx.patch(
        f"{server.url}/uploads/{upload_id}", params={"offset": 0}, content=data, headers=auth
    )
    assert sent.status_code == 200, sent.text
    return upload_id


def _at_once(count: int, call: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """``count`` threads released together by a barrier, each making ``call``."""
    barrier = threading.Barrier(count)

    def run() -> httpx.Response:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: run(), range(count)))


def _submissions_of(server: LiveServer, user_id: int) -> int:
    with server.seeded.ctx.db.session() as session:
        return int(
            session.scalar(select(func.count(Submission.id)).where(Submission.user_id == user_id))
            or 0
        )


def _forged_cookie(secret: str, session: dict[str, Any]) -> str:
    # Exactly what starlette's SessionMiddleware writes.
    data = base64.b64encode(json.dumps(session).encode())
    return TimestampSigner(secret).sign(data).decode()


# Secrets and sessions ---------------------------------------------------------------------


def test_a_cookie_signed_with_the_old_default_secret_is_refused(
    pg_live_server: LiveServer,
) -> None:
    server = pg_live_server
    with server.seeded.ctx.db.session() as session:
        admin = session.scalar(select(User).where(User.name == "admin"))
    assert admin is not None
    for forged in (
        {"user_id": admin.id},
        {"user_id": admin.id, "version": admin.session_version, "since": int(time.time())},
    ):
        cookies = {"evalboard_session": _forged_cookie(OLD_DEFAULT_SECRET, forged)}
        assert httpx.get(f"{server.url}/users", cookies=cookies).status_code == 401
        hidden = httpx.get(
            f"{server.url}/tasks/{TASK}/datasets/hidden-test/examples",
            params={"labels": "true"},
            cookies=cookies,
        )
        assert hidden.status_code in (401, 404) and "label" not in hidden.text
    key_file = server.seeded.ctx.settings.data_dir / KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_text().strip()) >= 64


def _signed_in(server: LiveServer, name: str, password: str = PASSWORD) -> httpx.Client:
    client = httpx.Client(base_url=server.url)
    form = client.get("/ui/login")
    done = client.post(
        "/ui/login", data={"name": name, "password": password, "csrf_token": _csrf(form.text)}
    )
    assert done.status_code == 303, done.text
    assert client.get("/users/me").status_code == 200
    return client


def _ends_sessions(server: LiveServer, name: str, end: Callable[[httpx.Client], None]) -> None:
    with (
        closing(_signed_in(server, name)) as client,
        closing(_signed_in(server, name)) as other_device,
    ):
        stolen = dict(client.cookies)  # what an attacker copied before the session ended
        end(client)
        for cookies in (stolen, dict(other_device.cookies)):
            assert httpx.get(f"{server.url}/users/me", cookies=cookies).status_code == 401


def test_logout_ends_the_session_at_once(pg_live_server: LiveServer) -> None:
    _new_user(pg_live_server, "leaver")

    def logout(client: httpx.Client) -> None:
        page = client.get("/ui")
        done = client.post("/ui/logout", data={"csrf_token": _csrf(page.text)})
        assert done.status_code == 303

    _ends_sessions(pg_live_server, "leaver", logout)


def test_a_password_change_a_role_grant_and_a_revoked_token_end_sessions(
    pg_live_server: LiveServer,
) -> None:
    server = pg_live_server
    _, auth = _new_user(server, "changer")
    admin = {"Authorization": f"Bearer {server.seeded.tokens['admin']}"}
    new_password = "another-long-password"

    def change_password(client: httpx.Client) -> None:
        done = httpx.put(
            f"{server.url}/users/me/password",
            headers=auth,
            json={"current": PASSWORD, "new": new_password},
        )
        assert done.status_code == 204, done.text

    _ends_sessions(server, "changer", change_password)
    # The new password works; the old one does not.
    _signed_in(server, "changer", new_password).close()
    httpx.put(
        f"{server.url}/users/me/password",
        headers=auth,
        json={"current": new_password, "new": PASSWORD},
    ).raise_for_status()

    def grant(client: httpx.Client) -> None:
        done = httpx.post(
            f"{server.url}/users/changer/roles", headers=admin, json={"role": "annotator"}
        )
        assert done.status_code == 200, done.text

    _ends_sessions(server, "changer", grant)

    def revoke(client: httpx.Client) -> None:
        made = httpx.post(f"{server.url}/users/me/tokens", headers=auth, json={"label": "x"})
        token_id = made.json()["id"]
        gone = httpx.delete(f"{server.url}/users/me/tokens/{token_id}", headers=auth)
        assert gone.status_code == 204

    _ends_sessions(server, "changer", revoke)


# Uploads ----------------------------------------------------------------------------------


def test_six_concurrent_completes_of_one_upload_make_one_submission(
    pg_live_server: LiveServer, tmp_path: Path
) -> None:
    server = pg_live_server
    user_id, auth = _new_user(server, "racer")
    upload_id = _sent_upload(server, auth, make_bundle(tmp_path, name="race-once"))
    answers = _at_once(
        6, lambda: httpx.post(f"{server.url}/uploads/{upload_id}/complete", headers=auth)
    )
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {200, 409}, [a.text for a in answers]
    ids = {a.json()["id"] for a in answers if a.status_code == 200}
    assert len(ids) == 1
    assert _submissions_of(server, user_id) == 1
    # Asked again afterwards, it answers with that same submission.
    again = httpx.post(f"{server.url}/uploads/{upload_id}/complete", headers=auth)
    assert again.status_code == 200 and again.json()["id"] in ids
    state = httpx.get(f"{server.url}/uploads/{upload_id}", headers=auth).json()
    assert state["state"] == "completed" and state["submission_id"] in ids
    parts = server.seeded.ctx.settings.data_dir / "artifacts" / "uploads" / upload_id
    assert not parts.exists()


def test_six_uploads_completed_at_once_stay_within_the_daily_quota(
    pg_live_server: LiveServer, tmp_path: Path
) -> None:
    server = pg_live_server
    user_id, auth = _new_user(server, "greedy")
    uploads = [
        _sent_upload(server, auth, make_bundle(tmp_path, name=f"quota-{i}")) for i in range(6)
    ]
    pending = list(uploads)
    lock = threading.Lock()
    completed_by: dict[int, str] = {}

    def complete() -> httpx.Response:
        with lock:
            upload_id = pending.pop()
        answer = httpx.post(f"{server.url}/uploads/{upload_id}/complete", headers=auth)
        completed_by[id(answer)] = upload_id
        return answer

    answers = _at_once(6, complete)
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * PG_QUOTA + [429] * (6 - PG_QUOTA), [a.text for a in answers]
    assert _submissions_of(server, user_id) == PG_QUOTA
    for answer in answers:
        if answer.status_code == 429:  # refused by the quota: kept open for another day
            upload_id = completed_by[id(answer)]
            state = httpx.get(f"{server.url}/uploads/{upload_id}", headers=auth).json()
            assert state["state"] == "open" and state["submission_id"] is None


def test_rejected_uploads_leave_nothing_and_count_against_the_quota(
    pg_live_server: LiveServer, tmp_path: Path
) -> None:
    server = pg_live_server
    _, auth = _new_user(server, "rejected")
    artifacts = server.seeded.ctx.settings.data_dir / "artifacts"
    archive = make_bundle(tmp_path, name="mismatch")
    wrong = _sent_upload(server, auth, archive, sha256="0" * 64)
    bad = tmp_path / "garbage.tar.gz"
    bad.write_bytes(b"not a tarball at all" * 100)
    invalid = _sent_upload(server, auth, bad)
    for upload_id in (wrong, invalid):
        refused = httpx.post(f"{server.url}/uploads/{upload_id}/complete", headers=auth)
        assert refused.status_code == 400, refused.text
        assert not (artifacts / "uploads" / upload_id).exists()
        state = httpx.get(f"{server.url}/uploads/{upload_id}", headers=auth).json()
        assert state["state"] == "rejected"
    bad_sha = hashlib.sha256(bad.read_bytes()).hexdigest()
    assert not list((artifacts / "bundles").glob(f"{bad_sha}*"))
    assert not list((artifacts / "bundles").glob(f"{'0' * 64}*"))
    # Two rejected of a quota of three: one more goes, the next is refused.
    third = _sent_upload(server, auth, make_bundle(tmp_path, name="third"))
    done = httpx.post(f"{server.url}/uploads/{third}/complete", headers=auth)
    assert done.status_code == 200, done.text
    over = httpx.post(
        f"{server.url}/uploads",
        headers=auth,
        json={"task": TASK, "filename": "x.tar.gz", "size": 10, "sha256": "1" * 64},
    )
    assert over.status_code == 429 and "rejected uploads count" in over.json()["detail"]


def test_one_user_cannot_hold_unbounded_open_uploads(pg_live_server: LiveServer) -> None:
    server = pg_live_server
    _, auth = _new_user(server, "hoarder")
    body = {"task": TASK, "filename": "big.tar.gz", "size": 8 * 1024**3, "sha256": "2" * 64}
    answers = [httpx.post(f"{server.url}/uploads", headers=auth, json=body) for _ in range(30)]
    accepted = [a for a in answers if a.status_code == 201]
    assert len(accepted) == 2  # 16 GiB in flight at most
    assert {a.status_code for a in answers if a.status_code != 201} == {429}
    assert "in flight" in answers[-1].json()["detail"]
    # Cancelling one makes room again.
    first = accepted[0].json()["id"]
    assert httpx.delete(f"{server.url}/uploads/{first}", headers=auth).status_code == 204
    assert httpx.get(f"{server.url}/uploads/{first}", headers=auth).json()["state"] == "cancelled"
    assert httpx.post(f"{server.url}/uploads", headers=auth, json=body).status_code == 201
    _, small_auth = _new_user(server, "many-small")
    small = {**body, "size": 1000}
    answers = [
        httpx.post(f"{server.url}/uploads", headers=small_auth, json=small) for _ in range(12)
    ]
    assert [a.status_code for a in answers].count(201) == PG_MAX_OPEN_UPLOADS


# The loop ---------------------------------------------------------------------------------


def test_a_retraction_and_a_verdict_at_once_never_both_hold_on_postgresql(
    pg_live_server: LiveServer,
) -> None:
    """PostgreSQL rechecks a waiting UPDATE's row but not its NOT EXISTS subquery: without
    the row lock, a retraction waiting on a verdict went through after it."""
    server = pg_live_server
    ctx = server.seeded.ctx
    create_user(ctx, "judge-pg", password=PASSWORD, roles=(Role.ANNOTATOR,))
    judges = {"owner": server.seeded.tokens["owner"], "judge-pg": create_token(ctx, "judge-pg")[0]}
    for judge, outcome in (("owner", "verified"), ("judge-pg", "pending")):
        examples = pending_examples(ctx, server.seeded.submissions["vader-lexicon"], 12)
        auth = {"Authorization": f"Bearer {judges[judge]}"}
        wrong = retract_and_judge_at_once(server.url, ctx, examples, auth, outcome)
        assert not wrong, (judge, wrong)


# The edge ---------------------------------------------------------------------------------


def test_nul_and_lone_surrogates_are_422_everywhere(pg_live_server: LiveServer) -> None:
    server = pg_live_server
    auth = {"Authorization": f"Bearer {server.seeded.tokens['alice']}"}
    json_headers = {**auth, "Content-Type": "application/json"}
    tries = [
        httpx.get(f"{server.url}/tasks/x%00"),
        httpx.get(f"{server.url}/tasks/x%ED%A0%80"),
        httpx.get(f"{server.url}/tasks/{TASK}/leaderboard", params={"weights": "perf:1\x00"}),
        httpx.post(f"{server.url}/users/me/tokens", headers=auth, json={"label": "a\x00b"}),
        httpx.post(
            f"{server.url}/users/me/tokens", headers=json_headers, content=b'{"label": "\\ud800"}'
        ),
        httpx.post(
            f"{server.url}/uploads",
            headers=auth,
            json={"task": TASK, "filename": "m\x00.tar.gz", "size": 10, "sha256": "3" * 64},
        ),
        httpx.post(f"{server.url}/ui/login", data={"name": "alice\x00", "password": "x"}),
        httpx.put(
            f"{server.url}/examples/1/explanation", headers=auth, json={"explanation": "a\x00"}
        ),
    ]
    assert [t.status_code for t in tries] == [422] * len(tries), [t.text for t in tries]
    page = tries.pop(6)  # a page's form hears the error page, with the way back to it
    assert "<html" in page.text and "NUL" in page.text and "Back to the form" in page.text
    assert all("NUL" in t.json()["detail"][0]["msg"] for t in tries)
    assert server.log is not None and "Traceback" not in server.log.read_text()


def test_the_body_cap_needs_verified_credentials(pg_live_server: LiveServer) -> None:
    server = pg_live_server
    body = b"x" * 200_000
    for headers in (
        {"Authorization": "Bearer eb_forged"},
        {"Cookie": "evalboard_session=forged.value.here"},
        {"Cookie": f"evalboard_session={_forged_cookie(OLD_DEFAULT_SECRET, {'user_id': 1})}"},
    ):
        refused = httpx.post(f"{server.url}/tasks", headers=headers, content=body)
        assert refused.status_code == 413, (headers, refused.text)
    token = {"Authorization": f"Bearer {server.seeded.tokens['owner']}"}
    allowed = httpx.post(f"{server.url}/tasks", headers=token, content=body)
    assert allowed.status_code == 422  # read, then refused as not JSON


def test_a_422_never_echoes_a_large_body(pg_live_server: LiveServer) -> None:
    server = pg_live_server
    auth = {"Authorization": f"Bearer {server.seeded.tokens['alice']}"}
    answer = httpx.post(
        f"{server.url}/users/me/tokens", headers=auth, json={"label": "y" * 5_000_000}
    )
    assert answer.status_code == 422
    assert len(answer.content) < 2_000 and "yyyy" not in answer.text
    small = httpx.post(f"{server.url}/users/me/tokens", headers=auth, json={"label": 5})
    assert small.status_code == 422 and small.json()["detail"][0]["input"] == 5


# Faults -----------------------------------------------------------------------------------


def test_ready_checks_the_database(pg_live_server: LiveServer) -> None:
    ready = httpx.get(f"{pg_live_server.url}/ready")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "broker": "ok", "artifact_store": "ok"}


def test_stale_uploads_expire_while_the_server_runs(tmp_path: Path) -> None:
    for database_url in postgres_database():
        settings = make_settings(tmp_path, database_url)
        ctx = Context.from_settings(settings)
        create_task(ctx, sentiment_spec())
        create_user(ctx, "slow", password=PASSWORD)
        token, _ = create_token(ctx, "slow")
        auth = {"Authorization": f"Bearer {token}"}
        env = {"EVALBOARD_DATABASE_URL": database_url, "EVALBOARD_UPLOAD_EXPIRY_HOURS": "0.001"}
        log = tmp_path / "server.log"
        try:
            with serve(settings.data_dir, log, env=env, args=("--no-worker",)) as (url, _):
                body = {"task": TASK, "filename": "m.tar.gz", "size": 100, "sha256": "4" * 64}
                upload = httpx.post(f"{url}/uploads", headers=auth, json=body).json()["id"]
                sent = httpx.patch(
                    f"{url}/uploads/{upload}", params={"offset": 0}, content=b"x" * 40, headers=auth
                )
                assert sent.status_code == 200
                parts = settings.data_dir / "artifacts" / "uploads" / upload
                assert parts.exists()
                deadline = time.monotonic() + 20
                while parts.exists() and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert not parts.exists()
                state = httpx.get(f"{url}/uploads/{upload}", headers=auth).json()["state"]
                assert state == "expired"
                late = httpx.patch(
                    f"{url}/uploads/{upload}", params={"offset": 40}, content=b"x", headers=auth
                )
                assert late.status_code == 409
        finally:
            ctx.db.dispose()
