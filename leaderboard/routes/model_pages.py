"""A model's page: its card, its place on the board, its charts and the drill-down into its
examples, and the drill-down alone (``/examples``) that the page swaps in when the viewer
changes the dataset, searches, sorts or pages - without a reload, the weights kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Submission
from leaderboard.accounts import Principal
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.cards import render_markdown, visible_table
from leaderboard.charts import contributions_figure, datasets_figure, pareto_figure, rounds_figure
from leaderboard.drilldown import EXAMPLE_SORTS, drilldown_page, example_sort
from leaderboard.ranking import model_standing, parse_dataset_weights, parse_weights
from leaderboard.routes._page import render
from leaderboard.routes.tasks import task_public
from leaderboard.submissions import get_submission
from leaderboard.table import ModelEntry, TaskTable, load_table
from scoring import weighted_mean

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)

#: Examples on one page of the drill-down.
EXAMPLES_PER_PAGE = 25

WeightsQuery = Annotated[str | None, Query(max_length=500)]
DatasetWeightsQuery = Annotated[str | None, Query(max_length=2000)]


@dataclass
class ExamplesParams:
    """What the address says about the drill-down (read by FastAPI)."""

    dataset: Annotated[str | None, Query(max_length=128)] = None
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0
    wrong_only: bool = False
    q: Annotated[str | None, Query(max_length=200)] = None
    sort: Annotated[str | None, Query(max_length=20)] = None


Examples = Annotated[ExamplesParams, Depends()]


def _dataset_scores(
    table: TaskTable, per_dataset: dict[str, dict[str, Any]], may_see_hidden: bool
) -> list[tuple[str, str, float]]:
    scores = []
    for dataset in table.datasets:
        if dataset.access == Access.HIDDEN and not may_see_hidden:
            continue
        metrics = per_dataset.get(dataset.name) or {}
        for kind in ("perf", "robustness", "fairness"):
            if metrics.get(kind) is not None:
                scores.append((dataset.name, kind, float(metrics[kind])))
    return scores


def _perf_by_round(
    table: TaskTable, per_dataset: dict[str, dict[str, Any]], may_see_hidden: bool
) -> dict[int, float]:
    by_round: dict[int, list[tuple[float | None, float]]] = {}
    for dataset in table.originals:
        if dataset.access == Access.HIDDEN and not may_see_hidden:
            continue  # a round of hidden sets only would show their perf
        perf = (per_dataset.get(dataset.name) or {}).get("perf")
        by_round.setdefault(dataset.round, []).append(
            (None if perf is None else float(perf), dataset.weight)
        )
    means = {r: weighted_mean(pairs) for r, pairs in by_round.items()}
    return {r: mean for r, mean in means.items() if mean is not None}


def _examples(
    ctx: Context,
    request: Request,
    table: TaskTable,
    entry: ModelEntry,
    submission: Submission,
    params: ExamplesParams,
) -> dict[str, Any]:
    """What ``_examples.html`` needs: the datasets one may browse and the chosen page."""
    dataset, offset, wrong_only = params.dataset, params.offset, params.wrong_only
    browsable = [
        d for d in table.datasets if d.access != Access.HIDDEN and d.name in entry.predictions
    ]
    chosen = next((d for d in browsable if d.name == dataset), browsable[0] if browsable else None)
    order = example_sort(params.sort)
    search = (params.q or "").strip() or None
    total, rows = 0, []
    if chosen is not None:
        job = next(j for j in submission.jobs if j.dataset_id == chosen.id)
        found = drilldown_page(
            ctx,
            submission,
            job,
            offset=offset,
            limit=EXAMPLES_PER_PAGE,
            wrong_only=wrong_only,
            q=search,
            sort=order,
        )
        total, rows = found.total, found.rows
    path = f"/ui/tasks/{table.task.id}/models/{entry.submission_id}"

    def at(new_offset: int) -> str:
        # The dataset shown, not the one asked for (it may be one the caller cannot see).
        url = request.url.replace(path=path).include_query_params(
            dataset=chosen.name if chosen is not None else "", offset=new_offset
        )
        return f"{url.path}?{url.query}"

    return {
        "browsable": browsable,
        "chosen": chosen,
        "examples": rows,
        "examples_total": total,
        "offset": offset,
        "wrong_only": wrong_only,
        "q": search or "",
        "order": order,
        "orders": EXAMPLE_SORTS,
        "previous": at(max(offset - EXAMPLES_PER_PAGE, 0)) if offset > 0 else None,
        "next": at(offset + EXAMPLES_PER_PAGE) if offset + EXAMPLES_PER_PAGE < total else None,
        "per_page": EXAMPLES_PER_PAGE,
        "model_path": path,
    }


def _model(
    ctx: Context, principal: Principal, task_id: str, submission_id: int
) -> tuple[TaskTable, ModelEntry]:
    table = visible_table(load_table(ctx, task_id), principal, cache=ctx.cache)
    entry = table.entry(submission_id)
    if entry is None:
        raise NotFound(f"Task {task_id!r} has no submission {submission_id}")
    return table, entry


@router.get("/tasks/{task_id}/models/{submission_id}", response_class=HTMLResponse)
def model_page(
    task_id: str,
    submission_id: int,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    params: Examples,
    weights: WeightsQuery = None,
    dataset_weights: DatasetWeightsQuery = None,
) -> HTMLResponse:
    table, entry = _model(ctx, principal, task_id, submission_id)
    standing = model_standing(
        ctx,
        table,
        submission_id,
        parse_weights(weights),
        dataset_weights=parse_dataset_weights(table, dataset_weights),
    )
    board, row = standing.board, standing.row
    labels = {m.name: m.label for m in board.metrics}
    see_hidden = principal.owns(task_id)
    per_dataset = entry.per_dataset
    charts: dict[str, Any] = {
        "datasets": datasets_figure(_dataset_scores(table, per_dataset, see_hidden)),
        "rounds": rounds_figure(_perf_by_round(table, per_dataset, see_hidden)),
    }
    if row is not None:
        charts["contributions"] = contributions_figure(row, labels)
        info = {m.name: m for m in board.metrics}
        for metric, scatter in standing.scatters.items():
            charts[f"pareto_{metric}"] = pareto_figure(scatter, info.get(metric), row.key)
    submission = get_submission(ctx, submission_id)
    examples = _examples(ctx, request, table, entry, submission, params)
    # Back to the board with the weights this page was ranked with.
    back = {k: v for k, v in (("weights", weights), ("dataset_weights", dataset_weights)) if v}
    return render(
        request,
        "model.html",
        principal,
        task=task_public(ctx, task_id),
        entry=entry,
        card_html=render_markdown(entry.card.card),
        description=str(submission.manifest.get("description") or ""),
        row=row,
        board=board,
        ranked=standing.ranked,
        charts=charts,
        see_hidden=see_hidden,
        table=table,
        release_of=submission.release_of_id,
        board_url=f"/ui/tasks/{task_id}" + (f"?{urlencode(back)}" if back else ""),
        **examples,
    )


@router.get("/tasks/{task_id}/models/{submission_id}/examples", response_class=HTMLResponse)
def examples_part(
    task_id: str,
    submission_id: int,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    params: Examples,
) -> HTMLResponse:
    """The drill-down alone, for the model page's script to swap in."""
    table, entry = _model(ctx, principal, task_id, submission_id)
    submission = get_submission(ctx, submission_id)
    examples = _examples(ctx, request, table, entry, submission, params)
    return render(request, "_examples.html", principal, task=table.task, entry=entry, **examples)
