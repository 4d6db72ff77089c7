"""The handles every layer works with: settings, the database, the artifact store and the
process's derived-data cache."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalboard.core.artifacts import ArtifactStore
from evalboard.core.background import Background
from evalboard.core.cache import MemoryCache
from evalboard.core.db import Database
from evalboard.core.settings import Settings, get_settings

__all__ = ["Context"]


@dataclass(frozen=True)
class Context:
    """Built once per process (CLI command, server, worker) and passed down."""

    settings: Settings
    db: Database
    artifacts: ArtifactStore
    #: What the board derives from immutable inputs; see :mod:`evalboard.core.cache`.
    cache: MemoryCache = field(default_factory=MemoryCache, compare=False, repr=False)
    #: What a request leaves to be done after it answers (:mod:`evalboard.core.background`).
    background: Background = field(default_factory=Background, compare=False, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Context:
        settings = settings or get_settings()
        return cls(
            settings=settings,
            db=Database(settings.database_url),
            artifacts=ArtifactStore(settings.artifacts),
            cache=MemoryCache(settings.cache_bytes),
        )
