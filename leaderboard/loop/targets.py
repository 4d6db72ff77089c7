"""Target models kept warm while their round is open.

An annotator waits for the target's answer, so the target must not start per example:
the pool starts each round's targets once (:meth:`TargetPool.warm`, or on first use),
sends every prediction to the running sandbox, and closes them when the round closes
(:meth:`TargetPool.release`). Thread-safe: one lock guards the table of targets and one
per target serialises its channel (a sandbox answers one request at a time), so targets
start and answer independently. A target that failed is dropped and restarted by the
next request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.scratch import scratch_tree
from evalboard.core.states import RoundStatus
from evalboard.core.tables import Round, Submission
from evaluator import check_outputs
from submission_sandbox import Sandbox, SandboxFailure, load_bundle, open_sandbox

__all__ = ["BundleSandboxes", "SandboxFactory", "TargetPool", "warm_quietly"]

logger = logging.getLogger(__name__)

#: Makes an unstarted sandbox for a submission id.
SandboxFactory = Callable[[int], Sandbox]


@dataclass
class _Target:
    lock: threading.Lock = field(default_factory=threading.Lock)
    box: Sandbox | None = None


class TargetPool:
    """Warm sandboxes of the open rounds' targets, keyed by (round id, submission id).

    Use::

        pool = TargetPool(BundleSandboxes(ctx))
        pool.predict(round_id, submission_id, [{"uid": "x", "statement": "meh"}], task)
    """

    def __init__(self, factory: SandboxFactory) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._targets: dict[tuple[int, int], _Target] = {}
        self._closed = False

    def _entry(self, round_id: int, submission_id: int) -> _Target:
        with self._lock:
            if self._closed:
                raise RuntimeError("the target pool is closed")
            return self._targets.setdefault((round_id, submission_id), _Target())

    def _started(self, target: _Target, submission_id: int) -> Sandbox:
        # Called with target.lock held.
        if target.box is None:
            box = self._factory(submission_id)
            try:
                box.start()
            except BaseException:
                _close_quietly(box)
                raise
            target.box = box
        return target.box

    def warm(self, round_id: int, submission_ids: Iterable[int]) -> None:
        """Start the round's targets now, so the first annotator does not wait."""
        for submission_id in submission_ids:
            target = self._entry(round_id, submission_id)
            with target.lock:
                self._started(target, submission_id)

    def predict(
        self,
        round_id: int,
        submission_id: int,
        inputs: list[dict[str, Any]],
        task: TaskSpec,
    ) -> list[dict[str, Any]]:
        """The target's outputs, checked against the task's output contract.

        Raises:
            SandboxFailure: the target failed or broke the contract (it restarts next time).
        """
        target = self._entry(round_id, submission_id)
        with target.lock:
            return self._answer(target, submission_id, inputs, task)

    def _answer(
        self, target: _Target, submission_id: int, inputs: list[dict[str, Any]], task: TaskSpec
    ) -> list[dict[str, Any]]:
        # Called with target.lock held.
        box = self._started(target, submission_id)
        try:
            outputs = box.predict(inputs)
            check_outputs(box, inputs, outputs, task)
        except SandboxFailure:
            target.box = None
            _close_quietly(box)
            raise
        return outputs

    def predict_any(
        self, submission_id: int, inputs: list[dict[str, Any]], task: TaskSpec
    ) -> list[dict[str, Any]]:
        """Outputs of ``submission_id`` whether or not it is a target of an open round:
        its warm sandbox where one runs (an open round's target), else one started for
        these inputs and closed after them. Checked like :meth:`predict`.

        Raises:
            SandboxFailure: the model failed or broke the contract.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the target pool is closed")
            warm = [t for (_, s), t in self._targets.items() if s == submission_id]
        for target in warm:
            with target.lock:
                if target.box is not None:  # running (checked with its lock held)
                    return self._answer(target, submission_id, inputs, task)
        once = _Target()  # started for these inputs only, and closed after them
        try:
            with once.lock:
                return self._answer(once, submission_id, inputs, task)
        finally:
            _stop(once)

    def is_warm(self, round_id: int, submission_id: int) -> bool:
        with self._lock:
            target = self._targets.get((round_id, submission_id))
        return target is not None and target.box is not None

    def release(self, round_id: int) -> int:
        """Close the round's targets; returns how many were running."""
        with self._lock:
            keys = [key for key in self._targets if key[0] == round_id]
            targets = [self._targets.pop(key) for key in keys]
        return sum(_stop(target) for target in targets)

    def retain(self, round_ids: Iterable[int]) -> int:
        """Close the targets of every round not named (closed elsewhere, e.g. by the CLI)."""
        keep = set(round_ids)
        with self._lock:
            rounds = {key[0] for key in self._targets if key[0] not in keep}
        return sum(self.release(round_id) for round_id in rounds)

    def close(self) -> None:
        """Close every target (the server is shutting down), then the factory's files."""
        with self._lock:
            self._closed = True
            targets = list(self._targets.values())
            self._targets.clear()
        for target in targets:
            _stop(target)
        cleanup = getattr(self._factory, "cleanup", None)
        if callable(cleanup):  # e.g. BundleSandboxes removes its unpacked bundles
            cleanup()


