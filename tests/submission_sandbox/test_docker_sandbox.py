"""The docker sandbox against the real engine: policy, images, resources, the reaper."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.limits import SandboxLimits
from evalboard.core.settings import get_settings
from evalboard.core.states import FailureReason
from submission_sandbox import (
    DockerSandbox,
    SandboxFailure,
    build_image,
    load_bundle,
    open_sandbox,
    reap_orphans,
)
from tests.helpers.sandbox_models import build_contract_image_bundle

pytestmark = pytest.mark.docker

HANDLER = """
import time

class Model:
    def __init__(self, model_dir):
        self.hog = None

    def predict(self, batch):
        if batch and batch[0].get("text") == "hog":
            self.hog = bytearray(64 * 1024 * 1024)
            for i in range(0, len(self.hog), 4096):
                self.hog[i] = 1
        if batch and batch[0].get("text") == "spin":
            end = time.process_time() + 0.5
            while time.process_time() < end:
                pass
        return [{"label": "positive"} for _ in batch]
"""


def _python_bundle(root: Path, name: str = "policy-probe") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evalboard.yaml").write_text(
        f"name: {name}\ntask: sentiment\nruntime: python\nentry: handler:Model\n"
    )
    (root / "handler.py").write_text(HANDLER)
    return root


def test_every_container_gets_the_whole_policy(tmp_path: Path, docker_client: Any) -> None:
    limits = SandboxLimits(cpus=1.5, memory="300m", timeout_s=60, pids=100, tmpfs="32m")
    with DockerSandbox(_python_bundle(tmp_path / "b"), limits=limits, client=docker_client) as box:
        attrs = docker_client.api.inspect_container(box.container_id)
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert attrs["Config"]["NetworkDisabled"] is True
        assert host["ReadonlyRootfs"] is True
        assert host["Tmpfs"] == {"/tmp": f"rw,nosuid,nodev,size={32 * 1024**2},mode=1777"}
        assert attrs["Config"]["User"] == "10001:10001"
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["PidsLimit"] == 100
        assert host["Memory"] == host["MemorySwap"] == 300 * 1024**2
        assert host["NanoCpus"] == 1_500_000_000
        assert host["Init"] is True
        assert host["Privileged"] is False
        assert not host["DeviceRequests"]
        assert [m["Destination"] for m in attrs["Mounts"]] == ["/run/evalboard"]
        assert attrs["Mounts"][0]["RW"] is False
        labels = attrs["Config"]["Labels"]
        assert labels["org.evalboard.sandbox"] == "docker"
        assert labels["org.evalboard.bundle"] == box.bundle.sha256  # type: ignore[union-attr]
        container_id = box.container_id
    assert not docker_client.containers.list(all=True, filters={"id": container_id})


def test_peak_memory_and_cpu_come_from_the_cgroup(tmp_path: Path, docker_client: Any) -> None:
    box = open_sandbox(
        _python_bundle(tmp_path / "b"),
        kind="docker",
        client=docker_client,
        limits=SandboxLimits(memory="512m", timeout_s=60),
    )
    box.start()
    try:
        idle = box.usage()
        box.predict([{"uid": "1", "text": "hog"}])
        box.predict([{"uid": "2", "text": "spin"}])
        busy = box.usage()
    finally:
        final = box.close()
    assert idle.peak_memory_bytes and busy.peak_memory_bytes
    assert busy.peak_memory_bytes - idle.peak_memory_bytes > 50 * 1024**2
    assert busy.cpu_seconds is not None and busy.cpu_seconds >= 0.5
    assert idle.startup_s is not None and 0 < idle.startup_s < 30
    assert final.peak_memory_bytes is not None


def test_images_are_tagged_by_bundle_digest_and_reused(tmp_path: Path, docker_client: Any) -> None:
    bundle = load_bundle(_python_bundle(tmp_path / "b", name="reuse-probe"))
    settings = get_settings()
    first = build_image(bundle, client=docker_client, base_image=settings.base_image, force=True)
    again = build_image(bundle, client=docker_client, base_image=settings.base_image)
    assert first.tag == f"evalboard/submission:{bundle.sha256[:40]}"
    assert (first.reused, again.reused) == (False, True)
    assert again.id == first.id


def test_a_missing_base_image_is_a_platform_error(tmp_path: Path, docker_client: Any) -> None:
    from evalboard.core.errors import PlatformError

    bundle = load_bundle(_python_bundle(tmp_path / "b"))
    with pytest.raises(PlatformError, match="bootstrap.sh"):
        build_image(bundle, client=docker_client, base_image="evalboard/no-such-image:0")


def test_the_reaper_removes_containers_whose_owner_died(docker_client: Any) -> None:
    base = get_settings().base_image
    dead_owner = f"{socket.gethostname()}:999999999"
    orphan = docker_client.containers.create(
        base,
        ["sleep", "600"],
        labels={
            "org.evalboard.sandbox": "docker",
            "org.evalboard.owner": dead_owner,
            "org.evalboard.deadline": str(time.time() + 600),
        },
    )
    alive = docker_client.containers.create(
        base,
        ["sleep", "600"],
        labels={
            "org.evalboard.sandbox": "docker",
            "org.evalboard.owner": f"elsewhere:{1}",
            "org.evalboard.deadline": str(time.time() + 600),
        },
    )
    try:
        removed = reap_orphans(docker_client)
        assert orphan.id in removed
        assert alive.id not in removed
    finally:
        for container in (orphan, alive):
            subprocess.run(["docker", "rm", "-f", container.id], capture_output=True, check=False)


def test_an_image_bundle_that_speaks_the_contract_runs(tmp_path: Path, docker_client: Any) -> None:
    """The docs' example model, built into an image, saved, and submitted as a tarball."""
    # The docs' own Dockerfile, with the offline base given as the docs say.
    bundle = build_contract_image_bundle(
        docker_client,
        tmp_path / "bundle",
        base_image=get_settings().base_image,
        tag="evalboard-test/contract-example:latest",
    )
    for channel in ("unix", "stdio"):
        with DockerSandbox(
            bundle, limits=SandboxLimits(timeout_s=60), client=docker_client, channel=channel
        ) as box:
            assert box.hello is not None and box.hello.name == "contract-example"
            outputs = box.predict(
                [{"uid": "1", "statement": "a great film"}, {"uid": "2", "statement": "awful"}]
            )
            # A model written to the contract is pipelined without knowing it.
            batches = [[{"uid": str(n), "statement": "good" if n % 2 else "bad"}] for n in range(6)]
            streamed = list(box.predict_stream(batches, in_flight=3))
            attrs = docker_client.api.inspect_container(box.container_id)
            assert attrs["Config"]["User"] == "10001:10001"
            assert attrs["HostConfig"]["ReadonlyRootfs"] is True
            assert box.image is not None and box.hello.image_digest == box.image.id
            assert box.image.id.startswith("sha256:")
        assert [o["label"] for o in outputs] == ["positive", "negative"]
        assert [b[0]["label"] for b in streamed] == ["negative", "positive"] * 3


