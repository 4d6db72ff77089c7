"""The release gate: a candidate must not get wrong what the baseline got right.

The candidate bundle is evaluated on every round and static dataset of the task (the
originals; perturbed copies measure stability, not correctness) in the same sandbox as
any evaluation. The baseline is a stored submission, whose per-example predictions are
read back (and which is evaluated the same way on any dataset it has none for yet), or
another bundle, evaluated the same way. Per example, "right" is the task's model-wrong
rule negated (:func:`~leaderboard.loop.answers.is_right`). Every example the baseline got
right and the candidate got wrong is a regression; a dataset the candidate failed to run
on fails the gate too. Against a lineage (:mod:`leaderboard.loop.lineage_gate`) the
baseline is every earlier release: :func:`compare_history` reads their verdicts instead
of one model's outputs, and :func:`judge` fills the report the same way.

Where a server is known and both models are submissions of the task (the candidate found
by its bundle's sha256, so an uploaded candidate is found), the report links to the two
side by side on the compare page (``compare_url``), every disagreement listed there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from datasets_registry import TaskSpec, get_task, list_datasets
from evalboard.core.context import Context
from evalboard.core.errors import NotFound, UsageError
from evalboard.core.scratch import scratch_tree
from evalboard.core.tables import Dataset, Result, Submission
from evaluator import RunOptions, TestSet, evaluate_dataset, outputs_by_uid, read_records
from leaderboard.loop.answers import gold_value, is_right
from leaderboard.loop.history import CaseHistory
from submission_sandbox import Bundle, load_bundle

__all__ = [
    "DatasetComparison",
    "GateReport",
    "Regression",
    "compare",
    "compare_history",
    "compare_url",
    "evaluate_candidate",
    "judge",
    "run_gate",
]

#: dataset name -> uid -> the model's output
Outputs = dict[str, dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class Regression:
    """An example the baseline got right and the candidate got wrong.

    Against a lineage, ``baseline`` is None and ``passed_by`` names every earlier release
    that passed the example, the first first.
    """

    dataset: str
    uid: str
    gold: Any
    baseline: Any
    candidate: Any
    passed_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class DatasetComparison:
    """Per dataset: how many examples, and how the two models moved on them."""

    dataset: str
    examples: int
    regressions: int = 0
    improvements: int = 0
    baseline_right: int = 0
    candidate_right: int = 0
    failure: str | None = None


@dataclass
class GateReport:
    """The gate's verdict: passed when no regression and no failed dataset."""

    task: str
    baseline: str
    candidate: str
    datasets: list[DatasetComparison] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    #: The stored submissions of the task that are the baseline and the candidate (None:
    #: not uploaded), and the compare page of the two where a server is known.
    baseline_submission: int | None = None
    candidate_submission: int | None = None
    compare_url: str | None = None

    @property
    def passed(self) -> bool:
        return not self.regressions and not any(d.failure for d in self.datasets)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, **asdict(self)}


def _predicted(task: TaskSpec, output: Mapping[str, Any] | None) -> Any:
    if output is None:
        return None
    try:
        return task.prediction(output)
    except KeyError:
        return None


#: What the gate knows of an example before the candidate: whether it was passed, the
#: baseline's prediction to show (None against a lineage), and the releases that passed it.
Before = Callable[[str, Any], tuple[bool, Any, tuple[str, ...]]]


def _tally(
    task: TaskSpec,
    dataset: str,
    examples: Sequence[Mapping[str, Any]],
    before: Before,
    candidate: Mapping[str, Mapping[str, Any]],
) -> tuple[DatasetComparison, list[Regression]]:
    regressions: list[Regression] = []
    improvements = passed_before = candidate_right = 0
    for example in examples:
        uid = str(example["uid"])
        gold = gold_value(task, example)
        old_right, shown, passers = before(uid, gold)
        new = candidate.get(uid)
        new_right = is_right(task, new, gold)
        passed_before += old_right
        candidate_right += new_right
        if old_right and not new_right:
            regressions.append(
                Regression(dataset, uid, gold, shown, _predicted(task, new), passers)
            )
        elif new_right and not old_right:
            improvements += 1
    return (
        DatasetComparison(
            dataset=dataset,
            examples=len(examples),
            regressions=len(regressions),
            improvements=improvements,
            baseline_right=passed_before,
            candidate_right=candidate_right,
        ),
        regressions,
    )


