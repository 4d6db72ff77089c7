"""docker/register_runsc.py: bootstrap's merge of runsc into daemon.json, on temp files.

The script runs as bootstrap runs it (the system's python3, a subprocess), on files in a
temporary folder: never the machine's /etc/docker/daemon.json.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from submission_sandbox import RUNSC_ARGS

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "register_runsc.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("register_runsc", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["python3", "-I", str(SCRIPT), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture
def runsc(tmp_path: Path) -> str:
    """A stand-in for /usr/bin/runsc: the merge only checks that the file exists."""
    path = tmp_path / "bin" / "runsc"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_script_and_the_sandbox_ask_for_the_same_runsc_arguments() -> None:
    assert tuple(_script().RUNSC_ARGS) == RUNSC_ARGS


def test_a_missing_file_is_made_holding_runsc_only(tmp_path: Path, runsc: str) -> None:
    daemon_json = tmp_path / "etc" / "docker" / "daemon.json"
    done = _run(str(daemon_json), runsc)
    assert done.returncode == 0, done.stderr
    assert "registered" in done.stdout and done.stdout.count("\n") == 1
    assert json.loads(daemon_json.read_text()) == {
        "runtimes": {"runsc": {"path": runsc, "runtimeArgs": list(RUNSC_ARGS)}}
    }
    assert daemon_json.stat().st_mode & 0o777 == 0o644


def test_other_keys_and_runtimes_are_kept(tmp_path: Path, runsc: str) -> None:
    daemon_json = tmp_path / "daemon.json"
    operator = {
        "log-driver": "json-file",
        "log-opts": {"max-size": "10m"},
        "default-runtime": "runc",
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
    }
    daemon_json.write_text(json.dumps(operator))
    daemon_json.chmod(0o600)
    assert _run(str(daemon_json), runsc).returncode == 0
    written = json.loads(daemon_json.read_text())
    assert {k: v for k, v in written.items() if k != "runtimes"} == {
        k: v for k, v in operator.items() if k != "runtimes"
    }
    assert written["runtimes"] == {
        "nvidia": operator["runtimes"]["nvidia"],  # type: ignore[index]
        "runsc": {"path": runsc, "runtimeArgs": list(RUNSC_ARGS)},
    }
    assert daemon_json.stat().st_mode & 0o777 == 0o600  # the operator's mode stays
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".daemon")] == []


def test_an_operators_own_runsc_arguments_and_path_are_kept_and_ours_added(
    tmp_path: Path, runsc: str
) -> None:
    newer = tmp_path / "bin" / "runsc-newer"
    newer.write_text("#!/bin/sh\n")
    daemon_json = tmp_path / "daemon.json"
    daemon_json.write_text(
        json.dumps(
            {
                "runtimes": {
                    "runsc": {
                        "path": str(newer),
                        "runtimeArgs": ["--platform=systrap", "--network=none"],
                    }
                }
            }
        )
    )
    assert _run(str(daemon_json), runsc).returncode == 0
    assert json.loads(daemon_json.read_text())["runtimes"]["runsc"] == {
        "path": str(newer),
        "runtimeArgs": ["--platform=systrap", "--network=none", "--host-uds=open"],
    }


def test_a_stale_runsc_path_is_replaced(tmp_path: Path, runsc: str) -> None:
    daemon_json = tmp_path / "daemon.json"
    gone = {"path": str(tmp_path / "nowhere" / "runsc"), "runtimeArgs": list(RUNSC_ARGS)}
    daemon_json.write_text(json.dumps({"runtimes": {"runsc": gone}}))
    assert _run(str(daemon_json), runsc).returncode == 0
    assert json.loads(daemon_json.read_text())["runtimes"]["runsc"]["path"] == runsc


def test_a_second_run_leaves_the_file_as_it_is(tmp_path: Path, runsc: str) -> None:
    daemon_json = tmp_path / "daemon.json"
    # The operator's own layout: rewriting it (even to equal JSON) would be a change.
    daemon_json.write_text(
        '{"debug": true,\n "runtimes": {"runsc": '
        + json.dumps({"path": runsc, "runtimeArgs": list(RUNSC_ARGS)})
        + "}}"
    )
    before = daemon_json.read_bytes()
    os.utime(daemon_json, (1_000_000_000, 1_000_000_000))
    done = _run(str(daemon_json), runsc)
    assert done.returncode == 0
    assert "already registered" in done.stdout and "not rewritten" in done.stdout
    assert daemon_json.read_bytes() == before
    assert daemon_json.stat().st_mtime == 1_000_000_000


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"debug": true,, }', "is not valid JSON"),
        ("[1, 2]", "holds a JSON list, not an object"),
        ('{"runtimes": ["runsc"]}', '"runtimes" is not an object'),
        ('{"runtimes": {"runsc": "/usr/bin/runsc"}}', '"runtimes"."runsc" is not an object'),
        (
            '{"runtimes": {"runsc": {"runtimeArgs": "--network=none"}}}',
            "is not a list of strings",
        ),
    ],
)
def test_a_file_dockerd_could_not_read_is_refused_in_one_line_and_left_untouched(
    tmp_path: Path, runsc: str, content: str, why: str
) -> None:
    daemon_json = tmp_path / "daemon.json"
    daemon_json.write_text(content)
    done = _run(str(daemon_json), runsc)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert str(daemon_json) in done.stderr and why in done.stderr
    assert "left untouched" in done.stderr
    assert daemon_json.read_text() == content


def test_an_empty_file_counts_as_no_settings(tmp_path: Path, runsc: str) -> None:
    daemon_json = tmp_path / "daemon.json"
    daemon_json.write_text("\n")
    assert _run(str(daemon_json), runsc).returncode == 0
    assert json.loads(daemon_json.read_text())["runtimes"]["runsc"]["path"] == runsc


def test_bad_usage_is_exit_2_with_the_usage_line(tmp_path: Path) -> None:
    done = _run(str(tmp_path / "daemon.json"))
    assert done.returncode == 2 and done.stderr.startswith("usage: register_runsc.py")


@pytest.mark.parametrize(
    ("runtimes", "listed"),
    [
        ({"runc": {"path": "runc"}}, False),
        ({"runsc": {"path": "/usr/bin/runsc"}}, False),
        ({"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}, False),
        ({"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": list(RUNSC_ARGS)}}, True),
        (
            {"runsc": {"path": "runsc", "runtimeArgs": ["--debug", *RUNSC_ARGS]}},
            True,
        ),
    ],
)
def test_engine_lists_runsc_only_with_every_argument_the_sandbox_needs(
    runtimes: dict[str, object], listed: bool
) -> None:
    done = _run("--engine-lists", stdin=json.dumps(runtimes))
    assert done.returncode == (0 if listed else 1)


def test_no_engine_answer_means_not_listed() -> None:
    assert _run("--engine-lists", stdin="").returncode == 1
