"""How a command talks to an Evalboard server: its options (and the ``--task`` option of
every task command), its client, its refusals mapped to the errors they mean (internal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from evalboard.core.errors import (
    Conflict,
    EvalboardError,
    NotFound,
    PermissionDenied,
    PlatformError,
    QuotaExceeded,
    UsageError,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["SERVER", "TASK", "TOKEN", "ask", "checked", "download", "server_client"]

SERVER = typer.Option(
    ...,
    "--server",
    envvar="EVALBOARD_SERVER",
    help="The Evalboard server, e.g. http://localhost:8000.",
)
TOKEN = typer.Option(
    None, "--token", envvar="EVALBOARD_TOKEN", help="API token (`evalboard token create NAME`)."
)
TASK = typer.Option(..., "--task", "-t", help="Task id.")

_ERRORS: dict[int, type[EvalboardError]] = {
    401: PermissionDenied,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    429: QuotaExceeded,
}


def checked(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON, or its refusal as the error it means (404 NotFound, 409 Conflict...)."""
    if response.is_success:
        body: dict[str, Any] = response.json()
        return body
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    error = _ERRORS.get(response.status_code)
    if error is None:
        error = PlatformError if response.status_code >= 500 else UsageError
    raise error(f"The server refused ({response.status_code}): {detail}")


def server_client(
    server: str, token: str | None, *, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    """A client of ``server``, signed in with ``token`` when one is given."""
    import httpx  # here, not at the top: --help and usage errors load no HTTP client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(
        base_url=server.rstrip("/"), headers=headers, timeout=120, transport=transport
    )


def ask(
    server: str, path: str, *, token: str | None = None, method: str = "GET", body: Any = None
) -> Any:
    """One request to ``server``: its JSON answer, or its refusal as the error it means."""
    with server_client(server, token) as client:
        response = client.request(method, path, json=body)
    if not response.is_success:
        checked(response)  # raises
    return response.json()


def download(client: httpx.Client, path: str) -> bytes:
    """The bytes at ``path``, as the server sent them, or its refusal as an error."""
    response = client.get(path)
    if not response.is_success:
        checked(response)  # raises
    return response.content
