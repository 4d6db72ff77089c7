"""The plain pages: the task list, a submission's status, and signing in and out (the task
page is ``board_pages``, a model's page ``model_pages``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from datasets_registry import list_tasks
from evalboard.core.errors import NotFound
from evalboard.core.states import JobStatus
from leaderboard.accounts import authenticate
from leaderboard.auth import CtxDep, PrincipalDep, sign_in, sign_out
from leaderboard.routes._page import flash, form_csrf, local_path, redirect, render
from leaderboard.routes.tasks import task_public
from leaderboard.submissions import cancel, rerun, submission_status
from leaderboard.throttle import client_address, login_throttle
from scoring import METRICS, WEIGHABLE_METRICS

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("", response_class=HTMLResponse)
def index(request: Request, ctx: CtxDep, principal: PrincipalDep) -> HTMLResponse:
    tasks = [task_public(ctx, t.id) for t in list_tasks(ctx)]
    return render(request, "index.html", principal, tasks=tasks)


@router.get("/login", response_class=HTMLResponse)
def login_form(
    request: Request, principal: PrincipalDep, next: Annotated[str, Query(max_length=300)] = "/ui"
) -> HTMLResponse:
    return render(request, "login.html", principal, next=local_path(next), error=None)


@router.post("/login", response_class=HTMLResponse, response_model=None)
async def login(request: Request, ctx: CtxDep, principal: PrincipalDep) -> Any:
    form = await form_csrf(request)
    name, password = str(form.get("name", "")), str(form.get("password", ""))
    user = await run_in_threadpool(
        login_throttle(request).verified,
        name,
        client_address(request),
        lambda: authenticate(ctx, name, password),
    )
    target = local_path(str(form.get("next", "/ui")))
    if user is None:
        return render(
            request,
            "login.html",
            principal,
            status_code=401,
            next=target,
            error="Wrong name or password.",
        )
    sign_in(request, user)
    flash(request, f"Signed in as {user.name}.")
    return redirect(target)


@router.post("/logout")
async def logout(request: Request, ctx: CtxDep) -> RedirectResponse:
    await form_csrf(request)
    await run_in_threadpool(sign_out, request, ctx)
    return redirect("/ui")


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    submission_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    status = submission_status(ctx, principal, submission_id)
    active = any(not job.status.is_final for job in status.jobs)
    # A job's figures are the evaluator's, named as on the board (scoring.METRICS).
    metrics = [METRICS[name] for name in WEIGHABLE_METRICS]
    return render(
        request,
        "submission.html",
        principal,
        status=status,
        active=active,
        metrics=metrics,
        # static/submission.js writes a finished job's figures as the template does.
        live={
            "metrics": [
                {
                    "name": m.name,
                    "label": m.label,
                    "unit": m.unit,
                    "direction": m.direction,
                    "field": m.result_field,
                }
                for m in metrics
            ],
            "final": [s.value for s in JobStatus if s.is_final],
        },
    )


@router.post("/submissions/{submission_id}/{action}")
async def submission_action(
    submission_id: int, action: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    await form_csrf(request)
    if action == "cancel":
        count = cancel(ctx, principal, submission_id)
        flash(request, f"Cancelled {count} job(s).")
    elif action == "rerun":
        count = rerun(ctx, principal, submission_id)
        flash(request, f"Queued {count} job(s) again.")
    else:
        raise NotFound(f"No action {action!r}; use cancel or rerun")
    return redirect(f"/ui/submissions/{submission_id}")
