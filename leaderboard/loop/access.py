"""Who may write and validate a task's examples."""

from __future__ import annotations

from evalboard.core.errors import PermissionDenied
from evalboard.core.states import Role
from leaderboard.accounts import Principal

__all__ = ["may_annotate"]


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
