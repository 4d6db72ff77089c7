"""The CLI's process-wide Context, built on first use."""

from __future__ import annotations

from functools import lru_cache

from evalboard.core.context import Context

__all__ = ["context"]


@lru_cache(maxsize=1)
def context() -> Context:
    return Context.from_settings()
