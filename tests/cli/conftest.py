from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from evalboard.cli import _context, main
from evalboard.core.settings import get_settings
from tests.helpers.tasks import SENTIMENT


@dataclass
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., CliResult]


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data dir for CLI runs (settings come from the environment, as for a user)."""
    data_dir = tmp_path / "evalboard-data"
    monkeypatch.setenv("EVALBOARD_DATA_DIR", str(data_dir))
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    _context.context.cache_clear()
    yield data_dir
    get_settings.cache_clear()
    _context.context.cache_clear()


@pytest.fixture
def cli(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``evalboard ARGS`` in this process and return its exit code and output."""

    def run(*args: str | Path) -> CliResult:
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def cli_process(cli_env: Path) -> Cli:
    """Run the installed ``evalboard`` in a subprocess (to see exactly what a user sees)."""
    executable = Path(sys.executable).parent / "evalboard"

    def run(*args: str | Path) -> CliResult:
        result = subprocess.run(
            [str(executable), *map(str, args)],
            capture_output=True,
            text=True,
            env={**os.environ, "EVALBOARD_DATA_DIR": str(cli_env)},
            timeout=300,
        )
        return CliResult(result.returncode, result.stdout, result.stderr)

    return run


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    """The sentiment task's spec as a YAML file."""
    path = tmp_path / "sentiment.yaml"
    path.write_text(yaml.safe_dump(SENTIMENT))
    return path
