"""A text task's generation settings reach the model (``EVALBOARD_GENERATION``), and a
transformers bundle's ``prompt`` and ``stop`` are checked and read as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datasets_registry.taskspec import load_task_spec
from evalboard.core.errors import InvalidBundle
from evaluator import RunOptions, TestSet, check_bundle_fits, evaluate
from submission_sandbox import open_sandbox
from submission_sandbox.manifest import parse_manifest
from tests.submission_sandbox.test_runner import RUNNER

ROOT = Path(__file__).resolve().parents[2]
TEXT_TASK = ROOT / "examples" / "tasks" / "generative-qa.yaml"
BASE = {"name": "g", "task": "generative-qa", "runtime": "transformers", "model": "model"}

_ECHO = """
import os


class Model:
    def __init__(self, bundle):
        pass

    def predict(self, batch):
        return [{"text": os.environ.get("EVALBOARD_GENERATION", "none")} for _ in batch]
"""


def _echo_bundle(path: Path) -> Path:
    path.mkdir()
    (path / "handler.py").write_text(_ECHO)
    (path / "evalboard.yaml").write_text(
        "name: echo\ntask: generative-qa\nruntime: python\nentry: handler:Model\n"
    )
    return path


def test_a_text_task_gives_the_model_its_generation_settings(tmp_path: Path) -> None:
    task = load_task_spec(TEXT_TASK)
    examples = [
        {"uid": "q1", "context": "Rollo led them.", "question": "Who?", "references": ["Rollo"]}
    ]
    result = evaluate(
        _echo_bundle(tmp_path / "echo"),
        task=task,
        datasets=[TestSet(name="t", examples=examples, sha256="e" * 64, round=1)],
        options=RunOptions(sandbox="local", measure_energy=False),
        predictions_dir=tmp_path / "predictions",
    )
    path = result.outcome("t").predictions
    assert path is not None
    [record] = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert json.loads(record["output"]["text"]) == {
        "max_new_tokens": 32,
        "greedy": True,
        "seed": None,
    }


def test_a_classification_task_gives_none(tmp_path: Path) -> None:
    task = load_task_spec(ROOT / "examples" / "tasks" / "sentiment.yaml")
    assert task.sandbox_options == {}
    with open_sandbox(_echo_bundle(tmp_path / "echo"), kind="local", **task.sandbox_options) as box:
        assert box.predict([{"uid": "1", "statement": "fine"}]) == [{"text": "none"}]


def test_prompt_and_stop_are_read_by_the_manifest() -> None:
    manifest = parse_manifest({**BASE, "prompt": "{context}\nQ: {question}\nA:", "stop": ["\n"]})
    assert manifest.prompt == "{context}\nQ: {question}\nA:"
    assert manifest.stop == ["\n"]


def test_a_prompt_naming_a_field_the_task_lacks_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    """It used to crash on every example (a KeyError in the sandbox); now it is the
    bundle's fault, said at once, by evaluate as by an upload and `model test`."""
    task = load_task_spec(TEXT_TASK)
    manifest = parse_manifest({**BASE, "prompt": "{context}\nQ: {query}\nA:"})
    assert manifest.prompt_fields == ["context", "query"]
    with pytest.raises(InvalidBundle, match=r"prompt names \{query\}.*context, question"):
        check_bundle_fits(manifest, task)
    check_bundle_fits(parse_manifest({**BASE, "prompt": "{context} {question}"}), task)
    # evaluate refuses it before a sandbox starts (the model folder is never read).
    bundle = tmp_path / "bad-prompt"
    (bundle / "model").mkdir(parents=True)
    (bundle / "model" / "config.json").write_text("{}")
    (bundle / "evalboard.yaml").write_text(
        'name: g\ntask: generative-qa\nruntime: transformers\nmodel: model\nprompt: "Q: {query}"\n'
    )
    with pytest.raises(InvalidBundle, match=r"prompt names \{query\}"):
        evaluate(bundle, task=task, datasets=[], options=RunOptions(sandbox="local"))


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"prompt": "{0}"}, "name input fields only"),
        ({"prompt": "{context.__class__}"}, "name input fields only"),
        ({"prompt": "{}"}, "name input fields only"),
        ({"prompt": "a { b"}, "does not format"),
        ({"prompt": ""}, "prompt"),
        ({"stop": [""]}, "stop"),
        ({"stop": ["x"] * 9}, "stop"),
        ({"runtime": "python", "entry": "h:M", "stop": ["\n"]}, "for the transformers runtime"),
    ],
)
def test_a_bad_prompt_or_stop_is_an_invalid_bundle(extra: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidBundle, match=says):
        parse_manifest({**BASE, **extra})


def test_the_runner_reads_quoted_prompts_and_stop_lists_without_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runtime images have no PyYAML: the runner's own reader must decode the escapes.
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)
    (tmp_path / "evalboard.yaml").write_text(
        "name: g\nruntime: transformers\nmodel: model\n"
        'prompt: "{context}\\nQ: {question}\\nA:"\nstop: ["\\n", "Q:"]\nbatch_size: 16\n'
    )
    manifest = RUNNER._manifest(tmp_path)
    assert manifest["prompt"] == "{context}\nQ: {question}\nA:"
    assert manifest["stop"] == ["\n", "Q:"]
    assert manifest["batch_size"] == "16"


def test_the_runner_takes_the_settings_from_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EVALBOARD_GENERATION", raising=False)
    assert RUNNER.generation_settings() == {"max_new_tokens": 64, "greedy": True, "seed": None}
    monkeypatch.setenv("EVALBOARD_GENERATION", '{"max_new_tokens": 8, "greedy": false, "seed": 3}')
    assert RUNNER.generation_settings() == {"max_new_tokens": 8, "greedy": False, "seed": 3}
