"""Predictions-only submissions: a researcher's predictions file per dataset, scored as given.

Each file is one object per example, its ``uid`` and the output fields a model would have
returned (``{"uid": "a1", "label": "pos"}``). The files go through the same contract and
scoring as a model's answers: every output is checked by
:func:`datasets_registry.output_problems`, then :func:`evaluator.score` pairs predictions
and gold through ``task.prediction`` / ``task.gold`` (a perturbed copy's against the same
submission's predictions on its original). The result is stored as finished jobs, so the
board, its intervals, drill-down and compare read it like any other; it has no throughput,
memory, latency or energy (never measured), which the board's one rule for a missing
metric handles (``scoring.fill_missing``: the board's worst figure), and it is never a loop target.

What a submission must cover: every dataset the public board counts that is not hidden
(so the row can be ranked). A hidden set takes predictions only while an open phase holds
it, within the phase's per-user limit (:mod:`leaderboard.phases`); a hidden set outside an
open phase is answered as an unknown dataset. A file that does not fit a hidden set is
refused without saying how (no ids, no counts: else refusals would tell its size and ids),
and the refusal uses one of the phase's submissions. While the board counts a hidden set
that no open phase holds (no phase, or one revealed onto the public board), predictions
cannot cover it and their row would never be complete: such a submission is refused once
its files are checked, before anything is scored, recorded or counted against a quota.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from datasets_registry import TaskSpec, get_task, list_datasets, output_problems, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import NotFound, PermissionDenied, UsageError
from evalboard.core.states import Access, JobStatus, SubmissionKind
from evalboard.core.tables import Dataset, Job, Result, Submission, utcnow
from evaluator import DatasetMetrics, score, stored_metrics
from leaderboard.accounts import Principal
from leaderboard.phases import (
    enter_phases,
    open_phase_of,
    refused_attempt,
    withheld_dataset_ids,
)
from leaderboard.schemas import PredictionsCreate
from leaderboard.submissions import lock_user, refuse_over_quota

__all__ = ["MAX_PROBLEMS", "create_predictions"]

#: Problems listed in one refusal (the count of the rest is given).
MAX_PROBLEMS = 10


class _HiddenMismatch(Exception):
    pass


def _matched(
    spec: TaskSpec, dataset: Dataset, examples: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rows' outputs in the dataset's example order, checked against the contract."""
    hidden = dataset.access == Access.HIDDEN
    problems: list[str] = []
    by_uid: dict[str, dict[str, Any]] = {}
    for index, row in enumerate(rows):
        uid = row.get("uid")
        if not isinstance(uid, str | int) or isinstance(uid, bool):
            problems.append(f"row {index}: needs a 'uid' (a string or an integer)")
            continue
        if str(uid) in by_uid:
            problems.append(f"row {index}: uid {uid!r} is given twice")
            continue
        by_uid[str(uid)] = {k: v for k, v in row.items() if k != "uid"}
    known = {str(e["uid"]) for e in examples}
    unknown = [u for u in by_uid if u not in known]
    missing = [u for u in known if u not in by_uid]
    if hidden and (unknown or missing or problems):
        raise _HiddenMismatch
    problems += [f"uid {u!r} is not an example of {dataset.name!r}" for u in unknown]
    if missing:
        problems.append(
            f"{len(missing)} example(s) of {dataset.name!r} have no prediction (e.g. uid "
            f"{missing[0]!r}); give every example once"
        )
    if problems:
        raise UsageError(_listed(dataset.name, problems))
    outputs = [by_uid[str(e["uid"])] for e in examples]
    found = [p.describe() for p in output_problems(spec.output, examples, outputs)]
    if found:
        raise UsageError(_listed(dataset.name, found))
    return outputs


def _listed(name: str, problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:MAX_PROBLEMS])
    more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
    return f"Predictions for {name!r} do not fit the task: {shown}{more}; nothing was recorded"


