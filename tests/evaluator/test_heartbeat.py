"""A worker's heartbeat: one row per live worker with the state of its parts, gone when
the worker stops or stops beating; an idle worker notices its engine go and come back
(and stops claiming meanwhile) without a job having to fail first."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.tables import WorkerBeat
from evaluator.jobs import faults
from evaluator.jobs.heartbeat import LIVE_BEATS, WorkerHeartbeat, live_workers
from tests.conftest import make_settings
from tests.core.test_artifacts_s3 import S3Server, s3_server  # noqa: F401
from tests.evaluator.test_platform_faults import engine_proxy  # noqa: F401
from tests.helpers.socket_proxy import SocketProxy


def _eventually(check: Callable[[], bool], within_s: float = 15.0) -> bool:
    # Beats are threads on a shared machine: wait for what must happen, never a fixed nap.
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_worker_is_live_while_it_beats_and_gone_when_it_stops(ctx: Context) -> None:
    with WorkerHeartbeat(ctx, sandbox="local", every_s=0.5) as heartbeat:
        (row,) = live_workers(ctx)
        assert (
            row.name == heartbeat.name == f"{socket.gethostname()}:{heartbeat.name.split(':')[1]}"
        )
        assert (row.engine, row.store) == ("unused", "ok")  # a local sandbox needs no engine
        first = row.seen_at
        # The thread keeps beating: a later row, and still the only live one.
        assert _eventually(lambda: [r.seen_at > first for r in live_workers(ctx)] == [True])
    assert live_workers(ctx) == []  # a clean stop removes its row


def test_a_worker_that_stops_beating_drops_out_by_itself(ctx: Context) -> None:
    silent = WorkerHeartbeat(ctx, sandbox="local", every_s=1.0)
    assert silent.beat().ready  # one beat, then silence (as a SIGKILLed worker)
    assert len(live_workers(ctx)) == 1
    time.sleep(1.0 * LIVE_BEATS + 0.2)
    assert live_workers(ctx) == []
    WorkerHeartbeat(ctx, sandbox="local", every_s=60).beat()  # another worker's beat
    with ctx.db.session() as session:  # sweeps the dead one's row
        assert list(session.scalars(select(WorkerBeat.name))) == [silent.name]


@pytest.mark.docker
def test_an_idle_worker_sees_its_engine_go_and_return_and_says_so_once_each(
    ctx: Context,
    engine_proxy: SocketProxy,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="evaluator")
    heartbeat = WorkerHeartbeat(ctx, sandbox="docker", every_s=60)
    assert heartbeat.beat().engine == "ok"
    engine_proxy.stop()
    for _ in range(2):
        found = heartbeat.beat()
        assert found.engine == "down" and not found.ready
        assert found.faults == (f"the Docker engine at {engine_proxy.url}",)
        assert faults.ENGINE.down and not faults.claimable(ctx)  # no claim meanwhile
        (row,) = live_workers(ctx)
        assert row.engine == "down"
    engine_proxy.start()
    assert heartbeat.beat().engine == "ok"
    assert not faults.ENGINE.down and faults.claimable(ctx)
    said = [r.getMessage() for r in caplog.records]
    assert sum("stops claiming" in line for line in said) == 1, said
    assert sum("answers again" in line for line in said) == 1, said
    heartbeat.stop()


def test_a_part_watch_says_once_each_way_and_cleans_up_on_return(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cleaned: list[bool] = []
    watch = faults.PartWatch(back="the store answers again", on_back=lambda: cleaned.append(True))
    caplog.set_level(logging.WARNING, logger="evaluator.jobs.faults")
    watch.went_down("the artifact store s3://b/x")
    assert not watch.check(lambda: "the artifact store s3://b/x")  # still away
    watch.went_down("the artifact store s3://b/x")
    assert watch.check(lambda: None) and not watch.down
    assert watch.check(lambda: "never asked: it is up") and cleaned == [True]
    said = [r.getMessage() for r in caplog.records]
    assert sum("stops claiming" in line for line in said) == 1, said
    assert sum("the store answers again" in line for line in said) == 1, said


@pytest.mark.slow  # s3fs retries each call a few times before it gives up
def test_a_worker_whose_store_is_gone_is_not_ready_and_claims_nothing(
    tmp_path: Path,
    s3_server: S3Server,  # noqa: F811 (the fixture of test_artifacts_s3)
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = Context.from_settings(
        make_settings(tmp_path).model_copy(update={"artifacts": s3_server.url})
    )
    caplog.set_level(logging.WARNING, logger="evaluator")
    heartbeat = WorkerHeartbeat(ctx, sandbox="local", every_s=60)
    try:
        assert heartbeat.beat().store == "ok"
        s3_server.process.terminate()  # the store goes away
        s3_server.process.wait(10)
        for _ in range(2):
            found = heartbeat.beat()
            assert found.store == "down" and not found.ready
            assert found.faults[0].startswith(f"the artifact store {s3_server.url}")
            assert faults.STORE.down and not faults.claimable(ctx)
            (row,) = live_workers(ctx)
            assert row.store == "down"
        said = [r.getMessage() for r in caplog.records]
        assert sum("stops claiming" in line for line in said) == 1, said
    finally:
        faults.STORE.came_back()  # leave this process's gate open for the next test
        ctx.db.dispose()
