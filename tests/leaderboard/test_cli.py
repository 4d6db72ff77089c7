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
    # A label longer than the column is refused, not cut (the page and the API say 64 too).
    assert main(["token", "create", "olga", "--label", "x" * 65]) == 2
    assert "at most 64 characters" in capsys.readouterr().err
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


@pytest.fixture
def seeded_dir(data_dir: Path) -> Path:
    from evalboard.core.context import Context
    from tests.conftest import make_settings
    from tests.leaderboard.seeding import seed

    ctx = Context.from_settings(make_settings(data_dir))
    seed(ctx, data_dir)
    ctx.db.dispose()
    return data_dir


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--weights", "perf=1e308,throughput=1e308", "sum to infinity"),
        ("--weights", "perf=0,memory=0", "Every metric weight is 0"),
        ("--weights", "perf=nan", "perf:nan is not a finite number"),
        ("--weights", "perf=-2", "perf:-2 is negative"),
        ("--weights", "accuracy=1", "Unknown metric 'accuracy'"),
        ("--dataset-weights", "test=inf", "test:inf is not a finite number"),
        ("--dataset-weights", "test=x", "test:'x' is not a number"),
        ("--dataset-weights", "hidden-test=2", "Unknown dataset 'hidden-test'"),
    ],
)
def test_leaderboard_cli_refuses_bad_weights_in_one_line(
    seeded_dir: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, says: str
) -> None:
    assert main(["leaderboard", "--task", "sentiment", option, value]) == 2
    captured = capsys.readouterr()
    assert says in captured.err and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 or says in captured.err.splitlines()[0]


def test_leaderboard_cli_shows_the_floor_rank_intervals_and_dataset_weights(
    seeded_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["leaderboard", "--task", "sentiment", "--dataset-weights", "test=0.5"]) == 0
    out = capsys.readouterr().out
    assert "dataset weights: test=0.5" in out and "AMRS" in out
    assert "rank 95%" in out and "P(first)" in out
    assert main(["dataset", "weight", "test", "0.25", "--task", "sentiment"]) == 0
    assert "test now weighs 0.25" in capsys.readouterr().out
    assert main(["leaderboard", "--task", "sentiment", "--no-intervals"]) == 0
    assert "dataset weights: test=0.25" in capsys.readouterr().out
    assert main(["dataset", "weight", "robustness-test", "2", "--task", "sentiment"]) == 2
    assert "follows its original" in capsys.readouterr().err
    assert main(["dataset", "weight", "test", "0", "--task", "sentiment"]) == 2
    assert "above 0" in capsys.readouterr().err
