"""The researcher's own pages: my submissions, my API tokens, and the web upload.

The user's name in the header links to ``/ui/me``. A new token is shown once, in the
answer to the form that made it (never stored in the session: the cookie is signed, not
encrypted). The upload page is a small script (``static/upload.js``) over the uploads API
itself; the page only lists the tasks, limits and the caller's open uploads to resume.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from datasets_registry import get_task, list_tasks
from evalboard.core.context import Context
from evalboard.core.tables import TOKEN_LABEL_MAX
from leaderboard.accounts import Principal, create_token, get_user, list_tokens, revoke_token
from leaderboard.auth import CtxDep, PrincipalDep, csrf_token, sign_in
from leaderboard.routes._page import FORM_AGAIN, flash, form_csrf, redirect, render, signed_in
from leaderboard.submissions import submissions_of, uploads_today
from leaderboard.uploads import CHUNK_SIZE, open_uploads

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)


def _quota(ctx: Context, principal: Principal) -> dict[str, Any]:
    """Today's use of the daily quota (admins have none)."""
    return {
        "used": uploads_today(ctx, principal.require_signed_in()),
        "limit": None if principal.is_admin else ctx.settings.daily_upload_quota,
    }


@router.get("/me", response_class=HTMLResponse)
def my_page(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    user_id = signed_in(principal)
    return render(
        request,
        "account/me.html",
        principal,
        submissions=submissions_of(ctx, user_id),
        uploads=open_uploads(ctx, user_id),
        tasks=[t for t in list_tasks(ctx) if principal.may_upload(t.id)],
        quota=_quota(ctx, principal),
    )


def _tokens_page(
    request: Request, ctx: Context, principal: Principal, **extra: Any
) -> HTMLResponse:
    response = render(
        request,
        "account/tokens.html",
        principal,
        tokens=[token for token, _ in list_tokens(ctx, principal.user_id)],
        label_max=TOKEN_LABEL_MAX,
        **extra,
    )
    response.headers["Cache-Control"] = "no-store"  # a new token is on it once
    return response


@router.get("/me/tokens", response_class=HTMLResponse)
def tokens_page(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    signed_in(principal)
    return _tokens_page(request, ctx, principal)


@router.post("/me/tokens", response_class=HTMLResponse)
async def new_token(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    form = await form_csrf(request)
    principal.require_signed_in()
    label = str(form.get("label", "")).strip()
    if len(label) > TOKEN_LABEL_MAX:
        return _tokens_page(
            request,
            ctx,
            principal,
            status_code=FORM_AGAIN,
            error=f"A label has at most {TOKEN_LABEL_MAX} characters; this one has {len(label)}",
            kept_label=label,
        )
    token, row = create_token(ctx, principal.name, label=label)
    return _tokens_page(request, ctx, principal, created=token, created_id=row.id)


@router.post("/me/tokens/{token_id}/revoke")
async def revoke(
    token_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    await form_csrf(request)
    revoke_token(ctx, principal.require_signed_in(), token_id)
    # Revoking ends every session of the user (a leaked token is a warning sign); this
    # one, which proved itself with its CSRF token, signs in afresh.
    user = await run_in_threadpool(get_user, ctx, principal.name)
    sign_in(request, user)
    flash(request, f"Token {token_id} is revoked; your other browser sessions were signed out.")
    return redirect("/ui/me/tokens")


@router.get("/tasks/{task_id}/upload", response_class=HTMLResponse)
def upload_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    spec = get_task(ctx, task_id)
    user_id = signed_in(principal)
    principal.require_upload(task_id)
    unfinished = open_uploads(ctx, user_id, task_id=task_id)
    return render(
        request,
        "account/upload.html",
        principal,
        task=spec,
        uploads=unfinished,
        quota=_quota(ctx, principal),
        max_bytes=ctx.settings.max_upload_bytes,
        data={
            "task": task_id,
            "csrf": csrf_token(request),
            "chunk_size": CHUNK_SIZE,
            "open": [
                {"id": u.id, "filename": u.filename, "size": u.size, "sha256": u.sha256}
                for u in unfinished
            ],
        },
    )
