"""What the loop's routes and pages share: the app's pool of warm targets."""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import Depends, Request

from leaderboard.loop.targets import BundleSandboxes, TargetPool

__all__ = ["PoolDep", "get_pool"]

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