def _chosen(
    ctx: Context, task_id: str, names: Sequence[str]
) -> tuple[list[Dataset], set[int], bool]:
    """The named datasets (copies after their originals), the open-phase hidden ones, and
    whether the board counts a hidden set that takes no predictions (then no row made of
    predictions is ever complete: :mod:`leaderboard.table` ranks only complete rows)."""
    datasets = list_datasets(ctx, task_id)
    by_name = {d.name: d for d in datasets}
    in_phase: set[int] = set()
    with ctx.db.session() as session:
        for dataset in datasets:
            if dataset.access == Access.HIDDEN and dataset.perturbation is None:
                if open_phase_of(session, dataset.id) is not None:
                    in_phase.add(dataset.id)
    takes = {
        d.name
        for d in datasets
        if d.access != Access.HIDDEN or d.id in in_phase or (d.derived_from_id in in_phase)
    }
    shown = sorted(takes)  # an open phase's sets are named by the phase already
    for name in names:
        if name not in takes:
            raise NotFound(
                f"Task {task_id!r} has no dataset {name!r} that takes predictions; "
                f"these do: {', '.join(shown) or 'none'}"
            )
    chosen = sorted((by_name[n] for n in names), key=lambda d: (d.perturbation is not None, d.id))
    withheld = withheld_dataset_ids(ctx, task_id, datasets)
    needed = [
        d.name
        for d in datasets
        if d.access == Access.SCORING and d.name not in names and d.id not in withheld
    ]
    if needed:
        raise UsageError(
            f"Predictions must cover every dataset the board counts; missing: "
            f"{', '.join(sorted(needed))}"
        )
    uncoverable = any(
        d.access == Access.HIDDEN and d.id not in withheld and d.name not in takes for d in datasets
    )
    phase_sets = {d.id for d in chosen if d.id in in_phase or d.derived_from_id in in_phase}
    return chosen, phase_sets, uncoverable


def _never_ranked(task_id: str) -> UsageError:
    # Neither names nor counts the hidden sets: outside a phase they are not for the
    # submitter to know (a named one is answered as unknown).
    return UsageError(
        f"Task {task_id!r} cannot rank predictions now: its board also counts hidden data, "
        "which predictions can cover only while a private phase holds it, so the row would "
        "stay pending for ever. Nothing was recorded and no quota was used; submit a model "
        "instead (it is run on every dataset), or ask the task's owner to open a phase"
    )


