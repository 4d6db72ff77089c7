"""Resumable uploads of model bundles (and bundles holding image tarballs).

1. ``create_upload``: the client announces the file's name, size and sha256; the size
   limit, the daily quota and the per-user caps on open uploads and bytes in flight are
   checked (in one transaction, the user's row locked) before a byte is sent.
2. ``write_chunk``: each chunk is sent at the offset the server reports as ``received``
   and stored as its own artifact (``uploads/<id>/<offset>``), written atomically: a
   dropped connection loses at most the chunk in flight, and the client resumes from
   ``received``. Chunks work on any fsspec store (S3 has no append).
3. ``complete_upload``: the chunks are joined into ``bundles/<sha256><suffix>`` while the
   sha256 is checked, the bundle is unpacked safely and validated, and a submission is
   created and its jobs queued. Completing twice returns the same submission.

Completion first claims the upload with a conditional update (``open`` -> ``checking``),
so of several concurrent requests one does the work and the others hear 409 (or, once it
is done, get its submission). A rejected upload (wrong sha256, invalid bundle) is
deleted with its chunks and counts against the daily quota; an upload with no chunk for
``upload_expiry_hours`` is swept by :func:`expire_uploads` (the server runs it on start
and then periodically).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from fastapi.concurrency import run_in_threadpool
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from datasets_registry import get_task
from evalboard.core.context import Context
from evalboard.core.errors import (
    Conflict,
    InvalidBundle,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    UsageError,
)
from evalboard.core.scratch import scratch_tree
from evalboard.core.states import UploadState
from evalboard.core.tables import Submission, Upload, utcnow
from evaluator import check_bundle_fits
from leaderboard.accounts import Principal, principal_for
from leaderboard.lineages import check_release_of
from leaderboard.phases import check_phase_limits
from leaderboard.schemas import UploadCreate, UploadPublic, from_row
from leaderboard.submissions import check_quota, create_submission, lock_user
from submission_sandbox import ARCHIVE_SUFFIXES, ArchiveCaps, check_bundle_task, load_bundle

__all__ = [
    "CHUNK_SIZE",
    "UploadTooLarge",
    "cancel_upload",
    "complete_upload",
    "create_upload",
    "expire_uploads",
    "expire_uploads_forever",
    "get_upload",
    "open_uploads",
    "upload_public",
    "write_chunk",
]

logger = logging.getLogger(__name__)

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
    """The submission a completed upload became."""
    if upload.submission_id is None:
        return None
    with ctx.db.session() as session:
        return session.get(Submission, upload.submission_id)


def upload_public(ctx: Context, upload: Upload) -> UploadPublic:
    submission = _submission_of(ctx, upload)
    return from_row(
        UploadPublic,
        upload,
        task=upload.task_id,
        completed=upload.state == UploadState.COMPLETED,
        state=UploadState(upload.state),
        chunk_size=CHUNK_SIZE,
        submission_id=submission.id if submission else None,
        release_of=upload.release_of_id,
    )


def create_upload(ctx: Context, principal: Principal, body: UploadCreate) -> Upload:
    principal.require_signed_in()
    get_task(ctx, body.task)
    principal.require_upload(body.task)
    _suffix(body.filename)
    limit = ctx.settings.max_upload_bytes
    if body.size > limit:
        raise UploadTooLarge(
            f"{body.filename} is {body.size} bytes; the limit is {limit} "
            "(EVALBOARD_MAX_UPLOAD_BYTES). Remove what the model does not need"
        )
    check_quota(ctx, principal)
    check_phase_limits(ctx, principal, body.task)
    if body.release_of is not None:  # early, before a byte is sent; checked again at the end
        check_release_of(ctx, principal, task_id=body.task, release_of=body.release_of)
    with ctx.db.session() as session:
        assert principal.user_id is not None
        lock_user(session, principal.user_id)
        upload = Upload(
            id=str(uuid.uuid4()),
            user_id=principal.user_id,
            task_id=body.task,
            filename=Path(body.filename).name,
            size=body.size,
            sha256=body.sha256,
            release_of_id=body.release_of,
        )
        session.add(upload)
        session.flush()
        # Counted after the insert, in its transaction: concurrent starts cannot all pass.
        _check_in_flight(ctx, session, principal.user_id)
    return upload


_IN_FLIGHT = (UploadState.OPEN.value, UploadState.CHECKING.value)


def _check_in_flight(ctx: Context, session: Session, user_id: int) -> None:
    """Refuse when the user's open uploads (the new one included) pass a per-user cap."""
    count, announced = session.execute(
        select(func.count(Upload.id), func.coalesce(func.sum(Upload.size), 0)).where(
            Upload.user_id == user_id, Upload.state.in_(_IN_FLIGHT)
        )
    ).one()
    settings = ctx.settings
    if count > settings.max_open_uploads:
        raise QuotaExceeded(
            f"You have {count - 1} uploads open, the most allowed "
            f"(EVALBOARD_MAX_OPEN_UPLOADS={settings.max_open_uploads}); complete or cancel "
            f"(DELETE /uploads/ID) them, or let them expire "
            f"({settings.upload_expiry_hours:g} h after their last chunk)"
        )
    if int(announced) > settings.max_upload_bytes_in_flight:
        raise QuotaExceeded(
            f"Your open uploads would announce {int(announced)} bytes in flight, more than the "
            f"{settings.max_upload_bytes_in_flight} allowed "
            "(EVALBOARD_MAX_UPLOAD_BYTES_IN_FLIGHT); complete or cancel the open ones first"
        )


