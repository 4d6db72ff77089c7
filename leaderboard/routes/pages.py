"""The viewer's pages: tasks, the leaderboard with weight sliders, a model's charts and
drill-down, a submission's status, and signing in."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from datasets_registry import list_tasks
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Access, JobStatus
from leaderboard.accounts import authenticate
from leaderboard.auth import CtxDep, PrincipalDep, sign_in, sign_out
from leaderboard.cards import CardFilter, render_markdown, visible_table
from leaderboard.charts import contributions_figure, datasets_figure, pareto_figure, rounds_figure
from leaderboard.drilldown import drilldown
from leaderboard.paging import BoardQuery, parse_board_query
from leaderboard.ranking import build_leaderboard, parse_dataset_weights, parse_weights
from leaderboard.routes._page import flash, form_csrf, local_path, redirect, render
from leaderboard.routes.tasks import task_public
from leaderboard.schemas import LeaderboardPublic
from leaderboard.snapshots import list_snapshots
from leaderboard.submissions import cancel, get_submission, rerun, submission_status
from leaderboard.table import TaskTable, load_table
from leaderboard.throttle import LoginThrottle
from scoring import METRICS, WEIGHABLE_METRICS, goods_transform

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)

WeightsQuery = Annotated[str | None, Query(max_length=500)]
DatasetWeightsQuery = Annotated[str | None, Query(max_length=2000)]
PagingQuery = Annotated[str | None, Query(max_length=50)]
SearchQuery = Annotated[str | None, Query(max_length=200)]


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
    client = request.client.host if request.client else ""
    throttle = _login_throttle(request)
    throttle.check(name, client)
    user = await run_in_threadpool(authenticate, ctx, name, password)
    target = local_path(str(form.get("next", "/ui")))
    if user is None:
        throttle.failed(name, client)
        return render(
            request,
            "login.html",
            principal,
            status_code=401,
            next=target,
            error="Wrong name or password.",
        )
    throttle.succeeded(name, client)
    sign_in(request, user)
    flash(request, f"Signed in as {user.name}.")
    return redirect(target)


@router.post("/logout")
async def logout(request: Request, ctx: CtxDep) -> RedirectResponse:
    await form_csrf(request)
    await run_in_threadpool(sign_out, request, ctx)
    return redirect("/ui")


def _login_throttle(request: Request) -> LoginThrottle:
    throttle = request.app.state.login_throttle  # made by create_app
    assert isinstance(throttle, LoginThrottle)
    return throttle


def _board(
    ctx: Context,
    table: TaskTable,
    weights: str | None,
    dataset_weights: str | None,
    query: BoardQuery | None = None,
    cards: CardFilter | None = None,
) -> LeaderboardPublic:
    return build_leaderboard(
        ctx,
        table,
        parse_weights(weights),
        dataset_weights=parse_dataset_weights(table, dataset_weights),
        query=query,
        # Ranked on the whole visible board; the card filter picks rows before paging.
        keep=cards.keep if cards is not None else None,
    )


def _pager(request: Request, query: BoardQuery, total: int) -> dict[str, Any]:
    """Where this page of the ranking starts and ends, and links to its neighbours (the
    request's other parameters, weights included, kept)."""
    limit = query.limit or max(total, 1)

    def at(offset: int) -> str:
        url = request.url.include_query_params(offset=offset, limit=limit)
        return f"{url.path}?{url.query}"

    return {
        "first": query.offset + 1,
        "last": min(query.offset + limit, total),
        "total": total,
        "previous": at(max(query.offset - limit, 0)) if query.offset > 0 else None,
        "next": at(query.offset + limit) if query.offset + limit < total else None,
        "q": query.q or "",
        "sort": ("-" if query.descending else "") + query.sort,
    }


def _client_data(table: TaskTable, board: Any, owner_weights: dict[str, float]) -> dict[str, Any]:
    weighable = [m.name for m in board.metrics if m.weighable]
    # The same goods as the server's ranking (scoring.METRICS): dynascore.js has no copy.
    directions, offsets = goods_transform(weighable, memory_cap_gib=table.task.memory_cap_gib)
    return {
        "perf": "perf",
        "metrics": weighable,
        "table": {
            r.key: {m: r.metrics.get(m) for m in weighable}
            for r in board.rows
            if r.rank is not None
        },
        "directions": directions,
        "offsets": offsets,
        "weights": {m: board.weights.get(m, 0.0) for m in weighable},
        # "Reset" goes back to these, not to what a shared ?weights= URL loaded.
        "owner_weights": {m: owner_weights.get(m, 0.0) for m in weighable},
        # Flagged rows stay after the others whatever the metric weights (scoring.floor).
        "flagged": [r.key for r in board.rows if r.not_above_baseline],
        "dataset_weights": board.dataset_weights,
        "owner_dataset_weights": {
            d.name: d.weight for d in table.originals if d.name in board.dataset_weights
        },
        "task": table.task.id,
    }


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
def task_page(
    task_id: str,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    weights: WeightsQuery = None,
    dataset_weights: DatasetWeightsQuery = None,
    limit: PagingQuery = None,
    offset: PagingQuery = None,
    sort: PagingQuery = None,
    q: SearchQuery = None,
    runtime: Annotated[str | None, Query(max_length=32)] = None,
    license: Annotated[str | None, Query(max_length=64)] = None,
) -> HTMLResponse:
    query = parse_board_query(limit=limit, offset=offset, sort=sort, q=q)
    cards = CardFilter(runtime=runtime or None, license=license or None)
    table = visible_table(load_table(ctx, task_id), principal)
    board = _board(ctx, table, weights, dataset_weights, query, cards)
    pager = _pager(request, query, board.total)
    task = task_public(ctx, task_id)
    return render(
        request,
        "task.html",
        principal,
        task=task,
        board=board,
        pager=pager,
        filters={"runtime": runtime or "", "license": license or ""},
        snapshots=list_snapshots(ctx, task_id),
        # Part of the board (one page of several, a search, another order, a card filter):
        # the browser cannot re-rank what it was not sent (its AMRS would be the part's),
        # so moving a weight slider asks the server for the ranking instead.
        data={
            **_client_data(table, board, task.default_weights),
            "paged": bool(
                pager["previous"]
                or pager["next"]
                or query.q
                or query.sort != "rank"
                or cards.active
            ),
        },
        # A task nobody has been ranked on yet still shows every weight the owner set.
        slider_metrics=[m for m in board.metrics if m.weighable]
        if board.rows
        else [METRICS[name] for name in WEIGHABLE_METRICS],
        dataset_max=max([1.0, *(2 * w for w in board.dataset_weights.values())]),
        owner=principal.owns(task_id),
        datasets=[
            d for d in table.datasets if d.access != Access.HIDDEN or principal.owns(task_id)
        ],
    )


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
    sums: dict[int, list[float]] = {}
    for dataset in table.originals:
        if dataset.access == Access.HIDDEN and not may_see_hidden:
            continue  # a round of hidden sets only would show their perf
        perf = (per_dataset.get(dataset.name) or {}).get("perf")
        if perf is not None:
            acc = sums.setdefault(dataset.round, [0.0, 0.0])
            acc[0] += dataset.weight * float(perf)
            acc[1] += dataset.weight
    return {r: total / weight for r, (total, weight) in sums.items() if weight > 0}


@router.get("/tasks/{task_id}/models/{submission_id}", response_class=HTMLResponse)
def model_page(
    task_id: str,
    submission_id: int,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    weights: WeightsQuery = None,
    dataset_weights: DatasetWeightsQuery = None,
    dataset: Annotated[str | None, Query(max_length=128)] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    wrong_only: bool = False,
) -> HTMLResponse:
    table = visible_table(load_table(ctx, task_id), principal)
    entry = table.entry(submission_id)
    if entry is None:
        raise NotFound(f"Task {task_id!r} has no submission {submission_id}")
    board = _board(ctx, table, weights, dataset_weights)
    row = next((r for r in board.rows if r.submission_id == submission_id), None)
    labels = {m.name: m.label for m in board.metrics}
    see_hidden = principal.owns(task_id)
    charts: dict[str, Any] = {
        "datasets": datasets_figure(_dataset_scores(table, entry.per_dataset, see_hidden)),
        "rounds": rounds_figure(_perf_by_round(table, entry.per_dataset, see_hidden)),
    }
    if row is not None:
        charts["contributions"] = contributions_figure(row, labels)
        for metric in ("throughput", "memory"):
            if any(m.name == metric for m in board.metrics):
                charts[f"pareto_{metric}"] = pareto_figure(board, metric, row.key)
    browsable = [
        d for d in table.datasets if d.access != Access.HIDDEN and d.name in entry.predictions
    ]
    chosen = next((d for d in browsable if d.name == dataset), browsable[0] if browsable else None)
    examples: list[dict[str, Any]] = []
    submission = get_submission(ctx, submission_id)
    if chosen is not None:
        job = next(j for j in submission.jobs if j.dataset_id == chosen.id)
        examples = drilldown(ctx, submission, job, offset=offset, limit=25, wrong_only=wrong_only)
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
        charts=charts,
        browsable=browsable,
        chosen=chosen,
        examples=examples,
        offset=offset,
        wrong_only=wrong_only,
        see_hidden=see_hidden,
        table=table,
        release_of=submission.release_of_id,
    )


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