def compare(
    task: TaskSpec,
    dataset: str,
    examples: Sequence[Mapping[str, Any]],
    baseline: Mapping[str, Mapping[str, Any]],
    candidate: Mapping[str, Mapping[str, Any]],
) -> tuple[DatasetComparison, list[Regression]]:
    """Compare two models' outputs (by uid) on one dataset's examples.

    An example with no baseline output cannot regress; one with no candidate output
    counts as wrong for the candidate.
    """

    def before(uid: str, gold: Any) -> tuple[bool, Any, tuple[str, ...]]:
        old = baseline.get(uid)
        return is_right(task, old, gold), _predicted(task, old), ()

    return _tally(task, dataset, examples, before, candidate)


def compare_history(
    task: TaskSpec,
    dataset: str,
    examples: Sequence[Mapping[str, Any]],
    histories: Mapping[str, CaseHistory],
    labels: Mapping[int, str],
    candidate: Mapping[str, Mapping[str, Any]],
) -> tuple[DatasetComparison, list[Regression]]:
    """Compare a candidate with a lineage's history on one dataset's examples.

    Every example that any earlier release passed (``histories``, by uid) and that the
    candidate fails is a regression naming those releases (``labels``: release id ->
    its name in reports); an example no release passed cannot regress.
    """

    def before(uid: str, gold: Any) -> tuple[bool, Any, tuple[str, ...]]:
        history = histories.get(uid)
        passers = tuple(labels[r] for r in history.passed_by) if history is not None else ()
        return bool(passers), None, passers

    return _tally(task, dataset, examples, before, candidate)


def evaluate_candidate(
    bundle: Path | Bundle,
    task: TaskSpec,
    test_sets: Sequence[TestSet],
    sandbox: str,
    workdir: Path,
) -> tuple[Outputs, dict[str, str]]:
    """A bundle's outputs on each test set by uid, and why it failed on the others."""
    unpacked = bundle if isinstance(bundle, Bundle) else load_bundle(bundle, unpack_to=workdir)
    options = RunOptions(sandbox=sandbox, measure_energy=False)
    outputs: Outputs = {}
    failures: dict[str, str] = {}
    for test_set in test_sets:
        run = evaluate_dataset(unpacked, test_set, task, options=options)
        if run.outcome.failure is not None:
            failures[test_set.name] = f"{run.outcome.failure.reason}: {run.outcome.failure.message}"
        else:
            outputs[test_set.name] = run.outputs or {}
    return outputs, failures


def _stored(ctx: Context, submission_id: int, test_sets: Sequence[TestSet]) -> Outputs:
    """The submission's stored per-example outputs, for the datasets it has them."""
    names = {t.name for t in test_sets}
    with ctx.db.session() as session:
        rows = session.execute(
            select(Dataset.name, Result.predictions_key)
            .join(Result, Result.dataset_id == Dataset.id)
            .where(Result.submission_id == submission_id)
        ).all()
    outputs: Outputs = {}
    for name, key in rows:
        if name not in names or not key:
            continue
        outputs[name] = outputs_by_uid(read_records(ctx.artifacts.read_bytes(key)))
    return outputs


def _uploaded(ctx: Context, task_id: str, sha256: str) -> int | None:
    """The task's newest submission of the bundle with this sha256, if it was uploaded."""
    with ctx.db.session() as session:
        return session.scalar(
            select(Submission.id)
            .where(Submission.task_id == task_id, Submission.bundle_sha256 == sha256)
            .order_by(Submission.id.desc())
            .limit(1)
        )


def compare_url(server: str, task_id: str, baseline: int, candidate: int) -> str:
    """The compare page of the two submissions on ``server``."""
    return f"{server.rstrip('/')}/ui/tasks/{task_id}/compare?models={baseline},{candidate}"


