"""Regression suite versions on the server: cut one, list them, export one as a file.

A version is a cut: the ids of the task's original datasets, of its lineages' releases and
of their results when it was made (:class:`evalboard.core.tables.SuiteVersion`; ids, not
"everything up to id N", so that a row committed late is not let in afterwards). Exporting
it derives the suite from rows that never change once written (datasets are immutable, a
result is written once, a release's lineage is set at creation), limited to the cut: so
the same version exported again by the same viewer is the same bytes, whatever arrived
since.

What a suite holds is what its exporter may see: the original datasets (hidden ones only
for the task's owner), each example's inputs and gold, and each visible lineage's verdicts
on it (:mod:`leaderboard.loop.cases`). Anyone signed in who may upload to the task may cut
a version (a version is only a cut, it reveals nothing); anyone may export one.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from datasets_registry import get_task
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, UsageError
from evalboard.core.states import Access
from evalboard.core.tables import Result, SuiteVersion, as_utc, utcnow
from leaderboard.accounts import Principal
from leaderboard.lineages import task_lineages
from leaderboard.loop.cases import dataset_cases, gate_datasets, shown_inputs
from leaderboard.loop.suite_file import (
    MAX_SUITE_BYTES,
    Suite,
    SuiteCase,
    SuiteDataset,
    SuiteRelease,
    SuiteVerdict,
    suite_bytes,
)
from leaderboard.schemas import from_row

__all__ = ["cut_suite", "export_suite", "get_suite_version", "list_suite_versions"]


def cut_suite(ctx: Context, principal: Principal, task_id: str) -> SuiteVersion:
    """Cut the task's next suite version from what is stored now.

    Raises:
        PermissionDenied: the caller may not upload to the task.
        Conflict: another version took the same number at the same moment (try again).
    """
    get_task(ctx, task_id)
    principal.require_signed_in()
    if not principal.may_upload(task_id):
        raise PermissionDenied(
            f"{principal.name!r} may not cut suite versions of {task_id!r}: its owner and "
            "its researchers may"
        )
    lineages = task_lineages(ctx, None, task_id)  # every release: exports filter by viewer
    releases = sorted(r.submission_id for lineage in lineages for r in lineage.releases)
    datasets = sorted(d.id for d in gate_datasets(ctx, task_id))
    try:
        with ctx.db.session() as session:
            results = session.scalars(
                select(Result.id).where(
                    Result.submission_id.in_(releases), Result.dataset_id.in_(datasets)
                )
            ).all()
            number = session.scalar(
                select(func.max(SuiteVersion.number)).where(SuiteVersion.task_id == task_id)
            )
            version = SuiteVersion(
                task_id=task_id,
                number=int(number or 0) + 1,
                created_by=principal.user_id,
                dataset_ids=datasets,
                release_ids=releases,
                result_ids=sorted(results),
                created_at=utcnow(),
            )
            session.add(version)
    except IntegrityError:
        raise Conflict(
            f"A suite version of {task_id!r} was cut at the same moment; try again"
        ) from None
    return version


def list_suite_versions(ctx: Context, task_id: str) -> list[SuiteVersion]:
    get_task(ctx, task_id)
    query = select(SuiteVersion).where(SuiteVersion.task_id == task_id)
    with ctx.db.session() as session:
        return list(session.scalars(query.order_by(SuiteVersion.number)))


def get_suite_version(ctx: Context, task_id: str, number: int) -> SuiteVersion:
    """Raises NotFound, naming the versions there are."""
    versions = list_suite_versions(ctx, task_id)
    found = next((v for v in versions if v.number == number), None)
    if found is None:
        known = ", ".join(str(v.number) for v in versions)
        raise NotFound(
            f"Task {task_id!r} has no suite version {number}; "
            + (f"known: {known}" if known else "cut one with `evalboard suite create`")
        )
    return found


def export_suite(ctx: Context, principal: Principal, task_id: str, number: int) -> bytes:
    """The suite file of version ``number`` as ``principal`` may see it.

    Raises:
        NotFound: no such task or version.
        UsageError: the suite would pass the size a suite file may have.
    """
    version = get_suite_version(ctx, task_id, number)
    task = get_task(ctx, task_id)
    lineages = task_lineages(ctx, principal, task_id, among=version.release_ids)
    releases = [
        SuiteRelease(
            id=r.submission_id,
            lineage=r.lineage_id,
            number=r.number,
            name=r.name,
            created_at=r.created_at.isoformat(),
        )
        for lineage in lineages
        for r in lineage.releases
    ]
    datasets = []
    for dataset in gate_datasets(ctx, task_id):
        if dataset.id not in version.dataset_ids or (
            dataset.access == Access.HIDDEN and not principal.owns(task_id)
        ):
            continue
        cases = dataset_cases(ctx, task, dataset, lineages, results=version.result_ids)
        gold_field = task.output.gold_field
        datasets.append(
            from_row(
                SuiteDataset,
                dataset,
                cases=[
                    SuiteCase(
                        uid=str(example["uid"]),
                        inputs=shown_inputs(task, example),
                        gold={gold_field: example[gold_field]},
                        history={
                            str(h.lineage): [
                                SuiteVerdict(release=v.release, passed=v.passed) for v in h.verdicts
                            ]
                            for h in cases.histories[str(example["uid"])]
                        },
                    )
                    for example in cases.examples
                ],
            )
        )
    data = suite_bytes(
        Suite(
            version=version.number,
            cut_at=as_utc(version.created_at).isoformat(),
            task=task.model_dump(mode="json"),
            releases=releases,
            datasets=datasets,
        )
    )
    if len(data) > MAX_SUITE_BYTES:
        raise UsageError(
            f"Suite version {number} of {task_id!r} would be {len(data)} bytes, more than a "
            f"suite file's {MAX_SUITE_BYTES}; ask the task's owner to split its datasets"
        )
    return data
