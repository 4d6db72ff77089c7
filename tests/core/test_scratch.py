from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalboard.core.scratch import scratch_dir, scratch_prefix, sweep_orphan_scratch


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_the_folders_of_dead_owners_are_swept(tmp_path: Path) -> None:
    dead = tmp_path / f"evalboard-job-{_dead_pid()}-abc"
    mine = tmp_path / f"evalboard-local-{os.getpid()}-def"
    other = tmp_path / f"somebody-else-{_dead_pid()}-ghi"
    for folder in (dead, mine, other):
        (folder / "bundle").mkdir(parents=True)
    assert sweep_orphan_scratch(tmp_path) == [dead]
    assert not dead.exists() and mine.exists() and other.exists()


def test_scratch_folders_name_their_owner() -> None:
    folder = scratch_dir("evalboard-local")
    try:
        assert folder.name.startswith(f"evalboard-local-{os.getpid()}-")
        assert sweep_orphan_scratch(folder.parent).count(folder) == 0
    finally:
        folder.rmdir()


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(
        ValueError, match="known: evalboard-build, .*evalboard-job, evalboard-local"
    ):
        scratch_prefix("evalboard-tmp")


def test_no_scratch_folder_is_made_outside_core_scratch() -> None:
    # Every scratch folder names its owner process, so a killed process's can be swept.
    root = Path(__file__).resolve().parents[2]
    packages = ("evalboard", "evaluator", "leaderboard", "submission_sandbox", "datasets_registry")
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for package in packages
        for path in (root / package).rglob("*.py")
        if path.name != "scratch.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "TemporaryDirectory(" in line or "mkdtemp(" in line
    ]
    assert offenders == [], "make scratch folders with evalboard.core.scratch: " + ", ".join(
        offenders
    )
