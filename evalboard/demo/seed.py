"""The demo's task, datasets and accounts: created once, found again on later runs."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from datasets_registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Role
from evalboard.demo.data import DEMO_TASK_ID, data_path, demo_sets, demo_task_spec
from leaderboard.accounts import create_user, get_user, grant_role

__all__ = ["DemoAccounts", "seed_accounts", "seed_task"]

OWNER = "demo-owner"
RESEARCHER = "demo-researcher"
WRITERS = ("demo-annotator-a", "demo-annotator-b")
VALIDATORS = ("demo-validator-1", "demo-validator-2", "demo-validator-3")


@dataclass(frozen=True)
class DemoAccounts:
    """User ids of the demo's accounts, and the owner's password for the pages."""

    owner: int
    researcher: int
    writers: tuple[int, ...]
    validators: tuple[int, ...]
    owner_password: str


def seed_task(ctx: Context) -> list[str]:
    """Create the demo task and add its datasets; returns the names added this time."""
    create_task(ctx, demo_task_spec())
    added = []
    for demo_set in demo_sets():
        result = add_dataset(
            ctx,
            task_id=DEMO_TASK_ID,
            name=demo_set.name,
            path=data_path(demo_set.file),
            round=demo_set.round,
        )
        if result.created:
            added += [demo_set.name, *(d.name for d in result.derived)]
    return added


def _user(
    ctx: Context, name: str, roles: tuple[Role, ...], *, password: str = "", is_admin: bool = False
) -> int:
    try:
        return get_user(ctx, name).id
    except NotFound:
        return create_user(ctx, name, password=password, roles=roles, is_admin=is_admin).id


def _owner_password(state_dir: Path) -> str:
    """A random password kept in the data directory (0600), so the owner can sign in."""
    path = state_dir / "owner-password"
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    state_dir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    path.touch(mode=0o600)
    path.write_text(password + "\n", encoding="utf-8")
    return password


def seed_accounts(ctx: Context, state_dir: Path) -> DemoAccounts:
    """The task owner, a researcher, two annotators who write and three who validate."""
    password = _owner_password(state_dir)
    owner = _user(ctx, OWNER, (Role.RESEARCHER,), password=password)
    grant_role(ctx, OWNER, Role.OWNER, task_id=DEMO_TASK_ID)
    researcher = _user(ctx, RESEARCHER, (Role.RESEARCHER,))
    writers = tuple(_user(ctx, name, (Role.ANNOTATOR,)) for name in WRITERS)
    validators = tuple(_user(ctx, name, (Role.ANNOTATOR,)) for name in VALIDATORS)
    return DemoAccounts(owner, researcher, writers, validators, password)
