from __future__ import annotations

import json
import socket
import struct
import time

import pytest

from submission_sandbox.contract import (
    ChannelClosed,
    ChannelTimeout,
    ContractClient,
    ModelError,
    OutputTooLarge,
    ProtocolViolation,
    docker_stdio_reader,
    socket_reader,
)


@pytest.fixture
def pair() -> tuple[ContractClient, socket.socket]:
    host, model = socket.socketpair()
    yield ContractClient(socket_reader(host), host.sendall, max_line_bytes=1000), model
    host.close()
    model.close()


def _soon() -> float:
    return time.monotonic() + 2


def test_a_hello_then_an_answer(pair: tuple[ContractClient, socket.socket]) -> None:
    client, model = pair
    model.sendall(b'{"type": "hello", "name": "m", "batch_size": 8}\n')
    assert client.hello(_soon()).batch_size == 8
    model.sendall(b'{"id": 1, "outputs": [{"label": "a"}]}\n')
    assert client.request([{"uid": "1"}], _soon()) == [{"label": "a"}]
    assert json.loads(model.recv(1000)) == {"id": 1, "inputs": [{"uid": "1"}]}


@pytest.mark.parametrize(
    ("sent", "error"),
    [
        (b"not json\n", ProtocolViolation),
        (b"[1, 2]\n", ProtocolViolation),
        (b'{"id": 2, "outputs": []}\n', ProtocolViolation),
        (b'{"id": 1}\n', ProtocolViolation),
        (b'{"id": 1, "outputs": ["a"]}\n', ProtocolViolation),
        (b'{"id": 1, "error": "boom"}\n', ModelError),
        (b"x" * 2000, OutputTooLarge),
        (b"", ChannelTimeout),
    ],
)
def test_what_breaks_the_contract(
    pair: tuple[ContractClient, socket.socket], sent: bytes, error: type[Exception]
) -> None:
    client, model = pair
    model.sendall(sent)
    with pytest.raises(error):
        client.request([{"uid": "1"}], time.monotonic() + 0.3)


def test_a_closed_channel(pair: tuple[ContractClient, socket.socket]) -> None:
    client, model = pair
    model.close()
    with pytest.raises(ChannelClosed):
        client.hello(_soon())


def test_the_first_message_must_be_a_hello(pair: tuple[ContractClient, socket.socket]) -> None:
    client, model = pair
    model.sendall(b'{"id": 1, "outputs": []}\n')
    with pytest.raises(ProtocolViolation, match="hello"):
        client.hello(_soon())


def test_docker_stdio_frames_are_unwrapped_and_stderr_skipped() -> None:
    host, engine = socket.socketpair()
    payload = b'{"type": "hello"}\n'

    def frame(stream: int, data: bytes) -> bytes:
        return bytes([stream, 0, 0, 0]) + struct.pack(">I", len(data)) + data

    engine.sendall(frame(2, b"noise on stderr\n") + frame(1, payload[:5]) + frame(1, payload[5:]))
    client = ContractClient(docker_stdio_reader(host), host.sendall, max_line_bytes=100)
    assert client.hello(_soon()).name == ""
    host.close()
    engine.close()
