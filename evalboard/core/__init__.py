"""The bottom layer: settings, storage, artifacts and the error tree.

Names load on first use: every command reads the error tree and the states, and only some
need the database layer (sqlalchemy) or the artifact store, so ``import evalboard.core``
stays cheap for ``evalboard --help`` and a usage error.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalboard.core.artifacts import ArtifactStore
    from evalboard.core.context import Context
    from evalboard.core.db import Database, migrate
    from evalboard.core.errors import (
        Conflict,
        EvalboardError,
        EvaluationFailed,
        InvalidBundle,
        InvalidDataset,
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

__all__ = [
    "Access",
    "ArtifactStore",
    "Conflict",
    "Context",
    "Database",
    "EvalboardError",
    "EvaluationFailed",
    "ExampleStatus",
    "FailureReason",
    "InvalidBundle",
    "InvalidDataset",
    "InvalidTaskSpec",
    "InvalidText",
    "InvalidWeights",
    "JobStatus",
    "NotFound",
    "PermissionDenied",
    "PlatformError",
    "QuotaExceeded",
    "Role",
    "RoundStatus",
    "Settings",
    "UploadState",
    "UsageError",
    "Verdict",
    "get_settings",
    "migrate",
]

#: The module that defines each exported name.
_HOMES = {
    "ArtifactStore": "artifacts",
    "Context": "context",
    "Database": "db",
    "migrate": "db",
    "Settings": "settings",
    "get_settings": "settings",
    **dict.fromkeys(
        (
            "Conflict",
            "EvalboardError",
            "EvaluationFailed",
            "InvalidBundle",
            "InvalidDataset",
            "InvalidTaskSpec",
            "InvalidText",
            "InvalidWeights",
            "NotFound",
            "PermissionDenied",
            "PlatformError",
            "QuotaExceeded",
            "UsageError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "Access",
            "ExampleStatus",
            "FailureReason",
            "JobStatus",
            "Role",
            "RoundStatus",
            "UploadState",
            "Verdict",
        ),
        "states",
    ),
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
