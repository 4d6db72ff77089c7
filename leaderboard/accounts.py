"""Users, roles and API tokens, and the ``Principal`` that says what a caller may do.

Roles: ``admin`` (``User.is_admin``: everything), ``owner`` of one task (a ``RoleGrant`` with
that task, or ``Task.owner_id``: datasets, hidden sets, default weights, baselines, every
submission's logs on the task), ``researcher`` (uploads models, sees its own submissions'
logs), ``annotator`` (writes and validates examples, per task or platform-wide). Everyone,
signed in or not, may read tasks, leaderboards and non-hidden datasets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, UsageError
from evalboard.core.states import Role
from evalboard.core.tables import TOKEN_LABEL_MAX, ApiToken, RoleGrant, Task, User, utcnow
from leaderboard.credentials import (
    MIN_PASSWORD_LENGTH,
    hash_password,
    new_token,
    refuse_password,
    token_hash,
    verify_password,
)

__all__ = [
    "ANONYMOUS",
    "Principal",
    "authenticate",
    "check_grant",
    "create_token",
    "create_user",
    "end_sessions",
    "get_user",
    "grant_role",
    "list_tokens",
    "list_users",
    "principal_for",
    "principal_for_token",
    "revoke_role",
    "revoke_token",
    "set_password",
    "token_owner",
    "token_user_id",
]

_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who is calling, with what they may do; anonymous callers have ``user_id`` None."""

    user_id: int | None
    name: str = ""
    is_admin: bool = False
    roles: frozenset[tuple[str, str | None]] = field(default_factory=frozenset)
    owned_tasks: frozenset[str] = field(default_factory=frozenset)

    @property
    def signed_in(self) -> bool:
        return self.user_id is not None

    def has_role(self, role: Role, task_id: str | None = None) -> bool:
        """A platform-wide grant counts for every task."""
        return self.is_admin or (role, None) in self.roles or (role, task_id) in self.roles

    def owns(self, task_id: str) -> bool:
        return self.is_admin or task_id in self.owned_tasks

    def may_upload(self, task_id: str) -> bool:
        return self.owns(task_id) or self.has_role(Role.RESEARCHER, task_id)

    def may_see_logs(self, *, task_id: str, submitter_id: int | None) -> bool:
        """A submission's logs and messages: its submitter, the task's owner, an admin."""
        return self.owns(task_id) or (self.signed_in and submitter_id == self.user_id)

    def require_signed_in(self) -> int:
        """The caller's user id; an anonymous caller is refused (401)."""
        if self.user_id is None:
            raise _NotSignedIn(
                "Sign in first: send `Authorization: Bearer <token>` (create one with "
                "`evalboard token create NAME`) or log in at /ui/login"
            )
        return self.user_id

    def require_owner(self, task_id: str, *, doing: str) -> None:
        self.require_signed_in()
        if not self.owns(task_id):
            raise PermissionDenied(
                f"Only the owner of task {task_id!r} (or an admin) may {doing}; "
                f"{self.name!r} does not own it"
            )

    def require_upload(self, task_id: str) -> None:
        self.require_signed_in()
        if not self.may_upload(task_id):
            raise PermissionDenied(
                f"{self.name!r} may not upload models to {task_id!r}: ask an admin for the "
                "researcher role"
            )

    def require_admin(self, *, doing: str) -> None:
        self.require_signed_in()
        if not self.is_admin:
            raise PermissionDenied(f"Only an admin may {doing}; {self.name!r} is not one")


class _NotSignedIn(PermissionDenied):
    """No credentials: HTTP 401 rather than 403."""

    http_status = 401


ANONYMOUS = Principal(user_id=None)


