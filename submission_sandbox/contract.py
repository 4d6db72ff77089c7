"""The container contract, host side: JSON lines over a unix socket (or stdio).

See docs/contract.md. The model sends a hello, then answers each request
``{"id", "inputs"}`` with ``{"id", "outputs"}`` (one output per input, in order) or
``{"id", "error"}``, and exits 0 on ``{"type": "shutdown"}``. Every read has a deadline
(the run's wall-clock limit) and every line a size cap; what goes wrong is raised as one
of the ``Channel*`` exceptions below, which the sandboxes turn into failure reasons after
looking at how the process ended.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from submission_sandbox.sandbox import ModelHello

__all__ = [
    "CONTRACT_VERSION",
    "ChannelClosed",
    "ChannelError",
    "ChannelTimeout",
    "ContractClient",
    "ModelError",
    "OutputTooLarge",
    "ProtocolViolation",
    "SOCKET_NAME",
    "UnixListener",
    "docker_stdio_reader",
    "fd_reader",
    "socket_reader",
]

CONTRACT_VERSION = 1
SOCKET_NAME = "model.sock"


class ChannelError(Exception):
    """Base of what can go wrong on the channel."""


class ChannelClosed(ChannelError):
    """The model closed the channel (usually: it exited)."""


class ChannelTimeout(ChannelError):
    """The deadline passed while waiting for the model."""


class OutputTooLarge(ChannelError):
    """A line from the model exceeded the output cap."""


class ProtocolViolation(ChannelError):
    """The model sent something that is not the contract."""


class ModelError(ChannelError):
    """The model reported an exception (``{"id", "error"}``) before exiting."""


#: Reads up to n bytes before a monotonic deadline: b"" at EOF, TimeoutError past it.
Reader = Callable[[int, float], bytes]


def socket_reader(sock: socket.socket) -> Reader:
    def read(n: int, deadline: float) -> bytes:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            return sock.recv(n)
        except TimeoutError:
            raise
        except OSError as exc:
            if isinstance(exc, socket.timeout):
                raise TimeoutError from exc
            return b""

    return read


def fd_reader(fd: int) -> Reader:
    """A reader over a pipe's file descriptor (the local sandbox's stdio)."""

    def read(n: int, deadline: float) -> bytes:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            raise TimeoutError
        return os.read(fd, n)

    return read


def docker_stdio_reader(sock: socket.socket) -> Reader:
    """The payload of stdout frames of an attached, non-tty container (8-byte headers)."""
    raw = socket_reader(sock)
    pending = bytearray()
    state = {"left": 0, "stream": 1}

    def read_exact(n: int, deadline: float) -> bytes:
        while len(pending) < n:
            chunk = raw(max(n - len(pending), 65536), deadline)
            if not chunk:
                return b""
            pending.extend(chunk)
        data = bytes(pending[:n])
        del pending[:n]
        return data

    def read(n: int, deadline: float) -> bytes:
        while state["left"] == 0:
            header = read_exact(8, deadline)
            if not header:
                return b""
            state["stream"], state["left"] = header[0], struct.unpack(">I", header[4:])[0]
        size = min(n, state["left"])
        if not pending:
            chunk = raw(size, deadline)
            if not chunk:
                return b""
            pending.extend(chunk)
        data = bytes(pending[:size])
        del pending[:size]
        state["left"] -= len(data)
        return data if state["stream"] == 1 else read(n, deadline)

    return read


class UnixListener:
    """The host end of the socket channel: listens in a directory the model can reach."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SOCKET_NAME
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        os.chmod(self.path, 0o666)  # the model runs as another, unprivileged user
        self.sock.listen(1)

    def accept(self, deadline: float, alive: Callable[[], bool]) -> socket.socket:
        """Wait for the model to connect, giving up early when it is no longer alive."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("the model did not connect before the time limit")
            self.sock.settimeout(min(left, 0.25))
            try:
                conn, _ = self.sock.accept()
                conn.settimeout(None)
                return conn
            except TimeoutError:
                if not alive():
                    raise ChannelClosed("the model exited before connecting") from None

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


class ContractClient:
    """Speaks the contract to one model over a reader and a writer."""

    def __init__(self, read: Reader, write: Callable[[bytes], None], *, max_line_bytes: int):
        self._read = read
        self._write = write
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._next_id = 1

    def _line(self, deadline: float) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if len(line) > self._max:
                    raise OutputTooLarge(f"a line of {len(line)} bytes (cap {self._max})")
                if line.strip():
                    return line
                continue
            if len(self._buffer) > self._max:
                raise OutputTooLarge(f"a line of more than {self._max} bytes")
            try:
                chunk = self._read(1024 * 1024, deadline)
            except TimeoutError:
                raise ChannelTimeout("no answer before the time limit") from None
            if not chunk:
                raise ChannelClosed("the model closed the channel")
            self._buffer.extend(chunk)

    def _message(self, deadline: float) -> dict[str, Any]:
        line = self._line(deadline)
        try:
            message = json.loads(line)
        except ValueError:
            raise ProtocolViolation(f"not a JSON line: {line[:120]!r}") from None
        if not isinstance(message, dict):
            raise ProtocolViolation(f"a message must be a JSON object, got {line[:120]!r}")
        return message

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        try:
            self._write(data)
        except OSError as exc:
            raise ChannelClosed(f"could not write to the model: {exc}") from None

    def hello(self, deadline: float) -> ModelHello:
        message = self._message(deadline)
        if message.get("type") == "error" or "error" in message:
            raise ModelError(str(message.get("error", "")))
        if message.get("type") != "hello":
            raise ProtocolViolation(
                f'the first message must be {{"type": "hello", ...}}, got {str(message)[:120]}'
            )
        try:
            return ModelHello.model_validate(
                {k: v for k, v in message.items() if k in ModelHello.model_fields}
            )
        except ValueError as exc:
            raise ProtocolViolation(f"a malformed hello: {exc}") from None

    def request(self, inputs: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
        request_id = self._next_id
        self._next_id += 1
        self.send({"id": request_id, "inputs": inputs})
        message = self._message(deadline)
        if "error" in message:
            raise ModelError(str(message["error"]))
        if message.get("id") != request_id:
            raise ProtocolViolation(
                f"expected the answer to request {request_id}, got id {message.get('id')!r}"
            )
        outputs = message.get("outputs")
        if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
            raise ProtocolViolation(
                f'answer {request_id} must hold "outputs": a list of objects, one per input'
            )
        return outputs

    def shutdown(self) -> None:
        try:
            self.send({"type": "shutdown"})
        except ChannelClosed:
            pass
