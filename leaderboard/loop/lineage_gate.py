"""The release gate against a lineage: a new release must pass every case any earlier
release passed, on the server or offline from an exported suite.

On the server (``evalboard gate BUNDLE --lineage ID``) the lineage's releases are every
release, published or not, and the cases every original dataset of the task, hidden ones
included: run it where the task's data may be seen. Offline (``--suite FILE``) the
releases and cases are those of the suite file, which holds what its exporter could see;
no server and no database are asked. Both evaluate the candidate in the same sandbox as
any evaluation, read the verdicts into :class:`~leaderboard.loop.history.CaseHistory`
and compare with :func:`~leaderboard.loop.gate.compare_history`: the same rule, so the
same verdict where they see the same cases.
"""

from __future__ import annotations

from pathlib import Path

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import UsageError
from evalboard.core.scratch import scratch_tree
from evaluator import TestSet
from leaderboard.lineages import lineage_of
from leaderboard.loop.cases import dataset_cases, gate_datasets
from leaderboard.loop.gate import GateReport, compare_history, evaluate_candidate, judge
from leaderboard.loop.history import CaseHistory
from leaderboard.loop.suite_file import Suite
from submission_sandbox import Bundle, check_bundle_task, load_bundle

__all__ = ["run_lineage_gate", "run_suite_gate", "suite_lineage"]


def _gated(
    report: GateReport,
    task: TaskSpec,
    bundle: Bundle,
    test_sets: list[TestSet],
    histories: dict[str, dict[str, CaseHistory]],
    labels: dict[int, str],
    sandbox: str,
    workdir: Path,
) -> GateReport:
    """Evaluate the candidate and judge it against the histories, dataset by dataset."""
    new, failed = evaluate_candidate(bundle, task, test_sets, sandbox, workdir)
    return judge(
        report,
        test_sets,
        failed,
        lambda t: compare_history(
            task, t.name, t.examples, histories[t.name], labels, new.get(t.name, {})
        ),
    )


def run_lineage_gate(
    ctx: Context,
    candidate: Path,
    *,
    lineage: int,
    task_id: str | None = None,
    sandbox: str | None = None,
) -> GateReport:
    """Evaluate ``candidate`` and fail it on every case an earlier release of the lineage
    of submission ``lineage`` passed.

    Raises:
        NotFound: no submission ``lineage``.
        UsageError: ``task_id`` or the candidate's task is not the lineage's, or the task
            has no dataset.
    """
    found = lineage_of(ctx, None, lineage)
    if task_id is not None and task_id != found.task_id:
        raise UsageError(
            f"Lineage {found.id} is on task {found.task_id!r}, not {task_id!r}; drop --task "
            "or name a lineage of that task"
        )
    task = get_task(ctx, found.task_id)
    datasets = gate_datasets(ctx, found.task_id)
    if not datasets:
        raise UsageError(f"Task {found.task_id!r} has no dataset to gate on; add one first")
    histories = {
        d.name: {
            uid: found_history[0]
            for uid, found_history in dataset_cases(ctx, task, d, [found]).histories.items()
            if found_history
        }
        for d in datasets
    }
    labels = {r.submission_id: r.label for r in found.releases}
    test_sets = [TestSet.from_table(ctx, d) for d in datasets]
    numbers = f"releases 1-{found.releases[-1].number}" if len(found.releases) > 1 else "release 1"
    report = GateReport(
        task=found.task_id, baseline=f"lineage {found.id} ({numbers})", candidate=str(candidate)
    )
    with scratch_tree("evalboard-gate") as tmp:
        bundle = load_bundle(candidate, unpack_to=Path(tmp) / "candidate")
        check_bundle_task(bundle.manifest, found.task_id)
        kind = sandbox or ctx.settings.sandbox
        return _gated(report, task, bundle, test_sets, histories, labels, kind, Path(tmp))


def suite_lineage(suite: Suite, bundle: Bundle, lineage: int | None) -> int:
    """The lineage to gate on: ``lineage`` (any of its releases' ids), else the one of the
    release the candidate's manifest names (``release_of``).

    Raises:
        UsageError: neither names a lineage of the suite (the message lists them).
    """
    named = lineage if lineage is not None else bundle.manifest.release_of
    found = suite.lineage_of(named) if named is not None else None
    if found is not None:
        return found
    known = "; ".join(
        f"{lineage_id} ({releases[0].name}, {len(releases)} releases)"
        for lineage_id, releases in suite.lineages.items()
    )
    what = (
        f"lineage {named} is not in this suite (or not visible to whoever exported it)"
        if named is not None
        else "name the lineage: --lineage ID, or release_of in the candidate's evalboard.yaml"
    )
    raise UsageError(f"{what}; the suite's lineages: {known or 'none'}")


def run_suite_gate(
    suite: Suite,
    candidate: Path,
    *,
    sandbox: str,
    lineage: int | None = None,
    task_id: str | None = None,
    source: str = "the suite",
) -> GateReport:
    """The lineage gate offline: evaluate ``candidate`` on the suite's cases and fail it on
    every one an earlier release of the lineage passed. No server, no database.

    Raises:
        UsageError: ``task_id`` or the candidate's task is not the suite's, or no lineage
            of the suite is named.
    """
    task = suite.task_spec
    if task_id is not None and task_id != task.id:
        raise UsageError(f"{source} is a suite of task {task.id!r}, not {task_id!r}")
    test_sets = suite.test_sets()
    labels = {r.id: r.label for r in suite.releases}
    with scratch_tree("evalboard-gate") as tmp:
        bundle = load_bundle(candidate, unpack_to=Path(tmp) / "candidate")
        check_bundle_task(bundle.manifest, task.id)
        chosen = suite_lineage(suite, bundle, lineage)
        histories = suite.histories(chosen)
        report = GateReport(
            task=task.id,
            baseline=f"lineage {chosen} in suite version {suite.version}",
            candidate=str(candidate),
        )
        return _gated(report, task, bundle, test_sets, histories, labels, sandbox, Path(tmp))
