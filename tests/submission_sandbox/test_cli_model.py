"""``evalboard model init | test | package`` (the sub-app, run as a user would)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalboard.cli import model as model_cli
from submission_sandbox import bundle_digest

SENTIMENT = """\
id: sentiment
name: Three-way sentiment
input: [{name: statement, type: string}]
output: {type: multiclass, labels: [negative, neutral, positive]}
perf_metric: macro_f1
limits: {cpus: 1, memory: 1g, timeout_s: 120}
"""
QA = """\
id: qa
name: Extractive QA
input: [{name: context, type: string}, {name: question, type: string}]
output: {type: span}
perf_metric: squad_f1
limits: {cpus: 1, memory: 1g, timeout_s: 120}
"""


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(model_cli.app, list(args), catch_exceptions=True)


@pytest.fixture
def task_files(tmp_path: Path) -> dict[str, Path]:
    files = {"sentiment": tmp_path / "sentiment.yaml", "qa": tmp_path / "qa.yaml"}
    files["sentiment"].write_text(SENTIMENT)
    files["qa"].write_text(QA)
    return files


@pytest.mark.parametrize("task", ["sentiment", "qa"])
def test_init_makes_a_bundle_that_passes_its_own_test_locally(
    tmp_path: Path, task_files: dict[str, Path], task: str
) -> None:
    bundle = tmp_path / f"my-{task}-model"
    made = _invoke("init", "--task-file", str(task_files[task]), str(bundle))
    assert made.exit_code == 0, made.output
    assert (
        (bundle / "evalboard.yaml").read_text().startswith(f"name: my-{task}-model\ntask: {task}")
    )
    tested = _invoke(
        "test", str(bundle), "--sandbox", "local", "--task-file", str(task_files[task])
    )
    assert tested.exit_code == 0, tested.output
    assert "PASS" in tested.output and "sample-6" in tested.output


def test_init_refuses_a_non_empty_directory(tmp_path: Path, task_files: dict[str, Path]) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    result = _invoke("init", "--task-file", str(task_files["sentiment"]), str(tmp_path / "b"))
    assert result.exit_code != 0
    assert "not empty" in str(result.exception)


def _bundle_with_predict(tmp_path: Path, task_files: dict[str, Path], body: str) -> Path:
    bundle = tmp_path / "b"
    _invoke("init", "--task-file", str(task_files["sentiment"]), str(bundle))
    (bundle / "handler.py").write_text(
        "class Model:\n    def __init__(self, d):\n        pass\n"
        f"    def predict(self, batch):\n        {body}\n"
    )
    return bundle


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("return [{'label': 'great'} for _ in batch]", "not one of the task's labels"),
        ("return [{'label': 'neutral', 'probs': {'neutral': 0.5}} for _ in batch]", "sum to"),
        ("return [{'label': 'neutral'}]", "protocol_error"),
        ("raise RuntimeError('weights missing')", "weights missing"),
    ],
)
def test_test_fails_with_exit_1_and_says_what_is_wrong(
    tmp_path: Path, task_files: dict[str, Path], body: str, shown: str
) -> None:
    bundle = _bundle_with_predict(tmp_path, task_files, body)
    result = _invoke(
        "test", str(bundle), "--sandbox", "local", "--task-file", str(task_files["sentiment"])
    )
    assert result.exit_code == 1, result.output
    assert shown in result.output


def test_a_bundle_for_another_task_is_bad_input(
    tmp_path: Path, task_files: dict[str, Path]
) -> None:
    bundle = tmp_path / "b"
    _invoke("init", "--task-file", str(task_files["sentiment"]), str(bundle))
    result = _invoke(
        "test", str(bundle), "--sandbox", "local", "--task-file", str(task_files["qa"])
    )
    assert result.exit_code != 0
    message = str(result.exception)
    assert "model of task 'sentiment'" in message and "not of task 'qa'" in message
    assert getattr(result.exception, "exit_code", None) == 2


def test_package_prints_the_canonical_sha256(tmp_path: Path, task_files: dict[str, Path]) -> None:
    bundle = tmp_path / "b"
    _invoke("init", "--task-file", str(task_files["sentiment"]), str(bundle))
    result = _invoke("package", str(bundle), "-o", str(tmp_path / "b.tar.gz"))
    assert result.exit_code == 0, result.output
    assert f"sha256 {bundle_digest(bundle)}" in result.output
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["evalboard.yaml", "handler.py"]


@pytest.mark.docker
def test_test_runs_in_the_docker_sandbox_like_the_server(
    tmp_path: Path, task_files: dict[str, Path], docker_client: Any
) -> None:
    bundle = tmp_path / "b"
    _invoke("init", "--task-file", str(task_files["sentiment"]), str(bundle))
    archive = tmp_path / "b.tar.gz"
    _invoke("package", str(bundle), "-o", str(archive))
    result = _invoke(
        "test", str(archive), "--sandbox", "docker", "--task-file", str(task_files["sentiment"])
    )
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "peak memory" in result.output


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["python", "sklearn", "onnx", "transformers"])
def test_each_template_passes_model_test_in_docker_as_made(
    tmp_path: Path, task_files: dict[str, Path], kind: str, docker_client: Any
) -> None:
    pytest.importorskip("sklearn")
    if kind == "onnx":
        pytest.importorskip("skl2onnx")
    if kind == "transformers":
        import docker.errors

        from evalboard.core.settings import get_settings

        try:
            docker_client.images.get(get_settings().torch_image)
        except docker.errors.ImageNotFound:
            pytest.skip("the torch runtime image is missing: bash docker/bootstrap.sh --torch")
    bundle = tmp_path / f"my-{kind}-model"
    made = _invoke("init", "--from", kind, "--task-file", str(task_files["sentiment"]), str(bundle))
    assert made.exit_code == 0, made.output
    if kind == "sklearn":
        assert (bundle / "requirements.txt").read_text().startswith("scikit-learn==")
    tested = _invoke(
        "test", str(bundle), "--sandbox", "docker", "--task-file", str(task_files["sentiment"])
    )
    assert tested.exit_code == 0, tested.output
    assert "PASS" in tested.output


@pytest.mark.parametrize("kind", ["sklearn", "onnx", "transformers"])
def test_a_trained_template_refuses_a_span_task_and_leaves_nothing(
    tmp_path: Path, task_files: dict[str, Path], kind: str
) -> None:
    bundle = tmp_path / "qa-model"
    made = _invoke("init", "--from", kind, "--task-file", str(task_files["qa"]), str(bundle))
    assert made.exit_code != 0
    assert "wants spans" in str(made.exception)
    assert not bundle.exists()
