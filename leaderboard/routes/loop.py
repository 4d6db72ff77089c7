"""The loop's HTTP API: rounds, collection, validation, vMER, failure capture and drift.

Include :data:`router` in the app (it brings the loop's pages too). The app's
:class:`TargetPool` lives on ``app.state.target_pool``, made on first use from the
stored bundles and closed when the app shuts down; a test may put its own there first.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, FastAPI, Path, Query, status
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.errors import PermissionDenied
from evalboard.core.states import Role
from evalboard.core.tables import Example, Round
from leaderboard.auth import CtxDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.loop.access import may_annotate
from leaderboard.loop.collection import collect_example, explain_example, get_example
from leaderboard.loop.failures import Failure, capture_failures
from leaderboard.loop.rounds import close_round, get_round, open_round, round_examples
from leaderboard.loop.schemas import (
    ClosedRoundPublic,
    ExampleCreate,
    ExamplePublic,
    ExplanationUpdate,
    FailureItem,
    FailuresCreate,
    RoundCreate,
    ValidationCreate,
    ValidationPublic,
    VmerPublic,
    example_public,
    vmer_public,
)
from leaderboard.loop.targets import TargetPool, warm_quietly
from leaderboard.loop.validation import validate_example, validation_queue, verdicts_of
from leaderboard.loop.vmer import round_vmer
from leaderboard.routes import drift
from leaderboard.routes._loop_deps import PoolDep
from leaderboard.routes.loop_pages import router as pages_router
from leaderboard.routes.rounds import round_public
from leaderboard.schemas import RoundPublic, from_row

__all__ = ["router"]

logger = logging.getLogger(__name__)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    pool = getattr(app.state, "target_pool", None)
    if isinstance(pool, TargetPool):
        pool.close()


TaskId = Annotated[str, Path(max_length=64, description="Task id, e.g. sentiment.")]
Number = Annotated[int, Path(ge=1, le=1_000_000, description="Round number.")]
ExampleId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Example id.")]

router = APIRouter(tags=["rounds"], responses=ERROR_RESPONSES, lifespan=_lifespan)


def _public(ctx: Context, examples: list[Example]) -> list[ExamplePublic]:
    """The examples as the API shows them, each with its round's number."""
    ids = {e.round_id for e in examples if e.round_id is not None}
    with ctx.db.session() as session:
        rows = session.execute(select(Round.id, Round.number).where(Round.id.in_(ids))).all()
    numbers = {round_id: number for round_id, number in rows}
    return [example_public(e, numbers.get(e.round_id or 0)) for e in examples]


@router.post(
    "/tasks/{task_id}/rounds",
    status_code=status.HTTP_201_CREATED,
    summary="Open a round with target models (task owner)",
)
def open_(
    task_id: TaskId,
    body: RoundCreate,
    ctx: CtxDep,
    principal: SignedInDep,
    pool: PoolDep,
    background: BackgroundTasks,
) -> RoundPublic:
    principal.require_owner(task_id, doing="open a round")
    opened = open_round(ctx, task_id, submission_ids=body.submission_ids, top=body.top)
    background.add_task(
        warm_quietly, ctx, pool, opened.id, [int(i) for i in opened.target_submission_ids]
    )
    return round_public(opened)


@router.get("/tasks/{task_id}/rounds/{number}", summary="One round")
def show(task_id: TaskId, number: Number, ctx: CtxDep) -> RoundPublic:
    return round_public(get_round(ctx, task_id, number))


@router.post("/tasks/{task_id}/rounds/{number}/close", summary="Close a round (task owner)")
def close(
    task_id: TaskId,
    number: Number,
    ctx: CtxDep,
    principal: SignedInDep,
    pool: PoolDep,
    weight: Annotated[
        float | None,
        Query(
            gt=0,
            le=1e6,
            description="The new dataset's weight; default min(1, examples/500).",
        ),
    ] = None,
) -> ClosedRoundPublic:
    principal.require_owner(task_id, doing="close a round")
    closed = close_round(ctx, task_id, number, weight=weight)
    pool.release(closed.round.id)
    return ClosedRoundPublic(
        round=round_public(closed.round),
        dataset=closed.dataset.name if closed.dataset else None,
        derived=[d.name for d in closed.derived],
        examples=closed.examples,
        jobs_queued=len(closed.jobs),
    )


