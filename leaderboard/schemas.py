"""The API's pydantic schemas, split by direction: ``*Create`` / ``*Update`` come in,
``*Public`` go out (as the FastAPI full-stack template does)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from evalboard.core.states import Access, JobStatus, Role, RoundStatus, UploadState
from evalboard.core.tables import TOKEN_LABEL_MAX, as_utc
from submission_sandbox import Manifest

__all__ = [
    "BaselineUpdate",
    "CardPublic",
    "CaseDatasetPublic",
    "CaseHistoryPublic",
    "DatasetPublic",
    "DatasetWeightUpdate",
    "IntervalPublic",
    "JobPublic",
    "LeaderboardPublic",
    "LineageCasePublic",
    "LineagePublic",
    "MetricPublic",
    "PendingPublic",
    "PhaseCreate",
    "PhasePublic",
    "PhaseReveal",
    "PredictionsCreate",
    "ReleaseDatasetPublic",
    "ReleasePublic",
    "ReleaseRef",
    "RoleGrantCreate",
    "RoundPublic",
    "RowPublic",
    "SnapshotCreate",
    "SnapshotPublic",
    "SubmissionPublic",
    "SubmissionStatusPublic",
    "SuiteVersionPublic",
    "TaskCreate",
    "TaskPublic",
    "TokenCreate",
    "TokenCreated",
    "TokenPublic",
    "UploadCreate",
    "UploadPublic",
    "UserCreate",
    "UserPublic",
    "VerdictPublic",
    "WeightsPublic",
    "WeightsUpdate",
    "from_row",
]

Weight = Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]


Timestamp = Annotated[datetime, AfterValidator(as_utc)]
"""A timezone-aware datetime (UTC when the database dropped the zone)."""


_Out = TypeVar("_Out")


def from_row(model: type[_Out], row: object, **fields: Any) -> _Out:
    """``model`` (a pydantic model or a dataclass) from ``row``: each field read from the
    attribute of the same name, but those given in ``fields`` (renamed or derived ones). A
    field ``row`` lacks and ``fields`` does not give is an ``AttributeError``, never a
    silent default."""
    if dataclasses.is_dataclass(model):
        names = [f.name for f in dataclasses.fields(model)]
    else:
        assert issubclass(model, BaseModel), model
        names = list(model.model_fields)
    copied = {name: getattr(row, name) for name in names if name not in fields}
    return model(**copied, **fields)


class _In(BaseModel):
    # Strict: a request that breaks the schema (``"is_admin": 0``) is refused, not coerced.
    model_config = ConfigDict(extra="forbid", strict=True)


# Tasks and datasets -------------------------------------------------------------------------


class TaskCreate(_In):
    spec: dict[str, Any] = Field(description="The task spec, as its YAML (see docs/api.md).")
    owner: str | None = Field(None, max_length=64, description="User name of the task owner.")


class TaskPublic(BaseModel):
    id: str
    name: str
    description: str
    inputs: list[str]
    output_type: Literal["multiclass", "span", "text"]
    labels: list[str]
    perf_metric: str
    delta_metrics: list[str]
    default_weights: dict[str, float]
    memory_cap_gib: float
    limits: dict[str, Any] = Field(description="Sandbox limits every model of the task runs in.")
    owner: str | None


class WeightsUpdate(_In):
    weights: dict[str, Weight] = Field(
        description="metric -> weight >= 0 (perf, throughput, memory, fairness, robustness)."
    )


class WeightsPublic(BaseModel):
    task: str
    weights: dict[str, float]


class DatasetPublic(BaseModel):
    name: str
    round: int
    access: Access
    weight: float
    rows: int
    sha256: str
    derived_from: str | None
    perturbation: str | None
    created_at: Timestamp


class DatasetWeightUpdate(_In):
    weight: float = Field(
        gt=0, le=1e6, description="Its weight in every average; its perturbed copies follow."
    )


class RoundPublic(BaseModel):
    number: int
    status: RoundStatus
    target_submission_ids: list[int]
    dataset: str | None
    opened_at: Timestamp
    closed_at: Timestamp | None


# Uploads and submissions --------------------------------------------------------------------


class UploadCreate(_In):
    task: str = Field(max_length=64, description="Task id the model is for.")
    filename: str = Field(
        min_length=1, max_length=200, description="Archive name: .tar.gz, .tgz, .tar or .zip."
    )
    size: int = Field(gt=0, description="Total bytes that will be sent.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the whole file.")
    release_of: int | None = Field(
        None,
        ge=1,
        le=2**31 - 1,
        description="The submission id of the model this is a new release of (yours, or any "
        "for an admin); the manifest's `release_of` must then agree.",
    )


class UploadPublic(BaseModel):
    id: str
    task: str
    filename: str
    size: int
    sha256: str
    received: int = Field(description="Bytes stored so far: send the next chunk from here.")
    completed: bool
    state: UploadState = Field(
        description="open (takes chunks), checking, completed, rejected, expired or cancelled."
    )
    chunk_size: int = Field(description="Suggested bytes per PATCH.")
    submission_id: int | None = None
    release_of: int | None = None


class JobPublic(BaseModel):
    dataset: str = Field(description="The dataset's name ('hidden' when you may not see it).")
    status: JobStatus
    reason: str | None = Field(description="Why it failed: oom, timeout, crashed, ...")
    progress: float = Field(description="0..1")
    examples_done: int | None = Field(
        None, description="Examples predicted so far, as the worker last wrote (about 1 s)."
    )
    examples_total: int | None = Field(None, description="Examples in the dataset.")
    message: str | None = Field(None, description="Submitter, task owner and admin only.")
    log_tail: str | None = Field(None, description="Submitter, task owner and admin only.")
    log_withheld: bool = Field(
        False,
        description="True for the submitter on a hidden dataset: its message and log are "
        "withheld (a model sees the inputs and could print them); the task owner sees them.",
    )
    started_at: Timestamp | None
    finished_at: Timestamp | None
    metrics: dict[str, Any] | None = None
    sandbox: str | None = Field(
        None,
        description="The sandbox that ran it (from the result's provenance): gvisor "
        "(container under gVisor: two walls), docker (container: one), local (none).",
    )


class SubmissionPublic(BaseModel):
    id: int
    task: str
    name: str
    user: str | None
    runtime: str | None
    bundle_sha256: str
    is_baseline: bool
    published: bool = Field(True, description="False: off the public board.")
    status: JobStatus = Field(description="Summary of the per-dataset jobs.")
    created_at: Timestamp
    release_of: int | None = Field(None, description="The submission this is a new release of.")
    lineage: int | None = Field(
        None, description="Its lineage: the id of the lineage's first release (GET /lineages/ID)."
    )
    predictions_only: bool = Field(
        False,
        description="Predictions made elsewhere, scored as given: no throughput, memory or "
        "energy, never a loop target (docs/predictions.md).",
    )


class SubmissionStatusPublic(SubmissionPublic):
    jobs: list[JobPublic]
    may_manage: bool = Field(description="Whether you may cancel, re-run and read logs.")


class BaselineUpdate(_In):
    is_baseline: bool


class CardPublic(BaseModel):
    """A model's card as the caller may read it (see ``submission_sandbox.ModelCard``)."""

    submission_id: int
    task: str
    name: str
    user: str | None = Field(description="None when the model is anonymous to you.")
    runtime: str | None
    description: str
    params: int | None
    license: str | None
    source_url: str | None
    paper_url: str | None
    languages: list[str]
    card: str = Field(description="Markdown, as written (pages render it safely).")
    anonymous: bool
    published: bool


