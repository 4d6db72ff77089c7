"""A unix-socket proxy in front of the Docker engine that a test can stop and start.

Stopping it is what a worker sees when its engine goes away (restarted, upgraded): the
socket file disappears and every open connection is cut. The real engine is never touched
(it is shared); the worker under test is pointed here with ``DOCKER_HOST``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

__all__ = ["SocketProxy"]


class SocketProxy:
    """Forwards connections on ``path`` to ``target`` while started.

    Example::

        proxy = SocketProxy(tmp_path / "docker.sock").start()
        os.environ["DOCKER_HOST"] = proxy.url
        proxy.stop()   # the engine is "gone"
        proxy.start()  # and back
    """

    def __init__(self, path: Path, target: str = "/var/run/docker.sock") -> None:
        self.path, self.target = path, target
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.connections = 0

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def start(self) -> SocketProxy:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """The engine disappears: no socket file, and open connections are cut."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        with self._lock:
            live, self._open = list(self._open), set()
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                upstream.close()
                continue
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