_OPEN = Upload.state == UploadState.OPEN.value


def _moved(session: Session, upload_id: str, *where: ColumnElement[bool], **values: Any) -> bool:
    """Set ``values`` (and ``updated_at``) on the upload if ``where`` holds; False if not
    (another request changed it first)."""
    done = session.execute(
        update(Upload).where(Upload.id == upload_id, *where).values(**values, updated_at=utcnow())
    )
    return getattr(done, "rowcount", 0) == 1


def cancel_upload(ctx: Context, principal: Principal, upload_id: str) -> None:
    """Give up an open upload: its chunks are deleted and it no longer counts as open."""
    get_upload(ctx, principal, upload_id)
    with ctx.db.session() as session:
        if not _moved(session, upload_id, _OPEN, state=UploadState.CANCELLED.value):
            raise Conflict(f"Upload {upload_id} is not open; only an open upload can be cancelled")
    _drop_parts(ctx, upload_id)


def open_uploads(ctx: Context, user_id: int, *, task_id: str | None = None) -> list[Upload]:
    """The user's uploads that still take chunks (to resume), oldest first."""
    query = select(Upload).where(Upload.user_id == user_id, Upload.state == UploadState.OPEN.value)
    if task_id is not None:
        query = query.where(Upload.task_id == task_id)
    with ctx.db.session() as session:
        return list(session.scalars(query.order_by(Upload.created_at)))


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
    if upload.state != UploadState.OPEN:
        raise Conflict(f"Upload {upload_id} is {upload.state}; nothing more to send")
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
        if not _moved(
            session, upload_id, Upload.received == offset, _OPEN, received=offset + written
        ):
            now = session.get(Upload, upload_id)
            if now is None or now.state != UploadState.OPEN:
                # Cancelled, expired or completing meanwhile: keep none of its bytes.
                ctx.artifacts.delete(_part_key(upload_id, offset))
                raise Conflict(f"Upload {upload_id} stopped taking chunks meanwhile")
            raise Conflict(
                "Another request wrote this chunk at the same time; ask for the "
                "upload's state (GET) and resume from its `received`"
            )
        fresh = session.get(Upload, upload_id)
        assert fresh is not None
        return fresh


def _read_parts(ctx: Context, upload: Upload, out: IO[bytes] | None) -> None:
    """Read the chunks in order (into ``out`` when given) while checking the sha256.

    Two requests writing the chunk at one offset at once both store it, the later over
    the earlier, while only the first recorded counts: the stored chunks may then not
    join into the file (none starts where the one before ends), which is the client's
    to resend, not a server fault.
    """
    digest = hashlib.sha256()
    offset = 0
    while offset < upload.size:
        part = _part_key(upload.id, offset)
        try:
            with ctx.artifacts.open(part) as source:
                while block := source.read(_COPY):
                    digest.update(block)
                    if out is not None:
                        out.write(block)
        except FileNotFoundError:  # no extra look-up per part: the open says so
            raise UsageError(
                f"The chunks received do not join into the {upload.size}-byte file (none "
                f"starts at byte {offset}: were two chunks sent at once?); upload the file "
                "again, one chunk at a time"
            ) from None
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


def _drop_parts(ctx: Context, upload_id: str) -> None:
    """Delete every chunk of the upload, including one a dropped request left half
    written (its name is not at a known offset)."""
    folder = f"uploads/{upload_id}"
    if ctx.artifacts.exists(folder):
        ctx.artifacts.delete_tree(folder)


def _claim(ctx: Context, upload_id: str) -> bool:
    """Move a fully received upload from open to checking; False when another request
    did first (or it is not open)."""
    with ctx.db.session() as session:
        full = Upload.received == Upload.size
        return _moved(session, upload_id, _OPEN, full, state=UploadState.CHECKING.value)


def _release(ctx: Context, upload_id: str, state: UploadState) -> bool:
    """End this request's claim (checking -> ``state``); a no-op (False) when the upload
    became a submission already, even if something after that failed (queueing its jobs)."""
    with ctx.db.session() as session:
        return _moved(session, upload_id, Upload.state == UploadState.CHECKING.value, state=state)


def _not_completable(ctx: Context, upload_id: str) -> Submission:
    """What a request that lost the claim hears: the submission, or why not."""
    with ctx.db.session() as session:
        upload = session.get(Upload, upload_id)
    assert upload is not None
    existing = _submission_of(ctx, upload)
    if existing is not None:
        return existing
    if upload.state == UploadState.CHECKING:
        raise Conflict(
            f"Upload {upload_id} is being completed by another request; ask for its state "
            "(GET) in a moment"
        )
    if upload.state != UploadState.OPEN:
        raise Conflict(f"Upload {upload_id} was {upload.state}; start a new upload")
    raise Conflict(
        f"Only {upload.received} of {upload.size} bytes arrived; send the rest from "
        f"offset {upload.received}"
    )


