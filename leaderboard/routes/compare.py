"""Comparing models: the API (the matrix, a dataset's disagreements) and the page with its
picker, whose permalink is ``/ui/tasks/T/compare?models=a,b,c``."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from evalboard.core.errors import InvalidQuery, NotFound
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.cards import visible_table
from leaderboard.compare import (
    MAX_MODELS,
    MIN_MODELS,
    ComparePublic,
    DisagreementsPublic,
    compare_models,
    disagreements,
    parse_models,
)
from leaderboard.errors import ERROR_RESPONSES, UNPROCESSABLE_RESPONSES
from leaderboard.routes._page import FORM_AGAIN, redirect, render
from leaderboard.routes.tasks import TaskId, task_public
from leaderboard.table import load_table

__all__ = ["pages_router", "router"]

router = APIRouter(
    prefix="/tasks/{task_id}/compare", tags=["leaderboards"], responses=ERROR_RESPONSES
)
pages_router = APIRouter(prefix="/ui", include_in_schema=False)

Models = Annotated[
    str,
    Query(
        max_length=100,
        description=f"{MIN_MODELS} to {MAX_MODELS} distinct submission ids, e.g. 3,7,12.",
    ),
]
DatasetName = Annotated[str, Path(max_length=128, description="A dataset that is not hidden.")]
Offset = Annotated[int, Query(ge=0, le=10**9, description="Disagreements to skip.")]
Limit = Annotated[int, Query(ge=1, le=200, description="Disagreements to send (at most 200).")]

#: Disagreements per page of the compare page.
PAGE_SIZE = 20


@router.get(
    "",
    summary="Two to four models side by side: a dataset x metric matrix, and how often "
    "they disagree on each dataset",
    responses=UNPROCESSABLE_RESPONSES,
)
def compare(task_id: TaskId, ctx: CtxDep, principal: PrincipalDep, models: Models) -> ComparePublic:
    """A model the caller may not see (unpublished, another task's) is a 404, as one that
    does not exist; hidden datasets appear in the matrix only for the task owner."""
    chosen = compare_models(ctx, principal, task_id, parse_models(models))
    return chosen.public(ctx)


@router.get(
    "/{dataset}",
    summary="The examples of a dataset on which the models disagree, a page at a time",
    responses=UNPROCESSABLE_RESPONSES,
)
def compare_examples(
    task_id: TaskId,
    dataset: DatasetName,
    ctx: CtxDep,
    principal: PrincipalDep,
    models: Models,
    offset: Offset = 0,
    limit: Limit = 50,
) -> DisagreementsPublic:
    """Inputs as the models saw them, the gold answer, and each model's prediction and
    per-example score; never for a hidden dataset."""
    chosen = compare_models(ctx, principal, task_id, parse_models(models))
    return disagreements(ctx, chosen, dataset, offset=offset, limit=limit)


@pages_router.get("/tasks/{task_id}/compare", response_class=HTMLResponse, response_model=None)
def compare_page(
    task_id: str,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    models: Annotated[str | None, Query(max_length=100)] = None,
    m: Annotated[list[str] | None, Query(max_length=MAX_MODELS + 1)] = None,
    dataset: Annotated[str | None, Query(max_length=128)] = None,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> HTMLResponse | RedirectResponse:
    if m is not None:
        # The picker's checkboxes (``m=3&m=7``) become the permalink (``models=3,7``).
        return redirect(f"{request.url.path}?models={quote(','.join(m), safe=',')}")
    table = visible_table(load_table(ctx, task_id), principal, cache=ctx.cache)
    context: dict[str, Any] = {
        "task": task_public(ctx, task_id),
        "candidates": [e for e in table.models if e.details],
        "chosen_ids": [],
        "limits": (MIN_MODELS, MAX_MODELS),
        "error": None,
        "comparison": None,
    }
    if models is None or len([p for p in models.split(",") if p.strip()]) < MIN_MODELS:
        context["chosen_ids"] = [p.strip() for p in (models or "").split(",") if p.strip()]
        return render(request, "compare.html", principal, **context)
    try:
        ids = parse_models(models)
        chosen = compare_models(ctx, principal, task_id, ids)
        public = chosen.public(ctx)
        browsable = [d.dataset for d in public.datasets if d.disagreements is not None]
        name = dataset if dataset in browsable else (browsable[0] if browsable else None)
        page = disagreements(ctx, chosen, name, offset=offset, limit=PAGE_SIZE) if name else None
    except (InvalidQuery, NotFound) as error:
        # The picker again with the error beside it (an unseen model reads as unknown).
        context["error"] = error.message
        context["chosen_ids"] = [p.strip() for p in models.split(",")]
        return render(request, "compare.html", principal, status_code=FORM_AGAIN, **context)
    context.update(
        chosen_ids=[str(i) for i in ids],
        comparison=public,
        names={str(e.submission_id): e.name for e in chosen.models},
        page=page,
        models_param=",".join(str(i) for i in ids),
    )
    return render(request, "compare.html", principal, **context)
