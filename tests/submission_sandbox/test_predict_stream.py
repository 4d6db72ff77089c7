"""predict_stream: pipelined requests over the contract, and the base class's checks.

The conformance suite (test_self_check.py) runs the same behaviours through real models
in both sandboxes; these pin the channel and the base class down without one.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox import ModelHello, SandboxFailure, open_sandbox
from submission_sandbox.contract import ContractClient, socket_reader, socket_write_now
from tests.helpers.fake_sandbox import FakeSandbox


class EchoModel:
    """The model end of a socket pair: answers each request with its uids, in order.

    With ``answers`` set, it answers only that many requests and reads the rest unanswered
    (a model still working on them).
    """

    def __init__(
        self, sock: socket.socket, *, delay_s: float = 0.0, answers: int | None = None
    ) -> None:
        self.sock = sock
        self.delay_s = delay_s
        self.answers = answers
        self.seen: list[int] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self._answer_each()
        except OSError:
            pass  # the host went away (the test is over)

    def _answer_each(self) -> None:
        with self.sock.makefile("rb") as lines:
            for line in lines:
                message = json.loads(line)
                if message.get("type") == "shutdown":
                    return
                self.seen.append(message["id"])
                if self.answers is not None and len(self.seen) > self.answers:
                    continue
                time.sleep(self.delay_s)
                outputs = [{"label": x["uid"]} for x in message["inputs"]]
                answer = json.dumps({"id": message["id"], "outputs": outputs}) + "\n"
                self.sock.sendall(answer.encode())


@pytest.fixture(params=["write now", "writer thread"])
def channel(request: pytest.FixtureRequest) -> Iterator[tuple[ContractClient, socket.socket]]:
    """The host end of a socket pair, writing small requests at once or always on a thread."""
    host, model = socket.socketpair()
    write_now = socket_write_now(host) if request.param == "write now" else None
    yield (
        ContractClient(
            socket_reader(host), host.sendall, max_line_bytes=1 << 20, write_now=write_now
        ),
        model,
    )
    host.close()
    model.close()


def _batches(count: int, size: int = 2) -> list[list[dict[str, Any]]]:
    return [[{"uid": f"{n}.{i}"} for i in range(size)] for n in range(count)]


def _deadline() -> float:
    return time.monotonic() + 10


def test_a_stream_answers_in_order_with_a_latency_per_batch(
    channel: tuple[ContractClient, socket.socket],
) -> None:
    client, model_end = channel
    model = EchoModel(model_end, delay_s=0.002)
    batches = _batches(12)
    latencies: list[float] = []
    started = time.perf_counter()
    answers = list(client.stream(iter(batches), _deadline(), in_flight=3, latencies=latencies))
    elapsed = time.perf_counter() - started
    assert [[o["label"] for o in a] for a in answers] == [[x["uid"] for x in b] for b in batches]
    assert model.seen == list(range(1, 13))
    # Each latency is the model's time, not the queue's: together they cover the model's
    # 12 x 2 ms and no more than the stream took (queueing would count each wait about 3
    # times). One by one, an answer read in the same read as the one before (this
    # process late, on a busy machine) shows almost none.
    assert len(latencies) == 12 and all(v >= 0 for v in latencies)
    assert 12 * 0.002 <= sum(latencies) <= elapsed


def test_requests_are_in_flight_before_answers_are_read(
    channel: tuple[ContractClient, socket.socket],
) -> None:
    client, model_end = channel
    # Only the first request is answered: were the second's answer read with the first's,
    # the slot would be refilled on the next pull instead (answers already here go first).
    model = EchoModel(model_end, answers=1)
    stream = client.stream(iter(_batches(5)), _deadline(), in_flight=3, latencies=[])
    next(stream)
    deadline = time.monotonic() + 5
    while len(model.seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.seen == [1, 2, 3, 4]  # the first answered, three more in flight
    stream.close()


def _writer_threads() -> set[threading.Thread]:
    # Compared as sets: an earlier test's stopped writer may still be on its way out.
    return {thread for thread in threading.enumerate() if thread.name == "contract-writer"}


def test_small_requests_go_out_at_once_and_large_ones_on_a_thread() -> None:
    # Handing a request to the writer thread costs more than writing it (a thread wake-up
    # and the GIL passed back and forth); only a request the channel cannot take at once
    # needs the thread, so that reading answers goes on meanwhile.
    host, model_end = socket.socketpair()
    with host, model_end:
        client = ContractClient(
            socket_reader(host),
            host.sendall,
            max_line_bytes=1 << 24,
            write_now=socket_write_now(host),
        )
        EchoModel(model_end)
        before = _writer_threads()
        stream = client.stream(iter(_batches(50)), _deadline(), in_flight=4, latencies=[])
        assert len(list(stream)) == 50 and not _writer_threads() - before
        big = [[{"uid": "z" * 4_000_000}] for _ in range(3)]  # beyond any socket buffer
        answers = client.stream(iter(big), _deadline(), in_flight=2, latencies=[])
        assert next(answers) == [{"label": "z" * 4_000_000}]
        assert len(_writer_threads() - before) == 1  # this stream's own
        assert len(list(answers)) == 2


def test_leaving_a_stream_early_leaves_the_channel_usable(
    channel: tuple[ContractClient, socket.socket],
) -> None:
    client, model_end = channel
    EchoModel(model_end)
    stream = client.stream(iter(_batches(10)), _deadline(), in_flight=2, latencies=[])
    next(stream)
    with pytest.raises(RuntimeError, match="still open"):
        client.request([{"uid": "x"}], _deadline())
    stream.close()
    assert client.request([{"uid": "after"}], _deadline()) == [{"label": "after"}]
    assert client.shutdown()


def test_what_the_batches_raise_is_raised_by_the_stream(
    channel: tuple[ContractClient, socket.socket],
) -> None:
    client, model_end = channel
    EchoModel(model_end)

    def batches() -> Iterator[list[dict[str, Any]]]:
        yield [{"uid": "1"}]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(client.stream(batches(), _deadline(), in_flight=2, latencies=[]))
    assert client.request([{"uid": "2"}], _deadline()) == [{"label": "2"}]


def test_the_base_class_streams_one_at_a_time_and_checks_each_answer() -> None:
    answers = iter([[{"label": "a"}], [{"label": "b"}], []])
    with FakeSandbox(predict=lambda batch: next(answers)) as box:
        stream = box.predict_stream([[{"uid": "1"}], [{"uid": "2"}], [{"uid": "3"}]])
        assert next(stream) == [{"label": "a"}] and next(stream) == [{"label": "b"}]
        with pytest.raises(SandboxFailure) as caught:
            next(stream)
        assert len(stream.latencies) == 3
    assert caught.value.reason is FailureReason.PROTOCOL_ERROR
    assert "batch 3" in caught.value.detail


def test_a_stream_needs_a_started_sandbox_and_one_request_in_flight() -> None:
    box = FakeSandbox()
    with pytest.raises(RuntimeError, match="before start"):
        box.predict_stream([])
    box.start()
    with pytest.raises(ValueError, match="in_flight"):
        box.predict_stream([], in_flight=0)


def test_the_image_digest_is_the_sandboxs_word_not_the_models() -> None:
    spoofed = ModelHello(name="m", metadata={"image_digest": "sha256:forged", "seed": 1})
    with FakeSandbox(hello=spoofed) as box:
        assert box.hello is not None
        assert box.hello.image_digest is None
        assert box.hello.metadata == {"seed": 1}


@pytest.mark.parametrize("channel_kind", ["unix", "stdio"])
def test_local_stream_left_early_then_predict_then_a_clean_close(
    tmp_path: Path, channel_kind: str
) -> None:
    (tmp_path / "evalboard.yaml").write_text(
        "name: echo\ntask: t\nruntime: python\nentry: handler:Model\n"
    )
    (tmp_path / "handler.py").write_text(
        "class Model:\n    def __init__(self, d):\n        pass\n"
        "    def predict(self, batch):\n"
        "        return [{'label': x['uid'], 'pad': 'p' * 300_000} for x in batch]\n"
    )
    box = open_sandbox(
        tmp_path, kind="local", limits=SandboxLimits(timeout_s=30), channel=channel_kind
    )
    with box:
        assert box.hello is not None and box.hello.image_digest is None
        with box.predict_stream(_batches(10), in_flight=3) as stream:
            first = next(stream)
        assert [o["label"] for o in first] == ["0.0", "0.1"]
        assert box.predict([{"uid": "after"}])[0]["label"] == "after"
        # Left early again: the answers owed (larger than the channel's buffer) are read
        # at close, so the model exits cleanly on the shutdown.
        stream = box.predict_stream(_batches(10), in_flight=3)
        next(stream)
        stream.close()
        started = time.monotonic()
    assert time.monotonic() - started < 3
    assert box._process is not None and box._process.returncode == 0
