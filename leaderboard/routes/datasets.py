"""A task's datasets: list, add (task owner), show, and download examples.

A hidden dataset is invisible to everyone but the task owner and admins: it is left out
of listings and answers 404, so not even its name leaks.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from fastapi import APIRouter, File, Form, Path, Query, UploadFile, status
from fastapi.responses import Response
from starlette.datastructures import UploadFile as FormFile

from datasets_registry import (
    ColumnMapping,
    add_dataset,
    export_examples,
    get_task,
    list_datasets,
    parse_mapping,
    set_dataset_weight,
)
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Dataset
from evaluator import queue_missing_jobs
from leaderboard.accounts import Principal
from leaderboard.auth import CtxDep, PrincipalDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.routes._files import attachment, received_file
from leaderboard.routes.tasks import TaskId
from leaderboard.schemas import DatasetPublic, DatasetWeightUpdate, from_row

__all__ = ["add_uploaded_dataset", "router", "visible_datasets"]

router = APIRouter(prefix="/tasks/{task_id}/datasets", tags=["datasets"], responses=ERROR_RESPONSES)

DatasetName = Annotated[str, Path(max_length=128, description="Dataset name.")]


def _public(ctx: Context, task_id: str, datasets: list[Dataset]) -> list[DatasetPublic]:
    """The datasets as the API shows them, a perturbed copy naming the one it comes from."""
    names = {d.id: d.name for d in list_datasets(ctx, task_id)}
    return [
        from_row(
            DatasetPublic,
            d,
            access=Access(d.access),
            derived_from=names.get(d.derived_from_id) if d.derived_from_id else None,
        )
        for d in datasets
    ]


def visible_datasets(ctx: Context, principal: Principal, task_id: str) -> list[Dataset]:
    datasets = list_datasets(ctx, task_id)
    if principal.owns(task_id):
        return datasets
    return [d for d in datasets if d.access != Access.HIDDEN]


def _visible(ctx: Context, principal: Principal, task_id: str, name: str) -> Dataset:
    """The named dataset, where the caller may see it. A hidden one reads as a missing one,
    in the same words, and the names offered are those the caller may see: else the answer
    would tell a hidden set's name, or that one is called so."""
    visible = visible_datasets(ctx, principal, task_id)
    found = next((d for d in visible if d.name == name), None)
    if found is None:
        known = sorted(d.name for d in visible)
        raise NotFound.among(f"Dataset {name!r} of task {task_id!r}", known)
    return found


@router.get("", summary="List the datasets you may see")
def list_(task_id: TaskId, ctx: CtxDep, principal: PrincipalDep) -> list[DatasetPublic]:
    return _public(ctx, task_id, visible_datasets(ctx, principal, task_id))


_PLAIN_SUFFIX = re.compile(r"\.[a-z0-9]{1,10}")


def add_uploaded_dataset(
    ctx: Context,
    principal: Principal,
    task_id: str,
    *,
    upload: FormFile,
    name: str,
    round: int,
    access: Access,
    weight: float,
    mapping: str,
    label_map: str,
) -> list[Dataset]:
    """Store an uploaded dataset file (and its perturbed copies); queue its evaluations."""
    get_task(ctx, task_id)
    principal.require_owner(task_id, doing="add datasets")
    with received_file(upload, "upload", _PLAIN_SUFFIX) as path:
        added = add_dataset(
            ctx,
            task_id=task_id,
            name=name,
            path=path,
            round=round,
            access=access,
            weight=weight,
            mapping=ColumnMapping(
                fields=parse_mapping([mapping]),
                labels=parse_mapping([label_map], what="label map"),
            ),
        )
    if added.created:
        queue_missing_jobs(ctx, task_id)
    return [added.dataset, *added.derived]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    summary="Add a dataset (task owner); returns it and its perturbed copies",
)
def add(
    task_id: TaskId,
    ctx: CtxDep,
    principal: SignedInDep,
    file: Annotated[UploadFile, File(description="JSONL, CSV, TSV or SQuAD JSON.")],
    name: Annotated[str, Form(max_length=100)],
    round: Annotated[int, Form(ge=0, le=10_000)] = 0,
    access: Annotated[Access, Form()] = Access.SCORING,
    weight: Annotated[float, Form(gt=0, le=1e6)] = 1.0,
    mapping: Annotated[str, Form(max_length=2000, description="field=column,...")] = "",
    label_map: Annotated[str, Form(max_length=2000, description="value=label,...")] = "",
) -> list[DatasetPublic]:
    datasets = add_uploaded_dataset(
        ctx,
        principal,
        task_id,
        upload=file,
        name=name,
        round=round,
        access=access,
        weight=weight,
        mapping=mapping,
        label_map=label_map,
    )
    return _public(ctx, task_id, datasets)


@router.patch("/{name}", summary="Set a dataset's weight (task owner)")
def set_weight(
    task_id: TaskId,
    name: DatasetName,
    body: DatasetWeightUpdate,
    ctx: CtxDep,
    principal: SignedInDep,
) -> DatasetPublic:
    principal.require_owner(task_id, doing="set its dataset weights")
    dataset = set_dataset_weight(ctx, task_id=task_id, name=name, weight=body.weight)
    return _public(ctx, task_id, [dataset])[0]


@router.get("/{name}", summary="One dataset")
def show(task_id: TaskId, name: DatasetName, ctx: CtxDep, principal: PrincipalDep) -> DatasetPublic:
    return _public(ctx, task_id, [_visible(ctx, principal, task_id, name)])[0]


@router.get(
    "/{name}/examples",
    summary="Download the examples as JSON lines",
    response_class=Response,
    responses={
        200: {
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            "description": "One example per line.",
        }
    },
)
def examples(
    task_id: TaskId,
    name: DatasetName,
    ctx: CtxDep,
    principal: PrincipalDep,
    labels: Annotated[bool, Query(description="Include the gold output.")] = True,
) -> Response:
    dataset = _visible(ctx, principal, task_id, name)
    rows = export_examples(ctx, dataset, labels=labels, may_see_hidden=principal.owns(task_id))
    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    return attachment(body, "application/x-ndjson", f"{dataset.name}.jsonl")
