"""The Sandbox base: start a model, send it batches, read its resources, close it.

Implementations (``docker``, ``gvisor``, ``local``, and test fakes) register by name with
``@sandbox("name")`` and are opened with :func:`open_sandbox`; ``@sandbox_alias("auto")``
names a choice made on the machine for each run (``auto``: ``gvisor`` where the engine has
it, else ``docker``; ``docker`` for a bundle given a GPU). The lifecycle code shared by
all of them lives here; they implement the ``_``-prefixed hooks.

:meth:`Sandbox.prepare` does what every sandbox of one bundle needs before its model
starts (``docker``: the image built or reused), once per evaluation: the evaluator
prepares before its datasets run and hands the result to each dataset's fresh sandbox
(``open_sandbox(..., prepared=...)``, :func:`prepare_sandbox`).

A sandbox never sees gold labels: :meth:`Sandbox.predict` takes inputs only (``uid`` plus
the task's input fields), and the evaluator strips everything else before calling it.

:meth:`Sandbox.predict_stream` sends many batches with several requests in flight, so the
model never waits for the host's side of a round trip; it checks each answer as
:meth:`Sandbox.predict` does.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, Field

from evalboard.core.errors import EvalboardError, InvalidBundle, UsageError
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox.bundle import Bundle, load_bundle
from submission_sandbox.manifest import Manifest, load_manifest

__all__ = [
    "IMAGE_DIGEST",
    "ModelHello",
    "PredictionStream",
    "Prepared",
    "ResourceUsage",
    "Sandbox",
    "SandboxFailure",
    "known_sandboxes",
    "open_sandbox",
    "prepare_sandbox",
    "resolve_sandbox",
    "sandbox",
    "sandbox_alias",
]


#: Key of :attr:`ModelHello.metadata` that the sandbox (never the model) sets to the
#: digest of the image the model ran in; absent where no image ran (``local``).
IMAGE_DIGEST = "image_digest"

Outputs = list[dict[str, Any]]


class ModelHello(BaseModel):
    """The first message a model sends: who it is, before any request.

    ``metadata`` is the model's own, free-form, except :data:`IMAGE_DIGEST`, which the
    sandbox sets (or removes) after the hello arrives, whatever the model sent.
    """

    name: str = ""
    runtime: str = ""
    batch_size: int = Field(32, ge=1)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def image_digest(self) -> str | None:
        """The digest of the image the model ran in (``sha256:...``), None without one."""
        digest = self.metadata.get(IMAGE_DIGEST)
        return str(digest) if digest else None


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


@dataclass(frozen=True)
class Prepared:
    """What :meth:`Sandbox.prepare` made for one bundle, or the failure it met (raised
    again by each sandbox that starts with it, as its own start would have raised it)."""

    kind: str
    value: Any = None
    failure: SandboxFailure | None = None


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

    def __init__(self, bundle: Bundle | Path, *, limits: SandboxLimits) -> None:
        # A loaded bundle is used as it is (read and hashed once per evaluation, not once
        # per dataset); a directory is read when the sandbox starts (see _bundle).
        self._loaded = bundle if isinstance(bundle, Bundle) else None
        self.bundle_dir = bundle.path if isinstance(bundle, Bundle) else bundle
        self.limits = limits
        self.hello: ModelHello | None = None
        #: The cores the model was pinned to (``2,3``); None where it ran unpinned.
        self.cpuset: str | None = None
        self._prepared: Prepared | None = None
        self._closed = False

    def _bundle(self) -> Bundle:
        """The bundle this sandbox runs, read once; an unusable one is ``invalid_bundle``."""
        if self._loaded is None:
            try:
                self._loaded = load_bundle(self.bundle_dir)
            except InvalidBundle as exc:
                raise SandboxFailure(FailureReason.INVALID_BUNDLE, exc.message) from exc
        return self._loaded

    # Lifecycle ---------------------------------------------------------------------------

    def prepare(self) -> Prepared:
        """Do, once, what this bundle's sandboxes need before a model starts; a
        :class:`SandboxFailure` (``invalid_bundle``, ``build_failed``) is kept in the result
        and raised by :meth:`start`. Other errors (a platform fault) are raised here."""
        if self._prepared is None:
            try:
                value = self._prepare()
            except SandboxFailure as failure:
                self._prepared = Prepared(self.kind, failure=failure)
            else:
                self._prepared = Prepared(self.kind, value)
        return self._prepared

    def start(self) -> ModelHello:
        """Start the model and wait for its hello; raises :class:`SandboxFailure`."""
        prepared = self.prepare()
        if prepared.failure is not None:
            raise prepared.failure
        hello = self._start()
        metadata = {k: v for k, v in hello.metadata.items() if k != IMAGE_DIGEST}
        digest = self._image_digest()
        if digest:
            metadata[IMAGE_DIGEST] = digest
        self.hello = hello.model_copy(update={"metadata": metadata})
        return self.hello

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One request: exactly one output per input, in order."""
        if self.hello is None:
            raise RuntimeError("Sandbox.predict() before start()")
        outputs = self._predict(inputs)
        self._check_count(inputs, outputs)
        return outputs

    def _check_count(self, inputs: list[dict[str, Any]], outputs: Outputs, where: str = "") -> None:
        # The transport's own promise, checked for every caller of the sandbox; what each
        # output holds is the task's contract (datasets_registry.outputs), checked above us.
        if len(outputs) != len(inputs):
            raise SandboxFailure(
                FailureReason.PROTOCOL_ERROR,
                f"the model returned {len(outputs)} outputs for {len(inputs)} inputs{where}; "
                "return exactly one output per input",
                log_tail=self.log_tail(),
            )

    def predict_stream(
        self, batches: Iterable[list[dict[str, Any]]], *, in_flight: int = 2
    ) -> PredictionStream:
        """Many requests, pipelined: outputs per batch, in order, each checked as by predict.

        Up to ``in_flight`` requests are unanswered at once, so the model starts on the next
        batch while the host reads, checks and uses the answer to this one. ``batches`` is
        consumed lazily, up to ``in_flight`` ahead of what was yielded, in the caller's
        thread (what it raises, the stream raises). Failures are those of
        :meth:`predict`, with the same reasons and the same wall-clock limit. Close the
        stream (or use it in a ``with``) when leaving it early; answers already asked for
        are then read and dropped before the next request. ``stream.latencies`` holds each
        batch's latency as defined by the sandbox (see :meth:`_predict_stream`).

        The base class sends one request at a time; the docker and local sandboxes
        pipeline over their channel.
        """
        if self.hello is None:
            raise RuntimeError("Sandbox.predict_stream() before start()")
        if in_flight < 1:
            raise ValueError(f"in_flight must be at least 1, got {in_flight}")
        return PredictionStream(self, batches, in_flight)

    def _checked_stream(
        self, batches: Iterable[list[dict[str, Any]]], in_flight: int, latencies: list[float]
    ) -> Generator[Outputs, None, None]:
        sent: deque[list[dict[str, Any]]] = deque()  # asked for, not yet answered

        def recorded() -> Iterator[list[dict[str, Any]]]:
            for batch in batches:
                sent.append(batch)
                yield batch

        answers = self._predict_stream(recorded(), in_flight, latencies)
        try:
            for number, outputs in enumerate(answers):
                self._check_count(sent.popleft(), outputs, f" (batch {number + 1} of a stream)")
                yield outputs
        finally:
            close = getattr(answers, "close", None)
            if close is not None:
                close()

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

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Hooks for implementations -------------------------------------------------------------

    def _prepare(self) -> Any:
        """What :meth:`prepare` keeps for :meth:`_start` (``self._prepared.value``)."""
        return None

    @abstractmethod
    def _start(self) -> ModelHello: ...

    @abstractmethod
    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def _predict_stream(
        self, batches: Iterator[list[dict[str, Any]]], in_flight: int, latencies: list[float]
    ) -> Iterator[Outputs]:
        """Answers to ``batches`` in order; appends each batch's latency to ``latencies``.

        This default sends one request at a time (``in_flight`` is ignored) and a latency
        is a request's round trip. A pipelining implementation documents its own figure.
        """
        for batch in batches:
            started = time.perf_counter()
            outputs = self._predict(batch)
            latencies.append(time.perf_counter() - started)
            yield outputs

    def _image_digest(self) -> str | None:
        """The digest of the image the model runs in; None where it runs in none."""
        return None

    @abstractmethod
    def _usage(self) -> ResourceUsage: ...

    @abstractmethod
    def _close(self) -> ResourceUsage: ...

    @abstractmethod
    def _log_tail(self, lines: int) -> str: ...


