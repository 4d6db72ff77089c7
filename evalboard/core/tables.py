"""The storage schema: SQLAlchemy 2 models, the same on SQLite and PostgreSQL.

Migrations in ``evalboard/core/migrations`` are generated from these models; change both
together (``alembic revision --autogenerate``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy import false as sa_false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = [
    "ApiToken",
    "Base",
    "BoardEntry",
    "BoardRowVersion",
    "BoardVersion",
    "Dataset",
    "DriftCheck",
    "Example",
    "Job",
    "Phase",
    "PhaseDataset",
    "PhaseEntry",
    "Rerun",
    "Result",
    "Round",
    "RoleGrant",
    "Snapshot",
    "Submission",
    "SuiteVersion",
    "Task",
    "Upload",
    "User",
    "Validation",
    "WorkerBeat",
    "as_utc",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """A stored time, timezone-aware: SQLite hands back naive datetimes, and every one we
    store is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


def _ref(column: str, ondelete: str, **options: Any) -> Mapped[Any]:
    """A foreign key to ``column`` (``table.id``); ``ondelete`` CASCADE or SET NULL."""
    return mapped_column(ForeignKey(column, ondelete=ondelete), **options)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256), default="")
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # Part of every session cookie; bumping it (sign-out, new password, role change, token
    # revoked) ends every session of the user at once.
    session_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = _created()


