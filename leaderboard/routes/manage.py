"""The task owner's page: add datasets, set the default weights, mark baselines."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import UploadFile

from datasets_registry import get_task, set_dataset_weight
from evalboard.core.errors import InvalidDataset, InvalidWeights
from evalboard.core.states import Access
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.routes._page import flash, form_csrf, login_path, redirect, render
from leaderboard.routes.datasets import add_uploaded_dataset, visible_datasets
from leaderboard.routes.tasks import set_default_weights, task_public
from leaderboard.submissions import list_submissions, set_baseline
from scoring import METRICS, WEIGHABLE_METRICS, check_weights

__all__ = ["router"]

router = APIRouter(prefix="/ui/tasks/{task_id}/manage", include_in_schema=False)


@router.get("", response_class=HTMLResponse, response_model=None)
def manage_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse | RedirectResponse:
    get_task(ctx, task_id)
    if not principal.signed_in:
        return redirect(login_path(f"/ui/tasks/{task_id}/manage"))
    principal.require_owner(task_id, doing="manage it")
    return render(
        request,
        "manage.html",
        principal,
        task=task_public(ctx, task_id),
        datasets=visible_datasets(ctx, principal, task_id),
        submissions=list_submissions(ctx, principal, task_id),
        metrics=[METRICS[name] for name in WEIGHABLE_METRICS],
        accesses=[a.value for a in Access],
    )


def _number(text: object, what: str) -> float:
    try:
        return float(str(text))
    except ValueError:
        raise InvalidWeights(f"{what} must be a number, got {text!r}") from None


@router.post("/weights")
async def weights(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="set its default weights")
    # The one weight check reads the form's text too (scoring.check_weights).
    values = check_weights(
        {m: str(form.get(f"w_{m}", 0)) for m in WEIGHABLE_METRICS}, known=WEIGHABLE_METRICS
    )
    set_default_weights(ctx, task_id, {m: w for m, w in values.items() if w > 0})
    flash(request, "Default weights saved.")
    return redirect(f"/ui/tasks/{task_id}/manage")


@router.post("/datasets")
async def datasets(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        raise InvalidDataset("Choose a dataset file (JSONL, CSV, TSV or SQuAD JSON)")
    try:
        access = Access(str(form.get("access", "scoring")))
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
            name=str(form.get("name", "")).strip(),
            round=int(_number(form.get("round", 0) or 0, "round")),
            access=access,
            weight=_number(form.get("weight", 1) or 1, "weight"),
            mapping=str(form.get("mapping", "")),
            label_map=str(form.get("label_map", "")),
        )
    finally:
        await upload.close()
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
