"""The base of the sandboxes that speak the container contract over a channel (internal).

``docker`` and ``local`` both reach their model over a unix socket or its stdio, keep a
wall-clock deadline with a watchdog, and turn a broken channel into one classified
:class:`SandboxFailure`, remembered so that later requests raise it again. That shared
bookkeeping lives here; how a model is started, killed, waited for and measured stays
with each implementation.
"""

from __future__ import annotations

import json
import math
import socket
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack

from evalboard.core.limits import SandboxLimits
from evalboard.core.scratch import scratch_dir
from submission_sandbox._failures import ExitInfo, classify
from submission_sandbox._runner import MANIFEST_KEYS
from submission_sandbox.bundle import Bundle
from submission_sandbox.contract import (
    ChannelError,
    ChannelTimeout,
    ContractClient,
    OutputTooLarge,
    ProtocolViolation,
    Reader,
    UnixListener,
    socket_reader,
    socket_write_now,
)
from submission_sandbox.cpuset import CoreReservation, reserve_cores
from submission_sandbox.sandbox import ModelHello, Sandbox, SandboxFailure

__all__ = ["ChannelOptions", "ChannelSandbox"]


class ChannelOptions(TypedDict, total=False):
    """The keywords every channel sandbox takes besides its own (each optional)."""

    #: ``unix`` (default; about 3x cheaper per message) or ``stdio``.
    channel: Literal["unix", "stdio"]
    #: Run the model on cores of its own where the machine has them free
    #: (:mod:`submission_sandbox.cpuset`); default False.
    pin_cpus: bool
    #: A text task's generation settings, given to the model as ``EVALBOARD_GENERATION``
    #: (JSON); default none.
    generation: Mapping[str, Any] | None


