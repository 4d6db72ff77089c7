"""The bottom layer: settings, storage, artifacts and the error tree."""

from evalboard.core.artifacts import ArtifactStore
from evalboard.core.context import Context
from evalboard.core.db import Database, migrate
from evalboard.core.errors import (
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
    "InvalidQuery",
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
