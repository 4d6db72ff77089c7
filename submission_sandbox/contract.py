"""The container contract, host side: JSON lines over a unix socket (or stdio).

See docs/contract.md. The model sends a hello, then answers each request
``{"id", "inputs"}`` with ``{"id", "outputs"}`` (one output per input, in order) or
``{"id", "error"}``, and exits 0 on ``{"type": "shutdown"}``. Every read has a deadline
(the run's wall-clock limit) and every line a size cap; what goes wrong is raised as one
of the ``Channel*`` exceptions below, which the sandboxes turn into failure reasons after
looking at how the process ended.

Requests may be pipelined (:meth:`ContractClient.stream`): the next request is written
while the model works on the current one. The model reads requests in order and answers
them in order, so it needs nothing new; the host writes from a thread of its own so that a
large request cannot deadlock against a model that is writing a large answer.
"""

from __future__ import annotations

import itertools
import os
import queue
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

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
    "socket_write_now",
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
    """A reader over a connected socket, which it puts (and keeps) in blocking mode.

    The deadline is kept with ``poll``, not with the socket's timeout: a timeout is shared
    with every thread using the socket, and a pipelined request may be being written (by
    :meth:`ContractClient.stream`'s writer thread) while we wait for an answer.
    """
    sock.settimeout(None)
    poller = select.poll()
    poller.register(sock, select.POLLIN)

    def read(n: int, deadline: float) -> bytes:
        while True:
            # What has arrived is read without waiting: a poll first would be a system
            # call more for every answer of a pipelined stream.
            try:
                return sock.recv(n, socket.MSG_DONTWAIT)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            left_ms = max(deadline - time.monotonic(), 0.0) * 1000
            if not poller.poll(min(left_ms, 2**31 - 1)):
                raise TimeoutError

    return read


def socket_write_now(sock: socket.socket) -> Callable[[bytes], int]:
    """Sends what fits a connected socket's buffer without blocking; returns the count."""

    def write_now(data: bytes) -> int:
        try:
            return sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0

    return write_now


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


class _Writer:
    """Writes request lines for one stream: at once where that cannot block, else on a
    thread of its own.

    The model reads a whole request before it works on it, then writes the whole answer.
    Written inline, a request larger than the channel's buffer could block us while the
    model blocks writing the previous answer that we are not yet reading; on a thread,
    we keep reading. A request that fits the channel's free buffer is written at once
    (``write_now``, which never blocks) when nothing is queued before it: handing a small
    request to the thread costs more than the write (measured 10 us a request, a
    thread wake-up and the GIL passed back and forth, at batch 1 the channel's largest
    cost). ``stop`` drops what was not begun and says which writes began (those requests
    are in the model's hands and will be answered).
    """

    def __init__(
        self, write: Callable[[bytes], None], write_now: Callable[[bytes], int] | None = None
    ) -> None:
        self._write = write
        self._write_now = write_now
        self._queue: queue.SimpleQueue[tuple[list[int], bytes, bool] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        self._begun: set[int] = set()
        self._queued = 0  # requests handed to the thread and not yet written
        self.error: ChannelClosed | None = None
        self._thread: threading.Thread | None = None

    def put(self, request_ids: list[int], data: bytes) -> None:
        """Write the requests ``request_ids``, whose lines ``data`` holds, in order."""
        begun = False
        with self._lock:
            if self._write_now is not None and self._queued == 0 and self.error is None:
                self._begun.update(request_ids)
                begun = True
                try:
                    sent = self._write_now(data)
                except OSError as exc:
                    self.error = ChannelClosed(f"could not write to the model: {exc}")
                    return
                if sent == len(data):
                    return
                data = data[sent:]  # the rest, once the model has read some
            self._queued += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="contract-writer", daemon=True
                )
                self._thread.start()
        self._queue.put((request_ids, data, begun))

    def check(self) -> None:
        """Raise the write's failure, if one failed."""
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            request_ids, data, begun = item
            with self._lock:
                # A write begun inline is finished whatever happens: half a line would
                # break the channel for every later request.
                skip = not begun and (self._stopped or self.error is not None)
                if not skip:
                    self._begun.update(request_ids)
            try:
                if not skip:
                    self._write(data)
            except OSError as exc:
                self.error = ChannelClosed(f"could not write to the model: {exc}")
            finally:
                with self._lock:
                    self._queued -= 1

    def stop(self) -> set[int]:
        with self._lock:
            self._stopped = True
            begun = set(self._begun)
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
        return begun


