"""A sandbox double for the loop's tests: implements the Sandbox ABC, injected, never patched."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox.sandbox import ModelHello, ResourceUsage, Sandbox, SandboxFailure

Answer = Callable[[dict[str, Any]], dict[str, Any]]

POSITIVE = ("good", "great", "love", "wonderful")
NEGATIVE = ("bad", "terrible", "awful", "hate")


def keyword_answer(example: dict[str, Any]) -> dict[str, Any]:
    """A keyword classifier: easy to fool with sarcasm or negation."""
    text = str(example.get("statement", "")).lower()
    label = "neutral"
    if any(word in text for word in POSITIVE):
        label = "positive"
    elif any(word in text for word in NEGATIVE):
        label = "negative"
    probs = {name: 0.1 for name in ("negative", "neutral", "positive")}
    probs[label] = 0.8
    return {"label": label, "probs": probs}


class FakeSandbox(Sandbox):
    """Answers with a function; counts starts, requests and closes; can fail on request."""

    kind = "fake"
    isolating = False

    def __init__(self, answer: Answer = keyword_answer, *, start_delay_s: float = 0.0) -> None:
        super().__init__(Path("."), limits=SandboxLimits())
        self.answer = answer
        self.start_delay_s = start_delay_s
        self.starts = 0
        self.requests = 0
        self.closes = 0
        self.fail_next: FailureReason | None = None
        self.broken_outputs = False

    def _start(self) -> ModelHello:
        if self.start_delay_s:
            threading.Event().wait(self.start_delay_s)
        self.starts += 1
        return ModelHello(name="fake", runtime="python", batch_size=8)

    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.requests += 1
        if self.fail_next is not None:
            reason, self.fail_next = self.fail_next, None
            raise SandboxFailure(reason, "deliberate failure for a test")
        if self.broken_outputs:
            return [{"label": "banana"} for _ in inputs]
        return [self.answer(example) for example in inputs]

    def _usage(self) -> ResourceUsage:
        return ResourceUsage()

    def _close(self) -> ResourceUsage:
        self.closes += 1
        return ResourceUsage()

    def _log_tail(self, lines: int) -> str:
        return ""


class FakeFactory:
    """A SandboxFactory handing out FakeSandboxes (one answer function per submission)."""

    def __init__(self, answers: dict[int, Answer] | None = None, **options: Any) -> None:
        self.answers = answers or {}
        self.options = options
        self.made: list[tuple[int, FakeSandbox]] = []
        self._lock = threading.Lock()

    def __call__(self, submission_id: int) -> Sandbox:
        box = FakeSandbox(self.answers.get(submission_id, keyword_answer), **self.options)
        with self._lock:
            self.made.append((submission_id, box))
        return box

    def boxes(self, submission_id: int) -> list[FakeSandbox]:
        return [box for sid, box in self.made if sid == submission_id]
