"""Fixtures for the service: a seeded task with evaluated models, the app, and clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from evalboard.core.context import Context
from leaderboard import create_app
from tests.conftest import make_settings
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


@pytest.fixture
def seeded(ctx: Context, tmp_path: Path) -> Seeded:
    """A seeded platform of the test's own, for tests that change things."""
    return seed(ctx, tmp_path)


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
