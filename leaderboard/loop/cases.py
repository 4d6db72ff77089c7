"""Per-case history on the server: each lineage release's verdict on every example.

A case is one example of an original dataset (perturbed copies measure stability, not
correctness: the release gate's datasets). A release's verdict on it comes from the
predictions its finished result stored on that dataset, judged by the task's one
per-example correctness rule (:func:`leaderboard.loop.answers.is_right`); a release with
no finished result there has no verdict. :mod:`leaderboard.loop.history` turns the verdicts
into "first passed by", "lost by" and the gate's regressions.

Hidden sets count (the platform's own gate judges on them) but are never shown: a viewer
who may not see a hidden dataset gets no case of it, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from datasets_registry import TaskSpec, get_task, list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Dataset, Result
from evaluator import model_inputs, outputs_by_uid
from leaderboard.accounts import Principal
from leaderboard.example_statistics import load_records
from leaderboard.lineages import Lineage, Release, task_lineages
from leaderboard.loop.answers import describe_rule, gold_value, is_right
from leaderboard.loop.history import CaseHistory, Verdict
from leaderboard.schemas import (
    CaseDatasetPublic,
    CaseHistoryPublic,
    LineageCasePublic,
    ReleaseRef,
    VerdictPublic,
    from_row,
)

__all__ = [
    "DatasetCases",
    "case_history",
    "dataset_cases",
    "gate_datasets",
    "release_verdicts",
    "shown_inputs",
]


@dataclass(frozen=True)
class DatasetCases:
    """One original dataset's cases: each example, and its history in each lineage (only
    lineages with a release scored on the dataset)."""

    dataset: Dataset
    examples: list[dict[str, Any]]
    histories: dict[str, list[CaseHistory]]


def gate_datasets(ctx: Context, task_id: str) -> list[Dataset]:
    """The datasets a case belongs to: the originals (no perturbed copies), every access."""
    return [d for d in list_datasets(ctx, task_id) if d.derived_from_id is None]


def release_verdicts(
    ctx: Context, task: TaskSpec, dataset: Dataset, predictions_key: str
) -> dict[str, bool]:
    """uid -> whether the release whose predictions are ``predictions_key`` passed it."""
    rule = (task.model_wrong.rule, task.model_wrong.threshold)
    cache_key = ("case-verdicts", task.id, rule, dataset.sha256, predictions_key)
    cached = ctx.cache.get(cache_key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    outputs = outputs_by_uid(load_records(ctx, predictions_key))
    verdicts = {}
    for example in read_examples(ctx, dataset):
        uid = str(example["uid"])
        verdicts[uid] = is_right(task, outputs.get(uid), gold_value(task, example))
    ctx.cache.put(cache_key, verdicts)  # prediction files never change once written
    return verdicts


def _predictions(
    ctx: Context, dataset: Dataset, releases: Sequence[int], results: Collection[int] | None
) -> dict[int, str]:
    """submission id -> its predictions on ``dataset`` (``results``: only these count)."""
    if not releases:
        return {}
    query = select(Result.id, Result.submission_id, Result.predictions_key).where(
        Result.dataset_id == dataset.id, Result.submission_id.in_(releases)
    )
    with ctx.db.session() as session:
        rows = session.execute(query).all()
    kept = set(results) if results is not None else None
    return {
        int(submission): str(key)
        for result, submission, key in rows
        if key and (kept is None or result in kept)
    }


def dataset_cases(
    ctx: Context,
    task: TaskSpec,
    dataset: Dataset,
    lineages: Sequence[Lineage],
    *,
    results: Collection[int] | None = None,
) -> DatasetCases:
    """Every case of ``dataset`` with its history in each of ``lineages`` (their releases
    as given: the caller chose whose); ``results``: only these results count (a suite
    version's cut)."""
    examples = read_examples(ctx, dataset)
    releases = [r.submission_id for lineage in lineages for r in lineage.releases]
    keys = _predictions(ctx, dataset, releases, results)
    verdicts = {sid: release_verdicts(ctx, task, dataset, key) for sid, key in keys.items()}
    histories: dict[str, list[CaseHistory]] = {}
    for example in examples:
        uid = str(example["uid"])
        found = []
        for lineage in lineages:
            steps = tuple(
                Verdict(r.submission_id, verdicts[r.submission_id][uid])
                for r in lineage.releases
                if uid in verdicts.get(r.submission_id, {})
            )
            if steps:
                found.append(CaseHistory(lineage.id, steps))
        histories[uid] = found
    return DatasetCases(dataset, examples, histories)


def shown_inputs(task: TaskSpec, example: dict[str, Any]) -> dict[str, Any]:
    """The example's inputs as a viewer reads them (no uid, no gold)."""
    (inputs,) = model_inputs([example], task.input_names)
    return {k: v for k, v in inputs.items() if k != "uid"}


def _ref(release: Release) -> ReleaseRef:
    return from_row(ReleaseRef, release)


def _lineage_case(lineage: Lineage, history: CaseHistory) -> LineageCasePublic:
    verdicts = {v.release: v.passed for v in history.verdicts}
    by_id = {r.submission_id: r for r in lineage.releases}
    return LineageCasePublic(
        lineage=lineage.id,
        releases=[
            VerdictPublic(**_ref(r).model_dump(), passed=verdicts.get(r.submission_id))
            for r in lineage.releases
        ],
        first_passed=_ref(by_id[history.first_passed]) if history.first_passed else None,
        lost_by=[_ref(by_id[release]) for release in history.lost_by],
        passing=history.passing,
    )


def case_history(
    ctx: Context, principal: Principal, task_id: str, uid: str, *, dataset: str | None = None
) -> CaseHistoryPublic:
    """``GET /tasks/T/cases/UID/history``: the case in each dataset ``principal`` may see,
    with every lineage's releases and their verdicts on it.

    Raises:
        NotFound: no dataset the principal may see holds the uid.
    """
    task = get_task(ctx, task_id)
    lineages = task_lineages(ctx, principal, task_id)
    datasets = []
    for candidate in gate_datasets(ctx, task_id):
        if (candidate.access == Access.HIDDEN and not principal.owns(task_id)) or (
            dataset is not None and candidate.name != dataset
        ):
            continue
        example = next((e for e in read_examples(ctx, candidate) if str(e["uid"]) == uid), None)
        if example is None:
            continue
        cases = dataset_cases(ctx, task, candidate, lineages)
        histories = {h.lineage: h for h in cases.histories[uid]}
        datasets.append(
            CaseDatasetPublic(
                dataset=candidate.name,
                round=candidate.round,
                inputs=shown_inputs(task, example),
                gold=gold_value(task, example),
                lineages=[
                    _lineage_case(lineage, histories[lineage.id])
                    for lineage in lineages
                    if lineage.id in histories
                ],
            )
        )
    if not datasets:
        where = f"dataset {dataset!r}" if dataset is not None else "any dataset you may see"
        raise NotFound(f"Task {task_id!r} has no case {uid!r} in {where}")
    return CaseHistoryPublic(task=task_id, uid=uid, rule=describe_rule(task), datasets=datasets)
