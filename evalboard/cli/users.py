"""``evalboard user`` and ``evalboard token``: accounts, roles and API tokens."""

from __future__ import annotations

import sys

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, print_table
from evalboard.core.errors import UsageError
from evalboard.core.states import Role

__all__ = ["token_app", "user_app"]

user_app = typer.Typer(help="Add users and grant roles.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for the CLI and scripts.", no_args_is_help=True)


def _password(given: str | None) -> str:
    if given is not None:
        return given
    if sys.stdin.isatty():
        value: str = typer.prompt(
            "Password (empty: API tokens only)",
            default="",
            hide_input=True,
            confirmation_prompt=True,
            show_default=False,
        )
        return value
    return ""


@user_app.command("add")
def add(
    name: str = typer.Argument(..., help="User name."),
    admin: bool = typer.Option(False, "--admin", help="Make the user an admin."),
    role: list[Role] = typer.Option([], "--role", help="owner, researcher, annotator or monitor."),
    task: str | None = typer.Option(None, "--task", help="The task a role is for."),
    password: str | None = typer.Option(
        None, "--password", help="Sign-in password for the pages (asked for on a terminal)."
    ),
) -> None:
    """Add a user: a researcher, plus any --role given (owner needs --task)."""
    from leaderboard.accounts import check_grant, create_user, grant_role

    ctx = context()
    grants = [item for item in role if item is not Role.RESEARCHER]
    if task is not None and not grants:
        raise UsageError(
            f"--task {task} names the task of a role; give the role too (--role owner, "
            "annotator or monitor)"
        )
    for item in grants:  # a refused grant leaves no user behind
        check_grant(ctx, item, task_id=task)
    create_user(ctx, name, password=_password(password), is_admin=admin)
    for item in grants:
        grant_role(ctx, name, item, task_id=task)
    roles = ", ".join(
        ["admin"] * admin
        + ["researcher"]
        + [f"{r.value}{f' of {task}' if task else ''}" for r in role if r is not Role.RESEARCHER]
    )
    console.print(
        f"Added user [bold]{name}[/bold] ({roles}). Make a token with "
        f"`evalboard token create {name}`."
    )


@user_app.command("grant")
def grant(
    name: str = typer.Argument(..., help="User name."),
    role: Role = typer.Option(..., "--role", help="owner, researcher, annotator or monitor."),
    task: str | None = typer.Option(None, "--task", help="The task (owner needs one)."),
) -> None:
    """Grant a role to an existing user."""
    from leaderboard.accounts import grant_role

    grant_role(context(), name, role, task_id=task)
    console.print(f"{name} is now {role.value}{f' of {task}' if task else ''}.")


@user_app.command("password")
def password(
    name: str = typer.Argument(..., help="User name."),
    new: str | None = typer.Option(
        None, "--password", help="The new password (asked for on a terminal; empty: tokens only)."
    ),
) -> None:
    """Set a user's password; every browser session of the user ends."""
    from leaderboard.accounts import set_password

    if new is None and not sys.stdin.isatty():
        # Never an empty password by default: that would end password sign-in silently.
        raise UsageError(
            "No new password given and no terminal to ask on; pass --password P "
            "(--password '' for API tokens only)"
        )
    set_password(context(), name, _password(new))
    console.print(f"{name}'s password is changed; their sessions have ended.")


@user_app.command("list")
def list_() -> None:
    """List users and their roles."""
    from sqlalchemy import select

    from evalboard.core.tables import RoleGrant
    from leaderboard.accounts import list_users

    ctx = context()
    table = Table("name", "admin", "roles")
    with ctx.db.session() as session:
        grants = session.scalars(select(RoleGrant)).all()
    for user in list_users(ctx):
        roles = ", ".join(
            f"{g.role}{f':{g.task_id}' if g.task_id else ''}"
            for g in grants
            if g.user_id == user.id
        )
        table.add_row(user.name, "yes" if user.is_admin else "", roles)
    print_table(table)


@token_app.command("create")
def create(
    name: str = typer.Argument(..., help="The user the token acts as."),
    label: str = typer.Option("", "--label", help="What the token is for."),
) -> None:
    """Create an API token; it is printed once (only its sha256 is stored)."""
    from leaderboard.accounts import create_token

    token, _ = create_token(context(), name, label=label)
    sys.stdout.write(token + "\n")