def _task_submission(ctx: Context, submission_id: int, task_id: str) -> str:
    """The artifact key of the task's submission ``submission_id``.

    Raises:
        NotFound: no such submission, or one of another task (whose datasets may share
            this task's names, but not its examples).
    """
    with ctx.db.session() as session:
        submission = session.get(Submission, submission_id)
        if submission is None or submission.task_id != task_id:
            raise NotFound(f"Task {task_id!r} has no submission {submission_id}")
        return submission.artifact_key


def run_gate(
    ctx: Context,
    candidate: Path,
    *,
    task_id: str,
    baseline: str,
    sandbox: str | None = None,
    server: str | None = None,
) -> GateReport:
    """Evaluate ``candidate`` and compare it with ``baseline`` on every original dataset.

    Args:
        candidate: a bundle directory or archive.
        baseline: a submission id of the task, or a bundle directory or archive.
        sandbox: ``docker`` or ``local``; the settings' sandbox by default.
        server: the server's URL, for the report's ``compare_url``.

    Raises:
        UsageError: the task has no dataset, or ``baseline`` names neither a submission
            nor a bundle.
    """
    task = get_task(ctx, task_id)
    kind = sandbox or ctx.settings.sandbox
    originals = [d for d in list_datasets(ctx, task_id) if d.derived_from_id is None]
    if not originals:
        raise UsageError(f"Task {task_id!r} has no dataset to gate on; add one first")
    test_sets = [TestSet.from_table(ctx, d) for d in originals]
    baseline_path = Path(baseline)
    if not baseline_path.exists() and not (baseline.isascii() and baseline.isdigit()):
        raise UsageError(f"--baseline {baseline!r} is neither a submission id nor a bundle path")
    report = GateReport(task=task_id, baseline=baseline, candidate=str(candidate))
    # A stored baseline is checked before the candidate runs.
    key = None if baseline_path.exists() else _task_submission(ctx, int(baseline), task_id)
    with scratch_tree("evalboard-gate") as tmp:
        work = Path(tmp)
        unpacked = load_bundle(candidate, unpack_to=work / "candidate")
        new, failed = evaluate_candidate(unpacked, task, test_sets, kind, work / "candidate")
        report.candidate_submission = _uploaded(ctx, task_id, unpacked.sha256)
        if key is None:  # a bundle
            old_bundle = load_bundle(baseline_path, unpack_to=work / "baseline")
            old, old_failed = evaluate_candidate(
                old_bundle, task, test_sets, kind, work / "baseline"
            )
            report.baseline_submission = _uploaded(ctx, task_id, old_bundle.sha256)
        else:
            report.baseline_submission = int(baseline)
            old = _stored(ctx, int(baseline), test_sets)
            missing = [t for t in test_sets if t.name not in old]
            old_failed = {}
            if missing:
                bundle = ctx.artifacts.local_file(key, work)
                more, old_failed = evaluate_candidate(
                    bundle, task, missing, kind, work / "baseline"
                )
                old.update(more)
    pair = (report.baseline_submission, report.candidate_submission)
    if server and pair[0] is not None and pair[1] is not None and pair[0] != pair[1]:
        report.compare_url = compare_url(server, task_id, pair[0], pair[1])
    return judge(
        report,
        test_sets,
        failed,
        lambda t: compare(task, t.name, t.examples, old.get(t.name, {}), new[t.name]),
        skipped=set(old_failed),  # the baseline has nothing to compare with there
    )


Comparer = Callable[[TestSet], tuple[DatasetComparison, list[Regression]]]


def judge(
    report: GateReport,
    test_sets: Sequence[TestSet],
    failed: Mapping[str, str],
    comparer: Comparer,
    *,
    skipped: Set[str] = frozenset(),
) -> GateReport:
    """Fill ``report`` dataset by dataset: a dataset the candidate failed on fails the
    gate; ``skipped`` ones are counted and not compared; the others go to ``comparer``."""
    for test_set in test_sets:
        name, size = test_set.name, len(test_set.examples)
        if name in failed:
            report.datasets.append(DatasetComparison(name, size, failure=failed[name]))
        elif name in skipped:
            report.datasets.append(DatasetComparison(name, size))
        else:
            summary, regressions = comparer(test_set)
            report.datasets.append(summary)
            report.regressions.extend(regressions)
    return report
