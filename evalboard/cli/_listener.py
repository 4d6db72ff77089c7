"""The listening socket of ``evalboard serve`` and ``evalboard demo``: bound before any
work starts, so a port in use is one usage error, not a half-started server (internal)."""

from __future__ import annotations

import socket

import typer

__all__ = ["bind_listener"]


def bind_listener(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: any free one), for uvicorn's ``sockets``.

    Raises:
        typer.BadParameter: the address cannot be listened on (in use, not this machine's).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise typer.BadParameter(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another with --port "
            "(0: any free port)",
            param_hint="--port",
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
