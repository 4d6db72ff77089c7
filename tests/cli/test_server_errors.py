"""A ``--server`` that cannot be used is one line and exit 2, never a traceback: a closed
port, a malformed URL, a server that is not Evalboard (an HTML 404), a 422's field list;
and Ctrl-C during ``model upload`` says how to resume it.

The servers are real: a port nobody listens on, and a tiny threaded ``http.server`` that
answers as a static web server or as FastAPI's validation does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, CliResult
from tests.helpers.sentiment_bundles import write_bundle

TASK = "demo-sentiment"
HTML_404 = b"<!DOCTYPE HTML>\n<html><head><title>Error response</title></head>\n<body>404</body>"
FASTAPI_422 = {
    "detail": [
        {
            "type": "string_too_long",
            "loc": ["body", "title"],
            "msg": "String should have at most 200 characters",
            "input": "x" * 300,
            "ctx": {"max_length": 200},
        },
        {"type": "missing", "loc": ["body", "datasets"], "msg": "Field required", "input": {}},
    ]
}


def _one_error_line(result: CliResult) -> str:
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: ")
    return lines[0]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed when the block ends: nobody listens


def _serve(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A real HTTP server on a free port, each request answered by ``answer``."""

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer(self)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, kind: str, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def static_site() -> Iterator[str]:
    """Not Evalboard: a static web server's HTML 404 for every path, as `python -m http.server`."""
    yield from _serve(lambda h: _send(h, 404, "text/html;charset=utf-8", HTML_404))


@pytest.fixture
def strict_api() -> Iterator[str]:
    """Refuses every request as FastAPI refuses a body that does not validate."""
    body = json.dumps(FASTAPI_422).encode()
    yield from _serve(lambda h: _send(h, 422, "application/json", body))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path, "tiny", "class Model:\n    pass\n", task=TASK)


@pytest.fixture
def traffic(tmp_path: Path) -> Path:
    path = tmp_path / "traffic.jsonl"
    path.write_text('{"text": "fine"}\n')
    return path


#: Every way a command talks to a server: ask(), checked(), download(), the upload.
COMMANDS: dict[str, Callable[[Path, Path], list[str | Path]]] = {
    "suite list": lambda bundle, traffic: ["suite", "list", "--task", TASK],
    "snapshot show": lambda bundle, traffic: ["snapshot", "show", "1", "--task", TASK],
    "phase list": lambda bundle, traffic: ["phase", "list", "--task", TASK],
    "model card": lambda bundle, traffic: ["model", "card", "1"],
    "drift check": lambda bundle, traffic: ["drift", "check", traffic, "--task", TASK],
    "model upload": lambda bundle, traffic: ["model", "upload", bundle, "--token", "eb_x"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_closed_port_is_one_line_naming_the_server(
    cli: Cli, command: str, bundle: Path, traffic: Path
) -> None:
    server = f"http://127.0.0.1:{_closed_port()}"
    result = cli(*COMMANDS[command](bundle, traffic), "--server", server)
    assert result.code == 2
    line = _one_error_line(result)
    assert f"Cannot reach the Evalboard server at {server} (connection refused)" in line
    assert "--server" in line and "EVALBOARD_SERVER" in line


@pytest.mark.parametrize("server", ["notaurl", "localhost:8000", "http://", "http://[::1"])
def test_a_malformed_server_url_is_a_usage_error(cli: Cli, server: str) -> None:
    result = cli("suite", "list", "--task", TASK, "--server", server)
    assert result.code == 2
    line = _one_error_line(result)
    assert f"--server {server!r} is not a server's URL" in line
    assert "e.g. http://" in line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_server_that_is_not_evalboard_is_summarised_not_printed(
    cli: Cli, command: str, bundle: Path, traffic: Path, static_site: str
) -> None:
    result = cli(*COMMANDS[command](bundle, traffic), "--server", static_site)
    assert result.code == 2
    line = _one_error_line(result)
    assert f"The server at {static_site} answered 404 with an HTML page" in line
    assert "is --server the right address?" in line
    assert "DOCTYPE" not in line


def test_a_422_lists_its_fields_in_one_line(cli: Cli, strict_api: str) -> None:
    result = cli("suite", "create", "--task", TASK, "--server", strict_api, "--token", "eb_x")
    assert result.code == 2
    assert _one_error_line(result) == (
        "error: The server refused (422): body.title: String should have at most 200 "
        "characters; body.datasets: Field required"
    )


def test_the_console_script_says_the_same(cli_process: Cli) -> None:
    server = f"http://127.0.0.1:{_closed_port()}"
    result = cli_process("phase", "list", "--task", TASK, "--server", server)
    assert result.code == 2
    assert "Cannot reach the Evalboard server" in _one_error_line(result)


def test_ctrl_c_during_an_upload_says_how_to_resume_it(cli_env: Path, bundle: Path) -> None:
    patched = threading.Event()
    release = threading.Event()

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.command == "POST":
            state = {"id": "up-7", "chunk_size": 64, "received": 0}
            _send(handler, 201, "application/json", json.dumps(state).encode())
            return
        patched.set()
        release.wait(30)  # a slow network: the user presses Ctrl-C meanwhile
        _send(handler, 503, "application/json", b'{"detail": "gone"}')

    # The console script, with Ctrl-C's handler set: a suite run as a background job
    # inherits SIGINT ignored, which Python would keep (the signal would never arrive).
    entry = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from evalboard.cli import entry; entry()"
    )
    server = _serve(answer)
    url = next(server)
    process = subprocess.Popen(
        [sys.executable, "-c", entry, "model", "upload", str(bundle), "--token", "eb_x"]
        + ["--server", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "EVALBOARD_DATA_DIR": str(cli_env)},
    )
    try:
        if not patched.wait(120):
            process.kill()
            pytest.fail(f"the upload never sent a chunk: {process.communicate(timeout=30)}")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        release.set()
        server.close()
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert f"evalboard model upload {bundle} --resume up-7" in err
    assert len(err.strip().splitlines()) == 1, err
