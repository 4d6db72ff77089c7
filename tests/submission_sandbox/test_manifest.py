from __future__ import annotations

from pathlib import Path

import pytest

from evalboard.core.errors import InvalidBundle
from submission_sandbox.manifest import (
    Runtime,
    check_bundle_task,
    load_manifest,
    parse_manifest,
    task_mismatch,
)

BASE = {"name": "bow", "task": "sentiment", "runtime": "python", "entry": "handler:Model"}


def test_a_python_manifest_parses_with_defaults() -> None:
    manifest = parse_manifest(BASE)
    assert manifest.runtime is Runtime.PYTHON
    assert (manifest.batch_size, manifest.gpus) == (32, 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"runtime": "java"}, "allowed values are 'python', 'onnx', 'transformers' or 'image'"),
        ({"name": "Bad Name"}, "name"),
        ({"entry": "handler"}, "module:Class"),
        ({"entry": None}, "runtime python needs `entry`"),
        ({"runtime": "onnx", "model": "m.onnx"}, "needs `labels`"),
        ({"runtime": "image", "image": "../x.tar"}, "path inside the bundle"),
        ({"batch_size": 0}, "batch_size"),
        ({"gpus": 2}, "gpus"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_bad_manifests_are_refused_with_the_field_and_the_fix(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidBundle, match="not a valid manifest") as caught:
        parse_manifest({**BASE, **change})
    assert message in str(caught.value)


def test_a_manifest_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(InvalidBundle, match="YAML mapping"):
        parse_manifest(["name"])


def test_a_missing_manifest_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(InvalidBundle, match="evalboard model init"):
        load_manifest(tmp_path)


def test_invalid_yaml_is_refused(tmp_path: Path) -> None:
    (tmp_path / "evalboard.yaml").write_text("name: [unclosed\n")
    with pytest.raises(InvalidBundle, match="not valid YAML"):
        load_manifest(tmp_path)


def test_a_bundle_for_another_task_is_refused_naming_both_tasks_and_the_fix() -> None:
    manifest = parse_manifest(BASE)
    assert task_mismatch(manifest, "sentiment") is None
    check_bundle_task(manifest, "sentiment")
    with pytest.raises(InvalidBundle) as caught:
        check_bundle_task(manifest, "qa")
    assert (
        caught.value.message
        == task_mismatch(manifest, "qa")
        == (
            "The bundle is a model of task 'sentiment' (`task:` in its evalboard.yaml), not of "
            "task 'qa': a model is made for one task's inputs and outputs; use it with task "
            "'sentiment', or fix `task:` if it was made for 'qa'"
        )
    )
