"""Which sandbox a command runs models in: one help text, one choice (internal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalboard.cli._output import warn

if TYPE_CHECKING:
    from evalboard.core.limits import SandboxLimits
    from submission_sandbox import Manifest

__all__ = ["SANDBOX_HELP", "chosen_sandbox"]

SANDBOX_HELP = (
    "gvisor (a container under gVisor's kernel: two walls), docker (a container: one "
    "wall), local (no isolation: your own code only), or auto: gvisor where the Docker "
    "engine has runsc, else docker (docker for a bundle given a GPU). Default: "
    "EVALBOARD_SANDBOX, else auto."
)


def chosen_sandbox(
    requested: str | None,
    *,
    manifest: Manifest | None = None,
    limits: SandboxLimits | None = None,
    choose: bool = True,
) -> str:
    """The sandbox kind to run in; one warning line when ``auto`` cannot have gVisor.

    Give the bundle and the run's limits where known: ``auto`` gives a bundle that would
    get a GPU to ``docker`` (gVisor has none). ``choose=False`` only checks the name (a
    typo is refused before any work) and returns it, ``auto`` not yet chosen.

    Raises:
        UsageError: an unknown kind (the message lists the known ones).
    """
    from evalboard.core.limits import SandboxLimits
    from submission_sandbox import (
        choose_default_sandbox,
        known_sandboxes,
        resolve_sandbox,
        run_gets_gpu,
    )

    if requested is None:
        # Read only when needed: --sandbox spares the settings' import (pydantic-settings
        # brings asyncio and ssl), a tenth of a second of evaluate's start.
        from evalboard.core.settings import get_settings

        requested = get_settings().sandbox
    kind: str = requested
    if not choose:
        return kind if kind in known_sandboxes() else resolve_sandbox(kind)
    if kind == "auto":
        gpu = run_gets_gpu(manifest, limits or SandboxLimits())
        kind, note = choose_default_sandbox(gpu=gpu)
        if note is not None:
            warn(note)
    return resolve_sandbox(kind)
