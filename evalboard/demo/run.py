"""``evalboard demo`` end to end: task, models, evaluations, a collection round, ranking.

Each step is idempotent, so a second run over the same data directory reuses what the
first one made (models, submissions, results, the round) and takes seconds. Progress goes
to a :class:`Reporter`; the CLI's draws bars.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError, UsageError
from evalboard.demo.collection import RoundSummary, simulate_round
from evalboard.demo.data import DEMO_TASK_ID
from evalboard.demo.generative import GEN_TASK_ID, generative_models, seed_generative_task
from evalboard.demo.models import DEMO_MODELS, BuiltModel, build_model
from evalboard.demo.seed import DemoAccounts, seed_accounts, seed_task
from evalboard.demo.submit import JobCounts, submit_models, wait_for_jobs
from evaluator import WorkerPool

__all__ = ["DemoResult", "Reporter", "StepTime", "choose_sandbox", "run_demo"]


class Reporter(Protocol):
    """Where the demo says what it is doing."""

    def begin(self, step: str, total: int | None = None) -> None: ...

    def advance(self, completed: int, total: int | None = None) -> None: ...

    def end(self, note: str) -> None: ...

    def notice(self, message: str) -> None: ...


@dataclass(frozen=True)
class StepTime:
    step: str
    seconds: float
    note: str


@dataclass
class DemoResult:
    """What the demo did, for the summary and for tests."""

    task_id: str
    sandbox: str
    models: list[BuiltModel] = field(default_factory=list)
    submissions: dict[str, int] = field(default_factory=dict)
    jobs: JobCounts | None = None
    round: RoundSummary | None = None
    accounts: DemoAccounts | None = None
    steps: list[StepTime] = field(default_factory=list)
    #: The generative task's entrants: name -> submission id, and its jobs.
    generative: dict[str, int] = field(default_factory=dict)
    generative_jobs: JobCounts | None = None
    generative_task_id: str = GEN_TASK_ID


def choose_sandbox(ctx: Context, requested: str | None) -> tuple[str, str | None]:
    """What ``auto`` chooses (``gvisor``, else ``docker``) where the engine answers and has
    the runtime image, else ``local``.

    Returns the kind and a notice to show (None when nothing needs saying).

    Raises:
        PlatformError: ``docker`` or ``gvisor`` was asked for and Docker cannot be used.
    """
    if requested not in (None, "auto", "gvisor", "docker", "local"):
        raise UsageError(f"Unknown sandbox {requested!r}; known: auto, docker, gvisor, local")
    if requested == "local":
        return "local", (
            "the local sandbox runs the demo models as plain processes on this machine: "
            "no isolation, no resource limits (fine for the demo's own models)"
        )
    try:
        from submission_sandbox import docker_client

        client = docker_client(timeout=10)
        try:
            client.images.get(ctx.settings.base_image)
        except Exception:
            raise PlatformError(
                f"the runtime image {ctx.settings.base_image} is missing; build it with "
                "`bash docker/bootstrap.sh`"
            ) from None
    except PlatformError as exc:
        if requested in ("docker", "gvisor"):
            raise
        return "local", (
            f"Docker cannot be used ({exc.message}). Falling back to the local sandbox, "
            "which runs models as plain processes: it does NOT isolate them or limit their "
            "resources"
        )
    if requested in (None, "auto"):
        from submission_sandbox import choose_default_sandbox

        return choose_default_sandbox(client)
    return requested, None


@contextmanager
def _step(
    result: DemoResult, reporter: Reporter, name: str, total: int | None = None
) -> Iterator[list[str]]:
    """Time a step; the caller appends its closing note to the yielded list."""
    started = time.monotonic()
    reporter.begin(name, total)
    notes: list[str] = []
    yield notes
    note = notes[-1] if notes else "done"
    seconds = time.monotonic() - started
    reporter.end(f"{note}; {seconds:.1f} s")
    result.steps.append(StepTime(name, seconds, note))


def _evaluate(
    ctx: Context,
    pool: WorkerPool,
    result: DemoResult,
    reporter: Reporter,
    step: str,
    task_id: str = DEMO_TASK_ID,
) -> JobCounts:
    with _step(result, reporter, step) as notes:
        counts = wait_for_jobs(
            ctx,
            pool,
            task_id,
            on_progress=lambda c: reporter.advance(c.done, c.total),
        )
        failed = f", {counts.failed} failed" if counts.failed else ""
        notes.append(f"{counts.finished}/{counts.total} jobs finished{failed}")
    if counts.failed:
        reporter.notice(
            f"{counts.failed} evaluation jobs failed; `evalboard leaderboard --task "
            f"{task_id}` and the submission pages show why"
        )
    return counts


def _generative(
    ctx: Context, pool: WorkerPool, result: DemoResult, reporter: Reporter, state_dir: Path
) -> None:
    """The generative task: its sets, its two text models (built or reused), their jobs."""
    models, notice = generative_models(result.sandbox)
    if notice:
        reporter.notice(notice)
    with _step(result, reporter, "Generative task: building text models", len(models)) as notes:
        seed_generative_task(ctx, state_dir)
        built = []
        for index, model in enumerate(models):
            reporter.advance(index, len(models))
            built.append(build_model(model, state_dir / "models", task_id=GEN_TASK_ID))
        reused = sum(m.reused for m in built)
        notes.append(f"{len(built) - reused} built, {reused} reused from the cache")
    assert result.accounts is not None
    submitted = submit_models(ctx, built, task_id=GEN_TASK_ID, user_id=result.accounts.researcher)
    result.generative = {name: sid for name, (sid, _) in submitted.items()}
    result.generative_jobs = _evaluate(
        ctx, pool, result, reporter, "Evaluating the text models", task_id=GEN_TASK_ID
    )


def run_demo(
    ctx: Context,
    *,
    reporter: Reporter,
    sandbox: str | None = None,
    concurrency: int = 2,
    pool: WorkerPool | None = None,
) -> DemoResult:
    """Run every step of the demo against ``ctx`` (its data directory holds the state).

    Args:
        sandbox: ``docker``, ``local``, or None to pick docker where it works.
        pool: a started worker pool to run jobs in (it stays running, for ``serve``);
            by default the demo starts one and stops it at the end.
    """
    kind, notice = choose_sandbox(ctx, sandbox)
    if notice:
        reporter.notice(notice)
    result = DemoResult(task_id=DEMO_TASK_ID, sandbox=kind)
    state_dir = ctx.settings.data_dir / "demo"

    with _step(result, reporter, "Demo task and datasets") as notes:
        added = seed_task(ctx)
        result.accounts = seed_accounts(ctx, state_dir)
        notes.append(f"{len(added)} datasets added" if added else "already there")

    with _step(result, reporter, "Building demo models", total=len(DEMO_MODELS)) as notes:
        for index, model in enumerate(DEMO_MODELS):
            reporter.advance(index, len(DEMO_MODELS))
            result.models.append(build_model(model, state_dir / "models", task_id=DEMO_TASK_ID))
        reused = sum(m.reused for m in result.models)
        notes.append(f"{len(result.models) - reused} built, {reused} reused from the cache")

    own_pool = pool is None
    workers = pool or WorkerPool(ctx, concurrency=concurrency, sandbox=kind, poll_s=0.2)
    if own_pool:
        workers.start()
    try:
        assert result.accounts is not None
        with _step(result, reporter, "Submitting models") as notes:
            submitted = submit_models(
                ctx, result.models, task_id=DEMO_TASK_ID, user_id=result.accounts.researcher
            )
            result.submissions = {name: sid for name, (sid, _) in submitted.items()}
            new = sum(created for _, created in submitted.values())
            notes.append(f"{new} submitted, {len(submitted) - new} already submitted")
        result.jobs = _evaluate(ctx, workers, result, reporter, f"Evaluating in the {kind} sandbox")

        with _step(result, reporter, "Collection round (simulated annotators)") as notes:
            result.round = simulate_round(ctx, DEMO_TASK_ID, accounts=result.accounts, sandbox=kind)
            r = result.round
            notes.append(
                f"round {r.number} already closed"
                if r.reused
                else f"round {r.number}: {r.collected} written, {r.fooled} fooled the target, "
                f"{r.verified} verified -> {r.dataset or 'no dataset'}"
            )
        if result.round.jobs:
            result.jobs = _evaluate(
                ctx, workers, result, reporter, f"Scoring round {result.round.number}"
            )
        _generative(ctx, workers, result, reporter, state_dir)
    finally:
        if own_pool:
            workers.stop(wait=True)
    return result
