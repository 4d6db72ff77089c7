"""The ``gvisor`` sandbox: the docker sandbox under gVisor's application kernel (runsc).

The first wall is the container (:mod:`submission_sandbox.docker_sandbox`: namespaces,
no network, read-only root, no capabilities, limits). Under ``runc`` a model's system
calls still reach the host's kernel, so one kernel bug or engine misconfiguration is a
step from the host. gVisor's Sentry answers them in user space instead: the second wall.
Same policy, same image, same channel; only the engine's runtime differs.

``auto`` (the default of ``EVALBOARD_SANDBOX``) is ``gvisor`` where the engine lists the
``runsc`` runtime, else ``docker``, with one line saying so. A bundle that would be given a
GPU (it asks for one, its limits allow one, and the engine has NVIDIA's runtime) goes to
``docker`` under ``auto``, also with one line: gVisor gives no GPU. Where the engine has no
GPU such a bundle runs on the CPU under either wall, so it keeps both.

:data:`GVISOR_VISIBLE_DIFFERENCES` lists what a model (or an operator reading its figures)
sees differently from ``docker``; the policy is the same. Every conformance case and every
hostile case but the fork bomb (``self_check.GVISOR_KNOWN_DIFFERENCES``) ends the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from evalboard.core.errors import PlatformError
from evalboard.core.limits import SandboxLimits
from submission_sandbox._failures import ExitInfo
from submission_sandbox.docker_sandbox import (
    DockerSandbox,
    docker_client,
    engine_gives_gpu,
    gpu_requested,
)
from submission_sandbox.manifest import Manifest
from submission_sandbox.sandbox import ModelHello, sandbox, sandbox_alias

__all__ = [
    "GVISOR_VISIBLE_DIFFERENCES",
    "RUNSC",
    "RUNSC_ARGS",
    "GvisorSandbox",
    "choose_default_sandbox",
    "gvisor_available",
    "run_gets_gpu",
    "runsc_problem",
]

#: The runtime's name in the engine's daemon.json (``docker/bootstrap.sh`` registers it).
RUNSC = "runsc"

#: What a model sees differently under gVisor than under runc (the self-check suites run
#: on both: tests/submission_sandbox/test_self_check.py).
GVISOR_VISIBLE_DIFFERENCES: dict[str, str] = {
    "kernel": "/proc/version and uname report gVisor's fixed 'Linux version 4.4.0', "
    "not the host's kernel",
    "peak_memory": "the cgroup holds the Sentry (gVisor's kernel) and the memory file that "
    "backs the model's memory: an allocation shows in full, on a base about 15 MiB higher "
    "(measured, a model touching 96 MiB: runc 10.1 -> 106.1 MiB, gVisor 25.2 -> 121.7 "
    "MiB); the memory limit applies to that sum. Each process costs far more: 60 idle "
    "forked Python children took +430 MB under runsc (a ptrace stub process per address "
    "space and the Sentry's own state), about nothing under runc",
    "oom": "the host kills the whole Sentry and the engine's OOMKilled mark is set only "
    "sometimes; SIGKILL with the cgroup's peak at the limit is read as oom as well",
    "cpu_seconds": "host CPU of the Sentry and the model together: equal to runc's for "
    "compute (a fixed loop: 0.80 s both), while the model's own clocks inside are "
    "gVisor's (a loop on time.process_time() read 1.0 s inside, 0.5 s in the cgroup)",
    "pids": "the model's process and thread limit is gVisor's RLIMIT_NPROC inside the "
    "sandbox (the Sentry's own uids); the host's pids limit caps the Sentry's threads and "
    "ptrace stubs at 16 per allowed process + 512, at most 4,096 (see "
    "self_check.GVISOR_KNOWN_DIFFERENCES for the fork bomb)",
    "proc_and_sys": "/proc and /sys are gVisor's own: /proc/self/cgroup is empty, /sys "
    "shows no host devices",
    "gpu": "no GPU: this runsc (Debian 0.0~20221219) has no usable nvproxy; a bundle that "
    "asks for a GPU fails with a platform error naming the docker sandbox",
    "speed": "every system call and page fault goes through the Sentry (runsc's ptrace "
    "platform): start-up to hello 0.50 s vs 0.19 s (echo model), a unix-socket message "
    "245 us vs 71 us, and the embedding-bag ONNX model's throughput at batch 32 0.39 of "
    "docker's (medians of 5-7 runs on a shared 2-core machine, benchmarks/results/sandbox.json)",
}

#: Host tasks (Sentry threads, ptrace stubs) the host's pids cgroup allows per process of
#: the model, and at most in all. Measured: 63 sleeping processes took 389 host tasks; a
#: fork bomb held at 64 processes leaks host threads on every failed fork (1,851 after a
#: few seconds and growing), so the cap bounds what it takes from the host's pid space
#: (32,768 here) before the Sentry is stopped.
SENTRY_TASKS_PER_PROCESS = 16
SENTRY_TASKS_CEILING = 4096

#: How close to the memory limit the cgroup's peak must come to count as an OOM kill.
_OOM_MARGIN_BYTES = 1024 * 1024

_logger = logging.getLogger(__name__)
_said: set[str] = set()


#: What ``docker/bootstrap.sh`` registers: no network inside runsc (Docker 20.10 refuses
#: runsc containers otherwise), and connecting to host unix sockets in the container's
#: mounts, so that the model reaches the channel's socket as under runc. The only host
#: socket in any of a sandbox's mounts is that one (the image's root holds none).
RUNSC_ARGS = ("--network=none", "--host-uds=open")


def runsc_problem(client: Any = None) -> str | None:
    """Why the engine cannot run the gvisor sandbox, or None when it can."""
    try:
        client = client or docker_client(timeout=10)
        runtimes = client.info().get("Runtimes") or {}
    except (PlatformError, OSError) as exc:
        return f"the Docker engine does not answer ({exc})"
    if RUNSC not in runtimes:
        return "gVisor (runsc) is not a runtime of the Docker engine"
    args = tuple((runtimes[RUNSC] or {}).get("runtimeArgs") or ())
    missing = [arg for arg in RUNSC_ARGS if arg not in args]
    if missing:
        return f"the engine's runsc runtime lacks {' '.join(missing)} in its runtimeArgs"
    return None


def gvisor_available(client: Any = None) -> bool:
    """Whether the Docker engine has the ``runsc`` runtime as the gvisor sandbox needs it."""
    return runsc_problem(client) is None


def choose_default_sandbox(client: Any = None, *, gpu: bool = False) -> tuple[str, str | None]:
    """``("gvisor", None)`` where the engine has runsc, else ``("docker", why)``.

    ``gpu``: the run would be given a GPU under ``docker`` (:func:`run_gets_gpu`); gVisor
    gives none, so such a run goes to ``docker`` even where runsc is there.
    The second item is the one line to show an operator when the second wall is off.
    """
    problem = runsc_problem(client)
    if problem is None and not gpu:
        return "gvisor", None
    if problem is None:
        return "docker", (
            "the bundle asks for a GPU, which this engine has and gVisor cannot give: "
            "it runs in the docker sandbox, one wall instead of two"
        )
    return "docker", (
        f"{problem}: models run in the docker sandbox, one wall instead of two; add "
        "gVisor with `bash docker/bootstrap.sh` (as root)"
    )


def run_gets_gpu(
    manifest: Manifest | None,
    limits: SandboxLimits,
    *,
    client: Any = None,
    gpu_available: bool | None = None,
) -> bool:
    """Whether the docker sandbox would give this run (the loaded bundle's manifest) a GPU,
    by the rule of ``docker``; False without a manifest."""
    if manifest is None or not gpu_requested(manifest, limits):
        return False
    if gpu_available is not None:
        return gpu_available
    try:
        return engine_gives_gpu(client or docker_client(timeout=10))
    except (PlatformError, OSError):
        return False  # no engine: the sandbox says so when it starts


@sandbox_alias("auto")
def _auto(
    *,
    manifest: Manifest | None,
    limits: SandboxLimits,
    client: Any = None,
    gpu_available: bool | None = None,
    **_options: Any,
) -> str:
    gpu = run_gets_gpu(manifest, limits, client=client, gpu_available=gpu_available)
    kind, note = choose_default_sandbox(client, gpu=gpu)
    if note is not None and note not in _said:
        _said.add(note)  # once per process, not once per job
        _logger.warning(note)
    return kind


@sandbox("gvisor")
class GvisorSandbox(DockerSandbox):
    """:class:`DockerSandbox` with the ``runsc`` runtime: the same policy, a second wall.

    Takes the same arguments. Raises :class:`PlatformError` at start where the engine has
    no runsc runtime, or when a bundle that may have a GPU asks for one.
    """

    runtime = RUNSC

    def _launch(self) -> ModelHello:
        problem = runsc_problem(self._client)
        if problem is not None:
            raise PlatformError(
                f"{problem}, so the gvisor sandbox cannot run; register it with `bash "
                "docker/bootstrap.sh` (as root), or use --sandbox docker"
            )
        return super()._launch()

    def _process_limits(self) -> dict[str, Any]:
        import docker.types

        # Under gVisor the model's processes are the Sentry's tasks, not host processes:
        # its kernel enforces RLIMIT_NPROC per sandbox (its own uids), so that is the
        # model's limit. The host's pids cgroup counts the Sentry's threads and ptrace
        # stubs instead, about 6 per task when measured: a cap at the model's limit would
        # kill the Sentry (exit 2) long before the model reached it.
        pids = self.limits.pids
        return {
            "pids_limit": min(pids * SENTRY_TASKS_PER_PROCESS + 512, SENTRY_TASKS_CEILING),
            "ulimits": [docker.types.Ulimit(name="nproc", soft=pids, hard=pids)],
        }

    def _exit_info(self, wait_s: float) -> ExitInfo:
        info = super()._exit_info(wait_s)
        # Under runsc the host kernel's OOM killer kills the Sentry, and the engine's
        # OOMKilled mark is then set only sometimes. SIGKILL with the cgroup's peak at its
        # limit says the same thing (the peak was read before the cgroup went).
        peak = self._usage_seen.peak_memory_bytes or 0
        if info.exit_code == 137 and not info.oom_killed:
            if peak >= self.limits.memory_bytes - _OOM_MARGIN_BYTES:
                return ExitInfo(info.exit_code, oom_killed=True)
        return info

    def _wants_gpu(self) -> bool:
        if super()._wants_gpu():
            raise PlatformError(
                "the gvisor sandbox gives no GPU (this gVisor has no nvproxy); run GPU "
                "bundles with the docker sandbox, or auto, which chooses it for them"
            )
        return False
