"""The ``docker`` sandbox: the default, and the only one that isolates a model.

Policy (DESIGN.md, "Sandbox policy"), all of it on every container:
no network; read-only root; a size-capped tmpfs /tmp; an unprivileged user (10001);
every capability dropped; no-new-privileges; a pids limit; memory = memory + swap (no
swap); a CPU quota; an init process; a wall-clock limit enforced from outside (a
watchdog kills the container at the deadline); a cap on each response line and on the
log kept; labels on every container and :func:`reap_orphans` for those whose owner died;
a GPU only when the bundle asks, the limits allow and the engine has one, and then one
device. Nothing from the host is mounted but the directory holding the channel's
socket, read-only; the bundle is baked into the image (:mod:`submission_sandbox.build`),
and gold labels never leave the evaluator.
"""

from __future__ import annotations

import importlib
import math
import os
import shutil
import socket
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, ClassVar, Unpack

from evalboard.core.errors import PlatformError
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox._channel_sandbox import ChannelOptions, ChannelSandbox
from submission_sandbox._failures import ExitInfo
from submission_sandbox.build import LABEL, SANDBOX_USER, BuiltImage, build_image
from submission_sandbox.bundle import Bundle
from submission_sandbox.cgroup import CgroupFiles, find_cgroup
from submission_sandbox.contract import ChannelError, Reader, docker_stdio_reader
from submission_sandbox.dependencies import resolve as resolve_dependencies
from submission_sandbox.manifest import Manifest
from submission_sandbox.sandbox import ModelHello, ResourceUsage, SandboxFailure, sandbox

__all__ = ["CHANNEL_DIR", "DockerSandbox", "docker_client", "reap_orphans"]

CHANNEL_DIR = "/run/evalboard"
_OWNER = f"{socket.gethostname()}:{os.getpid()}"
#: Containers of this process that could not be removed because the engine stopped
#: answering mid-run; :func:`reap_orphans` removes them once it answers again.
_UNREMOVED: set[str] = set()


def docker_client(timeout: int = 60) -> Any:
    """A client of the local engine, or PlatformError saying how to get one."""
    import docker.errors

    # importlib: mypy would otherwise resolve `docker` to the repository's docker/ folder.
    sdk: Any = importlib.import_module("docker")
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    # Looked for first: the SDK leaks its socket (a ResourceWarning) connecting to none.
    if host.startswith("unix://") and not os.path.exists(host.removeprefix("unix://")):
        raise PlatformError(_unreachable(f"no socket at {host.removeprefix('unix://')}"))
    try:
        client = sdk.from_env(timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        raise PlatformError(_unreachable(str(exc))) from None
    return client


def gpu_requested(manifest: Manifest, limits: SandboxLimits) -> bool:
    """Whether a run asks for a GPU: its bundle wants one and its limits allow one."""
    return manifest.gpus >= 1 and limits.gpus >= 1


def engine_gives_gpu(client: Any) -> bool:
    """Whether the engine can give a container a GPU: NVIDIA's runtime is registered."""
    return "nvidia" in (client.info().get("Runtimes") or {})


def _unreachable(why: str) -> str:
    return (
        f"the Docker engine is not reachable ({why}); start it (as root: "
        "`bash docker/bootstrap.sh`), or use `--sandbox local` for trusted code"
    )


def _owner_alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not (pid.isascii() and pid.isdigit()):
        return True  # another machine's: leave it to the deadline
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_orphans(client: Any = None, *, grace_s: float = 60.0) -> list[str]:
    """Remove sandbox containers whose owner process died or whose deadline passed.

    Safe while other runs are live: a container is only removed when the process that
    started it (on this machine) is gone, or its wall-clock deadline is ``grace_s`` past.
    Returns the ids removed.
    """
    import docker.errors

    client = client or docker_client()
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}.sandbox"}):
        labels = container.labels
        try:
            deadline = float(labels.get(f"{LABEL}.deadline", "inf"))
        except ValueError:
            deadline = math.inf
        if (
            container.id not in _UNREMOVED
            and _owner_alive(labels.get(f"{LABEL}.owner", ""))
            and time.time() < deadline + grace_s
        ):
            continue
        with suppress(docker.errors.NotFound):
            container.remove(force=True)
            removed.append(str(container.id))
        _UNREMOVED.discard(container.id)
    return removed


