"""A realistic sentiment task with evaluated models, seeded straight into the database.

Four models with plausible figures (a large transformer, a MiniLM head, a bag-of-words
logistic regression, a lexicon baseline), each with per-example predictions on every
scoring dataset so that intervals and the drill-down work; plus one model still queued
and one that ran out of memory, with its log.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from datasets_registry import add_dataset, create_task, list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.states import Access, JobStatus, Role
from evalboard.core.tables import Dataset, Job, Result, Submission, utcnow
from evaluator.result import SCHEMA_VERSION, DatasetMetrics
from leaderboard.accounts import create_token, create_user
from scoring import compute
from tests.helpers.tasks import sentiment_spec, write_jsonl

TASK = "sentiment"
OTHER_TASK = "sentiment-b"
PASSWORD = "correct-horse-battery"
LABELS = ["negative", "neutral", "positive"]

_SUBJECTS = ["She", "He", "Mary", "John", "My sister", "Her brother", "The waiter", "Our guide"]
_TEXTS = {
    "positive": [
        "said the food was wonderful",
        "loved the friendly staff",
        "thought the show was brilliant",
        "enjoyed every minute of the trip",
    ],
    "negative": [
        "said the service was terrible",
        "hated the cold soup",
        "thought it wasn't worth the price",
        "found the room dirty and loud",
    ],
    "neutral": [
        "said the hotel is on Main Street",
        "went to the market on Monday",
        "read the menu before ordering",
        "took the train to Boston",
    ],
}


@dataclass(frozen=True)
class Model:
    name: str
    owner: str
    accuracy: float
    throughput: float
    memory_gib: float
    fairness: float
    robustness: float
    baseline: bool = False


MODELS = [
    Model("roberta-large", "alice", 0.86, 38.0, 1.92, 0.93, 0.80),
    Model("minilm-head", "bob", 0.74, 410.0, 0.55, 0.95, 0.86),
    Model("bow-logreg", "alice", 0.63, 2650.0, 0.21, 0.97, 0.90),
    Model("vader-lexicon", "owner", 0.55, 1180.0, 0.16, 0.99, 0.94, baseline=True),
]


@dataclass
class Seeded:
    ctx: Context
    tokens: dict[str, str]
    submissions: dict[str, int] = field(default_factory=dict)
    task: str = TASK
    other_task: str = OTHER_TASK


def _rows(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    # A skewed label distribution, as real sentiment sets have: the majority is positive.
    weights = {"positive": 0.45, "negative": 0.35, "neutral": 0.20}
    for i in range(count):
        label = rng.choices(list(weights), weights=list(weights.values()))[0]
        text = f"{rng.choice(_SUBJECTS)} {rng.choice(_TEXTS[label])} ({seed}-{i})."
        rows.append({"uid": f"{seed}-{i}", "statement": text, "label": label})
    return rows


def _predict(model: Model, examples: list[dict[str, Any]], rate: float, salt: str) -> list[str]:
    rng = random.Random(f"{model.name}/{salt}")
    out = []
    for example in examples:
        gold = example["label"]
        if rng.random() < rate:
            out.append(gold)
        else:
            out.append(rng.choice([label for label in LABELS if label != gold]))
    return out


def _probs(label: str, rng: random.Random) -> dict[str, float]:
    top = round(rng.uniform(0.5, 0.95), 3)
    rest = round((1 - top) / 2, 3)
    return {name: (top if name == label else rest) for name in LABELS}


def _result(
    ctx: Context,
    model: Model,
    dataset: Dataset,
    examples: list[dict[str, Any]],
    originals: dict[str, list[str]],
) -> tuple[dict[str, Any], bytes]:
    rng = random.Random(f"{model.name}/{dataset.name}/probs")
    records = []
    figures: dict[str, Any] = {}
    if dataset.perturbation is None:
        predictions = _predict(model, examples, model.accuracy, dataset.name)
        originals[dataset.name] = predictions
        golds = [e["label"] for e in examples]
        figures["perf"] = compute("macro_f1", predictions, golds, labels=LABELS)
        figures["extra"] = {"accuracy": compute("accuracy", predictions, golds, labels=LABELS)}
        for example, prediction in zip(examples, predictions, strict=True):
            records.append(
                {
                    "uid": example["uid"],
                    "gold": example["label"],
                    "output": {"label": prediction, "probs": _probs(prediction, rng)},
                    "score": float(prediction == example["label"]),
                }
            )
    else:
        parent = _parent(ctx, dataset)
        by_uid = dict(
            zip((e["uid"] for e in read_examples(ctx, parent)), originals[parent.name], strict=True)
        )
        rate = model.fairness if dataset.perturbation == "fairness" else model.robustness
        scores = []
        for example in examples:
            original = by_uid[example["input_id"]]
            kept = rng.random() < rate
            label = original if kept else rng.choice([x for x in LABELS if x != original])
            scores.append(float(kept))
            records.append(
                {
                    "uid": example["uid"],
                    "input_id": example["input_id"],
                    "original": original,
                    "output": {"label": label},
                    "score": float(kept),
                }
            )
        figures[dataset.perturbation] = 100.0 * sum(scores) / len(scores)
    throughput = model.throughput * rng.uniform(0.97, 1.03)
    metrics = DatasetMetrics(
        perf_metric="macro_f1",
        examples=len(examples),
        throughput=throughput,
        batch_size=32,
        predict_s=len(examples) / throughput,
        startup_s=rng.uniform(0.4, 3.0),
        latency_p50_s=32 / throughput,
        latency_p95_s=40 / throughput,
        memory_gib=model.memory_gib * rng.uniform(0.98, 1.02),
        cpu_seconds=len(examples) / 50,
        **figures,
    )
    payload = b"".join(json.dumps(r, sort_keys=True).encode() + b"\n" for r in records)
    return {"schema_version": SCHEMA_VERSION, **metrics.model_dump(mode="json")}, payload


def _parent(ctx: Context, dataset: Dataset) -> Dataset:
    with ctx.db.session() as session:
        parent = session.get(Dataset, dataset.derived_from_id)
        assert parent is not None
        return parent


def _submission(ctx: Context, name: str, user_id: int | None, **fields: Any) -> Submission:
    with ctx.db.session() as session:
        submission = Submission(
            task_id=TASK,
            user_id=user_id,
            name=name,
            bundle_sha256="0" * 64,
            artifact_key=f"bundles/{name}.tar.gz",
            manifest={"name": name, "task": TASK, "runtime": "python", "entry": "handler:Model"},
            **fields,
        )
        session.add(submission)
    return submission


def seed(ctx: Context, tmp: Path) -> Seeded:
    """Users, two tasks, datasets (scoring, hidden, standard), and evaluated models."""
    users = {}
    for name, admin in [
        ("admin", True),
        ("owner", False),
        ("alice", False),
        ("bob", False),
        ("carol", False),
        ("annie", False),
    ]:
        roles = (Role.ANNOTATOR,) if name == "annie" else (Role.RESEARCHER,)
        users[name] = create_user(ctx, name, password=PASSWORD, is_admin=admin, roles=roles)
    create_task(ctx, sentiment_spec(), owner_id=users["owner"].id)
    create_task(
        ctx,
        sentiment_spec(id=OTHER_TASK, name="Sentiment, second edition"),
        owner_id=users["carol"].id,
    )
    for name, access, rnd, count in [
        ("test", Access.SCORING, 1, 60),
        ("hidden-test", Access.HIDDEN, 1, 40),
        ("dev", Access.STANDARD, 0, 30),
    ]:
        path = write_jsonl(tmp / f"{name}.jsonl", _rows(count, seed=len(name) * 7 + rnd))
        add_dataset(ctx, task_id=TASK, name=name, path=path, round=rnd, access=access)
    seeded = Seeded(ctx=ctx, tokens={n: create_token(ctx, n)[0] for n in users})
    datasets = list_datasets(ctx, TASK)
    start = utcnow() - timedelta(hours=1)
    for model in MODELS:
        submission = _submission(ctx, model.name, users[model.owner].id, is_baseline=model.baseline)
        seeded.submissions[model.name] = submission.id
        originals: dict[str, list[str]] = {}
        for dataset in datasets:  # originals come before their copies
            metrics, payload = _result(ctx, model, dataset, read_examples(ctx, dataset), originals)
            with ctx.db.session() as session:
                job = Job(
                    submission_id=submission.id,
                    dataset_id=dataset.id,
                    status=JobStatus.FINISHED.value,
                    progress=1.0,
                    attempts=1,
                    started_at=start,
                    finished_at=start + timedelta(minutes=3),
                )
                session.add(job)
                session.flush()
                key = f"predictions/{submission.id}/job-{job.id}.jsonl"
                ctx.artifacts.put_bytes(key, payload)
                session.add(
                    Result(
                        job_id=job.id,
                        submission_id=submission.id,
                        dataset_id=dataset.id,
                        metrics=metrics,
                        provenance={"seeded": True, "sandbox": "gvisor"},
                        predictions_key=key,
                    )
                )
    queued = _submission(ctx, "distilbert", users["bob"].id)
    broken = _submission(ctx, "broken-model", users["alice"].id)
    seeded.submissions.update({"distilbert": queued.id, "broken-model": broken.id})
    with ctx.db.session() as session:
        for dataset in datasets:
            session.add(Job(submission_id=queued.id, dataset_id=dataset.id))
            session.add(
                Job(
                    submission_id=broken.id,
                    dataset_id=dataset.id,
                    status=JobStatus.FAILED.value,
                    reason="oom",
                    message="The model used more than its 4g memory limit (exit 137).",
                    log_tail="loading weights\nKilled\n",
                    finished_at=start,
                )
            )
    return seeded
