"""Resumable uploads: POST to start, PATCH chunks at ``?offset=``, GET to resume, POST
``/complete`` to check the sha256 and submit, DELETE to give up."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from leaderboard.auth import CtxDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.schemas import SubmissionStatusPublic, UploadCreate, UploadPublic
from leaderboard.submissions import submission_status
from leaderboard.uploads import (
    cancel_upload,
    complete_upload,
    create_upload,
    get_upload,
    upload_public,
    write_chunk,
)

__all__ = ["router"]

router = APIRouter(prefix="/uploads", tags=["uploads"], responses=ERROR_RESPONSES)

UploadId = Annotated[str, Path(max_length=36, description="The id POST /uploads returned.")]

_BINARY_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post("", status_code=status.HTTP_201_CREATED, summary="Start an upload")
def start(body: UploadCreate, ctx: CtxDep, principal: SignedInDep) -> UploadPublic:
    return upload_public(ctx, create_upload(ctx, principal, body))


@router.get("/{upload_id}", summary="An upload's state: resume from `received`")
def show(upload_id: UploadId, ctx: CtxDep, principal: SignedInDep) -> UploadPublic:
    return upload_public(ctx, get_upload(ctx, principal, upload_id))


@router.patch("/{upload_id}", summary="Send the next chunk", openapi_extra=_BINARY_BODY)
async def chunk(
    upload_id: UploadId,
    request: Request,
    ctx: CtxDep,
    principal: SignedInDep,
    offset: Annotated[int, Query(ge=0, le=2**62, description="Must equal `received`.")],
) -> UploadPublic:
    upload = await write_chunk(ctx, principal, upload_id, offset=offset, chunks=request.stream())
    return upload_public(ctx, upload)


@router.post("/{upload_id}/complete", summary="Check the sha256, validate, submit")
def complete(upload_id: UploadId, ctx: CtxDep, principal: SignedInDep) -> SubmissionStatusPublic:
    submission = complete_upload(ctx, principal, upload_id)
    return submission_status(ctx, principal, submission.id)


@router.delete(
    "/{upload_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Cancel an open upload (its bytes are deleted)",
)
def cancel(upload_id: UploadId, ctx: CtxDep, principal: SignedInDep) -> None:
    cancel_upload(ctx, principal, upload_id)
