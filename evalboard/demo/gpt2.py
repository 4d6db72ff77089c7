"""The demo's small GPT-2: trained from scratch on the demo's QA stories, no hub.

:func:`build_gpt2_bundle` writes a ``transformers`` bundle: ``model/`` (the saved GPT-2
and its byte-level BPE tokenizer, both trained here) and an ``evalboard.yaml`` with the
prompt it was trained on and its stop string. Training needs torch and transformers,
which evalboard does not install: it runs where they are importable, else in a one-off
container of the torch runtime image (no network, read-only, only its output folder
writable), the image transformers bundles are evaluated in. ``_gpt2_train.py`` is the
script; its ``train.json`` records the time training took.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from evalboard.core.errors import PlatformError
from evalboard.demo.qa_data import qa_examples, write_jsonl

__all__ = [
    "GPT2_MANIFEST",
    "TRAIN_EXAMPLES",
    "build_gpt2_bundle",
    "train_gpt2",
    "write_gpt2_bundle",
]

#: Training stories drawn from ``qa_data`` (never a scored set's seed).
TRAIN_EXAMPLES = 3000

GPT2_MANIFEST = """\
name: {name}
task: {task}
runtime: transformers
model: model
prompt: "{{context}}\\nQ: {{question}}\\nA:"
stop: ["\\n"]
batch_size: 16
params: {params}
license: mit
description: >-
  A two-layer GPT-2 trained from scratch in about two minutes on one CPU core, on made-up stories
  written for the demo; greedy, the answer ends at a new line or the end-of-text token.
"""

_TRAIN_TIMEOUT_S = 900


def _script() -> Path:
    return Path(str(resources.files("evalboard.demo") / "_gpt2_train.py"))


def train_gpt2(out: Path, *, client: Any = None, image: str | None = None) -> dict[str, Any]:
    """Train the GPT-2 into ``out/model``; returns the trainer's report (``seconds``...).

    Raises:
        PlatformError: neither torch here nor a Docker engine with the torch image.
    """
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "train.jsonl", qa_examples("train", TRAIN_EXAMPLES))
    shutil.copyfile(_script(), out / "_gpt2_train.py")
    local = all(importlib.util.find_spec(name) for name in ("torch", "transformers"))
    if local and client is None:
        done = subprocess.run(
            [sys.executable, str(out / "_gpt2_train.py"), str(out)],
            capture_output=True,
            text=True,
            timeout=_TRAIN_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise PlatformError(f"training the demo GPT-2 failed:\n{done.stderr[-3000:]}")
    else:
        from evalboard.core.settings import get_settings
        from submission_sandbox import run_offline

        out.chmod(0o777)  # the image's user writes the model here
        run_offline(
            image or get_settings().torch_image,
            ["python3", "/out/_gpt2_train.py", "/out"],
            mount=out,
            timeout_s=_TRAIN_TIMEOUT_S,
            label="training the demo GPT-2",
            client=client,
        )
    report: dict[str, Any] = json.loads((out / "train.json").read_text(encoding="utf-8"))
    return report


def write_gpt2_bundle(
    target: Path, trained: Path, report: dict[str, Any], *, task_id: str, name: str = "tiny-gpt2"
) -> None:
    """A transformers bundle in ``target`` of the model folder ``trained`` (its train report
    kept beside it as ``train.json``)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(trained, target / "model")
    (target / "train.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    manifest = GPT2_MANIFEST.format(name=name, task=task_id, params=report["parameters"])
    (target / "evalboard.yaml").write_text(manifest, encoding="utf-8")


def build_gpt2_bundle(
    target: Path, *, task_id: str, name: str = "tiny-gpt2", client: Any = None
) -> dict[str, Any]:
    """Train the GPT-2 and write its bundle in ``target``; returns the train report."""
    work = target.parent / f".{target.name}-train"
    shutil.rmtree(work, ignore_errors=True)
    try:
        report = train_gpt2(work, client=client)
        write_gpt2_bundle(target, work / "model", report, task_id=task_id, name=name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
