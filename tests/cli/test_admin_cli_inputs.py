"""Admin commands refuse a typo with exit 2 and one line, before anything is made or started:
no half-made user, no password cleared, no job claimed by a worker or server that cannot run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from evalboard.cli import _context
from evalboard.core.tables import Job, User
from leaderboard.accounts import authenticate
from tests.cli.conftest import Cli, CliResult
from tests.leaderboard.seeding import TASK, seed

EXECUTABLE = Path(sys.executable).parent / "evalboard"


def _one_error_line(result: CliResult) -> str:
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    # One error line; the CLI's usage hint may follow an option's refusal.
    lines = [line for line in result.err.strip().splitlines() if not line.startswith("hint:")]
    assert len(lines) == 1, result.err
    return lines[0]


def _run(data_dir: Path, *args: str, **env: str) -> CliResult:
    """The installed ``evalboard``, as a user runs it (stdin not a terminal)."""
    try:
        done = subprocess.run(
            [str(EXECUTABLE), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "EVALBOARD_DATA_DIR": str(data_dir), "COLUMNS": "200", **env},
            timeout=60,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`evalboard {' '.join(args)}` ran on instead of refusing: {exc.stderr!r}")
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def seeded(cli_env: Path, tmp_path: Path) -> Path:
    """A data dir with the sentiment task and one submission whose jobs are queued."""
    seed(_context.context(), tmp_path)
    return cli_env


def _unfinished_jobs(data_dir: Path) -> list[tuple[str, int]]:
    with _context.context().db.session() as session:
        jobs = session.scalars(select(Job).order_by(Job.id)).all()
        return [(job.status, job.attempts) for job in jobs if job.status != "finished"]


def _users() -> list[str]:
    with _context.context().db.session() as session:
        return list(session.scalars(select(User.name)))


@pytest.mark.parametrize(
    ("grant", "words"),
    [
        (["--role", "owner"], "name the task (--task T)"),
        (["--role", "owner", "--task", "sentment"], "Unknown task 'sentment'"),
        (["--role", "annotator", "--task", "sentment"], "Unknown task 'sentment'"),
        (["--role", "admin"], "create the user with --admin"),
    ],
)
def test_user_add_refused_grant_makes_no_user(
    seeded: Path, cli: Cli, grant: list[str], words: str
) -> None:
    before = _users()
    result = cli("user", "add", "zed", *grant, "--password=longenough1")
    assert words in _one_error_line(result)
    assert _users() == before
    fixed = cli("user", "add", "zed", "--role", "owner", "--task", TASK, "--password=longenough1")
    assert fixed.code == 0, fixed.err


def test_user_password_without_terminal_or_option_keeps_the_password(
    seeded: Path, cli: Cli
) -> None:
    ctx = _context.context()
    assert authenticate(ctx, "alice", "correct-horse-battery") is not None
    result = cli("user", "password", "alice")  # pytest's stdin is not a terminal
    assert "--password" in _one_error_line(result)
    assert authenticate(ctx, "alice", "correct-horse-battery") is not None


def test_worker_with_unknown_sandbox_exits_before_claiming(seeded: Path) -> None:
    before = _unfinished_jobs(seeded)
    assert ("queued", 0) in before
    result = _run(seeded, "worker", "--sandbox", "bogus")
    assert "Unknown sandbox 'bogus'" in _one_error_line(result)
    assert _unfinished_jobs(seeded) == before


@pytest.fixture
def held_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def test_serve_on_a_port_in_use_starts_nothing(seeded: Path, held_port: int) -> None:
    before = _unfinished_jobs(seeded)
    result = _run(seeded, "serve", "--port", str(held_port))
    line = _one_error_line(result)
    assert f"cannot listen on 127.0.0.1:{held_port}" in line and "--port" in line
    assert "Evalboard on" not in result.out + result.err
    assert _unfinished_jobs(seeded) == before


def test_serve_unknown_log_level_lists_the_known_ones(cli_env: Path) -> None:
    result = _run(cli_env, "serve", "--port", "0", "--log-level", "bogus")
    line = _one_error_line(result)
    assert "'bogus'" in line and "critical, error, warning, info, debug, trace" in line


def test_promote_without_targets_says_one_is_needed(seeded: Path, cli: Cli) -> None:
    line = _one_error_line(cli("promote", "--task", TASK))
    assert "--top" in line and "--submission" in line and "not both" not in line


def test_worker_with_unknown_broker_scheme_names_the_supported_ones(cli_env: Path) -> None:
    result = _run(cli_env, "worker", EVALBOARD_BROKER_URL="bogus://user:secret@x")
    assert result.code == 2, result.err
    assert "Traceback" not in result.err and "secret" not in result.err
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.err
    assert "scheme 'bogus'" in result.err and "redis://" in result.err
