"""The pieces behind issue 11, in process: the signing key, settings that refuse weak
secrets, session lifetime, stale uploads expiring (SQLite and PostgreSQL), the server's
sweeper, and the worker pool's back-off while the database is away."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI
from pydantic import ValidationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from evalboard.core.context import Context
from evalboard.core.db import Database
from evalboard.core.errors import PlatformError
from evalboard.core.settings import Settings
from evalboard.core.states import UploadState
from evalboard.core.tables import Upload, User, utcnow
from evaluator import WorkerPool
from evaluator.jobs import faults
from leaderboard import create_app
from leaderboard.accounts import authenticate, create_user, principal_for
from leaderboard.signing_key import KEY_FILE, signing_key
from leaderboard.submissions import uploads_today
from leaderboard.uploads import expire_uploads
from tests.helpers.tasks import sentiment_spec
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import PASSWORD, Seeded
from tests.leaderboard.test_pages import _csrf

pytestmark = pytest.mark.anyio


def test_the_signing_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = signing_key(settings)
    path = tmp_path / "data" / KEY_FILE
    assert path.stat().st_mode & 0o777 == 0o600 and len(first) == 64
    assert signing_key(Settings(data_dir=tmp_path / "data")) == first
    path.chmod(0o644)
    assert signing_key(settings) == first and path.stat().st_mode & 0o777 == 0o600
    assert signing_key(Settings(data_dir=tmp_path / "other")) != first
    chosen = "k" * 40
    assert signing_key(Settings(data_dir=tmp_path / "data", secret_key=chosen)) == chosen


@pytest.mark.parametrize(
    ("environment", "secret", "says"),
    [
        ("development", "evalboard-development-secret-change-me", "published"),
        ("production", "evalboard-development-secret-change-me", "published"),
        ("production", "", "must be set"),
        ("production", "short", "must be set"),
    ],
)
def test_settings_refuse_weak_secrets(environment: str, secret: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says) as caught:
        Settings(environment=environment, secret_key=secret)  # type: ignore[arg-type]
    assert not secret or secret not in str(caught.value).split("[type=")[0]


def test_production_takes_a_long_random_secret() -> None:
    assert Settings(environment="production", secret_key="s" * 32).secret_key == "s" * 32
    assert "s" * 32 not in repr(Settings(secret_key="s" * 32))


async def test_a_session_ends_after_its_longest_life(tmp_path: Path, seeded: Seeded) -> None:
    # Four seconds: the sign-in time is kept in whole seconds, and a busy machine may take
    # a second or two before the first request.
    short = seeded.ctx.settings.model_copy(update={"session_max_hours": 4 / 3600})
    app = create_app(Context(settings=short, db=seeded.ctx.db, artifacts=seeded.ctx.artifacts))
    async with make_client(app) as client:
        page = await client.get("/ui/login")
        await client.post(
            "/ui/login",
            data={"name": "alice", "password": PASSWORD, "csrf_token": _csrf(page.text)},
        )
        assert (await client.get("/users/me")).status_code == 200
        time.sleep(5.1)
        assert (await client.get("/users/me")).status_code == 401


def _stale_upload(ctx: Context, session: Session, user_id: int, *, age_h: float) -> str:
    upload = Upload(
        id=f"00000000-0000-0000-0000-{int(age_h * 1000):012d}",
        user_id=user_id,
        task_id="sentiment",
        filename="m.tar.gz",
        size=10,
        sha256="0" * 64,
        received=4,
    )
    session.add(upload)
    session.flush()
    session.execute(
        update(Upload)
        .where(Upload.id == upload.id)
        .values(updated_at=utcnow() - timedelta(hours=age_h))
    )
    ctx.artifacts.put_bytes(f"uploads/{upload.id}/{0:015d}", b"abcd")
    return upload.id


@contextmanager
def _two_uploads(ctx: Context) -> Iterator[tuple[str, str]]:
    from datasets_registry import create_task

    create_task(ctx, sentiment_spec())
    user = create_user(ctx, "uploader", password=PASSWORD)
    with ctx.db.session() as session:
        stale = _stale_upload(ctx, session, user.id, age_h=30)
        fresh = _stale_upload(ctx, session, user.id, age_h=1)
    yield stale, fresh


def test_stale_uploads_expire_with_their_chunks(any_ctx: Context) -> None:
    with _two_uploads(any_ctx) as (stale, fresh):
        assert expire_uploads(any_ctx) == 1
        with any_ctx.db.session() as session:
            assert session.get(Upload, stale).state == UploadState.EXPIRED  # type: ignore[union-attr]
            assert session.get(Upload, fresh).state == UploadState.OPEN  # type: ignore[union-attr]
        assert not any_ctx.artifacts.exists(f"uploads/{stale}")
        assert any_ctx.artifacts.exists(f"uploads/{fresh}")
        assert expire_uploads(any_ctx) == 0


def test_the_server_sweeps_stale_uploads_on_start(ctx: Context) -> None:
    with _two_uploads(ctx) as (stale, _), TestClient(create_app(ctx)) as client:
        deadline = time.monotonic() + 10
        while ctx.artifacts.exists(f"uploads/{stale}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not ctx.artifacts.exists(f"uploads/{stale}")
        assert client.get("/ready").json()["checks"] == {
            "database": "ok",
            "broker": "ok",
            "artifact_store": "ok",
        }


class _FlakyDatabase(Database):
    """A real database that can be switched off, as a network outage would."""

    down = False

    @contextmanager
    def session(self) -> Iterator[Session]:
        if self.down:
            raise PlatformError("The database is unavailable: its server does not answer.")
        with super().session() as session:
            yield session


def test_the_pool_backs_off_and_says_so_once(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    db = _FlakyDatabase(settings.database_url)
    ctx = Context(settings=settings, db=db, artifacts=Context.from_settings(settings).artifacts)
    # The process's one database watch says it (pool, reaper, lease and heartbeat alike).
    # Whatever an earlier test left them in (a store outage test may end with the store
    # watch down, whose return this pool would then say too).
    for watch in (faults.DATABASE, faults.STORE, faults.ENGINE):
        watch.came_back()
    caplog.set_level(logging.WARNING, logger="evaluator.jobs")
    caplog.clear()
    db.down = True
    with WorkerPool(ctx, concurrency=2, poll_s=0.02):
        time.sleep(1.5)
        db.down = False
        # No shorter than the longest wait reached so far (a second line would show), and
        # until the return is said: on a slow machine a back-off doubled past 2 s retries later.
        back = time.monotonic()
        while time.monotonic() - back < 2.5 or not any(
            "answers again" in r.getMessage() for r in caplog.records
        ):
            assert time.monotonic() - back < 60, "the pool never said the database answers"
            time.sleep(0.05)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("evaluator.jobs")]
    assert sum("does not answer" in m for m in messages) == 1, messages
    assert sum("answers again" in m for m in messages) == 1, messages
    assert all(r.exc_info is None for r in caplog.records)
    db.dispose()


async def test_re_runs_count_against_the_daily_quota(app: FastAPI, seeded: Seeded) -> None:
    """Else failed jobs could be re-run, in the sandbox, without end."""
    broken = seeded.submissions["broken-model"]
    alice = _user_id(seeded, "alice")
    seeded.ctx.settings.daily_upload_quota = uploads_today(seeded.ctx, alice) + 2
    async with make_client(app, seeded.tokens["alice"]) as client:
        answers = [(await client.post(f"/submissions/{broken}/rerun")).status_code for _ in "abc"]
    assert answers == [200, 200, 429]
    assert uploads_today(seeded.ctx, alice) == seeded.ctx.settings.daily_upload_quota


def _user_id(seeded: Seeded, name: str) -> int:
    with seeded.ctx.db.session() as session:
        user_id = session.scalar(select(User.id).where(User.name == name))
    assert user_id is not None
    return user_id


def test_the_cli_sets_a_password_and_ends_sessions(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", sandbox="local")
    ctx = Context.from_settings(settings)
    user = create_user(ctx, "forgetful", password=PASSWORD)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "evalboard"),
            "user",
            "password",
            "forgetful",
            "--password",
            "a-brand-new-password",
        ],
        env={**os.environ, "EVALBOARD_DATA_DIR": str(settings.data_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert authenticate(ctx, "forgetful", "a-brand-new-password") is not None
    assert authenticate(ctx, "forgetful", PASSWORD) is None
    assert principal_for(ctx, user.id, session_version=user.session_version).user_id is None
    ctx.db.dispose()
