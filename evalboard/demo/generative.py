"""The demo's generative task: short answers to questions about made-up stories, scored
with chrF (and BLEU, ROUGE-L, token F1, exact match beside it), and its two entrants.

- ``tiny-gpt2``: a two-layer GPT-2 trained from scratch on the demo's stories
  (:mod:`evalboard.demo.gpt2`), transformers runtime: it needs the torch runtime image
  (or torch on this machine), so a demo in the local sandbox without torch leaves it out;
- ``overlap-answer``: the template n-gram model (:mod:`evalboard.demo.overlap_answer`),
  python runtime, no weights.

The scored sets are drawn by :mod:`evalboard.demo.qa_data` into the data directory when the
task is first created.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from importlib import resources
from pathlib import Path

from datasets_registry import TaskSpec, add_dataset, create_task, parse_task_spec
from evalboard.core.context import Context
from evalboard.demo.models import DemoModel
from evalboard.demo.qa_data import GEN_SETS, qa_examples, write_jsonl

__all__ = [
    "GEN_MODELS",
    "GEN_TASK_ID",
    "generative_models",
    "generative_task_spec",
    "seed_generative_task",
]

GEN_TASK_ID = "demo-generative"

_OVERLAP_MANIFEST = """\
name: overlap-answer
task: {task}
runtime: python
entry: handler:Model
batch_size: 16
description: >-
  Template model: in the context sentence sharing the most word bigrams and words with the
  question, answers with the first run of up to four words the question does not contain.
"""


def _source_digest(*names: str) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update((resources.files("evalboard.demo") / name).read_bytes())
    return digest.hexdigest()[:16]


def _build_overlap(target: Path, task_id: str) -> None:
    target.mkdir(parents=True)
    source = Path(str(resources.files("evalboard.demo") / "overlap_answer.py"))
    shutil.copyfile(source, target / "handler.py")
    (target / "evalboard.yaml").write_text(_OVERLAP_MANIFEST.format(task=task_id), "utf-8")


def _build_gpt2(target: Path, task_id: str) -> None:
    from evalboard.demo.gpt2 import build_gpt2_bundle

    build_gpt2_bundle(target, task_id=task_id)


GEN_MODELS: tuple[DemoModel, ...] = (
    DemoModel(
        name="overlap-answer",
        summary="template n-gram model (python runtime): no weights, copies words it finds",
        version=_source_digest("overlap_answer.py"),
        packages=(),
        build=_build_overlap,
    ),
    DemoModel(
        name="tiny-gpt2",
        summary="GPT-2 trained from scratch on the demo's stories (transformers runtime)",
        version=_source_digest("_gpt2_train.py", "qa_data.py", "gpt2.py"),
        packages=("tokenizers",),
        build=_build_gpt2,
    ),
)


def generative_models(sandbox: str) -> tuple[tuple[DemoModel, ...], str | None]:
    """The entrants the sandbox can run, and a notice naming any left out."""
    if sandbox != "local" or importlib.util.find_spec("torch"):
        return GEN_MODELS, None
    return GEN_MODELS[:1], (
        "tiny-gpt2 is left out of the generative task: the local sandbox runs it with this "
        "machine's Python, which has no torch (the Docker sandbox has it in its torch image)"
    )


def generative_task_spec() -> TaskSpec:
    """Answer a question about a short story in a few words (greedy, 16 new tokens)."""
    return parse_task_spec(
        {
            "id": GEN_TASK_ID,
            "name": "Answer questions about short stories (demo, generative)",
            "description": (
                "Read three sentences about made-up people, places and books, and answer the "
                "question in a few words; scored with chrF against the reference answer."
            ),
            "input": [
                {"name": "context", "type": "string"},
                {"name": "question", "type": "string"},
            ],
            "output": {"type": "text", "generation": {"max_new_tokens": 16, "greedy": True}},
            "perf_metric": "chrf",
            "delta_metrics": ["robustness"],
            "default_weights": {"perf": 4, "throughput": 1, "memory": 1, "robustness": 1},
            "memory_cap_gib": 16,
            "limits": {"cpus": 2, "memory": "2g", "timeout_s": 900, "gpus": 0},
            "model_wrong": "exact_match",
            "validation": {"num_matching": 3},
        },
        source="the demo's generative task",
    )


def seed_generative_task(ctx: Context, state_dir: Path) -> list[str]:
    """Create the generative task and add its sets; returns the names added this time."""
    create_task(ctx, generative_task_spec())
    added = []
    for name, count, seed in GEN_SETS:
        path = write_jsonl(
            state_dir / "generative" / f"{name}.jsonl", qa_examples(name, count, seed=seed)
        )
        result = add_dataset(
            ctx, task_id=GEN_TASK_ID, name=name, path=path, round=1 if name == "round-1" else 0
        )
        if result.created:
            added += [name, *(d.name for d in result.derived)]
    return added
