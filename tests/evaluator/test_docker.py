"""evaluate() in the real docker sandbox: isolation recorded, image digest, cgroup memory."""

from __future__ import annotations

from typing import Any

import pytest

from evalboard.core.settings import get_settings
from evaluator import evaluate
from tests.evaluator.conftest import BundleFactory
from tests.evaluator.test_evaluation import _sets
from tests.helpers.tasks import sentiment_spec

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def engine() -> Any:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        client.images.get(get_settings().base_image)
    except Exception as exc:  # any failure means: no usable engine here
        pytest.skip(
            f"no Docker engine with the runtime image ({exc}); run `bash docker/bootstrap.sh`"
        )
    return client


def test_docker_results_record_the_image_and_the_cgroup_peak(
    engine: Any, keyword_bundle: BundleFactory
) -> None:
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets(),
        sandbox="docker",
        measure_energy=False,
    )
    assert not result.failed
    mini = result.outcome("mini").metrics
    assert mini is not None and mini.memory_gib is not None and mini.memory_gib > 0
    assert result.outcome("robustness-mini").metrics is not None
    provenance = result.provenance
    assert provenance.sandbox_isolating and provenance.sandbox == "docker"
    assert provenance.image_digest is not None and provenance.image_digest.startswith("sha256:")


def test_a_crash_in_docker_keeps_the_reason_and_log(
    engine: Any, keyword_bundle: BundleFactory
) -> None:
    result = evaluate(
        keyword_bundle(mode="crash"),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        sandbox="docker",
        measure_energy=False,
    )
    failure = result.outcome("mini").failure
    assert failure is not None and failure.reason == "crashed"
    assert "deliberate crash" in failure.log_tail + failure.message
