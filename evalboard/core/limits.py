"""Sandbox limits as a value object, like httpx's ``Timeout``.

In core because both the task spec (datasets_registry) and the sandbox use it, and those
two layers stay independent of each other.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["MAX_SIZE_BYTES", "MAX_TIMEOUT_S", "SandboxLimits", "parse_bytes"]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
#: The largest size a sandbox may be given (memory, /tmp): far above any machine's, far
#: below what Docker's 64-bit fields overflow at (a task's 10**20 g failed at run time).
MAX_SIZE_BYTES = 64 * 1024**4
#: The longest a whole run may take: a week.
MAX_TIMEOUT_S = 7 * 24 * 3600


def parse_bytes(value: str | int) -> int:
    """Parse a Docker-style size (``4g``, ``512m``, ``1GiB``) into bytes.

    >>> parse_bytes("4g")
    4294967296
    >>> parse_bytes("512MiB")
    536870912
    """
    if isinstance(value, int):
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"Size {value!r} is not understood; write e.g. 512m, 4g or 1GiB")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


class SandboxLimits(BaseModel):
    """What one sandboxed model may use. A task may tighten these, never loosen them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpus: float = Field(2.0, gt=0, le=64, description="CPU quota, in cores.")
    memory: str = Field("4g", description="Memory limit, swap included (no swap).")
    timeout_s: float = Field(
        3600, gt=0, le=MAX_TIMEOUT_S, description="Wall-clock limit for the whole run."
    )
    gpus: int = Field(0, ge=0, le=1, description="GPU devices; at most one is ever given.")
    pids: int = Field(
        256, ge=16, le=4_194_304, description="Processes and threads inside the sandbox."
    )
    tmpfs: str = Field("256m", description="Size of the writable /tmp.")
    max_output_bytes: int = Field(
        64 * 1024**2, ge=1, le=1024**3, description="Largest single response line from the model."
    )
    max_log_bytes: int = Field(1024**2, ge=1, le=1024**3, description="Model log kept (its tail).")

    @field_validator("memory", "tmpfs")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        if parse_bytes(value) > MAX_SIZE_BYTES:
            raise ValueError(
                f"Size {value!r} is more than the {MAX_SIZE_BYTES // 1024**4}t allowed"
            )
        return value

    @property
    def memory_bytes(self) -> int:
        return parse_bytes(self.memory)

    @property
    def tmpfs_bytes(self) -> int:
        return parse_bytes(self.tmpfs)

    def tightened(self, **overrides: Any) -> SandboxLimits:
        """These limits with some replaced, refusing any that would loosen them."""
        candidate = self.model_copy(update=overrides)
        for field in ("cpus", "timeout_s", "pids", "max_output_bytes", "max_log_bytes"):
            if getattr(candidate, field) > getattr(self, field):
                raise ValueError(
                    f"{field}={getattr(candidate, field)} loosens the limit "
                    f"{getattr(self, field)}; an operator flag is needed"
                )
        if candidate.memory_bytes > self.memory_bytes:
            raise ValueError(f"memory={candidate.memory} loosens the limit {self.memory}")
        return candidate
