"""A worker's heartbeat, started and its readiness said: one start for ``evalboard
worker`` and for the inline pool of ``evalboard serve`` (internal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalboard.cli._output import err_console, warn
from evalboard.core.context import Context

if TYPE_CHECKING:
    from evaluator import WorkerHeartbeat

__all__ = ["start_heartbeat"]


def start_heartbeat(ctx: Context, *, sandbox: str | None) -> WorkerHeartbeat:
    """Start this worker's heartbeat (its row in ``worker_beats``, read by ``/ready``) and
    say its readiness once: what answers, and what it waits for before claiming. The
    caller stops it (``heartbeat.stop()``) when the worker stops."""
    from evaluator import WorkerHeartbeat

    heartbeat = WorkerHeartbeat(ctx, sandbox=sandbox)
    found = heartbeat.start()
    if found.ready:
        err_console.print(f"Worker ready: {found.summary(heartbeat.sandbox)}", highlight=False)
    else:
        warn(
            f"Worker not ready ({found.summary(heartbeat.sandbox)}): "
            f"{'; '.join(found.faults)} not answering; it claims jobs once they answer"
        )
    return heartbeat
