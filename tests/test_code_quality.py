"""The linters CI relies on: ruff, the import-layer contracts, and mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*command: str) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def test_ruff() -> None:
    _run(str(BIN / "ruff"), "check", ".")


def test_import_layers() -> None:
    _run(str(BIN / "lint-imports"))


@pytest.mark.slow
def test_mypy_strict() -> None:
    _run(str(BIN / "mypy"))
