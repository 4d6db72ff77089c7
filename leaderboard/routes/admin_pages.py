"""The admin's pages: users and roles, API tokens, quotas, the job queue and failures.

Admins only: a signed-out visitor is sent to sign in, anyone else hears 403 (the same
error page as every refusal). Every form carries the session's CSRF token, checked
before the role, so a forged or stale session changes nothing. Changes go through the
rules' own homes (``accounts``, ``submissions.rerun`` / ``cancel``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from datasets_registry import list_tasks
from evalboard.core.context import Context
from evalboard.core.errors import NotFound, UsageError
from evalboard.core.states import JobStatus, Role
from leaderboard.accounts import (
    Principal,
    grant_role,
    list_tokens,
    revoke_role,
    revoke_token,
    token_owner,
)
from leaderboard.admin import (
    job_counts,
    job_submission,
    queue_rows,
    recent_failures,
    usage_today,
    user_rows,
)
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.routes._page import FORM_AGAIN, flash, form_csrf, redirect, render, signed_in
from leaderboard.submissions import cancel, rerun

__all__ = ["router"]

router = APIRouter(prefix="/ui/admin", include_in_schema=False)

#: The roles a form may grant or revoke (admin is a user's flag, set from the CLI).
_GRANTABLE = (Role.OWNER, Role.RESEARCHER, Role.ANNOTATOR)


def _admin(principal: Principal, doing: str) -> None:
    """Send a signed-out visitor to sign in; refuse anyone but an admin (403)."""
    signed_in(principal)
    principal.require_admin(doing=doing)


def _page(request: Request, principal: Principal, here: str, **context: Any) -> HTMLResponse:
    """The admin page ``here`` (its template ``admin/{here}.html``; the tab shown current)."""
    return render(request, f"admin/{here}.html", principal, here=here, **context)


@router.get("", response_class=HTMLResponse)
def overview(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    _admin(principal, "open the admin pages")
    return _page(
        request,
        principal,
        "overview",
        counts=job_counts(ctx),
        failures=recent_failures(ctx, limit=5),
    )


def _users_page(request: Request, ctx: Context, principal: Principal, **extra: Any) -> HTMLResponse:
    return _page(
        request,
        principal,
        "users",
        users=user_rows(ctx),
        tasks=[t.id for t in list_tasks(ctx)],
        roles=[r.value for r in _GRANTABLE],
        **extra,
    )


@router.get("/users", response_class=HTMLResponse)
def users(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    _admin(principal, "manage users")
    return _users_page(request, ctx, principal)


def _grant(form: dict[str, Any]) -> tuple[Role, str | None]:
    try:
        role = Role(str(form.get("role", "")))
    except ValueError:
        role = Role.ADMIN
    if role not in _GRANTABLE:
        raise UsageError(f"role must be one of {', '.join(r.value for r in _GRANTABLE)}")
    task = str(form.get("task", "")).strip() or None
    return role, task


@router.post("/users/{name}/{action}", response_model=None)
async def change_role(
    name: str, action: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse | RedirectResponse:
    form = await form_csrf(request)
    principal.require_admin(doing="grant or revoke roles")
    if action not in ("grant", "revoke"):
        raise NotFound(f"No action {action!r}; use grant or revoke")
    try:
        role, task = _grant(form)
        if action == "grant":
            grant_role(ctx, name, role, task_id=task)
            done = f"{name} is now {role.value}"
        elif revoke_role(ctx, name, role, task_id=task):
            done = f"{name} is no longer {role.value}"
        else:
            raise UsageError(f"{name} has no {role.value} role there; nothing revoked")
    except (UsageError, NotFound) as error:
        # The page again, the error beside the form it came from, the choice kept.
        return _users_page(
            request,
            ctx,
            principal,
            status_code=FORM_AGAIN,
            error={"user": name, "text": str(error)},
            kept={"role": str(form.get("role", "")), "task": str(form.get("task", ""))},
        )
    flash(request, f"{done}{f' on task {task}' if task else ' on every task'}; their sessions end.")
    return redirect("/ui/admin/users")


@router.get("/tokens", response_class=HTMLResponse)
def tokens(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    _admin(principal, "list API tokens")
    return _page(request, principal, "tokens", tokens=list_tokens(ctx))


@router.post("/tokens/{token_id}/revoke")
async def revoke(
    token_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    await form_csrf(request)
    principal.require_admin(doing="revoke API tokens")
    owner = token_owner(ctx, token_id)
    revoke_token(ctx, owner, token_id)
    flash(request, f"Token {token_id} is revoked; its user's browser sessions were signed out.")
    return redirect("/ui/admin/tokens")


@router.get("/quotas", response_class=HTMLResponse)
def quotas(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    _admin(principal, "see the quotas")
    return _page(request, principal, "quotas", settings=ctx.settings, usage=usage_today(ctx))


StatusQuery = Annotated[str | None, Query(max_length=16)]


@router.get("/jobs", response_class=HTMLResponse)
def jobs(
    request: Request, ctx: CtxDep, principal: PrincipalDep, status: StatusQuery = None
) -> HTMLResponse:
    _admin(principal, "see the job queue")
    try:
        chosen = JobStatus(status) if status else None
    except ValueError:
        raise UsageError(
            f"status must be one of {', '.join(s.value for s in JobStatus)}, not {status!r}"
        ) from None
    return _page(
        request,
        principal,
        "jobs",
        rows=queue_rows(ctx, status=chosen),
        counts=job_counts(ctx),
        chosen=chosen.value if chosen else "",
        retryable=(JobStatus.FAILED.value, JobStatus.CANCELLED.value),
        final=[s.value for s in JobStatus if s.is_final],
    )


@router.post("/jobs/{job_id}/{action}")
async def job_action(
    job_id: int, action: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    principal.require_admin(doing="retry or cancel jobs")
    submission_id = job_submission(ctx, job_id)
    if action == "retry":
        count = rerun(ctx, principal, submission_id, job_id=job_id)
        done = "queued again" if count else "not failed or cancelled: nothing to retry"
    elif action == "cancel":
        count = cancel(ctx, principal, submission_id, job_id=job_id)
        done = "cancelled" if count else "finished already: nothing to cancel"
    else:
        raise NotFound(f"No action {action!r}; use retry or cancel")
    kind = "ok" if count else "error"
    flash(request, f"Job {job_id} (submission {submission_id}): {done}.", kind)
    back = str(form.get("status", ""))
    return redirect(f"/ui/admin/jobs?status={back}" if back in set(JobStatus) else "/ui/admin/jobs")


@router.get("/failures", response_class=HTMLResponse)
def failures(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    _admin(principal, "see recent failures")
    return _page(request, principal, "failures", rows=recent_failures(ctx))
