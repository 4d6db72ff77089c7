"""Every usage mistake, on every command and sub-command, is exit 2 with a hint, no traceback.

The cases are the whole command tree, walked from the typer app, so a new command is covered
the day it is registered. Each case runs the console script's entry in a process of its
own, forked from one interpreter that loaded the CLI once (tests/helpers/forked_cli.py), so
the cases pay the CLI's start-up once, not once each; one case also runs the installed
``evalboard`` in a subprocess, exactly as a user meets it, and must read the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from evalboard.cli import app
from tests.helpers.forked_cli import Ran, run_forked

EXECUTABLE = Path(sys.executable).parent / "evalboard"


def _walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        yield from _walk(sub, (*path, name))


def _cases() -> list[tuple[str, tuple[str, ...], str]]:
    """(mistake, argv, the words the error line must hold) for every command."""
    cases = []
    for path, command in _walk(typer.main.get_command(app), ()):
        if hasattr(command, "commands"):
            cases.append(("unknown sub-command", (*path, "no-such-command"), "No such command"))
            continue
        cases.append(("unknown option", (*path, "--no-such-option"), "No such option"))
        if any(param.required for param in command.params):
            cases.append(("missing argument", path, "Missing"))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(tmp_path_factory.mktemp("usage-data")),
        "COLUMNS": "80",
    }


@pytest.fixture(scope="module")
def runs(env: dict[str, str]) -> dict[tuple[str, ...], Ran]:
    argvs = [argv for _, argv, _ in CASES]
    ran = run_forked(argvs, env=env, executable=str(EXECUTABLE), timeout=600)
    return dict(zip(argvs, ran, strict=True))


def test_a_forked_case_reads_as_the_installed_console_script_does(
    runs: dict[tuple[str, ...], Ran], env: dict[str, str]
) -> None:
    argv = ("dataset", "add", "--no-such-option")
    script = subprocess.run(
        [str(EXECUTABLE), *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    forked = runs[argv]
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        script.returncode,
        script.stdout,
        script.stderr,
    )


def test_the_tree_is_walked() -> None:
    """The walk sees groups, their commands and required arguments (a guard on _cases)."""
    argvs = {argv for _, argv, _ in CASES}
    assert ("no-such-command",) in argvs
    assert ("model", "no-such-command") in argvs
    assert ("dataset", "add", "--no-such-option") in argvs
    assert ("model", "upload") in argvs  # upload is registered on the model group
    assert len(CASES) > 50


@pytest.mark.parametrize(
    ("mistake", "argv", "words"),
    CASES,
    ids=[f"{' '.join(argv) or 'evalboard'}: {mistake}" for mistake, argv, _ in CASES],
)
def test_usage_error_is_exit_2_with_a_hint(
    runs: dict[tuple[str, ...], Ran], mistake: str, argv: tuple[str, ...], words: str
) -> None:
    result = runs[argv]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    error, hint = lines
    assert error.startswith("error: ") and words in error, error
    command = " ".join(("evalboard", *(word for word in argv if not word.startswith("--"))))
    if mistake == "unknown sub-command":
        command = command.removesuffix(" no-such-command")
    assert hint.startswith(f"hint: {command} "), hint
    assert hint.endswith(f"see '{command} --help'"), hint
    assert result.stdout == ""