# Leaderboards -------------------------------------------------------------------------------


class MetricPublic(BaseModel):
    """One column of the board, as ``scoring.METRICS`` describes it."""

    name: str
    label: str
    unit: str
    direction: Literal["higher", "lower"] = Field(description="Which way is better.")
    weighable: bool = Field(description="Whether it enters the Dynascore.")
    offset: float = Field(0.0, description="The good is offset + sign * value (memory: cap).")
    measured: str = Field("", description="How it is measured, in one sentence.")
    caveat: str = Field("", description="What the figure does not say.")


class IntervalPublic(BaseModel):
    low: float
    high: float


class RowPublic(BaseModel):
    rank: int | None = Field(description="1 is best; None for reference rows not ranked.")
    key: str = Field(description="Row id: the submission id, or 'majority'.")
    submission_id: int | None
    name: str
    user: str | None
    kind: Literal["model", "baseline", "majority"]
    metrics: dict[str, float | None]
    dynascore: float | None
    runtime: str | None = None
    license: str | None = None
    params: int | None = Field(None, description="Number of parameters, where the card says.")
    published: bool = Field(True, description="False: only you (and the owner) see this row.")
    contributions: dict[str, float] = Field(
        default_factory=dict, description="Each metric's share of the Dynascore."
    )
    intervals: dict[str, IntervalPublic] = Field(
        default_factory=dict,
        description="95% paired bootstrap intervals: perf, and gap_to_leader (this model's "
        "Dynascore minus the leader's, paired within each resample).",
    )
    p_first: float | None = Field(
        None, description="Share of bootstrap resamples in which this row ranks first."
    )
    rank_interval: tuple[int, int] | None = Field(
        None, description="[best, worst] rank over 95% of the bootstrap resamples."
    )
    not_above_baseline: bool = Field(
        False,
        description="Its perf interval does not clear the majority-class baseline: ranked "
        "after every model that does.",
    )
    reason: str | None = Field(None, description="Why the row is flagged, in words.")
    spread: dict[str, IntervalPublic] = Field(
        default_factory=dict,
        description="Smallest and largest value over the timed runs (throughput).",
    )
    contended: bool = Field(
        False,
        description="Throughput and latency were measured while other processes used more "
        "than a quarter of the worker's CPU.",
    )
    load_note: str | None = Field(None, description="The worker's load, in words.")
    methods: dict[str, Literal["estimated", "measured"]] = Field(
        default_factory=dict,
        description="How a figure was obtained, for a metric that says (energy: measured "
        "by RAPL counters, or estimated from codecarbon's power for the CPU).",
    )
    ranked_as_worst: list[str] = Field(
        default_factory=list,
        description="Weighed metrics this row has no figure for (its metrics show null): "
        "ranked as if it had the board's worst figure, never better than a real one.",
    )
    predictions_only: bool = Field(
        False,
        description="Predictions made elsewhere: the metrics it lacks (throughput, memory, "
        "energy) rank as the board's worst figures, listed in ranked_as_worst "
        "(docs/predictions.md).",
    )


