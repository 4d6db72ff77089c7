"""Who may write and validate a task's examples, and who may send its traffic."""

from __future__ import annotations

from evalboard.core.errors import PermissionDenied
from evalboard.core.states import Role
from leaderboard.accounts import Principal

__all__ = ["may_annotate", "may_send_traffic"]


def may_annotate(principal: Principal, task_id: str) -> None:
    """Annotators (of the task or platform-wide) and the task's owner write and validate.

    Raises:
        PermissionDenied: not signed in (401), or without the role (403).
    """
    principal.require_signed_in()
    if not (principal.owns(task_id) or principal.has_role(Role.ANNOTATOR, task_id)):
        raise PermissionDenied(
            f"Writing and validating examples of task {task_id!r} needs the annotator role; "
            f"{principal.name!r} lacks it. Ask an admin to grant it "
            f"(POST /users/{principal.name}/roles)"
        )


def may_send_traffic(principal: Principal, task_id: str) -> None:
    """The task's owner and its monitors (production services) send traffic for drift checks.

    Raises:
        PermissionDenied: not signed in (401), or without the role (403).
    """
    principal.require_signed_in()
    if not (principal.owns(task_id) or principal.has_role(Role.MONITOR, task_id)):
        raise PermissionDenied(
            f"Sending traffic of task {task_id!r} for a drift check needs the monitor role or "
            f"ownership of the task; {principal.name!r} has neither. Ask an admin to grant "
            f"it (evalboard user grant {principal.name} --role monitor --task {task_id})"
        )
