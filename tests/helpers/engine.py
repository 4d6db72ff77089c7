"""The real Docker engine for tests that need one: a client, or a skip saying why not."""

from __future__ import annotations

from typing import Any

import pytest

from evalboard.core.settings import get_settings

__all__ = ["docker_engine_or_skip"]


def docker_engine_or_skip() -> Any:
    """A client of the engine with the runtime image built; skips where there is none."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine here
        pytest.skip(f"no Docker engine reachable ({exc}); run `bash docker/bootstrap.sh`")
    base = get_settings().base_image
    try:
        client.images.get(base)
    except docker.errors.ImageNotFound:
        pytest.skip(f"runtime image {base} is missing; run `bash docker/bootstrap.sh`")
    return client