def _check_name(name: str) -> None:
    if not _USER_NAME.fullmatch(name):  # with match, "$" would let a final newline through
        raise UsageError(
            f"User name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def create_user(
    ctx: Context,
    name: str,
    *,
    password: str = "",
    is_admin: bool = False,
    roles: tuple[Role, ...] = (Role.RESEARCHER,),
) -> User:
    """Add a user (a researcher by default); an empty password means token-only access."""
    _check_name(name)
    if password and len(password) < MIN_PASSWORD_LENGTH:
        raise UsageError(f"Passwords need at least {MIN_PASSWORD_LENGTH} characters")
    with ctx.db.session() as session:
        if session.scalar(select(User).where(User.name == name)) is not None:
            raise Conflict(f"User {name!r} already exists; pick another name")
        user = User(
            name=name, password_hash=hash_password(password) if password else "", is_admin=is_admin
        )
        session.add(user)
        session.flush()
        for role in roles:
            session.add(RoleGrant(user_id=user.id, role=role.value, task_id=None))
        return user


def get_user(ctx: Context, name: str) -> User:
    with ctx.db.session() as session:
        user = session.scalar(select(User).where(User.name == name))
        if user is None:
            raise NotFound(f"No user {name!r}; add one with `evalboard user add {name}`")
        return user


def list_users(ctx: Context) -> list[User]:
    with ctx.db.session() as session:
        return list(session.scalars(select(User).order_by(User.name)))


def _grant(session: Session, user_id: int, role: Role, task_id: str | None) -> RoleGrant | None:
    """The user's grant of ``role`` on the task (None: platform-wide), if they hold one."""
    return session.scalar(
        select(RoleGrant).where(
            RoleGrant.user_id == user_id,
            RoleGrant.role == role.value,
            RoleGrant.task_id.is_(None) if task_id is None else RoleGrant.task_id == task_id,
        )
    )


def check_grant(ctx: Context, role: Role, *, task_id: str | None = None) -> None:
    """Refuse what :func:`grant_role` refuses, before anything is made (a new user whose
    grant is refused is not left behind)."""
    with ctx.db.session() as session:
        _check_grant(session, role, task_id)


def _check_grant(session: Session, role: Role, task_id: str | None) -> None:
    if role is Role.ADMIN:
        raise UsageError("admin is not a grant; create the user with --admin")
    if role is Role.OWNER and task_id is None:
        raise UsageError("owner is a per-task role; name the task (--task T)")
    if task_id is not None and session.get(Task, task_id) is None:
        raise NotFound(f"Unknown task {task_id!r}")


def grant_role(ctx: Context, name: str, role: Role, *, task_id: str | None = None) -> None:
    """Give ``role`` to a user (per task or platform-wide); granting twice is a no-op."""
    user = get_user(ctx, name)
    with ctx.db.session() as session:
        _check_grant(session, role, task_id)
        if _grant(session, user.id, role, task_id) is None:
            session.add(RoleGrant(user_id=user.id, role=role.value, task_id=task_id))
    end_sessions(ctx, user.id)  # a changed role signs in afresh


def revoke_role(ctx: Context, name: str, role: Role, *, task_id: str | None = None) -> bool:
    """Take ``role`` (per task, or platform-wide) from a user; False when they had no
    such grant. Their sessions end, as with a grant. A task's recorded owner
    (``Task.owner_id``) stays its owner: that is not a grant."""
    user = get_user(ctx, name)
    with ctx.db.session() as session:
        grant = _grant(session, user.id, role, task_id)
        if grant is None:
            return False
        session.delete(grant)
    end_sessions(ctx, user.id)
    return True


def end_sessions(ctx: Context, user_id: int) -> None:
    """End every browser session of the user at once (each cookie carries the version)."""
    with ctx.db.session() as session:
        session.execute(
            update(User).where(User.id == user_id).values(session_version=User.session_version + 1)
        )


def set_password(ctx: Context, name: str, password: str) -> None:
    """Give the user a new password (empty: API tokens only); their sessions end."""
    if password and len(password) < MIN_PASSWORD_LENGTH:
        raise UsageError(f"Passwords need at least {MIN_PASSWORD_LENGTH} characters")
    user = get_user(ctx, name)
    with ctx.db.session() as session:
        session.execute(
            update(User)
            .where(User.id == user.id)
            .values(password_hash=hash_password(password) if password else "")
        )
    end_sessions(ctx, user.id)


