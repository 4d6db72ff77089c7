"""The handles every layer works with: settings, the database and the artifact store."""

from __future__ import annotations

from dataclasses import dataclass

from evalboard.core.artifacts import ArtifactStore
from evalboard.core.db import Database
from evalboard.core.settings import Settings, get_settings

__all__ = ["Context"]


@dataclass(frozen=True)
class Context:
    """Built once per process (CLI command, server, worker) and passed down."""

    settings: Settings
    db: Database
    artifacts: ArtifactStore

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Context:
        settings = settings or get_settings()
        return cls(
            settings=settings,
            db=Database(settings.database_url),
            artifacts=ArtifactStore(settings.artifacts),
        )
