"""The task page: the leaderboard with weight sliders, search, sort, filters and columns,
and the ranking alone (``/ranking``) that the page swaps in as the viewer changes them.

Both render the same template part (``_ranking.html``) from the same request parameters,
so what the page shows after a slider moves is exactly what a reload of its address
shows: the server's ranking, intervals, ``rank_interval`` and ``p_first`` included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from evalboard.core.context import Context
from evalboard.core.errors import InvalidQuery
from evalboard.core.states import Access
from leaderboard.accounts import Principal
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.cards import CardFilter
from leaderboard.loop import list_rounds, round_vmer
from leaderboard.paging import BoardQuery, parse_board_query
from leaderboard.routes._page import render
from leaderboard.routes.leaderboards import visible_board
from leaderboard.routes.tasks import task_public
from leaderboard.schemas import MetricPublic
from leaderboard.snapshots import list_snapshots
from leaderboard.table import TaskTable
from scoring import METRICS, WEIGHABLE_METRICS, fill_missing, goods_transform

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)

#: Columns besides the metrics that a viewer may hide (the metrics' names are the others).
INTERVAL_COLUMNS = {
    "rank_interval": "Rank 95%",
    "p_first": "P(first)",
    "gap": "Gap to leader",
}


def _text(max_length: int) -> Any:
    return Query(max_length=max_length)


@dataclass
class BoardParams:
    """Everything the address of a task page says about its ranking (read by FastAPI)."""

    weights: Annotated[str | None, _text(500)] = None
    dataset_weights: Annotated[str | None, _text(2000)] = None
    limit: Annotated[str | None, _text(50)] = None
    offset: Annotated[str | None, _text(50)] = None
    sort: Annotated[str | None, _text(50)] = None
    q: Annotated[str | None, _text(200)] = None
    runtime: Annotated[str | None, _text(32)] = None
    license: Annotated[str | None, _text(64)] = None
    min_params: Annotated[int | None, Query(ge=0, le=10**13)] = None
    max_params: Annotated[int | None, Query(ge=0, le=10**13)] = None
    baselines: bool = True
    busy: bool = True
    hide: Annotated[str | None, _text(300)] = None

    def cards(self) -> CardFilter:
        return CardFilter(
            runtime=self.runtime or None,
            license=self.license or None,
            min_params=self.min_params,
            max_params=self.max_params,
            baselines=self.baselines,
            busy=self.busy,
        )


Params = Annotated[BoardParams, Depends()]


def _hidden_columns(text: str | None, metrics: list[MetricPublic]) -> set[str]:
    names = [name for name in (text or "").split(",") if name]
    known = [*INTERVAL_COLUMNS, *(m.name for m in metrics if m.name != "perf")]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InvalidQuery(
            f"Unknown column {unknown[0][:40]!r} in hide; known: {', '.join(known)} "
            "(perf, the rank, the name and the Dynascore always show)"
        )
    return set(names)


def _sort_links(request: Request, path: str, query: BoardQuery) -> dict[str, dict[str, str]]:
    """Per column: the address that sorts by it (best first; again: the other way) and
    its ``aria-sort`` state."""
    current = query.sort
    links: dict[str, dict[str, str]] = {}
    for key in ("rank", "name", "dynascore", *METRICS):
        # The first click puts the best first: the highest Dynascore, the lowest memory.
        descending = key == "dynascore" or (key in METRICS and METRICS[key].sign > 0)
        if key == current:
            descending = not query.descending
        url = request.url.replace(path=path).include_query_params(
            sort=("-" if descending else "") + key
        )
        url = url.remove_query_params("offset")
        state = "none"
        if key == current:
            state = "descending" if query.descending else "ascending"
        links[key] = {"href": f"{url.path}?{url.query}", "state": state}
    return links


def _pager(request: Request, path: str, query: BoardQuery, total: int) -> dict[str, Any]:
    """Where this page of the ranking starts and ends, and links to its neighbours (the
    request's other parameters, weights included, kept)."""
    limit = query.limit or max(total, 1)

    def at(offset: int) -> str:
        url = request.url.replace(path=path).include_query_params(offset=offset, limit=limit)
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


def _client_data(
    table: TaskTable, board: Any, owner_weights: dict[str, float], *, paged: bool
) -> dict[str, Any]:
    weighable = [m.name for m in board.metrics if m.weighable]
    # The same goods as the server's ranking (scoring.METRICS): dynascore.js has no copy.
    directions, offsets = goods_transform(weighable, memory_cap_gib=table.task.memory_cap_gib)
    ranked = {r.key: r.metrics for r in board.rows if r.rank is not None}
    return {
        "perf": "perf",
        "metrics": weighable,
        # The values the server ranked by, a missing figure filled as it fills them; none
        # for a part of the board, which the browser does not re-rank.
        "table": fill_missing(
            ranked,
            weighable,
            may_lack={r.key for r in board.rows if r.rank is not None and r.predictions_only},
        )
        if ranked and not paged
        else {},
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


def _ranking(
    ctx: Context, request: Request, principal: Principal, task_id: str, params: BoardParams
) -> dict[str, Any]:
    """What ``_ranking.html`` needs: the board for these parameters and its controls."""
    query = parse_board_query(
        limit=params.limit, offset=params.offset, sort=params.sort, q=params.q
    )
    cards = params.cards()
    table, board = visible_board(
        ctx,
        principal,
        task_id,
        params.weights,
        params.dataset_weights,
        query,
        cards,
        wait_for_intervals=False,
    )
    path = f"/ui/tasks/{task_id}"
    pager = _pager(request, path, query, board.total)
    task = task_public(ctx, task_id)
    # Part of the board (one page of several, a search, another order, a filter): the
    # browser cannot re-rank what it was not sent (its AMRS would be the part's), so a
    # moved weight slider waits for the server's ranking.
    paged = bool(
        pager["previous"] or pager["next"] or query.q or query.sort != "rank" or cards.active
    )
    return {
        "task": task,
        "table": table,
        "board": board,
        "pager": pager,
        "sorts": _sort_links(request, path, query),
        "hidden": _hidden_columns(params.hide, board.metrics),
        "interval_columns": INTERVAL_COLUMNS,
        "filters": params,
        # What each column means, from the one metric table (an empty board: the weights').
        "explain": {m.name: METRICS[m.name] for m in board.metrics}
        or {name: METRICS[name] for name in WEIGHABLE_METRICS},
        "snapshots": list_snapshots(ctx, task_id),
        "data": {**_client_data(table, board, task.default_weights, paged=paged), "paged": paged},
    }


def _rounds(ctx: Context, task_id: str) -> list[dict[str, Any]]:
    """Every collection round with its vMER (public: the API's ``/rounds/N/vmer`` too)."""
    rounds = []
    for round_ in list_rounds(ctx, task_id):
        counts = round_vmer(ctx, task_id, round_.number)
        rounds.append({"round": round_, "counts": counts})
    return rounds


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
def task_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep, params: Params
) -> HTMLResponse:
    ranking = _ranking(ctx, request, principal, task_id, params)
    board, table = ranking["board"], ranking["table"]
    return render(
        request,
        "task.html",
        principal,
        **ranking,
        rounds=_rounds(ctx, task_id),
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


@router.get("/tasks/{task_id}/ranking", response_class=HTMLResponse)
def ranking_part(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep, params: Params
) -> HTMLResponse:
    """The ranking section alone, for the task page's script to swap in."""
    ranking = _ranking(ctx, request, principal, task_id, params)
    return render(request, "_ranking.html", principal, **ranking)