@sandbox("docker")
class DockerSandbox(ChannelSandbox):
    """A model in a hardened container, reached over a unix socket (or attached stdio).

    Args:
        bundle: the bundle (loaded), or an unpacked bundle directory read at start.
        limits: the run's limits.
        client: a docker client (default: the local engine).
        base_image / torch_image: runtime bases (default: from Settings).
        gpu_available: whether the engine can give a GPU (default: asks the engine).
        channel_options: ``channel``, ``pin_cpus``, ``generation`` (:class:`ChannelOptions`);
            ``pin_cpus`` sets ``cpuset_cpus`` beside the CPU quota.
    """

    isolating = True
    #: The engine's OCI runtime; None is the engine's default (runc). The ``gvisor``
    #: sandbox is this class with ``runsc``: same policy, a second wall.
    runtime: ClassVar[str | None] = None

    def __init__(
        self,
        bundle: Bundle | Path,
        *,
        limits: SandboxLimits,
        client: Any = None,
        base_image: str | None = None,
        torch_image: str | None = None,
        gpu_available: bool | None = None,
        **channel_options: Unpack[ChannelOptions],
    ) -> None:
        super().__init__(bundle, limits=limits, **channel_options)
        from evalboard.core.settings import get_settings  # not loaded for other sandboxes

        settings = get_settings()
        self.base_image = base_image or settings.base_image
        self.torch_image = torch_image or settings.torch_image
        self._client = client
        self._gpu_available = gpu_available
        self.bundle: Bundle | None = None
        self.image: BuiltImage | None = None
        self.container_id: str | None = None
        self._run_dir: Path | None = None
        self._attached: Any = None
        self._cgroup: CgroupFiles | None = None
        self._usage_seen = ResourceUsage()
        self._final_log: str | None = None
        self._gpu: str | None = None

    # Start ---------------------------------------------------------------------------------

    def _prepare(self) -> BuiltImage:
        """The bundle's image, built or reused by its labels (once per evaluation)."""
        bundle = self._bundle()
        self._client = self._client or docker_client()
        return build_image(
            bundle,
            client=self._client,
            base_image=self.base_image,
            torch_image=self.torch_image,
            dependencies=resolve_dependencies(bundle.path, bundle_sha256=bundle.sha256),
        )

    def _start(self) -> ModelHello:
        self.bundle = self._bundle()
        self._client = self._client or docker_client()
        assert self._prepared is not None
        self.image = self._prepared.value
        try:
            return self._launch()
        except BaseException:
            self._close()
            raise

    def _attached_stdio(self) -> tuple[Reader, Callable[[bytes], None]]:
        # The engine's attach socket may be TLS: no send flags (no write_now).
        assert self._conn is not None
        return docker_stdio_reader(self._conn), self._conn.sendall

    def _found(self) -> None:
        self._cgroup = self._find_cgroup()

    def _wants_gpu(self) -> bool:
        assert self.bundle is not None
        if not gpu_requested(self.bundle.manifest, self.limits):
            return False
        if self._gpu_available is None:
            self._gpu_available = engine_gives_gpu(self._client)
        return bool(self._gpu_available)

    def _container_config(self) -> dict[str, Any]:
        import docker.types

        assert self.bundle is not None and self.image is not None
        limits = self.limits
        threads = str(max(1, math.ceil(limits.cpus)))
        environment = {
            "EVALBOARD_CHANNEL": "stdio"
            if self.channel == "stdio"
            else f"unix:{CHANNEL_DIR}/model.sock",
            "EVALBOARD_SOCKET": "" if self.channel == "stdio" else f"{CHANNEL_DIR}/model.sock",
            "EVALBOARD_THREADS": threads,
            "OMP_NUM_THREADS": threads,
            "HOME": "/tmp",
            **self._task_environment(),
        }
        device_requests = None
        if self._wants_gpu():
            device_requests = [docker.types.DeviceRequest(count=1, capabilities=[["gpu"]])]
            self._gpu = "1 device"
        host_config = self._client.api.create_host_config(
            binds={str(self._run_dir): {"bind": CHANNEL_DIR, "mode": "ro"}},
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs_bytes},mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            **self._process_limits(),
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            mem_swappiness=0 if self._swappiness_supported() else None,
            nano_cpus=int(limits.cpus * 1e9),
            cpuset_cpus=self.cpuset,  # None: unpinned (see _reserve_cores)
            init=True,
            ipc_mode="private",
            log_config=docker.types.LogConfig(
                type="json-file",
                config={"max-size": str(max(limits.max_log_bytes, 64 * 1024)), "max-file": "1"},
            ),
            device_requests=device_requests,
            runtime=self.runtime,
        )
        config: dict[str, Any] = self._client.api.create_container_config(
            image=self.image.id,
            command=None,
            user=SANDBOX_USER,
            environment=environment,
            labels={
                f"{LABEL}.sandbox": self.kind,
                f"{LABEL}.bundle": self.bundle.sha256,
                f"{LABEL}.owner": _OWNER,
                f"{LABEL}.deadline": f"{time.time() + limits.timeout_s:.0f}",
            },
            network_disabled=True,
            stdin_open=self.channel == "stdio",
            host_config=host_config,
        )
        if self.channel == "stdio":
            config["StdinOnce"] = True  # stdin closes when we detach: the model sees EOF
            config["AttachStdin"] = config["AttachStdout"] = True
        return config

    def _process_limits(self) -> dict[str, Any]:
        """Host-config options that cap the model's processes and threads."""
        return {"pids_limit": self.limits.pids}

    def _swappiness_supported(self) -> bool:
        # cgroup v2 has no per-cgroup swappiness; the engine refuses the option there.
        info = self._client.info()
        return str(info.get("CgroupVersion", "1")) == "1"

    def _launch(self) -> ModelHello:
        import docker.errors

        self._run_dir = self._run_dir_for("evalboard-run")
        os.chmod(self._run_dir, 0o755)
        self._reserve_cores()  # before the config, which names them
        created = self._client.api.create_container_from_config(self._container_config())
        self.container_id = str(created["Id"])
        if self.channel == "stdio":
            attached = self._client.api.attach_socket(
                self.container_id, params={"stdin": 1, "stdout": 1, "stream": 1}
            )
            self._attached = attached  # a SocketIO: it holds a reference to the socket
            self._conn = attached._sock
        started = time.monotonic()
        self._deadline = started + self.limits.timeout_s
        try:
            self._client.api.start(self.container_id)
        except docker.errors.APIError as exc:
            raise SandboxFailure(
                FailureReason.CRASHED,
                f"the container did not start: {exc.explanation or exc}",
                log_tail=self._log_tail(50),
            ) from None
        hello = self._hello_over_channel(self._running, self._attached_stdio, then=self._found)
        self._usage_seen = ResourceUsage(startup_s=time.monotonic() - started, gpu=self._gpu)
        return hello

    def _find_cgroup(self) -> CgroupFiles | None:
        state = self._client.api.inspect_container(self.container_id)["State"]
        pid = int(state.get("Pid") or 0)
        return find_cgroup(pid) if pid else None

    def _running(self) -> bool:
        import docker.errors

        try:
            state = self._client.api.inspect_container(self.container_id)["State"]
        except docker.errors.NotFound:
            return False
        return bool(state.get("Running"))

    def _kill(self) -> None:
        import docker.errors

        with suppress(docker.errors.APIError):
            self._client.api.kill(self.container_id)

    # Failures ----------------------------------------------------------------------------

    def _exit_info(self, wait_s: float) -> ExitInfo:
        import docker.errors
        import requests.exceptions

        try:
            self._client.api.wait(self.container_id, timeout=wait_s)
        except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
            self._client.api.kill(self.container_id)
            self._client.api.wait(self.container_id, timeout=10)
        except docker.errors.APIError:
            return ExitInfo(None)
        state = self._client.api.inspect_container(self.container_id)["State"]
        return ExitInfo(int(state.get("ExitCode", -1)), bool(state.get("OOMKilled")))

    def _fail(self, error: ChannelError) -> SandboxFailure:
        self._usage()  # before the cgroup goes with the process
        return super()._fail(error)

    def _failure_log(self) -> str:
        self._final_log = self._read_logs(50)
        return self._final_log

    # Requests ------------------------------------------------------------------------------

    def _check_deadline(self) -> None:
        # The watchdog may not have fired yet; a request must not start past the deadline.
        if time.monotonic() >= self._deadline:
            self._kill_for_timeout()

    def _image_digest(self) -> str | None:
        return self.image.id if self.image is not None else None

    # Resources -------------------------------------------------------------------------------

    def _usage(self) -> ResourceUsage:
        peak: int | None = None
        cpu: float | None = None
        if self._cgroup is not None:
            peak, cpu = self._cgroup.peak_memory_bytes(), self._cgroup.cpu_seconds()
        elif self.container_id is not None:
            with suppress(Exception):  # stats are best effort once the model is gone
                stats = self._client.api.stats(self.container_id, stream=False, one_shot=True)
                memory = stats.get("memory_stats") or {}
                peak = memory.get("max_usage") or memory.get("usage")
                cpu_ns = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
                cpu = cpu_ns / 1e9 if cpu_ns else None
        seen = self._usage_seen
        if peak is not None or cpu is not None:
            self._usage_seen = seen.model_copy(
                update={
                    "peak_memory_bytes": max(peak or 0, seen.peak_memory_bytes or 0) or None,
                    "cpu_seconds": cpu if cpu is not None else seen.cpu_seconds,
                }
            )
        return self._usage_seen

    # Logs ------------------------------------------------------------------------------------

    def _read_logs(self, lines: int) -> str:
        import docker.errors

        if self.container_id is None:
            return ""
        try:
            raw = self._client.api.logs(
                self.container_id, stdout=self.channel != "stdio", stderr=True, tail=lines
            )
        except docker.errors.APIError:
            return ""
        text: str = raw.decode("utf-8", "replace")
        return text[-self.limits.max_log_bytes :]

    def _log_tail(self, lines: int) -> str:
        if self._final_log is not None:
            return "\n".join(self._final_log.splitlines()[-lines:])
        return self._read_logs(lines)

    # Close -----------------------------------------------------------------------------------

    def _close(self) -> ResourceUsage:
        import docker.errors

        usage = self._usage_seen
        try:
            if self.container_id is not None:
                if self._failure is None and self._contract is not None:
                    usage = self._usage()  # before the cgroup goes with the process
                    if not self._contract.shutdown():
                        self._kill()  # it could not be asked to exit
                    elif self._conn is not None and self.channel == "stdio":
                        self._conn.shutdown(socket.SHUT_WR)
                    self._exit_info(wait_s=5)
                if self._final_log is None:
                    self._final_log = self._read_logs(200)
        finally:
            if self._attached is not None:
                self._attached.close()
            self._close_channel()
            if self.container_id is not None:
                try:
                    self._client.api.remove_container(self.container_id, force=True)
                except docker.errors.NotFound:
                    pass
                except OSError:  # the engine went away (requests' errors are OSErrors)
                    _UNREMOVED.add(self.container_id)
                    raise
            if self._run_dir is not None:
                shutil.rmtree(self._run_dir, ignore_errors=True)
        return usage