def test_a_failed_run_keeps_its_log_after_the_container_is_gone(
    tmp_path: Path, docker_client: Any
) -> None:
    root = _python_bundle(tmp_path / "b", name="log-probe")
    (root / "handler.py").write_text(
        "import sys\nclass Model:\n    def __init__(self, d):\n"
        "        print('loading weights', flush=True)\n"
        "        sys.stderr.write('about to fail\\n')\n"
        "        raise SystemExit(7)\n"
    )
    box = DockerSandbox(root, limits=SandboxLimits(timeout_s=30), client=docker_client)
    with pytest.raises(SandboxFailure) as caught:
        box.start()
    assert caught.value.reason is FailureReason.CRASHED
    assert "SystemExit: 7" in caught.value.detail
    assert "about to fail" in caught.value.log_tail
    assert "loading weights" in box.log_tail()
    box.close()


def test_two_sandboxes_run_side_by_side(tmp_path: Path, docker_client: Any) -> None:
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        with DockerSandbox(
            _python_bundle(tmp_path / name),
            limits=SandboxLimits(timeout_s=60),
            client=docker_client,
        ) as box:
            results[name] = box.predict([{"uid": name, "text": "x"}])

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"a": [{"label": "positive"}], "b": [{"label": "positive"}]}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing to pin to")
def test_a_pinned_container_gets_its_cores_as_its_cpuset(
    tmp_path: Path, docker_client: Any
) -> None:
    bundle = _python_bundle(tmp_path / "bundle")
    limits = SandboxLimits(cpus=1, timeout_s=60)
    with open_sandbox(bundle, kind="docker", limits=limits, pin_cpus=True) as box:
        assert isinstance(box, DockerSandbox) and box.cpuset is not None
        host = docker_client.api.inspect_container(box.container_id)["HostConfig"]
        assert host["CpusetCpus"] == box.cpuset and host["NanoCpus"] == 1_000_000_000
