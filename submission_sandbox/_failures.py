"""Turning what went wrong on the channel, and how the process ended, into a reason."""

from __future__ import annotations

from dataclasses import dataclass

from evalboard.core.states import FailureReason
from submission_sandbox.contract import (
    ChannelError,
    ChannelTimeout,
    ModelError,
    OutputTooLarge,
    ProtocolViolation,
)
from submission_sandbox.sandbox import SandboxFailure

__all__ = ["ExitInfo", "classify"]


@dataclass(frozen=True)
class ExitInfo:
    """How the model's process ended (None: still running, or unknown)."""

    exit_code: int | None
    oom_killed: bool = False


def classify(
    error: ChannelError,
    exit_info: ExitInfo,
    *,
    timed_out: bool,
    timeout_s: float,
    memory: str,
    max_output_bytes: int,
    log_tail: str,
) -> SandboxFailure:
    """The exact reason, in the order that makes it true.

    ``oom`` needs the OOM killer's mark *and* a failed exit (137 when the model's own
    process was killed; another non-zero code when a child of it was killed and the model
    then gave up); a mark alone (the model survived) is not a failure. ``timeout`` is ours:
    we killed it, so its exit code says nothing.
    """
    code = exit_info.exit_code

    def failure(reason: FailureReason, message: str) -> SandboxFailure:
        return SandboxFailure(reason, message, log_tail=log_tail)

    if timed_out or isinstance(error, ChannelTimeout):
        return failure(
            FailureReason.TIMEOUT,
            f"the model did not finish within the wall-clock limit of {timeout_s:g} s "
            "and was stopped; make it faster or ask for a longer limit",
        )
    if exit_info.oom_killed and code not in (None, 0):
        return failure(
            FailureReason.OOM,
            f"the model ran out of memory (limit {memory}, no swap) and was killed by the "
            f"kernel (exit code {code}); use a smaller batch_size or a smaller model",
        )
    if isinstance(error, OutputTooLarge):
        return failure(
            FailureReason.OUTPUT_LIMIT,
            f"the model sent {error} over the channel; one response may be at most "
            f"{max_output_bytes} bytes",
        )
    if isinstance(error, ProtocolViolation):
        return failure(FailureReason.PROTOCOL_ERROR, f"the model broke the contract: {error}")
    if isinstance(error, ModelError):
        last = str(error).strip().splitlines()[-1:] or ["(no message)"]
        return failure(FailureReason.CRASHED, f"the model raised an exception: {last[0]}")
    if code not in (None, 0):
        how = " (killed by SIGKILL)" if code == 137 else ""
        return failure(FailureReason.CRASHED, f"the model exited with code {code}{how}")
    if code == 0:
        return failure(
            FailureReason.PROTOCOL_ERROR,
            "the model exited (code 0) without answering; it must answer every request "
            "until it is sent a shutdown",
        )
    return failure(FailureReason.CRASHED, f"the model stopped answering: {error}")
