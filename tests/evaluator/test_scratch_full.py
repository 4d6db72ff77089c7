"""A worker whose scratch disk fills: the job fails as ``platform_error`` naming the scratch
root and its free space, writes no result and no artifact, and its scratch is cleaned.

The live test runs a real ``evalboard worker`` (polling the database) whose ``TMPDIR`` is
a small tmpfs mounted by the test, and a bundle too big to unpack there.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.scratch import scratch_full
from evalboard.core.tables import Job, Result, Submission
from evaluator import enqueue_submission
from tests.evaluator.conftest import BundleFactory, submit
from tests.helpers.tmpfs import tmpfs

EVALBOARD = Path(sys.executable).parent / "evalboard"


def test_a_full_disk_is_found_through_wrapping_errors(tmp_path: Path) -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))
        except OSError as exc:
            raise tarfile.ExtractError("cannot extract model.py") from exc
    except tarfile.ExtractError as wrapped:
        said = scratch_full(wrapped, tmp_path)
    assert said is not None
    assert f"scratch space at {tmp_path} is full" in said
    assert " MiB free of " in said and "TMPDIR" in said


def test_other_errors_are_not_a_full_disk(tmp_path: Path) -> None:
    assert scratch_full(OSError(errno.EIO, "I/O error"), tmp_path) is None
    assert scratch_full(ValueError("no"), tmp_path) is None
    assert scratch_full(RuntimeError("no room"), tmp_path) is None


def test_a_spent_quota_is_a_full_disk_too(tmp_path: Path) -> None:
    assert scratch_full(OSError(errno.EDQUOT, "Disk quota exceeded"), tmp_path) is not None


def test_a_worker_whose_scratch_fills_fails_the_job_as_platform_error_and_cleans_up(
    tmp_path: Path, ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    bundle = keyword_bundle()
    # Random bytes do not compress: the archive is stored, but unpacking it needs 512 KiB.
    (bundle / "weights.bin").write_bytes(os.urandom(512 * 1024))
    submission = submit(ctx, bundle)
    with tmpfs(tmp_path / "scratch", "size=128k") as scratch:
        env = {
            **os.environ,
            "TMPDIR": str(scratch),
            "EVALBOARD_DATA_DIR": str(ctx.settings.data_dir),
            "EVALBOARD_ARTIFACTS": ctx.settings.artifacts,
            "EVALBOARD_SANDBOX": "local",
        }
        log = tmp_path / "worker.log"
        with log.open("wb") as output:
            worker = subprocess.Popen(
                [str(EVALBOARD), "worker", "--concurrency", "1"],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            created = enqueue_submission(ctx, submission)
            deadline = time.monotonic() + 60
            while True:
                with ctx.db.session() as session:
                    statuses = list(session.scalars(select(Job.status)))
                if set(statuses) == {"failed"}:
                    break
                assert time.monotonic() < deadline, (statuses, log.read_text()[-3000:])
                time.sleep(0.1)
        finally:
            worker.terminate()
            worker.wait(30)
        leftovers = sorted(entry.name for entry in scratch.iterdir())
    assert leftovers == []  # every job's scratch folder was removed
    with ctx.db.session() as session:
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
        assert [job.id for job in jobs] == created
        for job in jobs:
            assert job.reason == "platform_error", job.message
            assert job.message is not None
            assert f"scratch space at {scratch} is full" in job.message
            assert " MiB free of 0.1 MiB" in job.message  # the 128 KiB tmpfs
            assert job.attempts == 1 and job.lease_owner is None  # not retried into the wall
        assert list(session.scalars(select(Result))) == []
        record = session.get(Submission, submission)
        assert record is not None and record.platform_fault  # not the researcher's quota
    predictions = Path(ctx.settings.artifacts) / "predictions"
    assert not predictions.exists() or list(predictions.rglob("*")) == []
    said = log.read_text()
    assert "scratch space" in said and "Traceback" not in said
