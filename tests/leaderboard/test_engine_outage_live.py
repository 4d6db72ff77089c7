"""The issue's scenario, end to end: the Docker engine's socket goes away during the
evaluation of two uploaded models, and both are ranked afterwards with the perf they have
without the fault, with no operator action.

A real ``evalboard serve`` (its inline pool, the docker sandbox) reaches the engine
through a socket proxy that the test stops and starts (the shared engine is never
touched). The issue's outage is 60 s; CI waits ``EVALBOARD_TEST_ENGINE_OUTAGE_S`` (default
5 s: the behaviour is the same after the first back-off period, and 60 s would add a
minute to every CI run). ``EVALBOARD_TEST_ENGINE_OUTAGE_S=60`` runs the issue's figure.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from evalboard.cli.upload import upload_bundle
from evalboard.core.context import Context
from evalboard.core.states import Role
from evalboard.core.tables import Job
from leaderboard.accounts import create_token, create_user
from tests.conftest import make_settings
from tests.evaluator.conftest import FIXTURES, add_sentiment_task
from tests.evaluator.test_platform_faults import _direct_perf, engine_proxy  # noqa: F401
from tests.helpers.socket_proxy import SocketProxy
from tests.leaderboard.conftest import serve

pytestmark = [pytest.mark.docker, pytest.mark.slow]

OUTAGE_S = float(os.environ.get("EVALBOARD_TEST_ENGINE_OUTAGE_S", "5"))


def _bundle(root: Path, name: str, **config: Any) -> Path:
    """The keyword model under its own name (``delay_s``: seconds per batch of two)."""
    target = root / name
    shutil.copytree(FIXTURES / "keyword_bundle", target)
    manifest = target / "evalboard.yaml"
    manifest.write_text(
        "\n".join(
            f"name: {name}" if line.startswith("name:") else line
            for line in manifest.read_text().splitlines()
        )
        + "\n"
    )
    (target / "config.json").write_text(json.dumps(config))
    return target


def _jobs(ctx: Context) -> list[Job]:
    with ctx.db.session() as session:
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
        session.expunge_all()
        return jobs


def test_two_uploaded_models_are_ranked_with_their_own_perf_after_the_engine_was_gone(
    tmp_path: Path,
    engine_proxy: SocketProxy,  # noqa: F811 (the fixture of test_platform_faults)
) -> None:
    settings = make_settings(tmp_path)
    ctx = Context.from_settings(settings)
    create_user(ctx, "rita", password="correct-horse-battery", roles=(Role.RESEARCHER,))
    token = create_token(ctx, "rita")[0]
    add_sentiment_task(ctx, tmp_path, perturb=False)
    bundles = [
        _bundle(tmp_path, "slow-keyword", delay_s=0.5),
        _bundle(tmp_path, "plain-keyword", mode="no_probs"),
    ]
    env = {
        **os.environ,  # DOCKER_HOST: the proxy
        "EVALBOARD_SANDBOX": "docker",
        "EVALBOARD_PLATFORM_BACKOFF_S": "0.5",
        "EVALBOARD_PLATFORM_BACKOFF_MAX_S": "2",
    }
    log = tmp_path / "serve.log"
    try:
        with serve(settings.data_dir, log, env=env) as (url, _process):
            for bundle in bundles:
                upload_bundle(bundle, server=url, token=token)
            deadline = time.monotonic() + 120
            while not any(job.status == "running" for job in _jobs(ctx)):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.05)
            engine_proxy.stop()  # mid-evaluation: the engine's socket is gone
            time.sleep(OUTAGE_S)
            assert all(job.status in ("queued", "running") for job in _jobs(ctx)), [
                (job.status, job.message) for job in _jobs(ctx)
            ]  # waiting, none failed
            engine_proxy.start()
            deadline = time.monotonic() + 180
            while True:
                board = httpx.get(f"{url}/tasks/sentiment/leaderboard", timeout=30).json()
                ranked = [row for row in board["rows"] if row["rank"] is not None]
                if len(ranked) == 2 and not board["pending"]:
                    break
                assert not [p for p in board["pending"] if p["status"] == "failed"], board
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        jobs = _jobs(ctx)
        assert [job.status for job in jobs] == ["finished", "finished"]
        assert sum(job.faults for job in jobs) >= 1  # the outage was met, and waited out
        # The figures of a fault-free run, in process: the two differ only in speed and
        # in giving probabilities, so one run gives both their perf.
        expected = _direct_perf(ctx, bundles[0], "sentiment")["mini"]
        assert {row["name"]: row["metrics"]["perf"] for row in ranked} == {
            bundle.name: pytest.approx(expected, abs=1e-12) for bundle in bundles
        }
        said = log.read_text()
        assert said.count("stops claiming") == 1, said[-3000:]
        assert said.count("answers again") == 1, said[-3000:]
    finally:
        ctx.db.dispose()