class PendingPublic(BaseModel):
    submission_id: int
    name: str
    user: str | None
    status: JobStatus


class LeaderboardPublic(BaseModel):
    task: str
    perf_metric: str
    weights: dict[str, float] = Field(description="The weights used (not normalised).")
    metrics: list[MetricPublic]
    rows: list[RowPublic] = Field(
        description="This page's ranked rows, then the majority-class baseline's (first page)."
    )
    total: int = Field(
        0, description="Ranked models matching the search, over all pages (rows sends a page)."
    )
    pending: list[PendingPublic] = Field(description="Submissions not yet ranked.")
    intervals_pending: bool = Field(
        False,
        description="The intervals, rank intervals and P(first) of these weights are being "
        "computed (a large board's first request for them): ask again (Retry-After) to have "
        "them. Meanwhile a model is ranked after the others where its perf's point estimate "
        "does not clear the baseline (with the intervals: where its interval does not).",
    )
    amrs: dict[str, float | None] = Field(
        description="Each metric's AMRS: how many of its units one perf point is worth."
    )
    dataset_weights: dict[str, float] = Field(
        default_factory=dict, description="Original scoring dataset -> the weight used."
    )
    baseline_perf: float | None = Field(
        None, description="The majority-class baseline's perf, the floor models must clear."
    )
    warnings: list[str] = Field(
        default_factory=list, description="What makes the scores hard to read, in words."
    )
    phase: str = Field(
        "public",
        description="The phase the board shows: 'public' (the non-hidden scoring sets and "
        "hidden sets in no phase), with the names of the phases revealed to the public.",
    )
    withheld_sets: int = Field(
        0, description="Hidden sets of private phases the board leaves out (never named)."
    )
    hidden_sets_left_out: int = Field(
        0,
        description="Hidden sets these dataset weights leave out (never named): they count "
        "on the owner's weighting only, so that no two weightings tell a model's score on them.",
    )


# Phases and predictions ----------------------------------------------------------------------


class PhaseCreate(_In):
    name: str = Field(max_length=64, description="Lower-case letters, digits, '-', '_'.")
    datasets: list[Annotated[str, Field(max_length=128)]] = Field(
        max_length=64, description="The task's hidden datasets the phase holds."
    )
    submission_limit: int = Field(description="Submissions per user while the phase is open.")


class PhaseReveal(_In):
    public: bool = Field(
        False,
        description="Also count the phase's sets on the public board (else each submitter "
        "alone sees their scores).",
    )


class PhasePublic(BaseModel):
    name: str
    datasets: list[str] = Field(description="Its hidden datasets, by name (no size, no rows).")
    submission_limit: int = Field(description="Submissions per user while it is open.")
    revealed: bool = Field(description="Revealed (and so closed): submitters see their scores.")
    public: bool = Field(description="Revealed onto the public board too.")
    created_at: Timestamp
    revealed_at: Timestamp | None
    used: int | None = Field(None, description="Your submissions counted in it (signed in).")
    remaining: int | None = Field(
        None, description="Your submissions left (None: no limit for you, or not signed in)."
    )