def _forget_bundle(ctx: Context, key: str, joined_here: bool) -> None:
    """Delete the bundle this request joined, unless a submission uses it meanwhile."""
    if not joined_here:
        return
    with ctx.db.session() as session:
        used = session.scalar(select(Submission.id).where(Submission.artifact_key == key))
    if used is None:
        ctx.artifacts.delete(key)


def _release_of(upload: Upload, in_manifest: int | None) -> int | None:
    """The model the upload is a new release of: as the upload or the manifest names it."""
    if upload.release_of_id is not None and in_manifest not in (None, upload.release_of_id):
        raise InvalidBundle(
            f"The upload is a release of submission {upload.release_of_id}, but the bundle's "
            f"evalboard.yaml says release_of: {in_manifest}; make them agree (or drop one)"
        )
    return upload.release_of_id if upload.release_of_id is not None else in_manifest


def complete_upload(ctx: Context, principal: Principal, upload_id: str) -> Submission:
    """Check, validate and submit a fully received upload; its jobs are queued."""
    upload = get_upload(ctx, principal, upload_id)
    if upload.state == UploadState.OPEN and upload.received == upload.size:
        check_quota(ctx, principal)  # early, before the work; counted again at the insert
    if not _claim(ctx, upload_id):
        return _not_completable(ctx, upload_id)
    if upload.user_id != principal.user_id and upload.user_id is not None:
        # An admin completing someone's upload: it stays theirs, on their quota.
        principal = principal_for(ctx, upload.user_id)
    key = _artifact_key(upload)
    joined_here = not ctx.artifacts.exists(key)
    try:
        _join_parts(ctx, upload, key)
        with scratch_tree("evalboard-upload") as tmp:
            local = ctx.artifacts.local_file(key, Path(tmp))
            caps = ArchiveCaps(max_bytes=max(ctx.settings.max_upload_bytes * 4, 1024**2))
            bundle = load_bundle(local, unpack_to=Path(tmp) / "unpacked", caps=caps)
        check_bundle_task(bundle.manifest, upload.task_id)
        check_bundle_fits(bundle.manifest, get_task(ctx, upload.task_id))
        submission = create_submission(
            ctx,
            principal,
            task_id=upload.task_id,
            manifest=bundle.manifest.model_dump(mode="json"),
            bundle_sha256=bundle.sha256,
            artifact_key=key,
            upload_id=upload.id,
            release_of=_release_of(upload, bundle.manifest.release_of),
        )
    except QuotaExceeded:
        # Kept open, bytes and all, as when the early check refuses: it can be completed
        # once the quota has room (or cancelled, or left to expire).
        _release(ctx, upload_id, UploadState.OPEN)
        _forget_bundle(ctx, key, joined_here)
        raise
    except (UsageError, NotFound, PermissionDenied):
        # Nothing of a rejected upload is kept, and it counts against the quota (a
        # release of a model that is not the caller's is refused here too).
        _release(ctx, upload_id, UploadState.REJECTED)
        _drop_parts(ctx, upload_id)
        _forget_bundle(ctx, key, joined_here)
        raise
    except BaseException:
        if not _release(ctx, upload_id, UploadState.OPEN):  # our fault: the client may retry
            _drop_parts(ctx, upload_id)  # it is a submission already; its parts are not needed
        raise
    _drop_parts(ctx, upload_id)
    return submission


def expire_uploads(ctx: Context) -> int:
    """Delete the chunks of uploads left open (or stuck checking) past
    ``upload_expiry_hours``; returns how many expired."""
    cutoff = utcnow() - timedelta(hours=ctx.settings.upload_expiry_hours)
    with ctx.db.session() as session:
        stale = list(
            session.scalars(
                select(Upload.id).where(Upload.state.in_(_IN_FLIGHT), Upload.updated_at < cutoff)
            )
        )
        if stale:
            session.execute(
                update(Upload)
                .where(Upload.id.in_(stale), Upload.state.in_(_IN_FLIGHT))
                .values(state=UploadState.EXPIRED.value, updated_at=utcnow())
            )
    for upload_id in stale:
        _drop_parts(ctx, upload_id)
    return len(stale)


async def expire_uploads_forever(ctx: Context) -> None:
    """Run :func:`expire_uploads` now and then every quarter of the expiry time (at most
    hourly), until cancelled; the server runs this for its whole life."""
    every_s = min(3600.0, ctx.settings.upload_expiry_hours * 900)
    while True:
        try:
            expired = await run_in_threadpool(expire_uploads, ctx)
            if expired:
                logger.info("expired %d stale uploads and deleted their chunks", expired)
        except Exception as exc:  # the database may be away; try again next time
            logger.debug("expiring uploads failed: %s", exc)
        await asyncio.sleep(every_s)