class ChannelSandbox(Sandbox):
    """A sandbox whose model answers a :class:`ContractClient` over ``unix`` or ``stdio``.

    Implementations launch the model between :meth:`_run_dir_for` and
    :meth:`_hello_over_channel` (which start the watchdog, open the channel and wait for
    the hello), and implement :meth:`_kill` and :meth:`_exit_info`; requests, pipelining
    and failure classification are shared.
    """

    def __init__(
        self,
        bundle: Bundle | Path,
        *,
        limits: SandboxLimits,
        **options: Unpack[ChannelOptions],
    ) -> None:
        super().__init__(bundle, limits=limits)
        channel = options.get("channel", "unix")
        if channel not in ("unix", "stdio"):
            raise ValueError(f"Unknown channel {channel!r}; known: unix, stdio")
        generation = options.get("generation")
        self.channel = channel
        self.pin_cpus = options.get("pin_cpus", False)
        self.generation = dict(generation) if generation is not None else None
        self._cores: CoreReservation | None = None
        self._listener: UnixListener | None = None
        self._conn: socket.socket | None = None
        self._contract: ContractClient | None = None
        self._deadline = math.inf
        self._watchdog: threading.Timer | None = None
        self._timed_out = threading.Event()
        self._failure: SandboxFailure | None = None

    def _task_environment(self) -> dict[str, str]:
        """What the model is told of its task: a text task's generation settings as JSON in
        ``EVALBOARD_GENERATION`` (docs/contract.md), which the transformers runtime follows;
        and, for the runner, the manifest as validated here (``EVALBOARD_MANIFEST``, JSON:
        the runner then needs no YAML parser)."""
        manifest = self._bundle().manifest
        environment = {
            "EVALBOARD_MANIFEST": manifest.model_dump_json(
                include=set(MANIFEST_KEYS), exclude_unset=True
            )
        }
        if self.generation is not None:
            environment["EVALBOARD_GENERATION"] = json.dumps(self.generation, sort_keys=True)
        return environment

    # Hooks -------------------------------------------------------------------------------

    @abstractmethod
    def _kill(self) -> None:
        """Kill the model now; quietly if it is already gone."""

    @abstractmethod
    def _exit_info(self, wait_s: float) -> ExitInfo:
        """How the model exited, waiting up to ``wait_s`` (then killing it)."""

    def _failure_log(self) -> str:
        """The log tail a failure carries, read once the model has stopped."""
        return self._log_tail(50)

    def _memory_limit(self) -> str:
        """The memory limit as a failure message states it."""
        return self.limits.memory

    def _check_deadline(self) -> None:
        """Before each request: act on a passed deadline (by default the watchdog does)."""

    def _reserve_cores(self) -> tuple[int, ...] | None:
        """With ``pin_cpus``, cores of the model's own (:mod:`submission_sandbox.cpuset`),
        held until close; None when not pinning or when too few cores are free."""
        if self.pin_cpus and self._cores is None:
            self._cores = reserve_cores(self.limits.cpus)
            self.cpuset = self._cores.cpuset if self._cores is not None else None
        return self._cores.cores if self._cores is not None else None

    # Launch ------------------------------------------------------------------------------

    def _run_dir_for(self, kind: str) -> Path:
        """This run's scratch folder (:mod:`evalboard.core.scratch`), with the ``unix``
        channel's listener in it."""
        run_dir = scratch_dir(kind)
        if self.channel == "unix":
            self._listener = UnixListener(run_dir)
        return run_dir

    def _hello_over_channel(
        self,
        running: Callable[[], bool],
        stdio: Callable[[], tuple[Reader, Callable[[bytes], None]]],
        *,
        then: Callable[[], None] | None = None,
    ) -> ModelHello:
        """Once the model is launched: start the watchdog, take its connection (``unix``;
        ``running`` says whether to keep waiting) or ``stdio()``'s reader and writer, run
        ``then``, and wait for the hello; a broken channel is a classified failure."""
        self._start_watchdog()
        write: Callable[[bytes], None]
        try:
            if self._listener is not None:
                conn = self._conn = self._listener.accept(self._deadline, running)
                read, write = socket_reader(conn), conn.sendall
                write_now = socket_write_now(conn)
            else:
                (read, write), write_now = stdio(), None
            self._contract = ContractClient(
                read, write, max_line_bytes=self.limits.max_output_bytes, write_now=write_now
            )
            if then is not None:
                then()
            return self._contract.hello(self._deadline)
        except ChannelError as exc:
            raise self._fail(exc) from None

    # Deadline and failures ---------------------------------------------------------------

    def _start_watchdog(self) -> None:
        self._watchdog = threading.Timer(self.limits.timeout_s, self._kill_for_timeout)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _kill_for_timeout(self) -> None:
        self._timed_out.set()
        self._kill()

    def _fail(self, error: ChannelError) -> SandboxFailure:
        """Stop the model, classify what happened, remember it, return the failure."""
        if isinstance(error, ChannelTimeout | OutputTooLarge | ProtocolViolation):
            self._kill()
        exit_info = self._exit_info(wait_s=5)
        self._failure = classify(
            error,
            exit_info,
            timed_out=self._timed_out.is_set(),
            timeout_s=self.limits.timeout_s,
            memory=self._memory_limit(),
            max_output_bytes=self.limits.max_output_bytes,
            log_tail=self._failure_log(),
        )
        return self._failure

    # Requests ----------------------------------------------------------------------------

    def _live_contract(self) -> ContractClient:
        """The contract to send on; raises the failure remembered from an earlier one."""
        if self._failure is not None:
            raise self._failure
        assert self._contract is not None
        self._check_deadline()
        return self._contract

    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        contract = self._live_contract()
        try:
            return contract.request(inputs, self._deadline)
        except ChannelError as exc:
            raise self._fail(exc) from None

    def _predict_stream(
        self, batches: Iterator[list[dict[str, Any]]], in_flight: int, latencies: list[float]
    ) -> Iterator[list[dict[str, Any]]]:
        """Pipelined over the channel; latencies as :meth:`ContractClient.stream` defines."""
        contract = self._live_contract()
        try:
            yield from contract.stream(
                batches, self._deadline, in_flight=in_flight, latencies=latencies
            )
        except ChannelError as exc:
            raise self._fail(exc) from None

    def _close_channel(self) -> None:
        """Cancel the watchdog and close the connection and the listener."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._conn is not None:
            self._conn.close()
        if self._listener is not None:
            self._listener.close()
        if self._cores is not None:
            self._cores.release()
