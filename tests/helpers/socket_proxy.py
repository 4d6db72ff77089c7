"""A proxy in front of one of the platform's parts that a test can stop and start.

Stopping it is what a worker sees when the part goes away (the Docker engine restarted,
Redis restarting, PostgreSQL refusing connections, the S3 server restarting): nothing
listens any more (a unix socket file disappears; a TCP port refuses) and every open
connection is cut. The real part is never touched (it is shared); the worker under test
is pointed at the proxy (``DOCKER_HOST``, a database or broker URL, an S3 endpoint).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

__all__ = ["SocketProxy", "TcpAddress"]

#: ``(host, port)`` of a TCP endpoint.
TcpAddress = tuple[str, int]


class SocketProxy:
    """Forwards connections on ``listen`` to ``target`` while started.

    ``listen`` is a unix socket path, or a TCP ``(host, port)`` (port 0: a free one, chosen
    at the first start and kept, so that clients find it again after a restart);
    ``target`` is a unix socket path, or a TCP ``(host, port)``.

    Example::

        proxy = SocketProxy(tmp_path / "docker.sock").start()
        os.environ["DOCKER_HOST"] = proxy.url
        proxy.stop()   # the engine is "gone"
        proxy.start()  # and back

        redis = SocketProxy(("127.0.0.1", 0), ("127.0.0.1", 6379)).start()
        broker_url = f"redis://127.0.0.1:{redis.port}/3"
    """

    def __init__(
        self, listen: Path | TcpAddress, target: str | TcpAddress = "/var/run/docker.sock"
    ) -> None:
        self.listen, self.target = listen, target
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.connections = 0

    @property
    def path(self) -> Path:
        """The unix socket this proxy listens on."""
        assert isinstance(self.listen, Path), "a TCP proxy has a port, not a path"
        return self.listen

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    @property
    def port(self) -> int:
        """The TCP port this proxy listens on (known once started)."""
        assert isinstance(self.listen, tuple), "a unix-socket proxy has a path, not a port"
        return self.listen[1]

    def start(self) -> SocketProxy:
        if isinstance(self.listen, Path):
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(self.listen))
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # The port is taken again at once after a stop (its old connections linger).
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(self.listen)
            self.listen = (self.listen[0], int(listener.getsockname()[1]))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """The part disappears: nothing listens, and open connections are cut."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        if isinstance(self.listen, Path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.listen)
        with self._lock:
            live, self._open = list(self._open), set()
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.target, tuple):
            return socket.create_connection(self.target, timeout=10)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.target)
        except OSError:
            upstream.close()
            raise
        return upstream

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = self._connect_upstream()
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # stopped meanwhile
                    client.close()
                    upstream.close()
                    return
                self._open.update((client, upstream))
                self.connections += 1
            pending = [2]  # the two directions; the last to end closes both sockets
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink, (client, upstream), pending), daemon=True
                ).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        pair: tuple[socket.socket, socket.socket],
        pending: list[int],
    ) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)  # pass a half-close on (docker attach uses it)
        except OSError:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_RDWR)
        finally:
            with self._lock:
                pending[0] -= 1
                last = pending[0] == 0
                if last:
                    self._open.difference_update(pair)
            if last:
                for sock in pair:
                    sock.close()
