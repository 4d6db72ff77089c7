"""Fixtures for the sandbox tests: the real Docker engine, when there is one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.engine import docker_engine_or_skip

LABEL_FILTER = {"label": "org.evalboard.sandbox"}


@pytest.fixture(scope="session")
def docker_engine() -> Any:
    """A client of the real engine with the runtime image built; skips where there is none."""
    return docker_engine_or_skip()


@pytest.fixture
def docker_client(docker_engine: Any) -> Iterator[Any]:
    """The engine, checked afterwards for sandbox containers this process left behind."""

    def listed() -> list[dict[str, Any]]:
        # The low-level list: the high-level one inspects each container, and one that
        # another process removes meanwhile (the engine is shared) raises NotFound.
        found: list[dict[str, Any]] = docker_engine.api.containers(all=True, filters=LABEL_FILTER)
        return found

    own = {c["Id"] for c in listed()}
    yield docker_engine
    import os
    import socket

    owner = f"{socket.gethostname()}:{os.getpid()}"
    left = [
        c["Id"]
        for c in listed()
        if c["Id"] not in own and (c.get("Labels") or {}).get("org.evalboard.owner") == owner
    ]
    assert not left, f"sandbox containers left behind: {left}"


@pytest.fixture(
    params=["docker", pytest.param("gvisor", marks=pytest.mark.gvisor)],
)
def isolating_kind(request: pytest.FixtureRequest, docker_client: Any) -> str:
    """Each sandbox that isolates (``docker``, then ``gvisor``): tests run on both walls."""
    kind: str = request.param
    if kind == "gvisor":
        from submission_sandbox import runsc_problem

        problem = runsc_problem(docker_client)
        if problem is not None:
            pytest.skip(f"{problem}; run `bash docker/bootstrap.sh` as root")
    return kind
