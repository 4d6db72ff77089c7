"""The gvisor sandbox against the real engine: the kernel a model sees, the policy, what
peak memory and CPU mean under gVisor, the ``auto`` choice, and what gVisor refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalboard.core.errors import PlatformError
from evalboard.core.limits import SandboxLimits
from submission_sandbox import (
    DockerSandbox,
    GvisorSandbox,
    SandboxFailure,
    choose_default_sandbox,
    known_sandboxes,
    open_sandbox,
    resolve_sandbox,
)

pytestmark = pytest.mark.docker

MiB = 1024**2

#: A model that reports the kernel it runs on, and allocates (and touches) a known amount
#: of memory or burns a known amount of CPU when asked.
HANDLER = """
class Model:
    def __init__(self, model_dir):
        self.kept = []

    def predict(self, batch):
        text = batch[0]["text"] if batch else ""
        if text.startswith("alloc:"):
            block = bytearray(int(text[6:]) * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            self.kept.append(block)
        if text == "spin":  # fixed work, no system calls (gVisor's clocks are its own)
            total = 0
            for i in range(20_000_000):
                total += i
        kernel = open("/proc/version").read().strip()
        return [{"label": kernel} for _ in batch]
"""


def _bundle(root: Path, *, gpus: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evalboard.yaml").write_text(
        f"name: kernel-probe\ntask: sentiment\nruntime: python\nentry: handler:Model\n"
        f"gpus: {gpus}\n"
    )
    (root / "handler.py").write_text(HANDLER)
    return root


class _EngineWithout:
    """The real engine, as one whose daemon.json registers no runsc (an injected view)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def info(self) -> dict[str, Any]:
        info = dict(self._client.info())
        info["Runtimes"] = {k: v for k, v in info["Runtimes"].items() if k != "runsc"}
        return info

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _EngineWithGpu(_EngineWithout):
    """The real engine, as one that also lists NVIDIA's runtime (as on a GPU worker)."""

    def info(self) -> dict[str, Any]:
        info = dict(self._client.info())
        info["Runtimes"] = {**info["Runtimes"], "nvidia": {"path": "nvidia-container-runtime"}}
        return info


def test_a_model_sees_gvisors_kernel_under_gvisor_and_the_hosts_under_docker(
    tmp_path: Path, docker_client: Any, isolating_kind: str
) -> None:
    host_kernel = Path("/proc/version").read_text().strip()
    with open_sandbox(
        _bundle(tmp_path / "b"),
        kind=isolating_kind,
        client=docker_client,
        limits=SandboxLimits(timeout_s=60),
    ) as box:
        seen = box.predict([{"uid": "1", "text": "which kernel?"}])[0]["label"]
        runtime = docker_client.api.inspect_container(box.container_id)["HostConfig"]["Runtime"]
    if isolating_kind == "gvisor":
        assert seen.startswith("Linux version 4.4.0") and seen != host_kernel
        assert runtime == "runsc"
    else:
        assert seen == host_kernel
        assert runtime == "runc"


@pytest.mark.gvisor
def test_gvisor_gets_the_docker_policy_and_caps_processes_in_its_own_kernel(
    tmp_path: Path, docker_client: Any
) -> None:
    if choose_default_sandbox(docker_client)[0] != "gvisor":
        pytest.skip("the engine has no runsc runtime; run `bash docker/bootstrap.sh`")
    limits = SandboxLimits(cpus=1.5, memory="300m", timeout_s=60, pids=100, tmpfs="32m")
    with GvisorSandbox(_bundle(tmp_path / "b"), limits=limits, client=docker_client) as box:
        attrs = docker_client.api.inspect_container(box.container_id)
    host = attrs["HostConfig"]
    assert host["Runtime"] == "runsc"
    assert host["NetworkMode"] == "none" and attrs["Config"]["NetworkDisabled"] is True
    assert host["ReadonlyRootfs"] is True and host["Init"] is True
    assert host["Tmpfs"] == {"/tmp": f"rw,nosuid,nodev,size={32 * MiB},mode=1777"}
    assert attrs["Config"]["User"] == "10001:10001"
    assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == host["MemorySwap"] == 300 * MiB
    assert host["NanoCpus"] == 1_500_000_000
    assert [m["Destination"] for m in attrs["Mounts"]] == ["/run/evalboard"]
    assert attrs["Config"]["Labels"]["org.evalboard.sandbox"] == "gvisor"
    # The model's limit is enforced inside gVisor; the host cap is for the Sentry.
    assert host["Ulimits"] == [{"Name": "nproc", "Soft": 100, "Hard": 100}]
    assert host["PidsLimit"] > 100


def test_peak_memory_and_cpu_under_each_wall_track_a_known_allocation(
    tmp_path: Path, docker_client: Any, isolating_kind: str
) -> None:
    """The cgroup figures under gVisor: the model's memory plus the Sentry's own.

    Under runc the cgroup holds the model's processes; under runsc it holds the Sentry,
    which backs the model's memory with its memory file, so an allocation of N MiB shows
    as N MiB more in the peak, on top of a higher base (the Sentry itself).
    """
    allocate = 96
    box = open_sandbox(
        _bundle(tmp_path / "b"),
        kind=isolating_kind,
        client=docker_client,
        limits=SandboxLimits(memory="512m", timeout_s=90),
    )
    box.start()
    try:
        idle = box.usage()
        box.predict([{"uid": "1", "text": f"alloc:{allocate}"}])
        grown = box.usage()
        box.predict([{"uid": "2", "text": "spin"}])
        spun = box.usage()
    finally:
        box.close()
    assert idle.peak_memory_bytes and grown.peak_memory_bytes
    growth = (grown.peak_memory_bytes - idle.peak_memory_bytes) / MiB
    assert allocate * 0.95 <= growth <= allocate * 1.25, growth
    assert idle.peak_memory_bytes < 128 * MiB  # base: the runner (plus the Sentry)
    assert grown.cpu_seconds is not None and spun.cpu_seconds is not None
    assert 0.3 <= spun.cpu_seconds - grown.cpu_seconds <= 20


def test_auto_is_gvisor_where_the_engine_has_runsc_else_docker_with_a_reason(
    docker_client: Any,
) -> None:
    assert {"auto", "docker", "gvisor", "local"} <= set(known_sandboxes())
    kind, note = choose_default_sandbox(_EngineWithout(docker_client))
    assert kind == "docker"
    assert note is not None and "runsc" in note and "bootstrap.sh" in note
    kind, note = choose_default_sandbox(docker_client)
    if kind == "docker":
        pytest.skip(f"this engine has no usable runsc: {note}")
    assert (kind, note) == ("gvisor", None)
    assert resolve_sandbox("auto") == "gvisor"


def test_gvisor_without_runsc_is_a_platform_error_naming_the_fix(
    tmp_path: Path, docker_client: Any
) -> None:
    box = GvisorSandbox(
        _bundle(tmp_path / "b"),
        limits=SandboxLimits(timeout_s=30),
        client=_EngineWithout(docker_client),
    )
    with pytest.raises(PlatformError, match=r"bootstrap\.sh.*--sandbox docker"):
        box.start()
    box.close()


@pytest.mark.gvisor
def test_a_gpu_bundle_under_gvisor_is_refused_with_the_way_out(
    tmp_path: Path, docker_client: Any
) -> None:
    if choose_default_sandbox(docker_client)[0] != "gvisor":
        pytest.skip("the engine has no runsc runtime; run `bash docker/bootstrap.sh`")
    box = GvisorSandbox(
        _bundle(tmp_path / "b", gpus=1),
        limits=SandboxLimits(timeout_s=30, gpus=1),
        client=docker_client,
        gpu_available=True,  # as on a GPU worker: the engine would give one to runc
    )
    with pytest.raises(PlatformError, match="no GPU.*docker sandbox"):
        box.start()
    box.close()


@pytest.mark.gvisor
def test_under_auto_a_gpu_bundle_reaches_docker_asking_for_the_gpu_not_gvisors_refusal(
    tmp_path: Path, docker_client: Any
) -> None:
    if choose_default_sandbox(docker_client)[0] != "gvisor":
        pytest.skip("the engine has no runsc runtime; run `bash docker/bootstrap.sh`")
    box = open_sandbox(
        _bundle(tmp_path / "b", gpus=1),
        kind="auto",
        limits=SandboxLimits(timeout_s=60, gpus=1),
        client=_EngineWithGpu(docker_client),
    )
    assert type(box) is DockerSandbox and box.kind == "docker"
    try:
        box.start()
    except SandboxFailure as failure:
        # No GPU driver on this machine: the engine itself refuses the device request
        # that runc was given (on a GPU worker the model starts with its device).
        assert "capabilities: [[gpu]]" in failure.detail, failure.detail
    else:
        assert box.usage().gpu == "1 device"
    finally:
        box.close()
