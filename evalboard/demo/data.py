"""The demo's task and its data, written for the project (no sentence is from a corpus).

Files under ``evalboard/demo/data`` (shipped with the package):

- ``train.jsonl``: 180 examples the demo models learn from (never scored).
- ``round-1.jsonl``: 90 plain statements, round 1.
- ``round-2.jsonl``: 90 harder ones (negation, sarcasm, mixed feelings), round 2.
- ``static.jsonl``: 90 statements on other topics, a static set (round 0).
- ``collection.jsonl``: 20 examples the simulated annotators of the demo round write.

Every set is balanced over negative, neutral and positive, and some sentences name people
or use gendered pronouns, so the fairness copies have something to change.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from datasets_registry import TaskSpec, parse_task_spec

__all__ = [
    "DEMO_TASK_ID",
    "LABELS",
    "DemoSet",
    "data_path",
    "demo_sets",
    "demo_task_spec",
    "file_sha256",
    "read_jsonl",
    "texts_and_labels",
]

DEMO_TASK_ID = "demo-sentiment"
LABELS = ("negative", "neutral", "positive")


@dataclass(frozen=True)
class DemoSet:
    """One scored dataset of the demo task."""

    name: str
    file: str
    round: int


_SETS = (
    DemoSet("round-1", "round-1.jsonl", 1),
    DemoSet("round-2", "round-2.jsonl", 2),
    DemoSet("static", "static.jsonl", 0),
)


def demo_sets() -> tuple[DemoSet, ...]:
    """The scored datasets, in the order they are added."""
    return _SETS


def data_path(name: str) -> Path:
    """The path of a shipped data file (``train.jsonl``, ``round-1.jsonl``...)."""
    path = Path(str(resources.files("evalboard.demo") / "data" / name))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the evalboard package is incomplete")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def texts_and_labels(name: str) -> tuple[list[str], list[str]]:
    """The statements and gold labels of a shipped file."""
    rows = read_jsonl(data_path(name))
    return [str(row["statement"]) for row in rows], [str(row["label"]) for row in rows]


def file_sha256(name: str) -> str:
    return hashlib.sha256(data_path(name).read_bytes()).hexdigest()


def demo_task_spec() -> TaskSpec:
    """The demo's three-way sentiment task (the same as examples/tasks/sentiment.yaml but
    for its id, so a real ``sentiment`` task is never touched)."""
    return parse_task_spec(
        {
            "id": DEMO_TASK_ID,
            "name": "Three-way sentiment (demo)",
            "description": (
                "Is the statement negative, neutral or positive? The demo's own task: two "
                "rounds, a static set, and a round collected by simulated annotators."
            ),
            "input": [{"name": "statement", "type": "string"}],
            "output": {"type": "multiclass", "labels": list(LABELS)},
            "perf_metric": "macro_f1",
            "delta_metrics": ["fairness", "robustness"],
            "default_weights": {
                "perf": 4,
                "throughput": 1,
                "memory": 1,
                "fairness": 1,
                "robustness": 1,
            },
            "memory_cap_gib": 16,
            "limits": {"cpus": 2, "memory": "2g", "timeout_s": 600, "gpus": 0},
            "model_wrong": "exact_match",
            "validation": {"num_matching": 3},
        },
        source="the demo task",
    )
