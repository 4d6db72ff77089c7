"""Which sandbox a command runs models in: one help text, one choice (internal)."""

from __future__ import annotations

from evalboard.cli._context import context
from evalboard.cli._output import warn

__all__ = ["SANDBOX_HELP", "chosen_sandbox"]

SANDBOX_HELP = (
    "gvisor (a container under gVisor's kernel: two walls), docker (a container: one "
    "wall), local (no isolation: your own code only), or auto: gvisor where the Docker "
    "engine has runsc, else docker. Default: EVALBOARD_SANDBOX, else auto."
)


def chosen_sandbox(requested: str | None) -> str:
    """The sandbox kind to run in; one warning line when ``auto`` cannot have gVisor.

    Raises:
        UsageError: an unknown kind (the message lists the known ones).
    """
    from submission_sandbox import choose_default_sandbox, resolve_sandbox

    kind = requested or context().settings.sandbox
    if kind == "auto":
        kind, note = choose_default_sandbox()
        if note is not None:
            warn(note)
    return resolve_sandbox(kind)
