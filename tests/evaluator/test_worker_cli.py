"""`evalboard worker` without a broker: a process polling the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.tables import Job
from evaluator import enqueue_submission
from tests.evaluator.conftest import BundleFactory, submit

EVALBOARD = Path(sys.executable).parent / "evalboard"


def test_a_polling_worker_runs_jobs_and_stops_cleanly_on_sigterm(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(ctx.settings.data_dir),
        "EVALBOARD_SANDBOX": "local",
    }
    env.pop("EVALBOARD_BROKER_URL", None)
    submission = submit(ctx, keyword_bundle())
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [str(EVALBOARD), "worker", "--concurrency", "2"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        enqueue_submission(ctx, submission)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with ctx.db.session() as session:
                statuses = list(session.scalars(select(Job.status)))
            if statuses and all(status == "finished" for status in statuses):
                break
            time.sleep(0.1)
        assert statuses == ["finished"] * 3, log.read_text()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert "Worker polling" in log.read_text()
