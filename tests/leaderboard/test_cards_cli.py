"""``evalboard model card`` and ``evalboard snapshot`` against the real server process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK

pytestmark = pytest.mark.slow


def _cli(
    server: LiveServer, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALBOARD_SERVER": server.url, "COLUMNS": "200"}
    env.pop("EVALBOARD_TOKEN", None)
    if token is not None:
        env["EVALBOARD_TOKEN"] = token
    return subprocess.run(
        [str(Path(sys.executable).parent / "evalboard"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_submitter_edits_the_card_from_the_shell(
    live_server: LiveServer, tmp_path: Path
) -> None:
    seeded = live_server.seeded
    sid = str(seeded.submissions["bow-logreg"])  # alice's
    card = tmp_path / "card.md"
    card.write_text("# Bag of words\nTrained on [SST](https://nlp.stanford.edu/sentiment/).\n")
    done = _cli(
        live_server,
        "model", "card", sid, "--license", "mit", "--params", "30000", "--language", "en",
        "--card-file", str(card),
        token=seeded.tokens["alice"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "license: mit" in done.stdout and "params: 30000" in done.stdout
    shown = httpx.get(f"{live_server.url}/submissions/{sid}/card").json()
    assert shown["card"] == card.read_text() and shown["languages"] == ["en"]
    refused = _cli(live_server, "model", "card", sid, "--unpublish", token=seeded.tokens["bob"])
    assert refused.returncode == 2 and "not yours" in refused.stderr
    bad = _cli(
        live_server, "model", "card", sid, "--paper-url", "ftp://x", token=seeded.tokens["alice"]
    )
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "paper_url" in bad.stderr
    typo = _cli(live_server, "model", "card", sid, "--params", "many")
    assert typo.returncode == 2 and "Traceback" not in typo.stderr


def test_the_owner_snapshots_and_anyone_downloads_it_byte_for_byte(
    live_server: LiveServer, tmp_path: Path
) -> None:
    seeded = live_server.seeded
    refused = _cli(live_server, "snapshot", "create", "--task", TASK, token=seeded.tokens["alice"])
    assert refused.returncode == 2 and "own" in refused.stderr
    made = _cli(
        live_server, "snapshot", "create", "--task", TASK, "--title", "paper v1",
        token=seeded.tokens["owner"],
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"@misc{{evalboard-{TASK}-1," in made.stdout
    listed = _cli(live_server, "snapshot", "list", "--task", TASK)
    assert listed.returncode == 0 and "paper v1" in listed.stdout
    out = tmp_path / "snap.csv"
    shown = _cli(live_server, "snapshot", "show", "1", "--task", TASK, "--csv", str(out))
    assert shown.returncode == 0, shown.stderr
    assert out.read_bytes() == httpx.get(f"{live_server.url}/tasks/{TASK}/snapshots/1.csv").content
    missing = _cli(live_server, "snapshot", "show", "7", "--task", TASK)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
