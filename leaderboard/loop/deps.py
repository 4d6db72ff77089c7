"""What the loop's routes and pages share: the warm-target pool and the annotator check."""

from __future__ import annotations

import logging
import threading
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.errors import PermissionDenied
from evalboard.core.states import Role, RoundStatus
from evalboard.core.tables import Round
from leaderboard.accounts import Principal
from leaderboard.loop.targets import BundleSandboxes, TargetPool

__all__ = ["PoolDep", "get_pool", "may_annotate", "warm_quietly"]

logger = logging.getLogger(__name__)

_pool_lock = threading.Lock()


def get_pool(request: Request) -> TargetPool:
    """The app's pool of warm targets, ``app.state.target_pool`` (made on first use)."""
    state = request.app.state
    with _pool_lock:
        pool = getattr(state, "target_pool", None)
        if pool is None:
            pool = state.target_pool = TargetPool(BundleSandboxes(state.ctx))
    assert isinstance(pool, TargetPool)
    return pool


PoolDep = Annotated[TargetPool, Depends(get_pool)]


def may_annotate(principal: Principal, task_id: str) -> None:
    """Annotators (of the task or platform-wide) and the task's owner write and validate.

    Raises:
        PermissionDenied: not signed in (401), or without the role (403).
    """
    principal.require_signed_in()
    if not (principal.owns(task_id) or principal.has_role(Role.ANNOTATOR, task_id)):
        raise PermissionDenied(
            f"Writing and validating examples of task {task_id!r} needs the annotator role; "
            f"{principal.name!r} lacks it. Ask an admin to grant it "
            f"(POST /users/{principal.name}/roles)"
        )


def warm_quietly(ctx: Context, pool: TargetPool, round_id: int, targets: list[int]) -> None:
    """Start a new round's targets after the response; a failure waits for the first
    example, which retries the start and reports why it failed. Targets of rounds closed
    outside this server (``evalboard round close``) are closed here too."""
    with ctx.db.session() as session:
        open_ids = session.scalars(select(Round.id).where(Round.status == RoundStatus.OPEN))
        pool.retain(list(open_ids))
    try:
        pool.warm(round_id, targets)
    except Exception:
        logger.warning("warming the targets of round %s failed", round_id, exc_info=True)
