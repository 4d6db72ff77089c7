"""Resumable uploads of model bundles (and bundles holding image tarballs).

1. ``create_upload``: the client announces the file's name, size and sha256; the size
   limit and the daily quota are checked before a byte is sent.
2. ``write_chunk``: each chunk is sent at the offset the server reports as ``received``
   and stored as its own artifact (``uploads/<id>/<offset>``), written atomically: a
   dropped connection loses at most the chunk in flight, and the client resumes from
   ``received``. Chunks work on any fsspec store (S3 has no append).
3. ``complete_upload``: the chunks are joined into ``bundles/<sha256><suffix>`` while the
   sha256 is checked, the bundle is unpacked safely and validated, and a submission is
   created and its jobs queued. Completing twice returns the same submission.
"""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

from sqlalchemy import select, update

from datasets_registry import get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, InvalidBundle, NotFound, PermissionDenied, UsageError
from evalboard.core.tables import Submission, Upload
from leaderboard.accounts import Principal
from leaderboard.schemas import UploadCreate, UploadPublic
from leaderboard.submissions import check_quota, create_submission
from submission_sandbox.archive import ARCHIVE_SUFFIXES, ArchiveCaps
from submission_sandbox.bundle import load_bundle

__all__ = [
    "CHUNK_SIZE",
    "UploadTooLarge",
    "complete_upload",
    "create_upload",
    "get_upload",
    "upload_public",
    "write_chunk",
]

CHUNK_SIZE = 8 * 1024**2
_COPY = 1024**2


class UploadTooLarge(UsageError):
    """More bytes than the limit or than announced."""

    http_status = 413


def _suffix(filename: str) -> str:
    lowered = filename.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lowered.endswith(suffix):
            return suffix
    raise InvalidBundle(
        f"{filename!r} is not an archive; upload a {', '.join(ARCHIVE_SUFFIXES)} "
        "(`evalboard model upload DIR` packs a directory for you)"
    )


def _part_key(upload_id: str, offset: int) -> str:
    return f"uploads/{upload_id}/{offset:015d}"


def _artifact_key(upload: Upload) -> str:
    return f"bundles/{upload.sha256}{_suffix(upload.filename)}"


def _submission_of(ctx: Context, upload: Upload) -> Submission | None:
    """The submission a completed upload became (same bundle file, user and task)."""
    if not upload.completed:
        return None
    with ctx.db.session() as session:
        return session.scalar(
            select(Submission)
            .where(
                Submission.artifact_key == _artifact_key(upload),
                Submission.user_id == upload.user_id,
                Submission.task_id == upload.task_id,
                Submission.created_at >= upload.created_at,
            )
            .order_by(Submission.id)
            .limit(1)
        )


def upload_public(ctx: Context, upload: Upload) -> UploadPublic:
    submission = _submission_of(ctx, upload)
    return UploadPublic(
        id=upload.id,
        task=upload.task_id,
        filename=upload.filename,
        size=upload.size,
        sha256=upload.sha256,
        received=upload.received,
        completed=upload.completed,
        chunk_size=CHUNK_SIZE,
        submission_id=submission.id if submission else None,
    )


def create_upload(ctx: Context, principal: Principal, body: UploadCreate) -> Upload:
    principal.require_signed_in()
    get_task(ctx, body.task)
    if not principal.may_upload(body.task):
        raise PermissionDenied(
            f"{principal.name!r} may not upload models to {body.task!r}: ask an admin for the "
            "researcher role"
        )
    _suffix(body.filename)
    limit = ctx.settings.max_upload_bytes
    if body.size > limit:
        raise UploadTooLarge(
            f"{body.filename} is {body.size} bytes; the limit is {limit} "
            "(EVALBOARD_MAX_UPLOAD_BYTES). Remove what the model does not need"
        )
    check_quota(ctx, principal)
    with ctx.db.session() as session:
        upload = Upload(
            id=str(uuid.uuid4()),
            user_id=principal.user_id,
            task_id=body.task,
            filename=Path(body.filename).name,
            size=body.size,
            sha256=body.sha256,
        )
        session.add(upload)
    return upload


def get_upload(ctx: Context, principal: Principal, upload_id: str) -> Upload:
    principal.require_signed_in()
    with ctx.db.session() as session:
        upload = session.get(Upload, upload_id)
    if upload is None or (upload.user_id != principal.user_id and not principal.is_admin):
        raise NotFound(f"You have no upload {upload_id!r}; start one with POST /uploads")
    return upload