class PredictionStream(Iterator[Outputs]):
    """What :meth:`Sandbox.predict_stream` returns: outputs per batch, and their latencies.

    Iterate it for the outputs; ``latencies`` grows by one figure (seconds) per batch
    answered. Close it, or use it as a context manager, to leave it early.
    """

    def __init__(
        self, box: Sandbox, batches: Iterable[list[dict[str, Any]]], in_flight: int
    ) -> None:
        self.latencies: list[float] = []
        self._answers = box._checked_stream(batches, in_flight, self.latencies)

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Outputs:
        return next(self._answers)

    def close(self) -> None:
        """Stop early: no more requests are sent (those sent are answered, and dropped)."""
        self._answers.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_REGISTRY: dict[str, Callable[..., Sandbox]] = {}
#: An alias is called with a run's arguments (those of :func:`open_sandbox`, the bundle's
#: manifest for the bundle; None when none is known yet) and returns the registered kind
#: it means for that run.
Chooser = Callable[..., str]
_ALIASES: dict[str, Chooser] = {}


def sandbox(name: str) -> Callable[[type[Sandbox]], type[Sandbox]]:
    """Register a Sandbox implementation under ``name``."""

    def register(cls: type[Sandbox]) -> type[Sandbox]:
        cls.kind = name
        _REGISTRY[name] = cls
        return cls

    return register


