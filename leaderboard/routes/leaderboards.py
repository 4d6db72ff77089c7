"""The leaderboard: ranked rows for any weights, as JSON or a CSV/JSON download."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from evalboard.core.context import Context
from leaderboard.accounts import Principal
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.cards import CardFilter, visible_table
from leaderboard.errors import ERROR_RESPONSES, UNPROCESSABLE_RESPONSES
from leaderboard.paging import DEFAULT_LIMIT, MAX_LIMIT, SORT_KEYS, BoardQuery, parse_board_query
from leaderboard.ranking import build_leaderboard, parse_dataset_weights, parse_weights, to_csv
from leaderboard.routes._files import attachment
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import LeaderboardPublic
from leaderboard.table import TaskTable, load_table

__all__ = ["router", "visible_board"]

router = APIRouter(prefix="/tasks/{task_id}", tags=["leaderboards"], responses=ERROR_RESPONSES)

#: Seconds a client is told to wait before asking again for intervals being computed.
INTERVALS_RETRY_S = 1

Weights = Annotated[
    str | None,
    Query(
        max_length=500,
        description="METRIC:WEIGHT,... e.g. perf:4,throughput:1,memory:1. "
        "Default: the task owner's weights.",
    ),
]
DatasetWeights = Annotated[
    str | None,
    Query(
        max_length=2000,
        description="DATASET:WEIGHT,... over the task's original scoring datasets, e.g. "
        "r1-test:1,round-2:0.25; perturbed copies follow their original. Datasets not named "
        "keep the task owner's weight.",
    ),
]

# Read as text and checked by parse_board_query, so that a bad value is one line of 422.
Limit = Annotated[
    str | None,
    Query(
        max_length=20,
        description=f"Ranked rows to send, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}); "
        "`total` says how many there are.",
    ),
]
Offset = Annotated[str | None, Query(max_length=20, description="Ranked rows to skip (default 0).")]
Sort = Annotated[
    str | None,
    Query(
        max_length=50,
        description=f"Order of the rows: one of {', '.join(SORT_KEYS)}; a leading - sorts "
        "descending (e.g. -perf). Default: rank. Ranks stay those of the whole board.",
    ),
]
Search = Annotated[
    str | None,
    Query(max_length=200, description="Only models whose name contains this (any case)."),
]


RuntimeFilter = Annotated[
    str | None,
    Query(
        max_length=32, description="Only models of this runtime: python, onnx, transformers, image."
    ),
]
LicenseFilter = Annotated[
    str | None, Query(max_length=64, description="Only models whose card gives this license.")
]
MinParams = Annotated[
    int | None,
    Query(ge=0, le=10**13, description="Only models with at least this many parameters."),
]
MaxParams = Annotated[
    int | None,
    Query(ge=0, le=10**13, description="Only models with at most this many parameters."),
]
Baselines = Annotated[
    bool, Query(description="false: leave out the task's baselines (ranks stay the board's).")
]
Busy = Annotated[
    bool,
    Query(description="false: leave out models whose throughput was measured on a busy worker."),
]


def visible_board(
    ctx: Context,
    principal: Principal,
    task_id: str,
    weights: str | None,
    dataset_weights: str | None,
    query: BoardQuery | None = None,
    cards: CardFilter | None = None,
    *,
    wait_for_intervals: bool = True,
) -> tuple[TaskTable, LeaderboardPublic]:
    """The board ``principal`` may see, ranked for the weights' texts, and the table it
    ranks. ``wait_for_intervals``: False where the caller shows a large board at once and
    asks again for its intervals (``LeaderboardPublic.intervals_pending``)."""
    # What the principal may see is ranked; the card filter then picks among those ranked
    # rows (before paging and ``total``), so a row keeps its rank on the whole visible board.
    table = visible_table(load_table(ctx, task_id), principal, cache=ctx.cache)
    return table, build_leaderboard(
        ctx,
        table,
        parse_weights(weights),
        dataset_weights=parse_dataset_weights(table, dataset_weights),
        query=query,
        keep=cards.keep if cards is not None else None,
        wait_for_intervals=wait_for_intervals,
    )


@router.get(
    "/leaderboard",
    summary="The ranking for the given weights, a page at a time",
    responses=UNPROCESSABLE_RESPONSES,
)
def leaderboard(
    task_id: TaskId,
    ctx: CtxDep,
    principal: PrincipalDep,
    response: Response,
    weights: Weights = None,
    dataset_weights: DatasetWeights = None,
    limit: Limit = None,
    offset: Offset = None,
    sort: Sort = None,
    q: Search = None,
    runtime: RuntimeFilter = None,
    license: LicenseFilter = None,
    min_params: MinParams = None,
    max_params: MaxParams = None,
    baselines: Baselines = True,
    busy: Busy = True,
) -> LeaderboardPublic:
    """Filters show part of the ranking: each row keeps its rank on the whole board, and
    ``total`` counts the rows that match. A large board's first answer for new weights
    may come before its intervals (``intervals_pending``, with ``Retry-After``); the
    downloads always wait for them."""
    query = parse_board_query(limit=limit, offset=offset, sort=sort, q=q)
    cards = CardFilter(
        runtime=runtime,
        license=license,
        min_params=min_params,
        max_params=max_params,
        baselines=baselines,
        busy=busy,
    )
    board = visible_board(
        ctx, principal, task_id, weights, dataset_weights, query, cards, wait_for_intervals=False
    )[1]
    if board.intervals_pending:
        response.headers["Retry-After"] = str(INTERVALS_RETRY_S)
    return board


@router.get(
    "/leaderboard.csv",
    summary="Download the whole table as CSV",
    response_class=Response,
    responses={
        200: {
            "content": {"text/csv": {"schema": {"type": "string"}}},
            "description": "One row per model.",
        }
    },
)
def leaderboard_csv(
    task_id: TaskId,
    ctx: CtxDep,
    principal: PrincipalDep,
    weights: Weights = None,
    dataset_weights: DatasetWeights = None,
) -> Response:
    board = visible_board(ctx, principal, task_id, weights, dataset_weights)[1]
    return attachment(to_csv(board), "text/csv", f"{task_id}-leaderboard.csv")


@router.get(
    "/leaderboard.json",
    summary="Download the whole table as JSON",
    response_model=LeaderboardPublic,
)
def leaderboard_json(
    task_id: TaskId,
    ctx: CtxDep,
    principal: PrincipalDep,
    weights: Weights = None,
    dataset_weights: DatasetWeights = None,
) -> Response:
    board = visible_board(ctx, principal, task_id, weights, dataset_weights)[1]
    body = board.model_dump_json(indent=2)
    return attachment(body, "application/json", f"{task_id}-leaderboard.json")
