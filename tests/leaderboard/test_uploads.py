"""Resumable uploads: chunks at offsets, resuming, checksums, limits, quota, submission."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from evalboard.core.tables import Job, Submission
from leaderboard import create_app
from submission_sandbox.bundle import package_bundle
from tests.conftest import make_settings
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio

HANDLER = """
class Model:
    def __init__(self, model_dir):
        pass

    def predict(self, batch):
        return [{"label": "positive", "probs": {"negative": 0.1, "neutral": 0.1,
                 "positive": 0.8}} for _ in batch]
"""


def make_bundle(root: Path, name: str = "always-positive", task: str = TASK) -> Path:
    bundle = root / name
    bundle.mkdir(parents=True)
    (bundle / "evalboard.yaml").write_text(
        f"name: {name}\ntask: {task}\nruntime: python\nentry: handler:Model\n"
    )
    (bundle / "handler.py").write_text(HANDLER)
    # Some weight to send in several chunks.
    (bundle / "weights.bin").write_bytes(random.Random(name).randbytes(120_000))
    archive, _ = package_bundle(bundle, root / f"{name}.tar.gz")
    return archive


async def _start(client: httpx.AsyncClient, archive: Path, **changes: object) -> dict:
    body = {
        "task": TASK,
        "filename": archive.name,
        "size": archive.stat().st_size,
        "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
        **changes,
    }
    response = await client.post("/uploads", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def test_chunked_upload_resumes_and_submits(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    archive = make_bundle(tmp_path)
    data = archive.read_bytes()
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive)
        url = f"/uploads/{upload['id']}"
        first = await bob.patch(url, params={"offset": 0}, content=data[:40_000])
        assert first.json()["received"] == 40_000
        # The client lost the answer and sends from a wrong offset: told where to resume.
        wrong = await bob.patch(url, params={"offset": 10}, content=data[10:20])
        assert wrong.status_code == 409 and "offset 40000" in wrong.json()["detail"]
        state = (await bob.get(url)).json()
        assert state["received"] == 40_000 and not state["completed"]
        early = await bob.post(f"{url}/complete")
        assert early.status_code == 409
        rest = await bob.patch(url, params={"offset": 40_000}, content=data[40_000:])
        assert rest.json()["received"] == len(data)
        status = (await bob.post(f"{url}/complete")).json()
        again = (await bob.post(f"{url}/complete")).json()
    assert again["id"] == status["id"]
    assert status["name"] == "always-positive" and status["user"] == "bob"
    assert {job["status"] for job in status["jobs"]} == {"queued"}
    with seeded.ctx.db.session() as session:
        submission = session.get(Submission, status["id"])
        assert submission is not None
        jobs = session.scalars(select(Job).where(Job.submission_id == submission.id)).all()
    visible_to_bob = len(status["jobs"])
    assert len(jobs) == visible_to_bob == 9  # every dataset, hidden and copies included
    assert seeded.ctx.artifacts.exists(submission.artifact_key)
    assert not seeded.ctx.artifacts.exists(f"uploads/{upload['id']}/{0:015d}")


async def test_a_corrupted_upload_is_refused(app: FastAPI, seeded: Seeded, tmp_path: Path) -> None:
    archive = make_bundle(tmp_path)
    data = bytearray(archive.read_bytes())
    data[100] ^= 0xFF
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive)
        await bob.patch(f"/uploads/{upload['id']}", params={"offset": 0}, content=bytes(data))
        response = await bob.post(f"/uploads/{upload['id']}/complete")
    assert response.status_code == 400 and "Upload it again" in response.json()["detail"]


async def test_more_bytes_than_announced_are_refused(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    archive = make_bundle(tmp_path)
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive, size=100)
        response = await bob.patch(
            f"/uploads/{upload['id']}", params={"offset": 0}, content=archive.read_bytes()
        )
        assert response.status_code == 413
        assert (await bob.get(f"/uploads/{upload['id']}")).json()["received"] == 0


async def test_size_limit_and_archive_type_are_checked_first(
    seeded: Seeded, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path / "small")
    settings.max_upload_bytes = 1000
    app = create_app(
        type(seeded.ctx)(settings=settings, db=seeded.ctx.db, artifacts=seeded.ctx.artifacts)
    )
    archive = make_bundle(tmp_path)
    async with make_client(app, seeded.tokens["bob"]) as bob:
        body = {"task": TASK, "filename": "m.tar.gz", "size": 5000, "sha256": "0" * 64}
        too_big = await bob.post("/uploads", json=body)
        assert too_big.status_code == 413 and "1000" in too_big.json()["detail"]
        not_archive = await bob.post("/uploads", json={**body, "filename": "m.exe", "size": 10})
        assert not_archive.status_code == 400
    assert archive.exists()


async def test_a_bundle_for_another_task_is_refused(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    archive = make_bundle(tmp_path, task="sentiment-b")
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive)
        await bob.patch(
            f"/uploads/{upload['id']}", params={"offset": 0}, content=archive.read_bytes()
        )
        response = await bob.post(f"/uploads/{upload['id']}/complete")
    assert response.status_code == 400 and "sentiment-b" in response.json()["detail"]


async def test_a_prompt_naming_a_field_the_task_lacks_is_refused(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    """Before, it was accepted and crashed on every example of every job."""
    bundle = tmp_path / "prompted"
    (bundle / "model").mkdir(parents=True)
    (bundle / "model" / "config.json").write_text("{}")
    (bundle / "evalboard.yaml").write_text(
        f"name: prompted\ntask: {TASK}\nruntime: transformers\nmodel: model\n"
        'prompt: "Review: {review}"\n'
    )
    archive, _ = package_bundle(bundle, tmp_path / "prompted.tar.gz")
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive)
        await bob.patch(
            f"/uploads/{upload['id']}", params={"offset": 0}, content=archive.read_bytes()
        )
        response = await bob.post(f"/uploads/{upload['id']}/complete")
    assert response.status_code == 400, response.text
    assert "{review}" in response.json()["detail"] and "statement" in response.json()["detail"]
    with seeded.ctx.db.session() as session:
        assert session.scalar(select(Submission).where(Submission.name == "prompted")) is None


async def test_daily_quota_excludes_platform_faults(seeded: Seeded, tmp_path: Path) -> None:
    seeded.ctx.settings.daily_upload_quota = 2  # alice made 3 today; one was our fault
    with seeded.ctx.db.session() as session:
        submission = session.get(Submission, seeded.submissions["broken-model"])
        assert submission is not None
        submission.platform_fault = True
    app = create_app(seeded.ctx)
    archive = make_bundle(tmp_path)
    async with make_client(app, seeded.tokens["alice"]) as alice:
        refused = await alice.post(
            "/uploads",
            json={"task": TASK, "filename": archive.name, "size": 10, "sha256": "0" * 64},
        )
    assert refused.status_code == 429 and "quota of 2" in refused.json()["detail"]
    seeded.ctx.settings.daily_upload_quota = 3
    async with make_client(app, seeded.tokens["alice"]) as alice:
        await _start(alice, archive)


@pytest.mark.parametrize(("who", "status"), [(None, 401), ("annie", 403)])
async def test_anonymous_and_annotators_may_not_upload(
    app: FastAPI, seeded: Seeded, tmp_path: Path, who: str | None, status: int
) -> None:
    body = {"task": TASK, "filename": "m.tar.gz", "size": 10, "sha256": "0" * 64}
    async with make_client(app, seeded.tokens[who] if who else None) as client:
        assert (await client.post("/uploads", json=body)).status_code == status


async def test_someone_elses_upload_is_not_found(
    app: FastAPI, seeded: Seeded, tmp_path: Path
) -> None:
    archive = make_bundle(tmp_path)
    async with make_client(app, seeded.tokens["bob"]) as bob:
        upload = await _start(bob, archive)
    async with make_client(app, seeded.tokens["alice"]) as alice:
        url = f"/uploads/{upload['id']}"
        assert (await alice.get(url)).status_code == 404
        assert (await alice.patch(url, params={"offset": 0}, content=b"x")).status_code == 404


async def test_a_chunk_written_twice_at_once_is_refused_plainly_at_completion(
    seeded: Seeded, tmp_path: Path
) -> None:
    """Two requests with the chunk at one offset: the later stored over the earlier, the
    earlier recorded. The chunks then do not join; completing says so (not a server error
    that keeps the upload, and one of the user's open-upload slots, until it expires)."""
    from collections.abc import AsyncIterator

    from evalboard.core.errors import Conflict, UsageError
    from evalboard.core.states import UploadState
    from leaderboard.accounts import principal_for_token
    from leaderboard.schemas import UploadCreate
    from leaderboard.uploads import complete_upload, create_upload, get_upload, write_chunk

    ctx = seeded.ctx
    bob = principal_for_token(ctx, seeded.tokens["bob"])
    assert bob is not None
    data = make_bundle(tmp_path).read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    upload = create_upload(
        ctx, bob, UploadCreate(task=TASK, filename="m.tar.gz", size=len(data), sha256=sha256)
    )

    async def once(body: bytes) -> AsyncIterator[bytes]:
        yield body

    async def overtaken() -> AsyncIterator[bytes]:
        yield data[:90_000]
        # Meanwhile another request writes a shorter chunk at the same offset, recorded first.
        await write_chunk(ctx, bob, upload.id, offset=0, chunks=once(data[:40_000]))

    with pytest.raises(Conflict, match="at the same time"):
        await write_chunk(ctx, bob, upload.id, offset=0, chunks=overtaken())
    rest = await write_chunk(ctx, bob, upload.id, offset=40_000, chunks=once(data[40_000:]))
    assert rest.received == len(data)
    with pytest.raises(UsageError, match="do not join into the"):
        complete_upload(ctx, bob, upload.id)
    assert get_upload(ctx, bob, upload.id).state == UploadState.REJECTED
