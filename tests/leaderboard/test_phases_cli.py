"""``evalboard phase`` and ``evalboard predictions`` against the real server process, and
``evalboard promote`` refusing a predictions-only submission on the same platform."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from datasets_registry import list_datasets, read_examples
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import TASK

pytestmark = pytest.mark.slow


def _cli(
    server: LiveServer, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "EVALBOARD_SERVER": server.url,
        "EVALBOARD_DATA_DIR": str(server.seeded.ctx.settings.data_dir),
        "COLUMNS": "200",
    }
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


def _files(server: LiveServer, tmp: Path, names: list[str]) -> list[str]:
    """``--file`` arguments with gold-perfect predictions (copies answer as originals)."""
    ctx = server.seeded.ctx
    by_name = {d.name: d for d in list_datasets(ctx, TASK)}
    labels: dict[str, dict[str, str]] = {}
    args = []
    for name in names:
        examples = read_examples(ctx, by_name[name])
        if "input_id" in examples[0]:
            original = labels[name.split("-", 1)[1]]
            rows = [{"uid": e["uid"], "label": original[e["input_id"]]} for e in examples]
        else:
            rows = [{"uid": e["uid"], "label": e["label"]} for e in examples]
        labels[name] = {r["uid"]: r["label"] for r in rows}
        path = tmp / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        args += ["--file", f"{name}={path}"]
    return args


def test_phases_and_predictions_from_the_shell(live_server: LiveServer, tmp_path: Path) -> None:
    tokens = live_server.seeded.tokens
    refused = _cli(
        live_server, "phase", "create", "final", "--task", TASK, "-d", "hidden-test",
        "--limit", "1", token=tokens["alice"],
    )  # fmt: skip
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    made = _cli(
        live_server, "phase", "create", "final", "--task", TASK, "-d", "hidden-test",
        "--limit", "1", token=tokens["owner"],
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "open" in made.stdout and "hidden-test" in made.stdout
    listed = _cli(live_server, "phase", "list", "--task", TASK, token=tokens["alice"])
    assert listed.returncode == 0 and "final" in listed.stdout, listed.stderr

    public = ["test", "robustness-test", "fairness-test"]
    hidden = ["hidden-test", "robustness-hidden-test", "fairness-hidden-test"]
    files = _files(live_server, tmp_path, public + hidden)
    sent = _cli(
        live_server, "predictions", "--task", TASK, "--name", "cli-preds", *files, "--json",
        token=tokens["alice"],
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    submission = json.loads(sent.stdout)
    assert submission["predictions_only"]
    over = _cli(
        live_server, "predictions", "--task", TASK, "--name", "again", *files,
        token=tokens["alice"],
    )  # fmt: skip
    assert over.returncode == 2 and "final" in over.stderr
    assert len(over.stderr.strip().splitlines()) == 1

    promote = _cli(live_server, "promote", "--task", TASK, "-s", str(submission["id"]))
    assert promote.returncode == 2 and "predictions only" in promote.stderr, promote.stderr
    assert "Traceback" not in promote.stderr

    revealed = _cli(
        live_server, "phase", "reveal", "final", "--task", TASK, "--public", token=tokens["owner"]
    )
    assert revealed.returncode == 0 and "public" in revealed.stdout, revealed.stderr
    board = httpx.get(f"{live_server.url}/tasks/{TASK}/leaderboard", timeout=60).json()
    assert board["phase"] == "public + final"
    row = next(r for r in board["rows"] if r["name"] == "cli-preds")
    assert row["predictions_only"] and row["rank"] is not None


@pytest.mark.parametrize(
    "args",
    [
        ("phase", "create", "p", "--task", TASK, "-d", "x", "--limit", "many"),
        ("phase", "create", "p", "--task", TASK, "-d", "x", "--limit", "0"),
        ("phase", "reveal", "--task", TASK),
        ("phase", "lst", "--task", TASK),
        ("predictions", "--task", TASK, "--name", "n", "--file", "no-equals-sign"),
        ("predictions", "--task", TASK, "--name", "n", "--file", "test=/no/such/file.jsonl"),
    ],
)
def test_usage_mistakes_exit_2_without_a_traceback(live_server: LiveServer, args: tuple[str, ...]):
    done = _cli(live_server, *args, token=live_server.seeded.tokens["alice"])
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[0].startswith("error:")


def test_a_file_that_is_not_jsonl_is_one_line(live_server: LiveServer, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"uid": "1", "label": "positive"}\nnot json\n')
    done = _cli(
        live_server, "predictions", "--task", TASK, "--name", "n", "--file", f"test={bad}",
        token=live_server.seeded.tokens["alice"],
    )  # fmt: skip
    assert done.returncode == 2 and f"{bad}:2" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
