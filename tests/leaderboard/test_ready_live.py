"""``/ready`` of a real ``evalboard serve`` reports each part, and the parts of each live
``evalboard worker`` as its heartbeat writes them, without naming any host."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.leaderboard.conftest import serve

EVALBOARD = Path(sys.executable).parent / "evalboard"


def _ready_until(url: str, done: Any, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        answer = httpx.get(f"{url}/ready", timeout=30)
        body: dict[str, Any] = answer.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{what}: {body}"
        time.sleep(0.2)


def test_ready_reports_each_part_and_each_live_worker_without_naming_hosts(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serve(data, tmp_path / "serve.log", args=("--no-worker",)) as (url, _):
        body = _ready_until(url, lambda b: b["status"] == "ok", "ready")
        assert body["checks"] == {"database": "ok", "broker": "ok", "artifact_store": "ok"}
        assert body["workers"]["live"] == 0
        env = {**os.environ, "EVALBOARD_DATA_DIR": str(data), "EVALBOARD_SANDBOX": "local"}
        log = tmp_path / "worker.log"
        with log.open("wb") as output:
            worker = subprocess.Popen(
                [str(EVALBOARD), "worker"], env=env, stdout=output, stderr=subprocess.STDOUT
            )
        try:
            body = _ready_until(url, lambda b: b["workers"]["live"] == 1, "a live worker")
            assert body["workers"] == {
                "live": 1,
                "sandbox_engine": {"unused": 1},  # a local sandbox needs no engine
                "artifact_store": {"ok": 1},
            }
            text = httpx.get(f"{url}/ready", timeout=30).text
            assert socket.gethostname() not in text and "127.0.0.1" not in text
            assert str(data) not in text
            worker.send_signal(signal.SIGTERM)  # a clean stop: no longer live at once
            assert worker.wait(90) == 0  # its pool finishes what it was doing first
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        said = log.read_text()
        assert (
            "Worker ready: database ok, artifact store ok, sandbox engine unused (local)" in said
        ), said
        body = httpx.get(f"{url}/ready", timeout=30).json()
        assert body["workers"]["live"] == 0
