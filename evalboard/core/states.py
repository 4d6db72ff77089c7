"""Lifecycle values shared by every layer (stored as strings in the database)."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "DEFAULT_LEASE_S",
    "Access",
    "ExampleStatus",
    "FailureReason",
    "JobStatus",
    "Role",
    "RoundStatus",
    "SubmissionKind",
    "UploadState",
    "Verdict",
]

#: How long a running job stays with a silent worker before it is queued again (seconds).
#: Here beside JobStatus, not in the evaluator's queue, so that ``evalboard worker --help``
#: can show it without loading the database layer.
DEFAULT_LEASE_S = 60.0


class JobStatus(StrEnum):
    """Where one (submission, dataset) evaluation job stands."""

    QUEUED = "queued"
    BUILDING = "building"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED}


class FailureReason(StrEnum):
    """Why a run failed; shown to the researcher with the last lines of the model's log."""

    INVALID_BUNDLE = "invalid_bundle"
    BUILD_FAILED = "build_failed"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    PROTOCOL_ERROR = "protocol_error"
    OUTPUT_LIMIT = "output_limit"
    # Not the researcher's fault: never counted against a quota.
    PLATFORM_ERROR = "platform_error"

    @property
    def is_platform_fault(self) -> bool:
        return self is FailureReason.PLATFORM_ERROR


class Access(StrEnum):
    """Who sees a dataset and whether it counts for the leaderboard."""

    SCORING = "scoring"  # shown and scored
    STANDARD = "standard"  # shown, not scored
    HIDDEN = "hidden"  # scored, never shown or downloadable


class SubmissionKind(StrEnum):
    """What a submission holds: a model the platform runs, or predictions made elsewhere."""

    BUNDLE = "bundle"  # a model bundle, evaluated in a sandbox
    PREDICTIONS = "predictions"  # a predictions file per dataset, scored as given


class Role(StrEnum):
    ADMIN = "admin"
    OWNER = "owner"  # per task
    RESEARCHER = "researcher"
    ANNOTATOR = "annotator"
    # A production service that sends a task's traffic for drift checks (per task): it
    # learns the statistics, never which inputs were queued (see docs/task-owners-rounds.md).
    MONITOR = "monitor"


class RoundStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class ExampleStatus(StrEnum):
    """A collected example's way through validation."""

    PENDING = "pending"  # fooled the target (or came from traffic), awaiting validators
    VERIFIED = "verified"
    REJECTED = "rejected"
    FLAGGED = "flagged"
    NOT_FOOLING = "not_fooling"  # the target got it right; kept for vMER's denominator
    RETRACTED = "retracted"  # withdrawn by its author before any verdict; still counted


class Verdict(StrEnum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    FLAGGED = "flagged"
    # An unlabeled traffic input's vote: the label given is in Validation.label.
    LABELLED = "labelled"


class UploadState(StrEnum):
    """Where a resumable upload is; only an ``open`` one takes bytes or completes."""

    OPEN = "open"
    CHECKING = "checking"  # one request is joining and validating it
    COMPLETED = "completed"  # became a submission
    REJECTED = "rejected"  # wrong sha256 or invalid bundle; its bytes are deleted
    EXPIRED = "expired"  # left open too long; its bytes are deleted
    CANCELLED = "cancelled"  # given up by its uploader; its bytes are deleted
