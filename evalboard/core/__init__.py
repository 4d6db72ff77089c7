"""The bottom layer: settings, storage, artifacts and the error tree.

Names load on first use (:mod:`evalboard.core.lazy`): every command reads the error tree
and the states, and only some need the database layer (sqlalchemy) or the artifact store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalboard.core import errors
from evalboard.core.lazy import lazy_exports

if TYPE_CHECKING:
    from evalboard.core.artifacts import ArtifactStore
    from evalboard.core.context import Context
    from evalboard.core.db import Database, migrate
    from evalboard.core.errors import (
        Busy,
        Conflict,
        EvalboardError,
        EvaluationFailed,
        InvalidBundle,
        InvalidDataset,
        InvalidQuery,
        InvalidTaskSpec,
        InvalidText,
        InvalidWeights,
        NotFound,
        PermissionDenied,
        PlatformError,
        QuotaExceeded,
        UsageError,
    )
    from evalboard.core.settings import Settings, get_settings
    from evalboard.core.states import (
        Access,
        ExampleStatus,
        FailureReason,
        JobStatus,
        Role,
        RoundStatus,
        UploadState,
        Verdict,
    )


__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "evalboard.core.artifacts": ("ArtifactStore",),
        "evalboard.core.context": ("Context",),
        "evalboard.core.db": ("Database", "migrate"),
        "evalboard.core.errors": tuple(errors.__all__),
        "evalboard.core.settings": ("Settings", "get_settings"),
        "evalboard.core.states": (
            "Access",
            "ExampleStatus",
            "FailureReason",
            "JobStatus",
            "Role",
            "RoundStatus",
            "UploadState",
            "Verdict",
        ),
    },
)
