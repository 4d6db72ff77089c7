"""Users, roles and API tokens."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.errors import NotFound, PermissionDenied
from evalboard.core.states import Role
from evalboard.core.tables import RoleGrant, User
from leaderboard.accounts import (
    authenticate,
    create_token,
    create_user,
    get_user,
    grant_role,
    list_tokens,
    list_users,
    revoke_role,
    revoke_token,
    set_password,
)
from leaderboard.auth import CtxDep, SignedInDep
from leaderboard.errors import ERROR_RESPONSES
from leaderboard.schemas import (
    PasswordChange,
    RoleGrantCreate,
    TokenCreate,
    TokenCreated,
    TokenPublic,
    UserCreate,
    UserPublic,
    from_row,
)
from leaderboard.throttle import client_address, login_throttle

__all__ = ["router", "user_public"]

router = APIRouter(tags=["users"], responses=ERROR_RESPONSES)

UserName = Annotated[str, Path(max_length=64)]


def user_public(ctx: Context, user: User) -> UserPublic:
    with ctx.db.session() as session:
        grants = session.scalars(select(RoleGrant).where(RoleGrant.user_id == user.id)).all()
    return from_row(
        UserPublic,
        user,
        roles=[{"role": g.role, "task": g.task_id} for g in grants],
    )


@router.get("/users/me", summary="Who you are, with your roles")
def me(ctx: CtxDep, principal: SignedInDep) -> UserPublic:
    principal.require_signed_in()
    return user_public(ctx, get_user(ctx, principal.name))


@router.get("/users", summary="All users (admin)")
def list_(ctx: CtxDep, principal: SignedInDep) -> list[UserPublic]:
    principal.require_admin(doing="list users")
    return [user_public(ctx, u) for u in list_users(ctx)]


@router.post("/users", status_code=status.HTTP_201_CREATED, summary="Add a user (admin)")
def create(body: UserCreate, ctx: CtxDep, principal: SignedInDep) -> UserPublic:
    principal.require_admin(doing="add users")
    platform_roles = tuple(Role(g.role) for g in body.roles if g.task is None)
    user = create_user(
        ctx, body.name, password=body.password, is_admin=body.is_admin, roles=platform_roles
    )
    for grant in body.roles:
        if grant.task is not None:
            grant_role(ctx, body.name, Role(grant.role), task_id=grant.task)
    return user_public(ctx, user)


@router.post("/users/{name}/roles", summary="Grant a role (admin)")
def add_role(
    name: UserName, body: RoleGrantCreate, ctx: CtxDep, principal: SignedInDep
) -> UserPublic:
    principal.require_admin(doing="grant roles")
    grant_role(ctx, name, Role(body.role), task_id=body.task)
    return user_public(ctx, get_user(ctx, name))


@router.delete("/users/{name}/roles/{role}", summary="Revoke a role (admin)")
def remove_role(
    name: UserName,
    role: Literal[Role.OWNER, Role.RESEARCHER, Role.ANNOTATOR],
    ctx: CtxDep,
    principal: SignedInDep,
    task: Annotated[str | None, Query(max_length=64, description="None: platform-wide.")] = None,
) -> UserPublic:
    principal.require_admin(doing="revoke roles")
    if not revoke_role(ctx, name, Role(role), task_id=task):
        where = f"task {task!r}" if task else "the platform"
        raise NotFound(f"{name!r} has no {role} role on {where}; nothing revoked")
    return user_public(ctx, get_user(ctx, name))


@router.put(
    "/users/me/password",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Change your password (every session of yours ends)",
)
async def change_password(
    body: PasswordChange, request: Request, ctx: CtxDep, principal: SignedInDep
) -> None:
    # Throttled as signing in is: else a stolen token guesses the password at full speed.
    user = await run_in_threadpool(
        login_throttle(request).verified,
        principal.name,
        client_address(request),
        lambda: authenticate(ctx, principal.name, body.current),
    )
    if user is None:
        raise PermissionDenied("The current password is wrong; nothing changed")
    await run_in_threadpool(set_password, ctx, principal.name, body.new)


@router.get("/users/me/tokens", summary="Your API tokens (never the secrets)")
def tokens(ctx: CtxDep, principal: SignedInDep) -> list[TokenPublic]:
    principal.require_signed_in()
    return [from_row(TokenPublic, t) for t, _ in list_tokens(ctx, principal.user_id)]


@router.post(
    "/users/me/tokens",
    status_code=status.HTTP_201_CREATED,
    summary="Create an API token (shown once)",
)
def new_token(body: TokenCreate, ctx: CtxDep, principal: SignedInDep) -> TokenCreated:
    principal.require_signed_in()
    token, row = create_token(ctx, principal.name, label=body.label)
    return from_row(TokenCreated, row, token=token)


@router.delete(
    "/users/me/tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Revoke one of your tokens",
)
def delete_token(
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1)], ctx: CtxDep, principal: SignedInDep
) -> None:
    revoke_token(ctx, principal.require_signed_in(), token_id)
