"""Real models on a real (SQLite) platform: bundles submitted as uploads are, jobs run inline."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from datasets_registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.states import JobStatus, Role
from evaluator import claim_next, execute_claimed
from leaderboard.accounts import create_token, create_user, grant_role, principal_for
from leaderboard.submissions import create_submission
from submission_sandbox import load_manifest, package_bundle
from tests.helpers.tasks import sentiment_spec, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"

STATIC = [
    ("s1", "The food was wonderful and she loved the staff.", "positive"),
    ("s2", "He said the service was terrible.", "negative"),
    ("s3", "The hotel is on Main Street in Chicago.", "neutral"),
    ("s4", "I adore this little cafe.", "positive"),
    ("s5", "A dreadful, boring film.", "negative"),
    ("s6", "The train leaves at noon.", "neutral"),
]


@dataclass(frozen=True)
class Platform:
    ctx: Context
    task: str
    tokens: dict[str, str]
    users: dict[str, int]
    submissions: dict[str, int]


def bundle(tmp_path: Path, name: str) -> Path:
    """A fresh copy of a fixture bundle (``vader`` or ``keyword``)."""
    target = tmp_path / "bundles" / name
    shutil.copytree(FIXTURES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def submit(ctx: Context, user_id: int, bundle_dir: Path, task_id: str = "sentiment") -> int:
    """Store a bundle as the upload endpoint does, and queue its jobs."""
    archive, digest = package_bundle(bundle_dir, bundle_dir.parent / f"{bundle_dir.name}.tar.gz")
    key = f"bundles/{digest}.tar.gz"
    ctx.artifacts.put_file(key, archive)
    submission = create_submission(
        ctx,
        principal_for(ctx, user_id),
        task_id=task_id,
        manifest=load_manifest(bundle_dir).model_dump(mode="json"),
        bundle_sha256=digest,
        artifact_key=key,
    )
    return submission.id


def run_queued_jobs(ctx: Context) -> list[JobStatus | None]:
    """The inline worker, synchronously: run queued jobs until none is left."""
    statuses = []
    while (job_id := claim_next(ctx, owner="test-worker")) is not None:
        statuses.append(execute_claimed(ctx, job_id, owner="test-worker", sandbox="local"))
    return statuses


def build_platform(ctx: Context, tmp_path: Path, *, annotators: int = 4) -> Platform:
    """The sentiment task owned by ``owner``, a static set, annotators, and two real models
    (VADER and a keyword model) evaluated on it."""
    names = ["owner", "rita", "alice", "val1", "val2", "val3"][: 2 + annotators]
    users = {}
    for name in names:
        roles = (Role.RESEARCHER,) if name in ("owner", "rita") else (Role.ANNOTATOR,)
        users[name] = create_user(ctx, name, password="correct-horse-battery", roles=roles).id
    create_task(ctx, sentiment_spec(), owner_id=users["owner"])
    grant_role(ctx, "owner", Role.OWNER, task_id="sentiment")
    rows = [{"uid": uid, "statement": text, "label": label} for uid, text, label in STATIC]
    add_dataset(
        ctx, task_id="sentiment", name="static", path=write_jsonl(tmp_path / "static.jsonl", rows)
    )
    submissions = {
        name: submit(ctx, users["rita"], bundle(tmp_path, name)) for name in ("vader", "keyword")
    }
    assert set(run_queued_jobs(ctx)) == {JobStatus.FINISHED}
    tokens = {name: create_token(ctx, name)[0] for name in names}
    return Platform(ctx, "sentiment", tokens, users, submissions)
