"""The task owner's page: add datasets, set the default weights, mark baselines."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import UploadFile

from datasets_registry import get_task, set_dataset_weight
from evalboard.core.errors import Conflict, InvalidDataset, InvalidWeights, UsageError
from evalboard.core.states import Access
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.phases import list_phases
from leaderboard.routes._page import FORM_AGAIN, flash, form_csrf, redirect, render, signed_in
from leaderboard.routes.datasets import add_uploaded_dataset, visible_datasets
from leaderboard.routes.tasks import set_default_weights, task_public
from leaderboard.submissions import list_submissions, set_baseline
from scoring import METRICS, WEIGHABLE_METRICS, ScoringError, check_weights

__all__ = ["router"]

router = APIRouter(prefix="/ui/tasks/{task_id}/manage", include_in_schema=False)


@router.get("", response_class=HTMLResponse)
def manage_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    get_task(ctx, task_id)
    signed_in(principal)
    principal.require_owner(task_id, doing="manage it")
    return _manage_page(request, ctx, principal, task_id)


def _manage_page(
    request: Request, ctx: CtxDep, principal: PrincipalDep, task_id: str, **extra: Any
) -> HTMLResponse:
    return render(
        request,
        "manage.html",
        principal,
        task=task_public(ctx, task_id),
        datasets=visible_datasets(ctx, principal, task_id),
        submissions=list_submissions(ctx, principal, task_id),
        phases=list_phases(ctx, principal, task_id),
        metrics=[METRICS[name] for name in WEIGHABLE_METRICS],
        accesses=[a.value for a in Access],
        **extra,
    )


#: What an owner can fix in a form: shown beside it, with what was typed (issue 19).
_FIXABLE = (UsageError, Conflict, ScoringError)


def _number(text: object, what: str) -> float:
    try:
        return float(str(text))
    except ValueError:
        raise InvalidWeights(f"{what} must be a number, got {text!r}") from None


@router.post("/weights", response_model=None)
async def weights(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse | RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="set its default weights")
    typed = {m: str(form.get(f"w_{m}", 0)) for m in WEIGHABLE_METRICS}
    try:
        # The one weight check reads the form's text too (scoring.check_weights).
        values = check_weights(typed, known=WEIGHABLE_METRICS)
    except _FIXABLE as error:
        return _manage_page(
            request,
            ctx,
            principal,
            task_id,
            status_code=FORM_AGAIN,
            weights_error=str(error),
            kept_weights=typed,
        )
    set_default_weights(ctx, task_id, {m: w for m, w in values.items() if w > 0})
    flash(request, "Default weights saved.")
    return redirect(f"/ui/tasks/{task_id}/manage")


@router.post("/datasets", response_model=None)
async def datasets(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse | RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="add datasets")
    fields = ("name", "round", "access", "weight", "mapping", "label_map")
    typed = {field: str(form.get(field, "")) for field in fields}
    upload = form.get("file")
    try:
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidDataset("Choose a dataset file (JSONL, CSV, TSV or SQuAD JSON)")
        try:
            access = Access(typed["access"] or "scoring")
        except ValueError:
            raise InvalidDataset(
                f"access must be one of {', '.join(a.value for a in Access)}"
            ) from None
        try:
            added = add_uploaded_dataset(
                ctx,
                principal,
                task_id,
                upload=upload,
                name=typed["name"].strip(),
                round=int(_number(typed["round"] or 0, "round")),
                access=access,
                weight=_number(typed["weight"] or 1, "weight"),
                mapping=typed["mapping"],
                label_map=typed["label_map"],
            )
        finally:
            await upload.close()
    except _FIXABLE as error:
        # The form again with the error beside it and what was typed (a browser never
        # keeps a chosen file: the owner picks it again).
        return _manage_page(
            request,
            ctx,
            principal,
            task_id,
            status_code=FORM_AGAIN,
            dataset_error=str(error),
            kept_dataset=typed,
        )
    names = ", ".join(f"{d.name} ({d.rows} rows)" for d in added)
    flash(request, f"Added {names}. Every submission will be evaluated on it.")
    return redirect(f"/ui/tasks/{task_id}/manage")


@router.post("/datasets/{name}/weight")
async def dataset_weight(
    task_id: str, name: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="set its dataset weights")
    weight = _number(form.get("weight", ""), "weight")
    dataset = set_dataset_weight(ctx, task_id=task_id, name=name, weight=weight)
    flash(request, f"Dataset {dataset.name} now weighs {dataset.weight:g} (its copies too).")
    return redirect(f"/ui/tasks/{task_id}/manage")


@router.post("/baseline/{submission_id}")
async def baseline(
    task_id: str, submission_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    value = form.get("is_baseline") == "true"
    set_baseline(ctx, principal, submission_id, value)
    flash(request, f"Submission {submission_id} is {'now' if value else 'no longer'} a baseline.")
    return redirect(f"/ui/tasks/{task_id}/manage")
