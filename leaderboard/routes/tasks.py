"""Tasks and their default weights."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status
from sqlalchemy import select

from datasets_registry import create_task, get_task, list_tasks, parse_task_spec
from evalboard.core.context import Context
from evalboard.core.states import Role
from evalboard.core.tables import Task, User
from leaderboard.accounts import get_user, grant_role
from leaderboard.auth import CtxDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.schemas import TaskCreate, TaskPublic, WeightsPublic, WeightsUpdate, from_row
from scoring import WEIGHABLE_METRICS, check_weights

__all__ = ["TaskId", "router", "task_public"]

router = APIRouter(prefix="/tasks", tags=["tasks"], responses=ERROR_RESPONSES)

TaskId = Annotated[str, Path(max_length=64, description="Task id, e.g. sentiment.")]


def task_public(ctx: Context, task_id: str) -> TaskPublic:
    spec = get_task(ctx, task_id)
    with ctx.db.session() as session:
        task = session.get(Task, task_id)
        assert task is not None
        owner = session.scalar(select(User.name).where(User.id == task.owner_id))
        weights = {k: float(v) for k, v in task.default_weights.items()}
    return from_row(
        TaskPublic,
        spec,
        inputs=spec.input_names,
        output_type=spec.output.type,
        labels=spec.output.labels,
        delta_metrics=list(spec.delta_metrics),
        default_weights=weights,
        limits=spec.limits.model_dump(mode="json"),
        owner=owner,
    )


@router.get("", summary="List tasks")
def list_(ctx: CtxDep) -> list[TaskPublic]:
    return [task_public(ctx, task.id) for task in list_tasks(ctx)]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Create a task (admin)")
def create(body: TaskCreate, ctx: CtxDep, principal: SignedInDep) -> TaskPublic:
    principal.require_admin(doing="create tasks")
    spec = parse_task_spec(body.spec, source="the request's spec")
    owner_id = get_user(ctx, body.owner).id if body.owner else principal.user_id
    task, _ = create_task(ctx, spec, owner_id=owner_id)
    if body.owner:
        grant_role(ctx, body.owner, Role.OWNER, task_id=task.id)
    return task_public(ctx, task.id)


@router.get("/{task_id}", summary="A task's spec")
def show(task_id: TaskId, ctx: CtxDep) -> TaskPublic:
    return task_public(ctx, task_id)


@router.get("/{task_id}/weights", summary="The task's default Dynascore weights")
def weights(task_id: TaskId, ctx: CtxDep) -> WeightsPublic:
    return WeightsPublic(task=task_id, weights=task_public(ctx, task_id).default_weights)


def set_default_weights(ctx: Context, task_id: str, weights: dict[str, float]) -> None:
    checked = check_weights(weights, known=WEIGHABLE_METRICS)
    with ctx.db.session() as session:
        task = session.get(Task, task_id)
        assert task is not None
        task.default_weights = checked


@router.put("/{task_id}/weights", summary="Set the default weights (task owner)")
def put_weights(
    task_id: TaskId, body: WeightsUpdate, ctx: CtxDep, principal: SignedInDep
) -> WeightsPublic:
    get_task(ctx, task_id)
    principal.require_owner(task_id, doing="set its default weights")
    set_default_weights(ctx, task_id, dict(body.weights))
    return WeightsPublic(task=task_id, weights=task_public(ctx, task_id).default_weights)
