"""Against the real server process: the API over TCP, the CLI's table, and a resumable
upload that the inline worker then evaluates in the local sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from evalboard.cli.upload import upload, upload_bundle
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK
from tests.leaderboard.test_uploads import make_bundle

pytestmark = pytest.mark.slow


def _cli(server: LiveServer, *args: str) -> subprocess.CompletedProcess[str]:
    data_dir = server.seeded.ctx.settings.data_dir
    env = {**os.environ, "EVALBOARD_DATA_DIR": str(data_dir), "COLUMNS": "200"}
    return subprocess.run(
        [str(Path(sys.executable).parent / "evalboard"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_prints_the_apis_table(live_server: LiveServer) -> None:
    weights = "perf:2,throughput:3,memory:1"
    api = httpx.get(
        f"{live_server.url}/tasks/{TASK}/leaderboard", params={"weights": weights}
    ).json()
    done = _cli(
        live_server, "leaderboard", "--task", TASK, "--weights", weights.replace(":", "="), "--json"
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    # The worker is busy with the queued seed jobs meanwhile: pending statuses move.
    assert {k: v for k, v in printed.items() if k != "pending"} == {
        k: v for k, v in api.items() if k != "pending"
    }
    table = _cli(live_server, "leaderboard", "--task", TASK)
    assert table.returncode == 0
    order = [
        r["name"] for r in httpx.get(f"{live_server.url}/tasks/{TASK}/leaderboard").json()["rows"]
    ]
    positions = [table.stdout.index(name) for name in order]
    assert positions == sorted(positions) and "↓" in table.stdout


class _DropOnce(httpx.BaseTransport):
    """Forwards requests, but loses the answer to the second chunk once (as a flaky
    network does after the server has stored it)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.chunks = 0
        self.dropped = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "PATCH":
            self.chunks += 1
            if self.chunks == 2 and not self.dropped:
                self.dropped = True
                response.close()
                raise httpx.ReadError("connection reset", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_upload_resumes_and_the_worker_evaluates_it(
    live_server: LiveServer, tmp_path: Path
) -> None:
    archive = make_bundle(tmp_path, name="live-positive")
    seen: list[int] = []
    transport = _DropOnce()
    status = upload_bundle(
        archive,
        server=live_server.url,
        token=live_server.seeded.tokens["bob"],
        chunk_size=32_768,
        transport=transport,
        on_progress=lambda done, total: seen.append(done),
    )
    assert transport.dropped and transport.chunks > 3
    assert seen[-1] == archive.stat().st_size
    assert status["name"] == "live-positive" and status["user"] == "bob"
    submission = status["id"]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        current = httpx.get(
            f"{live_server.url}/submissions/{submission}",
            headers={"Authorization": f"Bearer {live_server.seeded.tokens['bob']}"},
        ).json()
        if all(job["status"] in ("finished", "failed", "cancelled") for job in current["jobs"]):
            break
        time.sleep(1)
    failures = [
        (j["dataset"], j["reason"], j["message"])
        for j in current["jobs"]
        if j["status"] != "finished"
    ]
    assert not failures
    board = httpx.get(f"{live_server.url}/tasks/{TASK}/leaderboard").json()
    row = next(r for r in board["rows"] if r["submission_id"] == submission)
    # It always answers "positive": its accuracy is the share of positive examples.
    assert row["rank"] is not None and 10 < row["metrics"]["perf"] < 40
    assert row["metrics"]["robustness"] == pytest.approx(100.0)


def test_the_upload_command_prints_where_to_follow_it(
    live_server: LiveServer, tmp_path: Path
) -> None:
    bundle = make_bundle(tmp_path, name="cli-model").parent / "cli-model"
    command = typer.Typer()
    command.command()(upload)
    result = CliRunner().invoke(
        command,
        [str(bundle), "--server", live_server.url],
        env={"EVALBOARD_TOKEN": live_server.seeded.tokens["alice"]},
    )
    assert result.exit_code == 0, result.output
    assert "Submitted cli-model to sentiment" in result.output
    assert f"{live_server.url}/ui/submissions/" in result.output
    refused = CliRunner().invoke(
        command, [str(bundle), "--server", live_server.url, "--token", "eb_wrong"]
    )
    assert refused.exit_code != 0 and "401" in str(refused.exception)


def test_the_inline_worker_beats_like_evalboard_worker(live_server: LiveServer) -> None:
    # /ready counts serve's own pool as a live worker, as it counts `evalboard worker`.
    body = httpx.get(f"{live_server.url}/ready", timeout=30).json()
    assert body["workers"] == {
        "live": 1,
        "sandbox_engine": {"unused": 1},  # the local sandbox needs no engine
        "artifact_store": {"ok": 1},
    }
    said = live_server.log.read_text()
    assert "Worker ready: database ok, artifact store ok, sandbox engine unused (local)" in said
