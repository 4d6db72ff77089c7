"""Fixtures for the evaluator's tests: toy bundles, a registered task, submissions."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datasets_registry.registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.tables import Submission
from submission_sandbox.bundle import package_bundle
from submission_sandbox.manifest import load_manifest
from tests.helpers.tasks import sentiment_rows, sentiment_spec, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
# The fixture bundles are models, not tests (and two have a module named handler).
collect_ignore_glob = ["fixtures/*"]

BundleFactory = Callable[..., Path]


@pytest.fixture
def keyword_bundle(tmp_path: Path) -> BundleFactory:
    """A copy of the keyword model, configured (``delay_s``, ``mode``) through config.json."""

    def make(name: str = "keyword", **config: Any) -> Path:
        target = tmp_path / "bundles" / name
        shutil.copytree(FIXTURES / "keyword_bundle", target)
        if config:
            (target / "config.json").write_text(json.dumps(config))
        return target

    return make


def add_sentiment_task(ctx: Context, tmp_path: Path, *, perturb: bool = True) -> str:
    """The sentiment task with one small dataset, ``mini`` (and its perturbed copies)."""
    create_task(ctx, sentiment_spec())
    add_dataset(
        ctx,
        task_id="sentiment",
        name="mini",
        round=1,
        perturb=perturb,
        path=write_jsonl(tmp_path / "mini.jsonl", sentiment_rows()),
    )
    return "sentiment"


@pytest.fixture
def sentiment_task(ctx: Context, tmp_path: Path) -> str:
    """The sentiment task with one small dataset and its perturbed copies."""
    return add_sentiment_task(ctx, tmp_path)


def submit(ctx: Context, bundle_dir: Path, *, task_id: str = "sentiment") -> int:
    """Store a bundle as a submission (as the upload endpoint will) and return its id."""
    archive, digest = package_bundle(bundle_dir, bundle_dir.parent / f"{bundle_dir.name}.tar.gz")
    key = f"bundles/{digest}.tar.gz"
    ctx.artifacts.put_file(key, archive)
    manifest = load_manifest(bundle_dir)
    with ctx.db.session() as session:
        submission = Submission(
            task_id=task_id,
            name=manifest.name,
            bundle_sha256=digest,
            artifact_key=key,
            manifest=manifest.model_dump(mode="json"),
        )
        session.add(submission)
        session.flush()
        return submission.id
