"""The Sandbox base: start a model, send it batches, read its resources, close it.

Implementations (``docker``, ``local``, and test fakes) register by name with
``@sandbox("name")`` and are opened with :func:`open_sandbox`. The lifecycle code shared by
all of them lives here; they implement the ``_``-prefixed hooks.

A sandbox never sees gold labels: :meth:`Sandbox.predict` takes inputs only (``uid`` plus
the task's input fields), and the evaluator strips everything else before calling it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from pydantic import BaseModel, Field

from evalboard.core.errors import EvalboardError, UsageError
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason

__all__ = [
    "ModelHello",
    "ResourceUsage",
    "Sandbox",
    "SandboxFailure",
    "known_sandboxes",
    "open_sandbox",
    "sandbox",
]


class ModelHello(BaseModel):
    """The first message a model sends: who it is, before any request."""

    name: str = ""
    runtime: str = ""
    batch_size: int = Field(32, ge=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ResourceUsage(BaseModel):
    """What the sandbox used, read from its cgroup (or the process) before it goes."""

    peak_memory_bytes: int | None = None
    cpu_seconds: float | None = None
    startup_s: float | None = None
    gpu: str | None = None


class SandboxFailure(EvalboardError):
    """The model failed in its sandbox; ``reason`` says exactly how."""

    exit_code = 1
    http_status = 422

    def __init__(self, reason: FailureReason, message: str, *, log_tail: str = "") -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason
        self.detail = message
        self.log_tail = log_tail


class Sandbox(ABC):
    """A running model behind the container contract.

    Use as a context manager::

        with open_sandbox(bundle, kind="docker", limits=limits) as box:
            outputs = box.predict([{"uid": "1", "statement": "great"}])
            usage = box.usage()
    """

    #: Registered name (``docker``, ``local``).
    kind: ClassVar[str]
    #: False for sandboxes that do not isolate the model (``local``): say so wherever used.
    isolating: ClassVar[bool] = True

    def __init__(self, bundle_dir: Path, *, limits: SandboxLimits) -> None:
        self.bundle_dir = bundle_dir
        self.limits = limits
        self.hello: ModelHello | None = None
        self._closed = False

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> ModelHello:
        """Start the model and wait for its hello; raises :class:`SandboxFailure`."""
        self.hello = self._start()
        return self.hello

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One request: exactly one output per input, in order."""
        if self.hello is None:
            raise RuntimeError("Sandbox.predict() before start()")
        outputs = self._predict(inputs)
        if len(outputs) != len(inputs):
            raise SandboxFailure(
                FailureReason.PROTOCOL_ERROR,
                f"the model returned {len(outputs)} outputs for {len(inputs)} inputs; "
                "return exactly one output per input",
                log_tail=self.log_tail(),
            )
        return outputs

    def usage(self) -> ResourceUsage:
        """Peak memory and CPU time so far (read before the sandbox is removed)."""
        return self._usage()

    def close(self) -> ResourceUsage:
        """Shut the model down cleanly (or kill it), remove everything, return final usage."""
        if self._closed:
            return ResourceUsage()
        self._closed = True
        return self._close()

    def log_tail(self, lines: int = 50) -> str:
        """The last lines the model wrote to stderr/stdout (kept even if it was killed)."""
        return self._log_tail(lines)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Hooks for implementations -------------------------------------------------------------

    @abstractmethod
    def _start(self) -> ModelHello: ...

    @abstractmethod
    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    @abstractmethod
    def _usage(self) -> ResourceUsage: ...

    @abstractmethod
    def _close(self) -> ResourceUsage: ...

    @abstractmethod
    def _log_tail(self, lines: int) -> str: ...


_REGISTRY: dict[str, Callable[..., Sandbox]] = {}


def sandbox(name: str) -> Callable[[type[Sandbox]], type[Sandbox]]:
    """Register a Sandbox implementation under ``name``."""

    def register(cls: type[Sandbox]) -> type[Sandbox]:
        cls.kind = name
        _REGISTRY[name] = cls
        return cls

    return register


def known_sandboxes() -> list[str]:
    """The registered sandbox names, sorted."""
    return sorted(_REGISTRY)


def open_sandbox(
    bundle_dir: Path, *, kind: str = "docker", limits: SandboxLimits | None = None, **options: Any
) -> Sandbox:
    """Make (not yet start) a sandbox of the named kind for an unpacked bundle."""
    try:
        factory = _REGISTRY[kind]
    except KeyError:
        raise UsageError(
            f"Unknown sandbox {kind!r}; known: {', '.join(known_sandboxes())}"
        ) from None
    return factory(bundle_dir, limits=limits or SandboxLimits(), **options)
