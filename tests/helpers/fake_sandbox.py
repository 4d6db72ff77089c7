"""``FakeSandbox``: a Sandbox that runs a Python function in process, for others' unit tests.

Injected, not monkeypatched (like httpx's ``MockTransport``)::

    box = FakeSandbox(bundle_dir, predict=lambda batch: [{"label": "pos"} for _ in batch])
    with box:
        box.predict([{"uid": "1", "text": "hi"}])
    assert box.requests == [[{"uid": "1", "text": "hi"}]]

``fail_with`` makes a chosen request fail with an exact reason, as a real sandbox would.
Register it by name for code that only takes a kind: ``register_fake_sandbox()`` then
``open_sandbox(path, kind="fake", predict=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox.sandbox import (
    ModelHello,
    ResourceUsage,
    Sandbox,
    SandboxFailure,
    known_sandboxes,
    sandbox,
)

__all__ = ["FakeSandbox", "register_fake_sandbox"]

Predict = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _first_label(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"label": "positive", "probs": {"positive": 1.0}} for _ in batch]


class FakeSandbox(Sandbox):
    """An in-process, recording Sandbox."""

    kind = "fake"
    isolating = False

    def __init__(
        self,
        bundle_dir: Path = Path("."),
        *,
        limits: SandboxLimits | None = None,
        predict: Predict = _first_label,
        hello: ModelHello | None = None,
        fail_with: FailureReason | None = None,
        fail_on_request: int = 1,
        fail_at_start: bool = False,
        usage: ResourceUsage | None = None,
        generation: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(bundle_dir, limits=limits or SandboxLimits())
        #: A text task's generation settings, as the real sandboxes give them to the model.
        self.generation = generation
        self._predict_fn = predict
        self._hello = hello or ModelHello(name="fake", runtime="python", batch_size=32)
        self._fail_with = fail_with
        self._fail_on = fail_on_request
        self._fail_at_start = fail_at_start
        self._usage_value = usage or ResourceUsage(
            peak_memory_bytes=64 * 1024**2, cpu_seconds=0.5, startup_s=0.01
        )
        self.requests: list[list[dict[str, Any]]] = []
        self.started = False
        self.closed = False
        self.logs: list[str] = []

    def _failure(self) -> SandboxFailure:
        assert self._fail_with is not None
        return SandboxFailure(
            self._fail_with, f"fake failure: {self._fail_with.value}", log_tail=self._log_tail(50)
        )

    def _start(self) -> ModelHello:
        self.started = True
        self.logs.append("fake model loaded")
        if self._fail_at_start and self._fail_with is not None:
            raise self._failure()
        return self._hello

    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.requests.append(inputs)
        if self._fail_with is not None and len(self.requests) >= self._fail_on:
            raise self._failure()
        return self._predict_fn(inputs)

    def _usage(self) -> ResourceUsage:
        return self._usage_value

    def _close(self) -> ResourceUsage:
        self.closed = True
        return self._usage_value

    def _log_tail(self, lines: int) -> str:
        return "\n".join(self.logs[-lines:])


def register_fake_sandbox() -> None:
    """Make ``open_sandbox(..., kind="fake")`` return a FakeSandbox."""
    if "fake" not in known_sandboxes():
        sandbox("fake")(FakeSandbox)
