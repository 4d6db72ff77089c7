"""Run one of the platform's own scripts in a runtime image, offline: training the demo's
GPT-2, making a placeholder model where the host has no torch.

The script is trusted (ours, not a submission's), but it still runs as a model would: no
network, a read-only root with a scratch ``/tmp``, and only the folder it writes mounted.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Any

from evalboard.core.errors import PlatformError

__all__ = ["run_offline"]


def run_offline(
    image: str,
    command: list[str],
    *,
    mount: Path,
    at: str = "/out",
    timeout_s: float,
    label: str,
    client: Any = None,
    environment: dict[str, str] | None = None,
    user: str | None = None,
) -> str:
    """Run ``command`` in ``image`` with ``mount`` at ``at`` (read-write) and no network,
    as ``user`` (``uid:gid``; None: the image's); returns its logs. The container is
    removed whatever happens.

    Raises:
        PlatformError: no engine, or the command failed (the end of its logs said).
    """
    import docker.errors

    from submission_sandbox.docker_sandbox import docker_client

    client = client or docker_client(timeout=60)
    container = client.containers.create(
        image,
        command,
        network_disabled=True,
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": ""},
        environment={"HOME": "/tmp", "HF_HUB_OFFLINE": "1", **(environment or {})},
        volumes={str(mount.resolve()): {"bind": at, "mode": "rw"}},
        labels={"org.evalboard.offline-run": label},
        user=user,
    )
    try:
        container.start()
        status = container.wait(timeout=timeout_s)
        logs: str = container.logs().decode(errors="replace")
    finally:
        with suppress(docker.errors.NotFound):
            container.remove(force=True)
    if status.get("StatusCode") != 0:
        raise PlatformError(f"{label} failed in {image}:\n{logs[-3000:]}")
    return logs