def _stop(target: _Target) -> int:
    with target.lock:
        box, target.box = target.box, None
    if box is None:
        return 0
    _close_quietly(box)
    return 1


def _close_quietly(box: Sandbox) -> None:
    try:
        box.close()
    except Exception:
        logger.warning("closing a target sandbox failed", exc_info=True)


class BundleSandboxes:
    """The default factory: a submission's stored bundle, unpacked once, in its sandbox.

    Args:
        ctx: where submissions and their bundles are stored.
        kind: ``docker`` or ``local``; the settings' sandbox by default.
    """

    def __init__(self, ctx: Context, *, kind: str | None = None) -> None:
        self.ctx = ctx
        self.kind = kind or ctx.settings.sandbox
        self._workdir = scratch_tree("evalboard-targets")
        self._lock = threading.Lock()
        self._bundles: dict[int, Path] = {}

    def _bundle_dir(self, submission_id: int, key: str) -> Path:
        with self._lock:
            if submission_id not in self._bundles:
                where = Path(self._workdir.name) / f"submission-{submission_id}"
                where.mkdir(parents=True, exist_ok=True)
                local = self.ctx.artifacts.local_file(key, where)
                self._bundles[submission_id] = load_bundle(local, unpack_to=where / "bundle").path
            return self._bundles[submission_id]

    def __call__(self, submission_id: int) -> Sandbox:
        with self.ctx.db.session() as session:
            submission = session.get(Submission, submission_id)
            if submission is None:
                raise NotFound(f"Submission {submission_id} does not exist")
            key, task_id = submission.artifact_key, submission.task_id
        task = get_task(self.ctx, task_id)
        return open_sandbox(
            self._bundle_dir(submission_id, key),
            kind=self.kind,
            limits=task.limits,
            **task.sandbox_options,
        )

    def cleanup(self) -> None:
        """Remove the unpacked bundles (after the pool is closed)."""
        self._workdir.cleanup()


def warm_quietly(ctx: Context, pool: TargetPool, round_id: int, targets: list[int]) -> None:
    """Start a new round's targets after the response; a failure waits for the first
    example, which retries the start and reports why it failed. Targets of rounds closed
    outside this server (``evalboard round close``) are closed here too."""
    with ctx.db.session() as session:
        open_ids = session.scalars(select(Round.id).where(Round.status == RoundStatus.OPEN))
        pool.retain(list(open_ids))
    try:
        pool.warm(round_id, targets)
    except Exception:
        logger.warning("warming the targets of round %s failed", round_id, exc_info=True)