def create_predictions(
    ctx: Context, principal: Principal, task_id: str, body: PredictionsCreate
) -> Submission:
    """Score the predictions and record them as a finished predictions-only submission.

    Raises:
        NotFound: a dataset that takes no predictions (unknown, or hidden outside an open
            phase: the two read the same).
        UsageError: a file that does not fit its dataset (ids, duplicates, outputs), a
            dataset the board counts left out, or a board that counts a hidden set no
            open phase holds (predictions could never complete the row).
        PermissionDenied: the caller may not submit models to the task.
        QuotaExceeded: the daily quota or a phase's limit is spent.
    """
    principal.require_signed_in()
    spec = get_task(ctx, task_id)
    if not principal.may_upload(task_id):  # as for a bundle: the researcher role
        raise PermissionDenied(
            f"{principal.name!r} may not submit to {task_id!r}: ask an admin for the "
            "researcher role"
        )
    if not body.predictions:
        raise UsageError("Give predictions for at least one dataset")
    chosen, phase_sets, uncoverable = _chosen(ctx, task_id, list(body.predictions))
    # Every file checked first (what is wrong with them is the caller's to fix either way),
    # then the board's coverage, then the scoring.
    by_id = {d.id: d for d in chosen}
    matched: list[tuple[Dataset, list[dict[str, Any]], list[dict[str, Any]], str | None]] = []
    for dataset in chosen:
        examples = read_examples(ctx, dataset)
        try:
            given = _matched(spec, dataset, examples, body.predictions[dataset.name])
        except _HiddenMismatch:
            if uncoverable:  # never to be ranked: no phase submission spent on it
                raise _never_ranked(task_id) from None
            refused_attempt(ctx, principal, task_id=task_id, dataset_ids=phase_sets)
            raise UsageError(
                f"Predictions for {dataset.name!r} do not match its examples (an id unknown, "
                "missing or repeated; a hidden set does not say which); this used one of the "
                "phase's submissions, and nothing was recorded"
            ) from None
        original = None
        if dataset.perturbation is not None:
            original = by_id.get(dataset.derived_from_id or -1)
            if original is None:
                raise UsageError(
                    f"{dataset.name!r} is a perturbed copy: give its original's predictions in "
                    "the same submission"
                )
        matched.append((dataset, examples, given, original.name if original else None))
    if uncoverable:
        raise _never_ranked(task_id)
    outputs: dict[str, dict[str, dict[str, Any]]] = {}
    scored: list[tuple[Dataset, DatasetMetrics, bytes]] = []
    for dataset, examples, given, original_name in matched:
        originals = outputs[original_name] if original_name is not None else None
        quality = score(spec, examples, given, originals=originals)
        outputs[dataset.name] = {str(e["uid"]): o for e, o in zip(examples, given, strict=True)}
        metrics = DatasetMetrics(
            perf=quality.perf,
            perf_metric=spec.perf_metric,
            extra=quality.extra,
            fairness=quality.delta if dataset.perturbation == "fairness" else None,
            robustness=quality.delta if dataset.perturbation == "robustness" else None,
            examples=len(given),
            ece=quality.ece,
        )
        scored.append((dataset, metrics, quality.jsonl()))
    return _record(ctx, principal, task_id, body, scored, phase_sets)


def _digest(predictions: Mapping[str, Any]) -> str:
    canonical = json.dumps(predictions, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(canonical).hexdigest()


def _record(
    ctx: Context,
    principal: Principal,
    task_id: str,
    body: PredictionsCreate,
    scored: list[tuple[Dataset, DatasetMetrics, bytes]],
    phase_sets: set[int],
) -> Submission:
    digest = _digest(body.predictions)
    keys: list[str] = []
    for dataset, _, records in scored:
        key = f"predictions/given/{digest}/{dataset.id}.jsonl"
        ctx.artifacts.put_bytes(key, records)
        keys.append(key)
    now = utcnow()
    with ctx.db.session() as session:
        if principal.user_id is not None:
            lock_user(session, principal.user_id)
        submission = Submission(
            task_id=task_id,
            user_id=principal.user_id,
            name=body.name,
            bundle_sha256=digest,
            artifact_key=f"predictions/given/{digest}",
            manifest={"name": body.name, "description": body.description, "runtime": None},
            kind=SubmissionKind.PREDICTIONS.value,
        )
        session.add(submission)
        session.flush()
        for (dataset, metrics, _), key in zip(scored, keys, strict=True):
            job = Job(
                submission_id=submission.id,
                dataset_id=dataset.id,
                status=JobStatus.FINISHED.value,
                progress=1.0,
                examples_done=metrics.examples,
                examples_total=metrics.examples,
                started_at=now,
                finished_at=now,
            )
            session.add(job)
            session.flush()
            session.add(
                Result(
                    job_id=job.id,
                    submission_id=submission.id,
                    dataset_id=dataset.id,
                    metrics=stored_metrics(metrics),
                    provenance={"kind": SubmissionKind.PREDICTIONS.value, "sandbox": None},
                    predictions_key=key,
                )
            )
        if phase_sets:
            enter_phases(
                session,
                principal,
                task_id=task_id,
                submission_id=submission.id,
                dataset_ids=phase_sets,
            )
        refuse_over_quota(ctx, session, principal)
        session.flush()
        session.expunge(submission)
    return submission