class RoleGrant(Base):
    """A role held by a user, for one task (owner, annotator) or platform-wide (task_id null)."""

    __tablename__ = "role_grants"
    __table_args__ = (UniqueConstraint("user_id", "role", "task_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _ref("users.id", "CASCADE")
    role: Mapped[str] = mapped_column(String(16))
    task_id: Mapped[str | None] = _ref("tasks.id", "CASCADE")


#: The longest label an API token takes: the column's length, read by the API schema, the
#: token page and ``create_token`` alike.
TOKEN_LABEL_MAX = 64


class ApiToken(Base):
    """An API token; only its sha256 is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _ref("users.id", "CASCADE")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(TOKEN_LABEL_MAX), default="")
    created_at: Mapped[datetime] = _created()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Task(Base):
    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The owner's current default weights; the spec's are the initial ones.
    default_weights: Mapped[dict[str, Any]] = mapped_column(JSON)
    owner_id: Mapped[int | None] = _ref("users.id", "SET NULL")
    created_at: Mapped[datetime] = _created()

    datasets: Mapped[list[Dataset]] = relationship(back_populates="task")


class Dataset(Base):
    """An immutable, content-addressed dataset of a task."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("task_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    name: Mapped[str] = mapped_column(String(128))
    round: Mapped[int] = mapped_column(Integer, default=0)
    access: Mapped[str] = mapped_column(String(16), default="scoring")
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    sha256: Mapped[str] = mapped_column(String(64))
    rows: Mapped[int] = mapped_column(Integer)
    # Artifact-store key of the canonical JSONL (labels included; never sent to a sandbox).
    artifact_key: Mapped[str] = mapped_column(String(256))
    derived_from_id: Mapped[int | None] = _ref("datasets.id", "CASCADE")
    perturbation: Mapped[str | None] = mapped_column(String(32))  # robustness | fairness
    created_at: Mapped[datetime] = _created()

    task: Mapped[Task] = relationship(back_populates="datasets")
    derived_from: Mapped[Dataset | None] = relationship(remote_side=[id])


class Submission(Base):
    """A model uploaded for a task; evaluated by one job per dataset."""

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    user_id: Mapped[int | None] = _ref("users.id", "SET NULL")
    name: Mapped[str] = mapped_column(String(128))
    bundle_sha256: Mapped[str] = mapped_column(String(64))
    artifact_key: Mapped[str] = mapped_column(String(256))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    is_baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    # Set when a platform fault failed it, so it does not count against the quota.
    platform_fault: Mapped[bool] = mapped_column(Boolean, default=False)
    # The model card as its submitter last edited it; None: as the manifest gives it.
    card: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Unpublished: off the public board; its submitter, the task owner and admins see it.
    published: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # A new release of an earlier submission (set once, at creation, so no cycle can form);
    # lineage_id is the lineage's first release (None on that first release itself).
    release_of_id: Mapped[int | None] = _ref("submissions.id", "SET NULL")
    lineage_id: Mapped[int | None] = _ref("submissions.id", "SET NULL", index=True)
    # bundle | predictions (``states.SubmissionKind``): a predictions-only submission has
    # no bundle (its artifact is the predictions it was given) and is never run.
    kind: Mapped[str] = mapped_column(String(16), default="bundle", server_default="bundle")
    created_at: Mapped[datetime] = _created()

    jobs: Mapped[list[Job]] = relationship(back_populates="submission")

    @property
    def lineage(self) -> int:
        """The id of the lineage this submission is a release of: its first release's."""
        return self.lineage_id if self.lineage_id is not None else self.id


class Job(Base):
    """One (submission, dataset) evaluation, leased by one worker at a time."""

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("submission_id", "dataset_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _ref("submissions.id", "CASCADE")
    dataset_id: Mapped[int] = _ref("datasets.id", "CASCADE")
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    queue: Mapped[str] = mapped_column(String(16), default="cpu")
    reason: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(Text)
    log_tail: Mapped[str | None] = mapped_column(Text)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    # Examples predicted so far of those in all, as the worker last wrote them (issue 19);
    # None until the first batch.
    examples_done: Mapped[int | None] = mapped_column(Integer)
    examples_total: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Platform faults (an unreachable engine or store) are waits: when the job met the
    # first of a run of them, how many, and when it may be claimed again.
    fault_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    faults: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    submission: Mapped[Submission] = relationship(back_populates="jobs")
    dataset: Mapped[Dataset] = relationship()
    result: Mapped[Result | None] = relationship(back_populates="job")


class WorkerBeat(Base):
    """A live worker process, as its heartbeat reports it (the readiness of its parts).

    One row per process (``host:pid``), rewritten every beat and removed at a clean stop;
    a row whose ``expires_at`` has passed is a worker that died or lost the database.
    """

    __tablename__ = "worker_beats"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    #: The sandbox engine as this worker sees it: ``ok``, ``down`` or ``unused``.
    engine: Mapped[str] = mapped_column(String(16))
    #: The artifact store as this worker sees it: ``ok`` or ``down``.
    store: Mapped[str] = mapped_column(String(16))
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class Result(Base):
    """The metrics of one finished job; written once (unique on job)."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = _ref("jobs.id", "CASCADE", unique=True)
    submission_id: Mapped[int] = _ref("submissions.id", "CASCADE")
    dataset_id: Mapped[int] = _ref("datasets.id", "CASCADE")
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Artifact key of per-example predictions (JSONL), for drill-down and intervals.
    predictions_key: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[datetime] = _created()

    job: Mapped[Job] = relationship(back_populates="result")


class BoardEntry(Base):
    """A submission's row of its task's leaderboard, derived once from its jobs' results.

    Kept until what it was derived from changes: ``source`` is a digest of the
    submission's name and owner, its jobs' statuses and results, and the task's datasets
    with their weights; a row whose digest no longer matches is derived again on the next
    read (``leaderboard.aggregates``), so no writer has to remember to invalidate it.
    """

    __tablename__ = "board_entries"

    submission_id: Mapped[int] = _ref("submissions.id", "CASCADE", primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE", index=True)
    source: Mapped[str] = mapped_column(String(64))
    entry: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The datasets' digest the row was derived or last checked under, and the task's
    #: :class:`BoardVersion` counter it was known current at: while
    #: :class:`BoardRowVersion` records its submission at no later value, the row is
    #: read as stored, its facts not queried (None: stored before migration 0019).
    digest: Mapped[str | None] = mapped_column(String(64))
    read_at: Mapped[int | None] = mapped_column(BigInteger)


class BoardVersion(Base):
    """A task's board version: a counter that database triggers bump, in the writing
    transaction, on every write to what the board is derived from (submissions, jobs'
    statuses, results, datasets, the task, phases, users' names; migration
    ``0017_board_version``). It only grows, and a task's row is never deleted, so a
    cached board stored with one value is current exactly while the row still holds it
    (``leaderboard.aggregates.load_board``)."""

    __tablename__ = "board_versions"

    task_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)


class BoardRowVersion(Base):
    """Which submissions' board rows a bump of their task's :class:`BoardVersion` changed:
    the same triggers record, per submission a write reaches, the counter value they
    bumped its task's to (migration ``0018_board_row_versions``). A process that kept the
    board read at counter ``c`` reads again only the submissions recorded above ``c``.
    A deleted submission's record stays (no foreign key): it tells that process to drop
    the row."""

    __tablename__ = "board_row_versions"
    __table_args__ = (Index("ix_board_row_versions_task_version", "task_id", "version"),)

    task_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    submission_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger)


class Round(Base):
    """A collection round of a task, with its target models."""

    __tablename__ = "rounds"
    __table_args__ = (UniqueConstraint("task_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="open")
    target_submission_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    dataset_id: Mapped[int | None] = _ref("datasets.id", "SET NULL")
    opened_at: Mapped[datetime] = _created()
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Snapshot(Base):
    """A frozen copy of a task's public board, numbered per task and never changed.

    The board itself is two artifacts (its JSON and its CSV, written once), so that what a
    paper cites stays byte-identical whatever models and rounds arrive later.
    """

    __tablename__ = "snapshots"
    __table_args__ = (UniqueConstraint("task_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[int | None] = _ref("users.id", "SET NULL")
    json_key: Mapped[str] = mapped_column(String(256))
    csv_key: Mapped[str] = mapped_column(String(256))
    json_sha256: Mapped[str] = mapped_column(String(64))
    csv_sha256: Mapped[str] = mapped_column(String(64))
    models: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = _created()


class SuiteVersion(Base):
    """A numbered cut of a task's regression suite: what was stored when it was made.

    The suite itself is derived on export from rows that never change once written
    (datasets, releases, results), limited to the ones named here: so exporting a version
    again gives the same bytes, whatever arrives (or commits late) after the cut.
    """

    __tablename__ = "suite_versions"
    __table_args__ = (UniqueConstraint("task_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    number: Mapped[int] = mapped_column(Integer)
    created_by: Mapped[int | None] = _ref("users.id", "SET NULL")
    #: The original datasets, the lineages' releases and their results at the cut (ids).
    dataset_ids: Mapped[list[Any]] = mapped_column(JSON)
    release_ids: Mapped[list[Any]] = mapped_column(JSON)
    result_ids: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = _created()


class Example(Base):
    """An example written by an annotator (or captured from production) for a round."""

    __tablename__ = "examples"
    # A production input queued from traffic carries its normalised inputs' digest, so the
    # same input is never queued twice for a task, even by two checks at once (NULLs, the
    # other sources, never clash).
    __table_args__ = (UniqueConstraint("task_id", "input_key", name="uq_examples_input_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    round_id: Mapped[int | None] = _ref("rounds.id", "CASCADE")
    author_id: Mapped[int | None] = _ref("users.id", "SET NULL")
    target_submission_id: Mapped[int | None] = _ref("submissions.id", "SET NULL")
    # "collection", "failure" or "traffic" (an unlabeled production input: gold is {}
    # until validators agree on a label).
    source: Mapped[str] = mapped_column(String(16), default="collection")
    input_key: Mapped[str | None] = mapped_column(String(64))
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON)
    gold: Mapped[dict[str, Any]] = mapped_column(JSON)
    model_output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fooled: Mapped[bool] = mapped_column(Boolean, default=False)
    explanation: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    created_at: Mapped[datetime] = _created()


class Validation(Base):
    """One validator's verdict on an example; one per (example, user)."""

    __tablename__ = "validations"
    __table_args__ = (UniqueConstraint("example_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    example_id: Mapped[int] = _ref("examples.id", "CASCADE")
    user_id: Mapped[int] = _ref("users.id", "CASCADE")
    verdict: Mapped[str] = mapped_column(String(16))
    # The task owner's verdict settles the example whatever the others said: recorded as
    # such, so an override stays visible (issue 19).
    by_owner: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    # The label a validator gave an unlabeled traffic input (verdict "labelled").
    label: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()


class Rerun(Base):
    """One re-run of a submission's failed jobs, by whom: re-runs use the sandbox, so they
    count against the caller's daily quota like submissions."""

    __tablename__ = "reruns"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _ref("submissions.id", "CASCADE")
    user_id: Mapped[int] = _ref("users.id", "CASCADE", index=True)
    created_at: Mapped[datetime] = _created()


class Upload(Base):
    """A resumable upload: bytes received so far, checked against a sha256 at the end.

    ``state`` moves open -> checking -> completed (or rejected) by conditional updates, so
    one upload becomes at most one submission whatever the concurrency.
    """

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[int | None] = _ref("users.id", "CASCADE")
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    filename: Mapped[str] = mapped_column(String(256))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    received: Mapped[int] = mapped_column(BigInteger, default=0)
    state: Mapped[str] = mapped_column(String(16), default="open", index=True)
    submission_id: Mapped[int | None] = _ref("submissions.id", "SET NULL")
    # The submission the uploaded model is a new release of, as the upload named it
    # (checked when it starts and again when it becomes a submission).
    release_of_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DriftCheck(Base):
    """One check of production inputs against a task's datasets, numbered per task.

    ``report`` is the check as the API shows it to the task owner (statistics, the
    reference used with hidden sets counted but never named, the histogram of shift
    scores, the most shifted inputs and what became of them); it is never changed.
    """

    __tablename__ = "drift_checks"
    __table_args__ = (UniqueConstraint("task_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    number: Mapped[int] = mapped_column(Integer)
    created_by: Mapped[int | None] = _ref("users.id", "SET NULL")
    auc: Mapped[float] = mapped_column(Float)
    p_value: Mapped[float] = mapped_column(Float)
    shifted: Mapped[bool] = mapped_column(Boolean)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = _created()


class Phase(Base):
    """A private phase of a task: hidden sets whose scores stay withheld until revealed.

    While a phase is open (not revealed) its datasets are left out of every board and their
    scores are shown to the task owner only; each user may make at most
    ``submission_limit`` submissions in it. Revealing it closes it: its scores go to their
    submitters, and onto the public board when ``public`` (``leaderboard/phases.py``).
    """

    __tablename__ = "phases"
    __table_args__ = (UniqueConstraint("task_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[str] = _ref("tasks.id", "CASCADE")
    name: Mapped[str] = mapped_column(String(64))
    submission_limit: Mapped[int] = mapped_column(Integer)
    revealed: Mapped[bool] = mapped_column(Boolean, default=False)
    # Revealed onto the public board too (else only to each submitter).
    public: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = _created()
    revealed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class PhaseDataset(Base):
    """A hidden dataset of a phase; a dataset is in one phase at most."""

    __tablename__ = "phase_datasets"

    dataset_id: Mapped[int] = _ref("datasets.id", "CASCADE", primary_key=True)
    phase_id: Mapped[int] = _ref("phases.id", "CASCADE", index=True)


class PhaseEntry(Base):
    """One use of a phase's per-user limit: a submission made while the phase was open, or
    a predictions file refused on one of its hidden sets (``submission_id`` None), which
    counts too so that refusals are no free oracle on the set."""

    __tablename__ = "phase_entries"

    id: Mapped[int] = mapped_column(primary_key=True)
    phase_id: Mapped[int] = _ref("phases.id", "CASCADE", index=True)
    user_id: Mapped[int] = _ref("users.id", "CASCADE", index=True)
    submission_id: Mapped[int | None] = _ref("submissions.id", "CASCADE")
    created_at: Mapped[datetime] = _created()
