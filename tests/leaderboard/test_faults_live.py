"""Faults, as an operator meets them: ``evalboard serve`` and the CLI against a database
that does not answer, does not exist or has a bad URL; a full disk; a read-only data dir.

Each is one clear line and exit 2 (CLI) or 503 (service), never a traceback, and no
message names the database's host, port or user.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from datasets_registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.settings import Settings
from leaderboard.accounts import create_token, create_user
from tests.conftest import make_settings, postgres_database
from tests.helpers.tasks import sentiment_spec, write_jsonl
from tests.helpers.tmpfs import tmpfs
from tests.leaderboard.conftest import _free_port, serve
from tests.leaderboard.seeding import PASSWORD, TASK, _rows
from tests.leaderboard.test_uploads import make_bundle

pytestmark = pytest.mark.slow


def _cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "EVALBOARD_DATA_DIR": str(data_dir), "COLUMNS": "200", **env}
    return subprocess.run(
        [str(Path(sys.executable).parent / "evalboard"), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_clear_line(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.postgres
def test_serve_without_its_database_is_alive_not_ready_and_quiet(tmp_path: Path) -> None:
    port = _free_port()  # nothing listens there
    url = f"postgresql+psycopg://secretuser@127.0.0.1:{port}/evalboard"
    log = tmp_path / "server.log"
    with serve(tmp_path / "data", log, env={"EVALBOARD_DATABASE_URL": url}) as (base, _):
        assert httpx.get(f"{base}/health").status_code == 200
        ready = httpx.get(f"{base}/ready")
        assert ready.status_code == 503
        assert ready.json()["checks"]["broker"] == "ok"  # none configured
        tasks = httpx.get(f"{base}/tasks")
        assert tasks.status_code == 503
        for answer in (ready, tasks):
            for secret in (str(port), "127.0.0.1", "secretuser"):
                assert secret not in answer.text
        time.sleep(3)  # the worker tries, fails and backs off meanwhile
    text = log.read_text()
    assert "Traceback" not in text
    assert text.count("the database does not answer") == 1, text


@pytest.mark.postgres
def test_a_missing_database_is_one_line_in_the_cli(tmp_path: Path) -> None:
    missing = f"postgresql+psycopg://postgres@127.0.0.1:5432/nope_{uuid.uuid4().hex[:8]}"
    done = _cli(tmp_path / "data", "task", "list", EVALBOARD_DATABASE_URL=missing)
    _one_clear_line(done, "does not exist")
    assert "127.0.0.1" not in done.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [("not a url", "is not a database URL"), ("mysql://x/y", "'mysql'")],
)
def test_a_bad_database_url_is_one_line_in_the_cli(tmp_path: Path, url: str, says: str) -> None:
    _one_clear_line(_cli(tmp_path / "data", "task", "list", EVALBOARD_DATABASE_URL=url), says)


def test_a_published_secret_is_refused(tmp_path: Path) -> None:
    done = _cli(
        tmp_path / "data",
        "task",
        "list",
        EVALBOARD_SECRET_KEY="evalboard-development-secret-change-me",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "published" in done.stderr


def test_dataset_add_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with tmpfs(tmp_path / "tiny", "size=96k") as tiny:
        ctx = Context.from_settings(Settings(data_dir=data, artifacts=str(tiny), sandbox="local"))
        create_task(ctx, sentiment_spec())
        rows = write_jsonl(tmp_path / "rows.jsonl", _rows(1500, seed=3))
        done = _cli(
            data,
            "dataset",
            "add",
            str(rows),
            "--task",
            "sentiment",
            "--name",
            "big",
            EVALBOARD_ARTIFACTS=str(tiny),
        )
        _one_clear_line(done, "disk is full")
        assert [p for p in tiny.rglob("*") if p.is_file()] == []
        listed = _cli(data, "dataset", "list", "--task", "sentiment", EVALBOARD_ARTIFACTS=str(tiny))
        assert listed.returncode == 0 and "big" not in listed.stdout
        ctx.db.dispose()


def test_a_read_only_data_dir_is_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        _one_clear_line(_cli(read_only, "task", "list"), "read-only")


@pytest.mark.postgres
def test_serve_without_its_broker_is_not_ready_and_says_so_plainly(tmp_path: Path) -> None:
    port = _free_port()  # no broker listens there
    for database_url in postgres_database():
        settings = make_settings(tmp_path, database_url)
        ctx = Context.from_settings(settings)
        create_task(ctx, sentiment_spec())
        rows = write_jsonl(tmp_path / "test.jsonl", _rows(20, seed=5))
        add_dataset(ctx, task_id=TASK, name="test", path=rows, perturb=False)
        create_user(ctx, "sender", password=PASSWORD)
        token, _ = create_token(ctx, "sender")
        auth = {"Authorization": f"Bearer {token}"}
        env = {
            "EVALBOARD_DATABASE_URL": database_url,
            "EVALBOARD_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        }
        try:
            with serve(settings.data_dir, tmp_path / "server.log", env=env) as (url, _):
                ready = httpx.get(f"{url}/ready", timeout=30)
                assert ready.status_code == 503
                assert ready.json()["checks"]["database"] == "ok"
                assert "broker does not answer" in ready.json()["checks"]["broker"]
                archive = make_bundle(tmp_path, name="queued-model")
                data = archive.read_bytes()
                body = {
                    "task": TASK,
                    "filename": archive.name,
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
                upload = httpx.post(f"{url}/uploads", headers=auth, json=body).json()["id"]
                httpx.patch(
                    f"{url}/uploads/{upload}", params={"offset": 0}, content=data, headers=auth
                ).raise_for_status()
                done = httpx.post(f"{url}/uploads/{upload}/complete", headers=auth, timeout=60)
                assert done.status_code == 503 and "resend_queued" in done.text
                for answer in (ready, done):
                    assert str(port) not in answer.text and "127.0.0.1" not in answer.text
                # The submission is stored; asking again gives it.
                again = httpx.post(f"{url}/uploads/{upload}/complete", headers=auth, timeout=60)
                assert again.status_code == 200 and again.json()["name"] == "queued-model"
                assert not (settings.data_dir / "artifacts" / "uploads" / upload).exists()
        finally:
            ctx.db.dispose()
