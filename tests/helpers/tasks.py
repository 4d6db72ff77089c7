"""Small task specs and example files for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datasets_registry.taskspec import TaskSpec, parse_task_spec

SENTIMENT: dict[str, Any] = {
    "id": "sentiment",
    "name": "Three-way sentiment",
    "input": [{"name": "statement", "type": "string"}],
    "output": {"type": "multiclass", "labels": ["negative", "neutral", "positive"]},
    "perf_metric": "macro_f1",
    "delta_metrics": ["fairness", "robustness"],
    "default_weights": {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
    "memory_cap_gib": 16,
    "limits": {"cpus": 2, "memory": "4g", "timeout_s": 3600, "gpus": 0},
    "model_wrong": "exact_match",
    "validation": {"num_matching": 3},
}

QA: dict[str, Any] = {
    "id": "qa",
    "name": "Extractive QA",
    "input": [{"name": "context"}, {"name": "question"}],
    "output": {"type": "span"},
    "perf_metric": "squad_f1",
    "model_wrong": {"string_f1": 0.4},
}

GENERATIVE_QA: dict[str, Any] = {
    "id": "generative-qa",
    "name": "Answer the question in a few words",
    "input": [{"name": "context"}, {"name": "question"}],
    "output": {"type": "text", "generation": {"max_new_tokens": 32, "greedy": True}},
    "perf_metric": "chrf",
}


def sentiment_spec(**changes: Any) -> TaskSpec:
    return parse_task_spec({**SENTIMENT, **changes})


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


SENTENCES = [
    ("s1", "The food was wonderful and she loved the staff.", "positive"),
    ("s2", "He said the service was terrible.", "negative"),
    ("s3", "The hotel is on Main Street in Chicago.", "neutral"),
    ("s4", "Mary thought it wasn't worth the price.", "negative"),
]


def sentiment_rows() -> list[dict[str, Any]]:
    return [{"uid": uid, "statement": text, "label": label} for uid, text, label in SENTENCES]