def authenticate(ctx: Context, name: str, password: str) -> User | None:
    """The user when the password matches, else None (the same for an unknown name)."""
    with ctx.db.session() as session:
        user = session.scalar(select(User).where(User.name == name))
    if user is None or not user.password_hash:
        refuse_password(password)  # as slow as a real check: names do not show
        return None
    return user if verify_password(password, user.password_hash) else None


def create_token(ctx: Context, name: str, *, label: str = "") -> tuple[str, ApiToken]:
    """A new API token for the user: the plain token (returned once, never stored) and
    its stored record.

    Raises:
        UsageError: the label is longer than the column holds (never cut silently).
    """
    if len(label) > TOKEN_LABEL_MAX:
        raise UsageError(
            f"A token label has at most {TOKEN_LABEL_MAX} characters; this one has {len(label)}"
        )
    user = get_user(ctx, name)
    token = new_token()
    with ctx.db.session() as session:
        row = ApiToken(user_id=user.id, token_hash=token_hash(token), label=label)
        session.add(row)
    return token, row


def list_tokens(ctx: Context, user_id: int | None = None) -> list[tuple[ApiToken, str]]:
    """API tokens (never their secrets) with their user's name, oldest first: one user's,
    or everyone's when ``user_id`` is None (for admins)."""
    query = select(ApiToken, User.name).join(User, User.id == ApiToken.user_id)
    if user_id is not None:
        query = query.where(ApiToken.user_id == user_id)
    with ctx.db.session() as session:
        return [(token, name) for token, name in session.execute(query.order_by(ApiToken.id))]


def revoke_token(ctx: Context, user_id: int, token_id: int) -> None:
    with ctx.db.session() as session:
        token = session.get(ApiToken, token_id)
        if token is None or token.user_id != user_id:
            raise NotFound(f"You have no token {token_id}")
        session.delete(token)
    end_sessions(ctx, user_id)  # a leaked token may have been used to sign in elsewhere


def principal_for(
    ctx: Context, user_id: int | None, *, session_version: int | None = None
) -> Principal:
    """The principal of a user id (anonymous when None or unknown, or when
    ``session_version`` is given and is not the user's current one: an ended session)."""
    if user_id is None:
        return ANONYMOUS
    with ctx.db.session() as session:
        user = session.get(User, user_id)
        if user is None or (
            session_version is not None and user.session_version != session_version
        ):
            return ANONYMOUS
        grants = session.scalars(select(RoleGrant).where(RoleGrant.user_id == user_id)).all()
        owned = set(session.scalars(select(Task.id).where(Task.owner_id == user_id)))
    owned |= {g.task_id for g in grants if g.role == Role.OWNER and g.task_id is not None}
    return Principal(
        user_id=user.id,
        name=user.name,
        is_admin=user.is_admin,
        roles=frozenset((g.role, g.task_id) for g in grants),
        owned_tasks=frozenset(owned),
    )


def principal_for_token(ctx: Context, token: str) -> Principal | None:
    """The token's principal, or None when the token is unknown; records its last use."""
    with ctx.db.session() as session:
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(token)))
        if row is None:
            return None
        row.last_used_at = utcnow()
        user_id = row.user_id
    return principal_for(ctx, user_id)


def token_user_id(ctx: Context, token: str) -> int | None:
    """The id of the token's user, or None when the token is unknown (one quick read)."""
    with ctx.db.session() as session:
        return session.scalar(
            select(ApiToken.user_id).where(ApiToken.token_hash == token_hash(token))
        )


def token_owner(ctx: Context, token_id: int) -> int:
    """The id of the user a stored token (by its id) belongs to.

    Raises:
        NotFound: there is no such token.
    """
    with ctx.db.session() as session:
        user_id = session.scalar(select(ApiToken.user_id).where(ApiToken.id == token_id))
    if user_id is None:
        raise NotFound(f"No token {token_id}")
    return int(user_id)
