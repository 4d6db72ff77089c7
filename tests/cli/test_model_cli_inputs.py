"""``evalboard model init | package | test``: bad input is exit 2 and one line, and leaves
nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, CliResult
from tests.submission_sandbox.test_cli_model import SENTIMENT


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "sentiment.yaml"
    path.write_text(SENTIMENT)
    return path


@pytest.fixture
def bundle(cli: Cli, tmp_path: Path, task_file: Path) -> Path:
    path = tmp_path / "bundle"
    made = cli("model", "init", "--task-file", task_file, path)
    assert made.code == 0, made.err
    return path


def _refused(result: CliResult, *words: str) -> None:
    assert result.code == 2, result
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert all(word in lines[0] for word in words), lines[0]


@pytest.mark.parametrize(
    ("directory", "name", "slug"),
    [
        ("m8", "My Model", "my-model"),
        ("m9", "a: b", "a-b"),
        ("bert.v2", None, "bert-v2"),
        ("m4 💥", None, "m4"),
    ],
)
def test_init_refuses_a_name_the_manifest_refuses_and_writes_nothing(
    cli: Cli, tmp_path: Path, task_file: Path, directory: str, name: str | None, slug: str
) -> None:
    target = tmp_path / "models" / directory
    options = ["--name", name] if name is not None else []
    result = cli("model", "init", "--task-file", task_file, *options, target)
    _refused(result, "not a valid model name", "lowercase letters, digits and dashes", slug)
    assert not (tmp_path / "models").exists()


def test_init_under_a_file_is_bad_input(cli: Cli, tmp_path: Path, task_file: Path) -> None:
    (tmp_path / "f").write_text("")
    result = cli("model", "init", "--task-file", task_file, tmp_path / "f" / "ok")
    _refused(result, "is a file, not a directory")
    assert (tmp_path / "f").read_text() == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")
def test_init_where_no_directory_can_be_made_is_bad_input(cli: Cli, task_file: Path) -> None:
    result = cli("model", "init", "--task-file", task_file, "/proc/evalboard-model")
    _refused(result, "cannot create the bundle directory", "No such file or directory")


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("out", ("is a directory", ".tar.gz")),
        ("b.zip", (".tar.gz or .tgz", "b.tar.gz")),
        ("b.tar", (".tar.gz or .tgz",)),
        ("missing/b.tar.gz", ("Cannot write", "No such file or directory")),
    ],
)
def test_package_refuses_an_output_it_cannot_write_and_leaves_nothing(
    cli: Cli, tmp_path: Path, bundle: Path, output: str, words: tuple[str, ...]
) -> None:
    (tmp_path / "out").mkdir()
    before = sorted(tmp_path.rglob("*"))
    result = cli("model", "package", bundle, "-o", tmp_path / output)
    _refused(result, *words)
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1", "0"])
def test_test_refuses_a_timeout_that_is_not_a_positive_finite_number(
    cli: Cli, bundle: Path, task_file: Path, timeout: str
) -> None:
    result = cli(
        "model", "test", bundle, "--sandbox", "local", "--task-file", task_file,
        "--timeout-s", timeout,
    )  # fmt: skip
    _refused(result, f"--timeout-s {timeout}", "positive, finite number")
