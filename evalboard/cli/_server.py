"""How a command talks to an Evalboard server: its options (and the ``--task`` option of
every task command), its client, its refusals and its silences mapped to the errors they
mean (internal).

One rule for every ``--server`` command: a malformed ``--server`` is the user's to fix
(:class:`UsageError`); a server that does not answer is, like a database that does not
answer, a fault of the platform (:class:`PlatformError`); an answer that is not Evalboard's
API (an HTML page) means ``--server`` names something else. Each is one line, exit 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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

_FIX = "Check --server / EVALBOARD_SERVER"
#: How many of a 422's field errors are spelled out before the rest are only counted.
_LISTED = 5


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _field_errors(detail: list[Any]) -> str:
    """FastAPI's 422 list as one line: ``body.title: String should have at most ...; ...``."""
    said = []
    for item in detail:
        if isinstance(item, dict) and "msg" in item:
            where = ".".join(str(part) for part in item.get("loc", ()))
            said.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
        else:
            said.append(str(item))
    line = "; ".join(said[:_LISTED])
    if len(said) > _LISTED:
        line += f" (and {len(said) - _LISTED} more)"
    return line


def _not_evalboard(response: httpx.Response) -> EvalboardError:
    """The error for an answer that is not Evalboard's JSON: summarised, never printed whole."""
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    text = response.text.lstrip()
    if "html" in kind or text[:1] == "<":
        what = "an HTML page"
    elif not text:
        what = "an empty body"
    else:
        what = f"{kind or 'a body'} that is not JSON"
    error = PlatformError if response.status_code >= 500 else UsageError
    return error(
        f"The server at {_origin(response.request.url)} answered {response.status_code} "
        f"with {what}, not Evalboard's API: is --server the right address? {_FIX}"
    )


def _json(response: httpx.Response) -> Any:
    """The answer's JSON, or its refusal as the error it means (404 NotFound, 409 Conflict...)."""
    try:
        body = response.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        raise _not_evalboard(response) from None
    if response.is_success:
        return body
    detail = body.get("detail", body) if isinstance(body, dict) else body
    said = _field_errors(detail) if isinstance(detail, list) else str(detail)
    said = " ".join(said.split())  # one line, whatever the server wrote
    error = _ERRORS.get(response.status_code)
    if error is None:
        error = PlatformError if response.status_code >= 500 else UsageError
    raise error(f"The server refused ({response.status_code}): {said}")


def checked(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON, or its refusal as the error it means (404 NotFound, 409 Conflict...)."""
    body: dict[str, Any] = _json(response)
    return body


def _server_url(server: str) -> httpx.URL:
    """``server`` as a URL, or a :class:`UsageError` saying how to write one."""
    import httpx

    example = f"http://{server}" if "://" not in server and server else "http://localhost:8000"
    try:
        url = httpx.URL(server.rstrip("/"))
    except httpx.InvalidURL as exc:
        reason = str(exc)
    else:
        if url.scheme in ("http", "https") and url.host:
            return url
        reason = "it needs http:// or https:// and a host"
    raise UsageError(f"--server {server!r} is not a server's URL ({reason}); e.g. {example}")


def _unreachable(server: httpx.URL, exc: httpx.TransportError) -> EvalboardError:
    """The error for a request that got no answer: what happened, and where to look."""
    import httpx

    if isinstance(exc, httpx.UnsupportedProtocol):  # a redirect to a non-HTTP URL, say
        return UsageError(f"The server at {server} cannot be reached over HTTP ({exc}). {_FIX}")
    if isinstance(exc, httpx.TimeoutException):
        why = "it did not answer in time"
    elif isinstance(exc, httpx.RemoteProtocolError):
        why = "it closed the connection without an HTTP answer"
    else:
        said = str(exc).lower()
        why = next(
            (w for needle, w in _CAUSES if needle in said),
            f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no answer'}",
        )
    return PlatformError(
        f"Cannot reach the Evalboard server at {server} ({why}); is `evalboard serve` "
        f"running there? {_FIX}"
    )


_CAUSES = (
    ("refused", "connection refused"),
    ("name or service not known", "no such host"),
    ("nodename nor servname", "no such host"),
    ("temporary failure in name resolution", "its name does not resolve"),
    ("no route to host", "no route to host"),
    ("network is unreachable", "network unreachable"),
    ("reset by peer", "the connection was reset"),
    ("certificate", "its TLS certificate was refused"),
)


@contextmanager
def server_client(
    server: str, token: str | None, *, transport: httpx.BaseTransport | None = None
) -> Iterator[httpx.Client]:
    """A client of ``server``, signed in with ``token`` when one is given.

    A request in the ``with`` block that gets no answer (refused, timed out, a host that
    does not resolve) leaves it as a :class:`PlatformError` naming the server; a malformed
    ``server`` is a :class:`UsageError` before any request.
    """
    import httpx  # here, not at the top: --help and usage errors load no HTTP client

    url = _server_url(server)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with httpx.Client(
            base_url=url, headers=headers, timeout=120, transport=transport
        ) as client:
            yield client
    except httpx.TransportError as exc:
        raise _unreachable(url, exc) from None
    except httpx.InvalidURL as exc:  # a path the URL cannot hold: a bad --task, say
        raise UsageError(f"Cannot make a request URL on {url}: {exc}") from None


def ask(
    server: str, path: str, *, token: str | None = None, method: str = "GET", body: Any = None
) -> Any:
    """One request to ``server``: its JSON answer, or its refusal as the error it means."""
    with server_client(server, token) as client:
        response = client.request(method, path, json=body)
    return _json(response)


def download(client: httpx.Client, path: str) -> bytes:
    """The bytes at ``path``, as the server sent them, or its refusal as an error."""
    response = client.get(path)
    if not response.is_success:
        _json(response)  # raises
    return response.content
