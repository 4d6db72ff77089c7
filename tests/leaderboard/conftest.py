"""Fixtures for the service: a seeded task with evaluated models, the app, and clients."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from evalboard.core.context import Context
from evalboard.core.tables import utcnow
from leaderboard import create_app
from tests.conftest import make_settings, postgres_database
from tests.leaderboard.seeding import Seeded, seed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """One seeded platform for the tests that only read (never change it in a test)."""
    tmp = tmp_path_factory.mktemp("shared")
    ctx = Context.from_settings(make_settings(tmp))
    yield seed(ctx, tmp)
    ctx.db.dispose()


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seeded, Path, date]:
    """The platform ``seeded`` copies: seeded once a session, its data folder kept closed;
    with the UTC day its seeding began (its uploads count against that day's quota)."""
    tmp = tmp_path_factory.mktemp("seeded-template")
    ctx = Context.from_settings(make_settings(tmp))
    day = utcnow().date()
    template = seed(ctx, tmp)
    ctx.db.dispose()
    return template, ctx.settings.data_dir, day


@pytest.fixture
def seeded(ctx: Context, tmp_path: Path, seeded_template: tuple[Seeded, Path, date]) -> Seeded:
    """A seeded platform of the test's own, for tests that change things: a copy of the
    session's seeded database and artifacts, made before the test's context first opens
    its database (a context already used is seeded afresh)."""
    template, data_dir, day = seeded_template
    target = ctx.settings.data_dir
    used = any(path.is_file() for path in target.rglob("*"))
    # Seeded before midnight UTC, its uploads are not today's: a quota test would find
    # room it should not.
    stale = day != utcnow().date()
    if used or stale or ctx.settings.database_url != f"sqlite:///{target / 'evalboard.db'}":
        return seed(ctx, tmp_path)
    shutil.copytree(data_dir, target, dirs_exist_ok=True)
    return dataclasses.replace(
        template, ctx=ctx, tokens=dict(template.tokens), submissions=dict(template.submissions)
    )


def make_client(app: FastAPI, token: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver", headers=headers
    )


@pytest.fixture
def shared_app(shared: Seeded) -> FastAPI:
    return create_app(shared.ctx)


@pytest.fixture
def app(seeded: Seeded) -> FastAPI:
    return create_app(seeded.ctx)


@pytest.fixture
async def client(shared_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An anonymous client of the shared platform."""
    async with make_client(shared_app) as c:
        yield c


@dataclass
class LiveServer:
    url: str
    seeded: Seeded
    process: subprocess.Popen[str]
    log: Path | None = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(
    data_dir: Path, log: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``evalboard serve`` in its own process on a free port until the block ends; yields
    its URL once ``/health`` answers, and the process."""
    port = _free_port()
    environment = {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(data_dir),
        "EVALBOARD_SANDBOX": "local",
        "COLUMNS": "200",
        **(env or {}),
    }
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "evalboard"),
                "serve",
                "--port",
                str(port),
                "--log-level",
                "warning",
                *args,
            ],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(log.read_text())
            time.sleep(0.2)
        try:
            yield url, process
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_until_ranked(url: str, task: str, models: int, log: Path, timeout_s: float) -> None:
    """Poll the task's board until ``models`` are ranked and none is pending; a failed job
    or the timeout fails the test (with the server's log)."""
    deadline = time.monotonic() + timeout_s
    while True:
        board = httpx.get(f"{url}/tasks/{task}/leaderboard", timeout=60).json()
        if len([r for r in board["rows"] if r["rank"]]) == models and not board["pending"]:
            return
        failed = [p for p in board["pending"] if p["status"] == "failed"]
        assert not failed, log.read_text()[-3000:]
        assert time.monotonic() < deadline, board["pending"]
        time.sleep(1)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``evalboard serve`` in its own process on a free port, over a seeded platform, with
    the inline worker running jobs in the local sandbox."""
    tmp = tmp_path_factory.mktemp("live")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    seeded = seed(ctx, tmp)
    log = tmp / "server.log"
    try:
        with serve(settings.data_dir, log) as (url, process):
            yield LiveServer(url=url, seeded=seeded, process=process, log=log)
    finally:
        ctx.db.dispose()


@pytest.fixture(scope="module")
def large_board_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``evalboard serve`` over a seeded platform whose every board counts as large
    (``EVALBOARD_INTERVALS_INLINE_MODELS=1``): new weights are answered before their
    intervals, which the background thread makes. Yields its URL."""
    tmp = tmp_path_factory.mktemp("live-large")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    seed(ctx, tmp)
    try:
        with serve(
            settings.data_dir, tmp / "server.log", env={"EVALBOARD_INTERVALS_INLINE_MODELS": "1"}
        ) as (url, _):
            yield url
    finally:
        ctx.db.dispose()


#: The PostgreSQL server's limits, small enough for a test to reach.
PG_QUOTA = 3
PG_MAX_OPEN_UPLOADS = 8


@pytest.fixture(scope="module")
def pg_live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``evalboard serve`` on a fresh PostgreSQL database (seeded), with no worker: the
    attacks of issue 11 are tried against it. Daily quota 3, 8 open uploads per user."""
    tmp = tmp_path_factory.mktemp("live-pg")
    for database_url in postgres_database():
        settings = make_settings(tmp, database_url)
        ctx = Context.from_settings(settings)
        seeded = seed(ctx, tmp)
        log = tmp / "server.log"
        env = {
            "EVALBOARD_DATABASE_URL": database_url,
            "EVALBOARD_DAILY_UPLOAD_QUOTA": str(PG_QUOTA),
            "EVALBOARD_MAX_OPEN_UPLOADS": str(PG_MAX_OPEN_UPLOADS),
        }
        try:
            with serve(settings.data_dir, log, env=env, args=("--no-worker",)) as (url, process):
                yield LiveServer(url=url, seeded=seeded, process=process, log=log)
        finally:
            ctx.db.dispose()
