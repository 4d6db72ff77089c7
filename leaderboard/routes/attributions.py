"""Word attributions over HTTP: of a collected example (its author, the task owner) and of
a drill-down example (anyone signed in who may see it). Both compute through the model's
own sandbox, so both are POSTs (a browser sends its session's ``X-CSRF-Token``)."""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from leaderboard.attributions import (
    AttributionPublic,
    Attributor,
    attribute_collected,
    attribute_drilldown,
)
from leaderboard.auth import CtxDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.routes._loop_deps import PoolDep

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

_lock = threading.Lock()


def get_attributor(request: Request) -> Attributor:
    """The server's one :class:`Attributor` (``app.state.attributor``, made on first use),
    so that its cap on concurrent attributions holds across requests."""
    state = request.app.state
    with _lock:
        attributor = getattr(state, "attributor", None)
        if attributor is None:
            attributor = state.attributor = Attributor(state.ctx)
    assert isinstance(attributor, Attributor)
    return attributor


AttributorDep = Annotated[Attributor, Depends(get_attributor)]


class DrilldownExample(BaseModel):
    """Which example of the dataset to explain."""

    model_config = ConfigDict(extra="forbid", strict=True)

    uid: str = Field(min_length=1, max_length=200, description="The example's uid.")


@router.post(
    "/examples/{example_id}/attributions",
    tags=["rounds"],
    summary="Which words moved the target's answer on a collected example (its author, "
    "the task owner)",
)
def collected(
    example_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    ctx: CtxDep,
    principal: SignedInDep,
    pool: PoolDep,
    attributor: AttributorDep,
) -> AttributionPublic:
    """Occlusion through the target's own sandbox: each word removed in turn, the input and
    every variant in one request. Cached per (target, input); past the caps, 400 (the
    input is too long) or 503 (too many at once: try again shortly)."""
    return attribute_collected(ctx, attributor, pool, principal, example_id)


@router.post(
    "/submissions/{submission_id}/examples/{dataset}/attributions",
    tags=["submissions"],
    summary="Which words moved the model's answer on an example of its drill-down",
)
def drilldown_example(
    submission_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    dataset: Annotated[str, Path(max_length=128)],
    body: DrilldownExample,
    ctx: CtxDep,
    principal: SignedInDep,
    pool: PoolDep,
    attributor: AttributorDep,
) -> AttributionPublic:
    """As for collected examples; the example is one the caller may see on the
    submission's drill-down (never of a hidden dataset, unless the caller owns the task)."""
    return attribute_drilldown(
        ctx,
        attributor,
        pool,
        principal,
        submission_id=submission_id,
        dataset=dataset,
        uid=body.uid,
    )
