"""The real docker sandbox: evaluate() records isolation, image digest, cgroup memory and
the sandbox's energy;
a worker's reaper removes the containers of owners that died."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from evalboard.core.context import Context
from evalboard.core.settings import get_settings
from evaluator import RunOptions, WorkerPool, evaluate
from tests.evaluator.conftest import BundleFactory
from tests.evaluator.test_evaluation import _sets
from tests.helpers.engine import docker_engine_or_skip
from tests.helpers.tasks import sentiment_spec

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def engine() -> Any:
    return docker_engine_or_skip()


def test_docker_results_record_the_image_and_the_cgroup_peak(
    engine: Any, keyword_bundle: BundleFactory
) -> None:
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets(),
        options=RunOptions(sandbox="docker"),
    )
    assert not result.failed
    mini = result.outcome("mini").metrics
    assert mini is not None and mini.memory_gib is not None and mini.memory_gib > 0
    assert result.outcome("robustness-mini").metrics is not None
    provenance = result.provenance
    assert provenance.sandbox_isolating and provenance.sandbox == "docker"
    assert provenance.image_digest is not None and provenance.image_digest.startswith("sha256:")
    # The sandbox's own energy: its cgroup CPU time priced by the machine's power model.
    assert mini.energy_j_per_1k is not None and mini.energy_j_per_1k > 0
    power = provenance.power
    assert power is not None and mini.energy_method == power.method
    assert result.summary.energy_j_per_1k is not None and result.summary.energy_method
    if power.method == "estimated":  # no readable RAPL here: codecarbon's TDP per CPU
        assert power.tdp_w and power.cpus and power.watts_per_cpu == power.tdp_w / power.cpus
        assert mini.cpu_per_example_s is not None
        assert mini.energy_j_per_1k == pytest.approx(
            mini.cpu_per_example_s * 1000 * power.watts_per_cpu
        )
    else:
        assert power.rapl_zones


def test_a_crash_in_docker_keeps_the_reason_and_log(
    engine: Any, keyword_bundle: BundleFactory
) -> None:
    result = evaluate(
        keyword_bundle(mode="crash"),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="docker", measure_energy=False),
    )
    failure = result.outcome("mini").failure
    assert failure is not None and failure.reason == "crashed"
    assert "deliberate crash" in failure.log_tail + failure.message


def _sandbox_container(engine: Any, owner_pid: int) -> Any:
    """A sleeping container labelled as a sandbox of ``owner_pid`` on this machine."""
    return engine.containers.run(
        get_settings().base_image,
        ["sleep", "600"],
        detach=True,
        network_mode="none",
        labels={
            "org.evalboard.sandbox": "docker",
            "org.evalboard.owner": f"{socket.gethostname()}:{owner_pid}",
            "org.evalboard.deadline": f"{time.time() + 3600:.0f}",  # far off: only the owner
        },
    )


def test_a_pool_reaper_cycle_removes_the_containers_of_dead_owners(
    engine: Any, ctx: Context
) -> None:
    import docker

    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(finished.stdout)
    orphan = _sandbox_container(engine, dead_pid)
    live = _sandbox_container(engine, os.getpid())
    try:
        WorkerPool(ctx, concurrency=1).reap()

        with pytest.raises(docker.errors.NotFound):
            engine.containers.get(orphan.id)
        engine.containers.get(live.id)  # its owner (this process) is alive: kept
    finally:
        for container in (orphan, live):
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass


def _gvisor_or_skip(engine: Any) -> None:
    from submission_sandbox import runsc_problem

    problem = runsc_problem(engine)
    if problem is not None:
        pytest.skip(f"{problem}; run `bash docker/bootstrap.sh` as root")


@pytest.mark.gvisor
def test_auto_runs_in_gvisor_and_the_result_says_so(
    engine: Any, keyword_bundle: BundleFactory
) -> None:
    _gvisor_or_skip(engine)
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="auto", measure_energy=False),
    )
    assert not result.failed
    assert result.provenance.sandbox == "gvisor" and result.provenance.sandbox_isolating


@pytest.mark.gvisor
def test_a_job_records_the_sandbox_auto_chose(
    engine: Any, ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    """The server's path: a job with the default sandbox stores what actually ran it."""
    from sqlalchemy import select

    from evalboard.core.tables import Result
    from evaluator import enqueue_submission, run_job
    from tests.evaluator.conftest import submit

    _gvisor_or_skip(engine)
    submission = submit(ctx, keyword_bundle())
    first = enqueue_submission(ctx, submission)[0]
    assert run_job(ctx, first, sandbox="auto") == "finished"
    with ctx.db.session() as session:
        stored = session.scalars(select(Result).where(Result.job_id == first)).one()
        provenance, metrics = stored.provenance, stored.metrics
    assert provenance is not None and provenance["sandbox"] == "gvisor"
    # The stored result keeps the sandbox's energy and how it was worked out.
    assert metrics["energy_j_per_1k"] > 0
    assert provenance["power"]["method"] == metrics["energy_method"]