async def write_chunk(
    ctx: Context,
    principal: Principal,
    upload_id: str,
    *,
    offset: int,
    chunks: AsyncIterator[bytes],
) -> Upload:
    """Store one chunk starting at ``offset`` (which must equal ``received``)."""
    upload = get_upload(ctx, principal, upload_id)
    if upload.completed:
        raise Conflict(f"Upload {upload_id} is complete already; nothing more to send")
    if offset != upload.received:
        raise Conflict(
            f"This chunk starts at byte {offset}, but {upload.received} bytes are stored; "
            f"send from offset {upload.received}"
        )
    written = 0
    with ctx.artifacts.open_write(_part_key(upload_id, offset)) as handle:
        async for chunk in chunks:
            written += len(chunk)
            if offset + written > upload.size:
                raise UploadTooLarge(
                    f"More bytes than the {upload.size} announced; start a new upload"
                )
            handle.write(chunk)
        if written == 0:
            raise UsageError("Empty chunk: send the file's bytes as the request body")
    with ctx.db.session() as session:
        done = session.execute(
            update(Upload)
            .where(Upload.id == upload_id, Upload.received == offset)
            .values(received=offset + written)
        )
        if getattr(done, "rowcount", 0) != 1:
            raise Conflict(
                "Another request wrote this chunk at the same time; ask for the "
                "upload's state (GET) and resume from its `received`"
            )
        fresh = session.get(Upload, upload_id)
        assert fresh is not None
        return fresh


def _read_parts(ctx: Context, upload: Upload, out: IO[bytes] | None) -> None:
    """Read the chunks in order (into ``out`` when given) while checking the sha256."""
    digest = hashlib.sha256()
    offset = 0
    while offset < upload.size:
        part = _part_key(upload.id, offset)
        with ctx.artifacts.open(part) as source:
            while block := source.read(_COPY):
                digest.update(block)
                if out is not None:
                    out.write(block)
        offset += ctx.artifacts.size(part)
    if digest.hexdigest() != upload.sha256:
        raise UsageError(
            f"The bytes received hash to {digest.hexdigest()[:16]}..., not the announced "
            f"{upload.sha256[:16]}...; the file changed or was corrupted. Upload it again"
        )


def _join_parts(ctx: Context, upload: Upload, key: str) -> None:
    """Concatenate the chunks into ``key`` while checking the sha256; nothing on mismatch.

    When ``key`` is stored already (the same bundle, uploaded before, perhaps by someone
    else), the bytes received are still checked: announcing a known sha256 must not stand
    in for sending the file.
    """
    if ctx.artifacts.exists(key):
        _read_parts(ctx, upload, None)
        return
    with ctx.artifacts.open_write(key) as out:
        _read_parts(ctx, upload, out)


def _drop_parts(ctx: Context, upload: Upload) -> None:
    offset = 0
    while offset < upload.received:
        part = _part_key(upload.id, offset)
        if not ctx.artifacts.exists(part):
            break
        offset += ctx.artifacts.size(part)
        ctx.artifacts.delete(part)


def complete_upload(ctx: Context, principal: Principal, upload_id: str) -> Submission:
    """Check, validate and submit a fully received upload; its jobs are queued."""
    upload = get_upload(ctx, principal, upload_id)
    existing = _submission_of(ctx, upload)
    if existing is not None:
        return existing
    if upload.completed:
        raise Conflict(f"Upload {upload_id} is complete already; start a new upload")
    if upload.received != upload.size:
        raise Conflict(
            f"Only {upload.received} of {upload.size} bytes arrived; send the rest from "
            f"offset {upload.received}"
        )
    check_quota(ctx, principal)
    key = _artifact_key(upload)
    _join_parts(ctx, upload, key)
    with tempfile.TemporaryDirectory(prefix="evalboard-upload-") as tmp:
        local = ctx.artifacts.local_file(key, Path(tmp))
        caps = ArchiveCaps(max_bytes=max(ctx.settings.max_upload_bytes * 4, 1024**2))
        bundle = load_bundle(local, unpack_to=Path(tmp) / "unpacked", caps=caps)
    if bundle.manifest.task != upload.task_id:
        raise InvalidBundle(
            f"The bundle's manifest names task {bundle.manifest.task!r}, but it was uploaded to "
            f"{upload.task_id!r}; fix `task:` in evalboard.yaml or upload to that task"
        )
    submission = create_submission(
        ctx,
        principal,
        task_id=upload.task_id,
        manifest=bundle.manifest.model_dump(mode="json"),
        bundle_sha256=bundle.sha256,
        artifact_key=key,
    )
    with ctx.db.session() as session:
        session.execute(update(Upload).where(Upload.id == upload.id).values(completed=True))
    _drop_parts(ctx, upload)
    return submission
