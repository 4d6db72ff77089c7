"""What ``auto`` chooses for a run: gVisor's two walls, except for a bundle given a GPU.

The engine is an injected stand-in that answers ``info()`` as dockerd does (its
``Runtimes``), so the choice is tested for a GPU worker on a machine without one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.limits import SandboxLimits
from submission_sandbox import (
    RUNSC_ARGS,
    DockerSandbox,
    GvisorSandbox,
    choose_default_sandbox,
    load_manifest,
    open_sandbox,
    resolve_sandbox,
    run_gets_gpu,
)

RUNSC = {"path": "/usr/bin/runsc", "runtimeArgs": list(RUNSC_ARGS)}
NVIDIA = {"path": "nvidia-container-runtime"}


class _Engine:
    """Answers ``info()`` with the given runtimes, as dockerd lists its daemon.json's."""

    def __init__(self, **runtimes: dict[str, Any]) -> None:
        self.runtimes = {"runc": {"path": "runc"}, **runtimes}

    def info(self) -> dict[str, Any]:
        return {"Runtimes": self.runtimes}


def _bundle(root: Path, *, gpus: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evalboard.yaml").write_text(
        f"name: gpu-probe\ntask: sentiment\nruntime: python\nentry: handler:Model\ngpus: {gpus}\n"
    )
    (root / "handler.py").write_text("class Model:\n    pass\n")
    return root


GPU_LIMITS = SandboxLimits(gpus=1)


def test_a_bundle_given_a_gpu_goes_to_docker_with_one_line_saying_why() -> None:
    kind, note = choose_default_sandbox(_Engine(runsc=RUNSC, nvidia=NVIDIA), gpu=True)
    assert kind == "docker"
    assert note is not None and "GPU" in note and "gVisor" in note and "\n" not in note


@pytest.mark.parametrize(
    ("gpus", "limits", "engine", "kind"),
    [
        (1, GPU_LIMITS, _Engine(runsc=RUNSC, nvidia=NVIDIA), "docker"),
        # No GPU on this engine: docker would run it on the CPU too, so both walls stay.
        (1, GPU_LIMITS, _Engine(runsc=RUNSC), "gvisor"),
        # The task's limits give no GPU: the same.
        (1, SandboxLimits(gpus=0), _Engine(runsc=RUNSC, nvidia=NVIDIA), "gvisor"),
        (0, GPU_LIMITS, _Engine(runsc=RUNSC, nvidia=NVIDIA), "gvisor"),
        (1, GPU_LIMITS, _Engine(nvidia=NVIDIA), "docker"),
        (0, GPU_LIMITS, _Engine(), "docker"),
    ],
)
def test_auto_chooses_by_the_bundle_its_limits_and_the_engine(
    tmp_path: Path, gpus: int, limits: SandboxLimits, engine: _Engine, kind: str
) -> None:
    bundle = _bundle(tmp_path / "b", gpus=gpus)
    manifest = load_manifest(bundle)
    assert resolve_sandbox("auto", manifest=manifest, limits=limits, client=engine) == kind


def test_a_gpu_bundle_opened_under_auto_is_a_docker_sandbox_not_gvisors_refusal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = _Engine(runsc=RUNSC, nvidia=NVIDIA)
    bundle = _bundle(tmp_path / "b", gpus=1)
    with caplog.at_level(logging.WARNING, logger="submission_sandbox.gvisor_sandbox"):
        box = open_sandbox(bundle, kind="auto", limits=GPU_LIMITS, client=engine)
        again = open_sandbox(bundle, kind="auto", limits=GPU_LIMITS, client=engine)
    assert type(box) is DockerSandbox and not isinstance(box, GvisorSandbox)
    assert box.kind == again.kind == "docker"  # what the result's provenance records
    said = [r.getMessage() for r in caplog.records if "GPU" in r.getMessage()]
    assert len(said) <= 1  # once per process, not once per job (an earlier test may have)
    # The same bundle without a GPU to give keeps gVisor.
    cpu_only = open_sandbox(bundle, kind="auto", limits=GPU_LIMITS, client=_Engine(runsc=RUNSC))
    assert type(cpu_only) is GvisorSandbox


def test_an_injected_gpu_answer_is_used_as_the_docker_sandbox_uses_it(tmp_path: Path) -> None:
    manifest = load_manifest(_bundle(tmp_path / "b", gpus=1))
    engine = _Engine(runsc=RUNSC)  # would say no GPU
    assert run_gets_gpu(manifest, GPU_LIMITS, client=engine, gpu_available=True)
    chosen = resolve_sandbox(
        "auto", manifest=manifest, limits=GPU_LIMITS, client=engine, gpu_available=True
    )
    assert chosen == "docker"


def test_no_bundle_or_an_unreadable_manifest_is_no_gpu(tmp_path: Path) -> None:
    engine = _Engine(runsc=RUNSC, nvidia=NVIDIA)
    assert not run_gets_gpu(None, GPU_LIMITS, client=engine)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "evalboard.yaml").write_text("name: [unclosed\n")
    # The sandbox says what is wrong with the bundle when it starts; auto does not.
    assert not run_gets_gpu(None, GPU_LIMITS, client=engine, gpu_available=True)
    chosen = open_sandbox(broken, kind="auto", limits=GPU_LIMITS, client=engine).kind
    assert chosen == "gvisor"