class ContractClient:
    """Speaks the contract to one model over a reader and a writer.

    ``write`` must send all of its bytes (blocking) and may be called from another thread
    than the reads (see :meth:`stream`). ``write_now``, where the channel has one
    (:func:`socket_write_now`), sends what it can without blocking and says how much: a
    pipelined request then goes out at once when it fits.
    """

    def __init__(
        self,
        read: Reader,
        write: Callable[[bytes], None],
        *,
        max_line_bytes: int,
        write_now: Callable[[bytes], int] | None = None,
    ):
        self._read = read
        self._write = write
        self._write_now = write_now
        self._write_lock = threading.Lock()
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        #: Requests the model has (or is being sent) whose answers nobody read yet: those
        #: of a stream left early. They are read, and dropped, before anything else.
        self._unanswered: deque[int] = deque()
        self._streaming = False

    def _line(self, deadline: float, check: Callable[[], None] | None = None) -> bytes:
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
            # With a writer to watch, wait in slices so that its failure is seen promptly.
            until = deadline if check is None else min(deadline, time.monotonic() + 0.5)
            try:
                chunk = self._read(1024 * 1024, until)
            except TimeoutError:
                if until < deadline:
                    assert check is not None
                    check()
                    continue
                raise ChannelTimeout("no answer before the time limit") from None
            if not chunk:
                raise ChannelClosed("the model closed the channel")
            self._buffer.extend(chunk)

    def _message(self, deadline: float, check: Callable[[], None] | None = None) -> dict[str, Any]:
        line = self._line(deadline, check)
        try:
            message = orjson.loads(line)
        except ValueError:
            raise ProtocolViolation(f"not a JSON line: {line[:120]!r}") from None
        if not isinstance(message, dict):
            raise ProtocolViolation(f"a message must be a JSON object, got {line[:120]!r}")
        return message

    @staticmethod
    def _encode(message: dict[str, Any]) -> bytes:
        # orjson: about 10x faster than json here, which matters for cheap models.
        return orjson.dumps(message) + b"\n"

    def _write_line(self, data: bytes) -> None:
        with self._write_lock:
            self._write(data)

    def _write_line_now(self, data: bytes) -> int:
        assert self._write_now is not None
        if not self._write_lock.acquire(blocking=False):
            return 0  # another write holds the channel: the stream's thread waits for it
        try:
            return self._write_now(data)
        finally:
            self._write_lock.release()

    def send(self, message: dict[str, Any]) -> None:
        try:
            self._write_line(self._encode(message))
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

    def _idle(self, deadline: float) -> None:
        """Refuse to interleave with an open stream; read the answers a closed one left."""
        if self._streaming:
            raise RuntimeError("a stream of requests is still open; close it first")
        self._drain(deadline)

    def request(self, inputs: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
        self._idle(deadline)
        request_id = next(self._ids)
        self.send({"id": request_id, "inputs": inputs})
        return self._answer(request_id, deadline)

    def stream(
        self,
        batches: Iterator[list[dict[str, Any]]],
        deadline: float,
        *,
        in_flight: int,
        latencies: list[float],
    ) -> Iterator[list[dict[str, Any]]]:
        """Answers to ``batches`` in order, with up to ``in_flight`` requests unanswered.

        Once the answers already read are handed out, the free slots are filled in one
        write (:class:`_Writer`), before the answer is given to the caller: the model
        works while the caller does.
        ``batches`` is pulled from in the caller's thread, so what it raises is raised here.

        A batch's latency (appended to ``latencies``) is the time from when the model could
        start on it to its answer's arrival: from the later of its request's send and the
        previous answer's arrival (the model answers in order, so it works on one request
        at a time). One request at a time, that is the round trip; pipelined, the model's
        time per batch without the queueing in front of it, which a send-to-arrival
        figure would count (about ``in_flight`` times the model's time). Arrival is when
        this generator read the answer: a caller slower than the model sees its own pace.

        Leaving early (an exception, or closing the generator) drops the requests not yet
        begun; the answers to those begun are read and dropped before the next request.
        """
        self._idle(deadline)
        clock = time.perf_counter
        writer = _Writer(self._write_line, self._write_line_now if self._write_now else None)
        pending: deque[tuple[int, float]] = deque()  # (request id, sent at)
        exhausted = False
        last_arrival = -float("inf")

        def fill() -> None:
            # Every free slot at once, in one write: the model reads them with one system
            # call, and we make one instead of one per request.
            nonlocal exhausted
            ids: list[int] = []
            chunks: list[bytes] = []
            try:
                while not exhausted and len(pending) < in_flight:
                    batch = next(batches, None)
                    if batch is None:
                        exhausted = True
                        break
                    request_id = next(self._ids)
                    chunks.append(self._encode({"id": request_id, "inputs": batch}))
                    pending.append((request_id, clock()))
                    ids.append(request_id)
            finally:
                if chunks:  # what was made before ``batches`` raised still goes
                    writer.put(ids, b"".join(chunks))

        self._streaming = True
        try:
            fill()
            while pending:
                request_id, sent = pending[0]
                outputs = self._answer(request_id, deadline, writer.check)
                arrived = clock()
                pending.popleft()
                latencies.append(arrived - max(sent, last_arrival))
                last_arrival = arrived
                if not self._has_answer() or not pending:
                    # Refill once the answers already here are read: the model still has
                    # the rest to work on, and the slots they free go out in one write.
                    fill()
                yield outputs
        finally:
            self._streaming = False
            begun = writer.stop()
            self._unanswered.extend(rid for rid, _ in pending if rid in begun)

    def _has_answer(self) -> bool:
        """Whether a whole line is already read and waiting in the buffer."""
        return self._buffer.find(b"\n") >= 0

    def _answer(
        self, request_id: int, deadline: float, check: Callable[[], None] | None = None
    ) -> list[dict[str, Any]]:
        message = self._message(deadline, check)
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

    def shutdown(self, grace_s: float = 5.0) -> bool:
        """Ask the model to exit; False when that could not be asked within ``grace_s``.

        Answers still owed to a stream left early are read (and dropped) first: a model
        blocked writing one would otherwise never read the shutdown.
        """
        deadline = time.monotonic() + grace_s
        try:
            self._drain(deadline)
            if not self._write_lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                return False  # a write of a left stream is still blocked
            try:
                self._write(self._encode({"type": "shutdown"}))
            finally:
                self._write_lock.release()
        except (ChannelError, OSError):
            return False
        return True

    def _drain(self, deadline: float) -> None:
        while self._unanswered:
            self._answer(self._unanswered[0], deadline)
            self._unanswered.popleft()
