"""Snapshots: a task's public board frozen as a numbered, citable, immutable record.

A snapshot is the board as an anonymous viewer sees it at that moment, with the owner's
weights: the same :func:`~leaderboard.ranking.build_leaderboard` output as the live board
(every figure, the intervals, the dataset weights), the non-hidden datasets' hashes, and
each ranked model's provenance on those datasets. Hidden sets keep the live board's rules:
they count in the scores, their names, hashes and per-dataset figures are never written.

The JSON document and the CSV are written once to the artifact store, content-addressed,
and the row keeps their sha256: what a paper cites is those bytes, whatever models,
rounds or code changes come later.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound
from evalboard.core.states import Access, JobStatus
from evalboard.core.tables import Job, Snapshot, Submission, Task, utcnow
from leaderboard.accounts import Principal
from leaderboard.cards import public_table
from leaderboard.ranking import build_leaderboard, to_csv
from leaderboard.schemas import LeaderboardPublic
from leaderboard.table import TaskTable

__all__ = [
    "SNAPSHOT_SCHEMA_VERSION",
    "bibtex",
    "create_snapshot",
    "get_snapshot",
    "list_snapshots",
    "snapshot_bytes",
    "stored_board",
]

SNAPSHOT_SCHEMA_VERSION = 1


def _provenance(ctx: Context, table: TaskTable, submission_ids: list[int]) -> dict[str, Any]:
    """Per ranked model: its bundle, runtime and each non-hidden scoring dataset's result
    provenance (hidden sets left out, as on the live board)."""
    shown = {d.id: d.name for d in table.scoring if d.access != Access.HIDDEN}
    with ctx.db.session() as session:
        submissions = session.scalars(
            select(Submission)
            .where(Submission.id.in_(submission_ids))
            .options(selectinload(Submission.jobs).selectinload(Job.result))
            .order_by(Submission.id)
        ).all()
        return {
            str(s.id): {
                "bundle_sha256": s.bundle_sha256,
                "runtime": s.manifest.get("runtime"),
                "datasets": {
                    shown[job.dataset_id]: job.result.provenance
                    for job in sorted(s.jobs, key=lambda j: shown.get(j.dataset_id, ""))
                    if job.dataset_id in shown
                    and job.status == JobStatus.FINISHED
                    and job.result is not None
                },
            }
            for s in submissions
        }


def _document(
    ctx: Context, task_id: str, number: int, title: str, taken_at: datetime
) -> dict[str, Any]:
    # The public view: what an anonymous visitor of the live board sees right now.
    table = public_table(ctx, task_id)
    board = build_leaderboard(ctx, table)
    ranked = [r.submission_id for r in board.rows if r.submission_id is not None]
    return {
        "schema_version": SNAPSHOT_SCHEMA_VERSION,
        "task": {"id": task_id, "name": table.task.name},
        "number": number,
        "title": title,
        "taken_at": taken_at.isoformat(),
        "weights": board.weights,
        "dataset_weights": board.dataset_weights,
        "datasets": [
            {
                "name": d.name,
                "round": d.round,
                "access": d.access,
                "weight": d.weight,
                "rows": d.rows,
                "sha256": d.sha256,
                "perturbation": d.perturbation,
            }
            for d in table.scoring
            if d.access != Access.HIDDEN
        ],
        "hidden_sets": sum(1 for d in table.originals if d.access == Access.HIDDEN),
        "board": board.model_dump(mode="json"),
        "provenance": _provenance(ctx, table, ranked),
    }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def create_snapshot(
    ctx: Context, principal: Principal, task_id: str, *, title: str = ""
) -> Snapshot:
    """Freeze the task's public board as its next numbered snapshot (task owner only).

    Raises:
        PermissionDenied: the caller does not own the task.
        Conflict: another snapshot took the same number at the same moment (try again).
    """
    principal.require_owner(task_id, doing="take snapshots")
    with ctx.db.session() as session:
        if session.get(Task, task_id) is None:
            raise NotFound(f"No task {task_id!r}")
        number = (
            int(
                session.scalar(select(func.max(Snapshot.number)).where(Snapshot.task_id == task_id))
                or 0
            )
            + 1
        )
    snapshot = Snapshot(
        task_id=task_id,
        number=number,
        title=title,
        created_by=principal.user_id,
        created_at=utcnow(),
    )
    document = _document(ctx, task_id, number, title, snapshot.created_at)
    json_bytes = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()
    csv_bytes = to_csv(stored_board(document)).encode()
    snapshot.json_sha256, snapshot.csv_sha256 = _sha256(json_bytes), _sha256(csv_bytes)
    # Content-addressed: a key is never written with other bytes.
    snapshot.json_key = f"snapshots/{task_id}/{snapshot.json_sha256}.json"
    snapshot.csv_key = f"snapshots/{task_id}/{snapshot.csv_sha256}.csv"
    snapshot.models = sum(1 for r in document["board"]["rows"] if r["rank"] is not None)
    ctx.artifacts.put_bytes(snapshot.json_key, json_bytes)
    ctx.artifacts.put_bytes(snapshot.csv_key, csv_bytes)
    try:
        with ctx.db.session() as session:
            session.add(snapshot)
    except IntegrityError:
        raise Conflict(
            f"Snapshot {number} of {task_id!r} was just taken by someone else; try again"
        ) from None
    return snapshot


def stored_board(document: dict[str, Any]) -> LeaderboardPublic:
    """The board of a snapshot document, in the live board's schema."""
    return LeaderboardPublic.model_validate(document["board"])


