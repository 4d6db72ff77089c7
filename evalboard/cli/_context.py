"""The CLI's process-wide Context, built on first use."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalboard.core.context import Context

__all__ = ["context"]


@lru_cache(maxsize=1)
def context() -> Context:
    # Imported here: the database layer loads only for a command that uses it.
    from evalboard.core.context import Context

    return Context.from_settings()
