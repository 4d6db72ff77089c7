"""What a user typed or stored is shown as written, and a bad path or a corrupt database
file is exit 2 with one line, never a traceback."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from evalboard.cli import _context
from evalboard.cli import leaderboard as leaderboard_cli
from evalboard.cli import snapshot as snapshot_cli
from tests.cli.conftest import Cli, CliResult
from tests.helpers.tasks import SENTIMENT

EXAMPLES = '{"uid": "1", "statement": "good", "label": "positive"}\n'


def _one_error_line(result: CliResult) -> str:
    assert result.code == 2, result
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def with_dataset(cli: Cli, task_file: Path, tmp_path: Path) -> Cli:
    data = tmp_path / "t1.jsonl"
    data.write_text(EXAMPLES)
    assert cli("task", "create", task_file).code == 0
    assert cli("dataset", "add", "--task", "sentiment", "--name", "t1", data).code == 0
    return cli


# Square brackets are text, never rich markup.


def test_an_error_shows_a_pattern_whole(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump({**SENTIMENT, "id": "Bad_ID"}))
    result = cli("task", "create", spec)
    assert result.code == 2
    assert "'^[a-z0-9][a-z0-9-]*$'" in result.err
    assert "Traceback" not in result.err


def test_an_error_echoes_a_bracketed_name(with_dataset: Cli, tmp_path: Path) -> None:
    data = tmp_path / "more.jsonl"
    data.write_text(EXAMPLES)
    result = with_dataset("dataset", "add", "--task", "sentiment", "--name", "[bold]x", data)
    assert "'[bold]x'" in _one_error_line(result)


def _row(name: str, **fields: Any) -> SimpleNamespace:
    values: dict[str, Any] = {
        "name": name,
        "kind": "model",
        "not_above_baseline": False,
        "intervals": {},
        "rank": 1,
        "rank_interval": None,
        "p_first": None,
        "user": "[red]ann",
        "dynascore": 1.0,
        "metrics": {},
        "reason": None,
        "load_note": None,
    }
    return SimpleNamespace(**{**values, **fields})


def test_the_leaderboard_shows_its_bracketed_tags(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import leaderboard

    board = SimpleNamespace(
        rows=[_row("weak", not_above_baseline=True, reason="a [note] here")],
        metrics=[],
        warnings=["see [docs]"],
        weights={"perf": 1.0},
        dataset_weights={"t1": 1.0},
        amrs={},
        pending=[],
    )
    monkeypatch.setattr(leaderboard_cli, "context", lambda: None)
    monkeypatch.setattr(leaderboard, "public_table", lambda ctx, task: None)
    monkeypatch.setattr(leaderboard, "parse_dataset_weights", lambda table, given: None)
    monkeypatch.setattr(leaderboard, "build_leaderboard", lambda *args, **kwargs: board)
    result = cli("leaderboard", "--task", "sentiment")
    assert result.code == 0, result
    assert "weak [not above baseline]" in result.out
    assert "[red]ann" in result.out
    assert "weak: a [note] here" in result.out
    assert "warning: see [docs]" in result.out


def test_a_snapshot_title_is_listed_as_written(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = {
        "number": 1,
        "created_at": "2027-01-01T00:00:00Z",
        "models": 2,
        "title": "a[red]b",
        "csv_sha256": "0" * 64,
    }
    monkeypatch.setattr(snapshot_cli, "ask", lambda server, path, **kwargs: [snapshot])
    result = cli("snapshot", "list", "--task", "sentiment", "--server", "http://test")
    assert result.code == 0, result
    assert "\ta[red]b\t" in result.out


# A directory, a missing folder or a file that is not text where a file is expected.


def test_a_task_file_that_is_a_directory(cli: Cli, tmp_path: Path) -> None:
    line = _one_error_line(cli("task", "create", f"{tmp_path}/"))
    assert "Is a directory" in line


def test_model_init_with_a_task_file_that_is_a_directory(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    line = _one_error_line(cli("model", "init", tmp_path / "b", "--task-file", f"{folder}/"))
    assert "Is a directory" in line


def test_evaluate_with_a_task_file_that_is_a_directory(
    cli: Cli, task_file: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    assert cli("model", "init", bundle, "--task-file", task_file).code == 0
    data = tmp_path / "t1.jsonl"
    data.write_text(EXAMPLES)
    folder = tmp_path / "spec"
    folder.mkdir()
    result = cli("evaluate", bundle, "--task-file", f"{folder}/", "--dataset", data)
    assert "Is a directory" in _one_error_line(result)


@pytest.mark.parametrize(
    ("target", "said"),
    [("folder/", "is a directory"), ("missing/x.jsonl", "No such file or directory")],
)
def test_an_export_that_cannot_be_written(
    with_dataset: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    before = set(os.listdir(tmp_path))
    result = with_dataset("dataset", "export", "t1", "--task", "sentiment", "-o", target)
    assert said in _one_error_line(result)
    assert set(os.listdir(tmp_path)) == before
    assert os.listdir(tmp_path / "folder") == []


def test_an_export_that_fails_midway_leaves_no_file(
    with_dataset: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    result = with_dataset("dataset", "export", "t1", "--task", "sentiment", "-o", out)
    assert "No space left on device" in _one_error_line(result)
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == []


@pytest.mark.parametrize(
    ("content", "said"), [(None, "Is a directory"), (b"\xff\xfe\x00 not text", "not UTF-8")]
)
def test_a_failures_file_that_cannot_be_read(
    cli: Cli, task_file: Path, tmp_path: Path, content: bytes | None, said: str
) -> None:
    assert cli("task", "create", task_file).code == 0
    path = tmp_path / "failures"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    result = cli("failures", "add", "--task", "sentiment", f"{path}/" if content is None else path)
    assert said in _one_error_line(result)


# A database file that SQLite cannot read.


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(64 * 1024))


def _bad_header(path: Path) -> None:
    path.write_bytes(b"SQLite format 2\x00" + os.urandom(8 * 1024))


def _damaged_pages(path: Path) -> None:
    """A valid database whose pages past the first (the schema's) are overwritten."""
    connection = sqlite3.connect(path)
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.close()
    with path.open("r+b") as file:
        for page in range(1, pages):
            file.seek(page * page_size)
            file.write(b"\xa5" * page_size)


@pytest.mark.parametrize("damage", [_random_bytes, _bad_header, _damaged_pages])
def test_a_corrupt_database_file(cli: Cli, cli_env: Path, task_file: Path, damage: Any) -> None:
    # A real Evalboard database first (its tables, its migrations), then damaged.
    assert cli("task", "create", task_file).code == 0
    database = cli_env / "evalboard.db"
    # Closed as a new process finds it: no open connection, no write-ahead log left.
    _context.context().db.dispose()
    _context.context.cache_clear()
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    damage(database)
    line = _one_error_line(cli("task", "list"))
    assert "is not a readable database (corrupt?)" in line
    assert str(database) not in line  # logged: a 503 may carry this message to anyone
    assert "server" not in line