def sandbox_alias(name: str) -> Callable[[Chooser], Chooser]:
    """Register a name that stands for another sandbox, chosen when one is opened.

    The decorated function is called as ``choose(manifest=..., limits=..., **options)``
    (``manifest`` None when no bundle is known yet, or its manifest cannot be read) and
    returns the registered kind the alias means for that run on this machine now
    (``auto``: ``gvisor`` where the engine has gVisor, else ``docker``; ``docker`` for a
    bundle that would be given a GPU).
    """

    def register(choose: Chooser) -> Chooser:
        _ALIASES[name] = choose
        return choose

    return register


def known_sandboxes() -> list[str]:
    """The registered sandbox names and aliases, sorted."""
    return sorted({*_REGISTRY, *_ALIASES})


def resolve_sandbox(
    kind: str,
    *,
    manifest: Manifest | None = None,
    limits: SandboxLimits | None = None,
    **options: Any,
) -> str:
    """The registered kind ``kind`` names: itself, or what an alias chooses for this run.

    Give the run's bundle manifest, limits and sandbox options where they are known: an alias may
    choose by them (``auto`` gives a GPU bundle to ``docker``, as gVisor has no GPU).

    Raises:
        UsageError: no sandbox or alias of that name.
    """
    if kind in _ALIASES:
        kind = _ALIASES[kind](manifest=manifest, limits=limits or SandboxLimits(), **options)
    if kind not in _REGISTRY:
        raise UsageError(f"Unknown sandbox {kind!r}; known: {', '.join(known_sandboxes())}")
    return kind


def open_sandbox(
    bundle: Bundle | Path,
    *,
    kind: str = "docker",
    limits: SandboxLimits | None = None,
    prepared: Prepared | None = None,
    **options: Any,
) -> Sandbox:
    """Make (not yet start) a sandbox of the named kind (or alias) for a loaded bundle or an
    unpacked bundle directory.

    The sandbox's ``kind`` attribute names what was chosen, an alias resolved. ``prepared``
    (from :func:`prepare_sandbox` for the same bundle and kind) spares its start the work.
    """
    limits = limits or SandboxLimits()
    manifest = bundle.manifest if isinstance(bundle, Bundle) else _readable_manifest(bundle)
    factory = _REGISTRY[resolve_sandbox(kind, manifest=manifest, limits=limits, **options)]
    box = factory(bundle, limits=limits, **options)
    if prepared is not None and prepared.kind == box.kind:
        box._prepared = prepared
    return box


def _readable_manifest(bundle_dir: Path) -> Manifest | None:
    # None for one that cannot be read: the sandbox says what is wrong when it starts.
    try:
        return load_manifest(bundle_dir)
    except InvalidBundle:
        return None


def prepare_sandbox(
    bundle: Bundle | Path,
    *,
    kind: str = "docker",
    limits: SandboxLimits | None = None,
    **options: Any,
) -> Prepared:
    """:meth:`Sandbox.prepare` for a run's sandboxes, done once before any of them starts
    (the arguments are :func:`open_sandbox`'s); give the result to each of them."""
    return open_sandbox(bundle, kind=kind, limits=limits, **options).prepare()