def list_snapshots(ctx: Context, task_id: str) -> list[Snapshot]:
    with ctx.db.session() as session:
        return list(
            session.scalars(
                select(Snapshot).where(Snapshot.task_id == task_id).order_by(Snapshot.number)
            ).all()
        )


def get_snapshot(ctx: Context, task_id: str, number: int) -> Snapshot:
    with ctx.db.session() as session:
        snapshot = session.scalar(
            select(Snapshot).where(Snapshot.task_id == task_id, Snapshot.number == number)
        )
    if snapshot is None:
        raise NotFound(f"Task {task_id!r} has no snapshot {number}")
    return snapshot


def snapshot_bytes(ctx: Context, snapshot: Snapshot, kind: str) -> bytes:
    """The stored ``json`` or ``csv`` bytes, checked against the sha256 taken when frozen."""
    key, digest = (
        (snapshot.json_key, snapshot.json_sha256)
        if kind == "json"
        else (snapshot.csv_key, snapshot.csv_sha256)
    )
    data = ctx.artifacts.read_bytes(key)
    if _sha256(data) != digest:
        raise Conflict(
            f"Snapshot {snapshot.number} of {snapshot.task_id!r}: the stored {kind} does not "
            "match its sha256; the artifact store was altered"
        )
    return data


def _bib(text: str) -> str:
    # BibTeX groups on braces and escapes with backslashes: keep neither from user text.
    return re.sub(r"[{}\\]", "", text)


def bibtex(snapshot: Snapshot, *, task_name: str, url: str) -> str:
    """A BibTeX entry that cites the snapshot's permalink and its CSV's sha256."""
    taken = snapshot.created_at
    title = f"{task_name} leaderboard, snapshot {snapshot.number}"
    if snapshot.title:
        title += f": {snapshot.title}"
    return (
        f"@misc{{evalboard-{snapshot.task_id}-{snapshot.number},\n"
        f"  title = {{{{{_bib(title)}}}}},\n"
        "  author = {{Evalboard}},\n"
        f"  year = {{{taken.year}}},\n"
        f"  month = {{{taken.month}}},\n"
        f"  howpublished = {{\\url{{{url}}}}},\n"
        f"  note = {{Snapshot {snapshot.number} of task {_bib(snapshot.task_id)}, taken "
        f"{taken.date().isoformat()}; CSV sha256 {snapshot.csv_sha256}}}\n"
        "}"
    )
