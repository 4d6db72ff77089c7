"""``evalboard user``, ``evalboard token`` and ``evalboard leaderboard`` (the upload command
runs against the live server in test_live_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalboard.cli import _context, main
from evalboard.core.settings import get_settings
from leaderboard.accounts import principal_for_token
from tests.helpers.tasks import SENTIMENT


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("EVALBOARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    _context.context.cache_clear()
    yield tmp_path
    _context.context.cache_clear()
    get_settings.cache_clear()


def _task(tmp: Path) -> None:
    import yaml

    (tmp / "task.yaml").write_text(yaml.safe_dump(SENTIMENT))
    assert main(["task", "create", str(tmp / "task.yaml")]) == 0


def test_user_add_grant_and_token(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _task(data_dir)
    assert (
        main(
            [
                "user",
                "add",
                "olga",
                "--role",
                "owner",
                "--task",
                "sentiment",
                "--password",
                "long-enough-pw",
            ]
        )
        == 0
    )
    assert "owner of sentiment" in capsys.readouterr().out
    assert main(["user", "add", "olga", "--password", ""]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["user", "add", "pat", "--password", "short"]) == 2
    assert main(["token", "create", "olga", "--label", "laptop"]) == 0
    token = capsys.readouterr().out.strip()
    principal = principal_for_token(_context.context(), token)
    assert principal is not None and principal.owns("sentiment")
    assert main(["user", "grant", "pat", "--role", "annotator"]) == 2  # no such user
    assert main(["user", "list"]) == 0
    assert "owner:sentiment" in capsys.readouterr().out


def test_leaderboard_cli_without_results(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _task(data_dir)
    assert main(["leaderboard", "--task", "sentiment"]) == 0
    assert "No model" in capsys.readouterr().out
    assert main(["leaderboard", "--task", "sentiment", "--weights", "speed=1"]) == 2
    assert "perf" in capsys.readouterr().err
    assert main(["leaderboard", "--task", "nope"]) == 2