class PredictionsCreate(_In):
    # A model manifest's own rule (one place: ``Manifest.name``), as a bundle's row is named:
    # no formula (``=HYPERLINK(...)``) to open a downloaded CSV with, no control characters.
    name: Annotated[str, Manifest.model_fields["name"]] = Field(
        description="The row's name on the board: lowercase letters, digits and dashes, as a "
        "model manifest's name."
    )
    description: str = Field("", max_length=2000, description="What made the predictions.")
    predictions: dict[Annotated[str, Field(max_length=128)], list[dict[str, Any]]] = Field(
        description="Dataset name -> one object per example: its uid and the model's output "
        "fields (e.g. {'uid': 'a1', 'label': 'pos'}), every example once."
    )


# Snapshots ----------------------------------------------------------------------------------


class SnapshotCreate(_In):
    title: str = Field("", max_length=200, description="What the snapshot is for, in words.")


class SnapshotPublic(BaseModel):
    """A frozen board: its number, when, and where its bytes are."""

    task: str
    number: int
    title: str
    created_at: Timestamp
    models: int = Field(description="Ranked models in the frozen board.")
    json_sha256: str
    csv_sha256: str
    url: str = Field(description="The permalink of its page.")
    csv_url: str
    json_url: str
    citation: str = Field(description="A BibTeX entry citing the permalink.")


# Lineages, case histories, regression suites ------------------------------------------------


class ReleaseRef(BaseModel):
    """A release of a lineage, named as reports name it."""

    submission_id: int
    number: int = Field(description="1 for the lineage's first release, then in order.")
    name: str
    created_at: Timestamp = Field(description="When the release was submitted.")


class ReleaseDatasetPublic(BaseModel):
    dataset: str
    round: int
    perf: float | None = Field(description="The task metric x100 on it.")


class ReleasePublic(ReleaseRef):
    release_of: int | None
    status: JobStatus = Field(description="Summary of its per-dataset jobs.")
    published: bool
    metrics: dict[str, float | None] = Field(
        description="Its board figures (scoring.METRICS names), once scored on every "
        "scoring dataset; empty before."
    )
    datasets: list[ReleaseDatasetPublic] = Field(
        description="The original datasets (rounds and static sets) it was scored on."
    )
    hidden_sets: int = Field(0, description="Hidden sets it was scored on (never named).")


class LineagePublic(BaseModel):
    lineage: int = Field(description="The lineage's id: its first release's submission id.")
    task: str
    owner: str | None = Field(description="Its first release's submitter (None: hidden).")
    releases: list[ReleasePublic] = Field(description="The releases you may see, oldest first.")


class VerdictPublic(ReleaseRef):
    passed: bool | None = Field(description="None: not scored on this case's dataset.")


class LineageCasePublic(BaseModel):
    lineage: int
    releases: list[VerdictPublic] = Field(description="Every release you may see, in order.")
    first_passed: ReleaseRef | None = Field(description="The first release that passed it.")
    lost_by: list[ReleaseRef] = Field(
        description="Each release that failed it right after a release that passed it."
    )
    passing: bool | None = Field(description="The latest scored release's verdict.")


class CaseDatasetPublic(BaseModel):
    dataset: str
    round: int
    inputs: dict[str, Any]
    gold: Any = Field(description="The gold label, or the gold answer/reference texts.")
    lineages: list[LineageCasePublic] = Field(
        description="Lineages with a release scored on the case."
    )


class CaseHistoryPublic(BaseModel):
    task: str
    uid: str
    rule: str = Field(description="The task's per-example pass rule, in words.")
    datasets: list[CaseDatasetPublic] = Field(
        description="Each dataset you may see that holds the uid."
    )


class SuiteVersionPublic(BaseModel):
    task: str
    version: int
    created_at: Timestamp
    url: str = Field(description="Where to download it (GET; yours is what you may see).")


# Users --------------------------------------------------------------------------------------


class RoleGrantCreate(_In):
    role: Literal[Role.OWNER, Role.RESEARCHER, Role.ANNOTATOR, Role.MONITOR]
    task: str | None = Field(None, max_length=64, description="None: platform-wide.")


class UserCreate(_In):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    password: str = Field("", max_length=256, description="Empty: API tokens only.")
    is_admin: bool = False
    roles: list[RoleGrantCreate] = Field(
        default_factory=lambda: [RoleGrantCreate(role=Role.RESEARCHER)]
    )


class UserPublic(BaseModel):
    name: str
    is_admin: bool
    roles: list[dict[str, str | None]]
    created_at: Timestamp


class PasswordChange(_In):
    current: str = Field(max_length=256, description="Your password now.")
    new: str = Field(min_length=8, max_length=256, description="At least 8 characters.")


class TokenCreate(_In):
    label: str = Field("", max_length=TOKEN_LABEL_MAX)


class TokenPublic(BaseModel):
    id: int
    label: str
    created_at: Timestamp
    last_used_at: Timestamp | None


class TokenCreated(TokenPublic):
    token: str = Field(description="Shown once; only its sha256 is stored.")
