"""The CLI's start stays light: help and usage errors load no server, database, sandbox,
energy meter or numeric stack; an evaluation in the local sandbox loads no Docker SDK.

Every command's ``--help`` and one usage error per command run in one fresh interpreter
(the walk of tests/cli/test_usage_errors.py); then its ``sys.modules`` is read. A command
module that imports one of these at its top fails here, naming the module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.evaluator.conftest import FIXTURES
from tests.helpers.tasks import SENTIMENT, sentiment_rows, write_jsonl

#: What a command may load only when it runs: each costs tenths of a second to import.
#: (pydantic is not here: typer itself coerces parameters with it.)
HEAVY = (
    "celery",
    "codecarbon",
    "docker",
    "fastapi",
    "httpx",
    "numpy",
    "pandas",
    "sqlalchemy",
    "torch",
    "uvicorn",
)

_SCRIPT = textwrap.dedent(
    """
    import contextlib, io, json, sys

    import typer.main

    from evalboard.cli import app, main

    def walk(command, path):
        yield path, command
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            yield from walk(sub, (*path, name))

    codes = {}
    for path, command in walk(typer.main.get_command(app), ()):
        mistake = "no-such-command" if hasattr(command, "commands") else "--no-such-option"
        for argv in ((*path, "--help"), (*path, mistake)):
            quiet = io.StringIO()
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                codes[" ".join(argv)] = main(list(argv))
    heavy = sorted(name for name in json.loads(sys.argv[1]) if name in sys.modules)
    print(json.dumps({"codes": codes, "heavy": heavy}))
    """
)


def test_help_and_usage_errors_load_no_heavy_module() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    codes: dict[str, int] = report["codes"]
    # The walk reached every group and command, and each answered as a user would see it.
    assert {"--help", "evaluate --help", "dataset add --help", "model upload --help"} <= set(codes)
    assert {argv: code for argv, code in codes.items() if argv.endswith("--help")} == {
        argv: 0 for argv in codes if argv.endswith("--help")
    }
    assert {code for argv, code in codes.items() if not argv.endswith("--help")} == {2}
    assert report["heavy"] == []


_ONE_COMMAND = textwrap.dedent(
    """
    import contextlib, io, json, sys

    from evalboard.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(sys.argv[1:])
    commands = sorted(
        name.rpartition(".")[2]
        for name in sys.modules
        if name.startswith("evalboard.cli.") and not name.rpartition(".")[2].startswith("_")
    )
    print(json.dumps({"code": code, "commands": commands}))
    """
)


def test_a_command_line_imports_only_the_command_it_names() -> None:
    # The other commands' modules are about 15 ms of evaluate's start; --help lists them all.
    def loaded(*argv: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", _ONE_COMMAND, *argv],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "80"},
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=True,
        )
        return dict(json.loads(done.stdout))

    assert loaded("evaluate", "--help") == {"code": 0, "commands": ["evaluate"]}
    assert loaded("model", "--help") == {"code": 0, "commands": ["card", "model", "upload"]}
    everything = loaded("--help")
    assert everything["code"] == 0 and "evaluate" in everything["commands"]
    assert len(everything["commands"]) > 10


_EVALUATION = textwrap.dedent(
    """
    import contextlib, io, json, sys

    from evalboard.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(sys.argv[2:])
    loaded = [name for name in json.loads(sys.argv[1]) if name in sys.modules]
    print(json.dumps({"code": code, "loaded": loaded}))
    """
)


def test_evaluate_in_the_local_sandbox_loads_no_docker(tmp_path: Path) -> None:
    # The Docker SDK loads only for a sandbox that runs a container (docker, gvisor).
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    task = tmp_path / "sentiment.json"
    task.write_text(json.dumps(SENTIMENT))
    argv = ["evaluate", str(FIXTURES / "vader_bundle"), "--task-file", str(task)]
    done = subprocess.run(
        [sys.executable, "-c", _EVALUATION, json.dumps(["docker"]), *argv, "--dataset", str(data)]
        + ["--sandbox", "local", "--no-energy"],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path / "data")},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == {"code": 0, "loaded": []}
