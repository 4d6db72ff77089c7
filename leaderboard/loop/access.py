"""Who may write and validate a task's examples, and who may send its traffic."""

from __future__ import annotations

from evalboard.core.errors import PermissionDenied
from evalboard.core.states import Role
from leaderboard.accounts import Principal

__all__ = ["may_annotate", "may_send_traffic"]


def _require(principal: Principal, task_id: str, role: Role, *, doing: str, grant: str) -> None:
    """The task's owner, or a holder of ``role`` (for the task or platform-wide).

    Raises:
        PermissionDenied: not signed in (401), or without the role (403).
    """
    principal.require_signed_in()
    if not (principal.owns(task_id) or principal.has_role(role, task_id)):
        raise PermissionDenied(
            f"{doing} of task {task_id!r} needs the {role.value} role; {principal.name!r} "
            f"lacks it. Ask an admin to grant it ({grant})"
        )


def may_annotate(principal: Principal, task_id: str) -> None:
    """Annotators (of the task or platform-wide) and the task's owner write and validate."""
    _require(
        principal,
        task_id,
        Role.ANNOTATOR,
        doing="Writing and validating examples",
        grant=f"POST /users/{principal.name}/roles",
    )


def may_send_traffic(principal: Principal, task_id: str) -> None:
    """The task's owner and its monitors (production services) send traffic for drift checks."""
    _require(
        principal,
        task_id,
        Role.MONITOR,
        doing="Sending traffic for drift checks",
        grant=f"evalboard user grant {principal.name} --role monitor --task {task_id}",
    )