@router.post(
    "/tasks/{task_id}/rounds/{number}/examples",
    status_code=status.HTTP_201_CREATED,
    summary="Write an example; the target's answer comes back at once (annotators)",
)
def collect(
    task_id: TaskId,
    number: Number,
    body: ExampleCreate,
    ctx: CtxDep,
    principal: SignedInDep,
    pool: PoolDep,
) -> ExamplePublic:
    may_annotate(principal, task_id)
    assert principal.user_id is not None
    collected = collect_example(
        ctx,
        task_id,
        number,
        author_id=principal.user_id,
        inputs=body.inputs,
        gold=body.gold(),
        explanation=body.explanation,
        predictor=pool,
    )
    return example_public(collected.example, number, collected.latency_s)


@router.get("/tasks/{task_id}/rounds/{number}/examples", summary="A round's examples")
def list_examples(
    task_id: TaskId, number: Number, ctx: CtxDep, principal: SignedInDep
) -> list[ExamplePublic]:
    """The owner sees every example; anyone else signed in, their own."""
    principal.require_signed_in()
    round_ = get_round(ctx, task_id, number)
    examples = round_examples(ctx, round_.id)
    if not principal.owns(task_id):
        examples = [e for e in examples if e.author_id == principal.user_id]
    return [example_public(e, number) for e in examples]


@router.get("/tasks/{task_id}/rounds/{number}/vmer", summary="vMER of a round, per annotator")
def vmer(task_id: TaskId, number: Number, ctx: CtxDep) -> VmerPublic:
    return vmer_public(round_vmer(ctx, task_id, number))


@router.put("/examples/{example_id}/explanation", summary="Say why it fooled the model (author)")
def explain(
    example_id: ExampleId, body: ExplanationUpdate, ctx: CtxDep, principal: SignedInDep
) -> ExamplePublic:
    author_id = principal.require_signed_in()
    example = explain_example(ctx, example_id, author_id=author_id, explanation=body.explanation)
    return _public(ctx, [example])[0]


@router.get("/tasks/{task_id}/validations/queue", summary="Examples waiting for your verdict")
def queue(
    task_id: TaskId,
    ctx: CtxDep,
    principal: SignedInDep,
    flagged: Annotated[bool, Query(description="The flagged ones (task owner).")] = False,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[ExamplePublic]:
    may_annotate(principal, task_id)
    if flagged:
        principal.require_owner(task_id, doing="review flagged examples")
    assert principal.user_id is not None
    examples = validation_queue(
        ctx, task_id, user_id=principal.user_id, limit=limit, flagged=flagged
    )
    return _public(ctx, examples)


@router.post(
    "/examples/{example_id}/validations",
    status_code=status.HTTP_201_CREATED,
    summary="Judge another annotator's example (annotators; the owner's verdict settles it)",
)
def validate(
    example_id: ExampleId, body: ValidationCreate, ctx: CtxDep, principal: SignedInDep
) -> ValidationPublic:
    task_id = get_example(ctx, example_id).task_id
    may_annotate(principal, task_id)
    assert principal.user_id is not None
    example = validate_example(
        ctx,
        example_id,
        user_id=principal.user_id,
        verdict=body.verdict,
        label=body.label,
        as_owner=principal.owns(task_id),
        seen_version=body.version,
    )
    counts: dict[str, int] = {}
    owner_verdict = None
    for verdict in verdicts_of(ctx, example_id):
        # A traffic input's votes count by the label given.
        kind = verdict.label if verdict.label is not None else verdict.verdict
        counts[kind] = counts.get(kind, 0) + 1
        if verdict.by_owner:
            owner_verdict = kind
    return ValidationPublic(
        example_id=example.id,
        status=example.status,
        verdicts=counts,
        owner_verdict=owner_verdict,
        gold=example.gold,
    )


def _failure(item: FailureItem) -> Failure:
    gold = (
        {"answer": item.answer, "answer_start": item.answer_start}
        if item.answer
        else {"label": item.label}
    )
    return from_row(Failure, item, gold=gold)


@router.post(
    "/tasks/{task_id}/failures",
    status_code=status.HTTP_201_CREATED,
    summary="Report inputs a deployed model got wrong, with the correct output",
)
def failures(
    task_id: TaskId, body: FailuresCreate, ctx: CtxDep, principal: SignedInDep
) -> list[ExamplePublic]:
    principal.require_signed_in()
    if not (principal.may_upload(task_id) or principal.has_role(Role.ANNOTATOR, task_id)):
        raise PermissionDenied(
            f"Reporting failures of task {task_id!r} needs the researcher, annotator or owner role"
        )
    stored = capture_failures(
        ctx, task_id, [_failure(item) for item in body.failures], reporter_id=principal.user_id
    )
    return _public(ctx, stored)


router.include_router(pages_router)
router.include_router(drift.router)
router.include_router(drift.pages_router)
