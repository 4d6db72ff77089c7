"""Fixtures for the loop: a sentiment task, accounts, target submissions, a fake pool."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from datasets_registry import add_dataset, create_task
from datasets_registry.taskspec import parse_task_spec
from evalboard.core.context import Context
from evalboard.core.tables import Submission, User
from leaderboard.loop import TargetPool
from tests.helpers.tasks import QA, sentiment_rows, sentiment_spec, write_jsonl
from tests.loop.fakes import FakeFactory

# Model bundles, not tests (--doctest-modules would import their handler.py files).
collect_ignore_glob = ["fixtures/*"]


@dataclass(frozen=True)
class People:
    owner: int
    alice: int  # annotator who writes examples
    validators: tuple[int, int, int]


@pytest.fixture
def task(ctx: Context, tmp_path: Path) -> str:
    """The sentiment task with one static dataset (round 0)."""
    create_task(ctx, sentiment_spec())
    add_dataset(
        ctx,
        task_id="sentiment",
        name="static",
        path=write_jsonl(tmp_path / "static.jsonl", sentiment_rows()),
    )
    return "sentiment"


@pytest.fixture
def qa_task(ctx: Context) -> str:
    create_task(ctx, parse_task_spec(QA))
    return "qa"


def add_users(ctx: Context, *names: str) -> list[int]:
    with ctx.db.session() as session:
        users = [User(name=name) for name in names]
        session.add_all(users)
        session.flush()
        return [user.id for user in users]


@pytest.fixture
def people(ctx: Context) -> People:
    owner, alice, v1, v2, v3 = add_users(ctx, "owner", "alice", "val1", "val2", "val3")
    return People(owner, alice, (v1, v2, v3))


def add_submission(ctx: Context, task_id: str, name: str) -> int:
    """A submission row (its bundle is never opened: the pool uses a fake factory)."""
    with ctx.db.session() as session:
        submission = Submission(
            task_id=task_id,
            name=name,
            bundle_sha256="0" * 64,
            artifact_key=f"bundles/{name}.tar.gz",
            manifest={"name": name},
        )
        session.add(submission)
        session.flush()
        return submission.id


@pytest.fixture
def targets(ctx: Context, task: str) -> list[int]:
    return [add_submission(ctx, task, "keyword-a"), add_submission(ctx, task, "keyword-b")]


@pytest.fixture
def factory() -> FakeFactory:
    return FakeFactory()


@pytest.fixture
def pool(factory: FakeFactory) -> Iterator[TargetPool]:
    target_pool = TargetPool(factory)
    yield target_pool
    target_pool.close()
