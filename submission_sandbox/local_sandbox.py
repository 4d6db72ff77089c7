"""The ``local`` sandbox: the runner as a plain subprocess. IT DOES NOT ISOLATE.

For trusted code only: a researcher's own machine, or tests. The model runs as the
calling user with its network, files and environment (minus ``EVALBOARD_*`` secrets);
there is no memory limit, no read-only root, no pids limit. A bundle's requirements.txt
is resolved exactly as for ``docker`` (same flags, same cache) and its folder put first on
the model's ``PYTHONPATH``. What it does enforce: the
wall-clock limit (the process group is killed), the output cap, the contract, and the
same failure reasons as ``docker`` where they can be told apart. Memory and CPU are read
from the process (peak resident memory: the model's own high-water mark, and its process
tree sampled with psutil; CPU seconds of the process and its children).
``isolating = False``: callers must say so wherever it runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import IO, Unpack

import psutil

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox._channel_sandbox import ChannelOptions, ChannelSandbox
from submission_sandbox._failures import ExitInfo
from submission_sandbox.build import RUNNER_PATH
from submission_sandbox.bundle import Bundle
from submission_sandbox.contract import Reader, fd_reader
from submission_sandbox.dependencies import resolve as resolve_dependencies
from submission_sandbox.manifest import Runtime
from submission_sandbox.sandbox import ModelHello, ResourceUsage, SandboxFailure, sandbox

__all__ = ["LocalSandbox"]

#: Seconds between samples of the model's process tree. Walking the tree reads every
#: process of the machine (about 3 ms with 120 of them), in this process, while the model
#: is timed; the model's own peak is exact anyway (its kernel high-water mark), so the
#: samples only catch processes the model starts.
_SAMPLE_S = 0.25


def _high_water_mark(pid: int) -> int:
    """The process's peak resident memory (Linux's VmHWM), 0 where it cannot be read."""
    with suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    return 0


@sandbox("local")
class LocalSandbox(ChannelSandbox):
    """The runner as a subprocess of this Python; NOT isolating (see the module docstring).

    Args:
        bundle: the bundle (loaded), or an unpacked bundle directory read at start.
        limits: only ``timeout_s``, ``max_output_bytes`` and ``max_log_bytes`` apply.
        python: the interpreter to run the model with (default: this one).
        channel_options: ``channel``, ``pin_cpus``, ``generation`` (:class:`ChannelOptions`);
            ``pin_cpus`` sets the model's CPU affinity, no quota.
    """

    isolating = False

    def __init__(
        self,
        bundle: Bundle | Path,
        *,
        limits: SandboxLimits,
        python: str | None = None,
        **channel_options: Unpack[ChannelOptions],
    ) -> None:
        super().__init__(bundle, limits=limits, **channel_options)
        self.python = python or sys.executable
        self._process: subprocess.Popen[bytes] | None = None
        self._run_dir: Path | None = None
        self._log: IO[bytes] | None = None
        self._peak = 0
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None
        self._cpu: float | None = None
        self._startup_s: float | None = None
        self._final_log: str | None = None
        self._site: Path | None = None

    def _prepare(self) -> Path | None:
        """The bundle's resolved dependencies' folder (the same set the docker sandbox lays
        in its image), once per evaluation; None where it has none."""
        bundle = self._bundle()
        if bundle.manifest.runtime is Runtime.IMAGE:
            raise SandboxFailure(
                FailureReason.INVALID_BUNDLE,
                "the local sandbox cannot run an `image` bundle; use --sandbox docker",
            )
        dependencies = resolve_dependencies(bundle.path, bundle_sha256=bundle.sha256)
        return dependencies.site if dependencies else None

    def _start(self) -> ModelHello:
        bundle = self._bundle()
        assert self._prepared is not None
        self._site = self._prepared.value  # first on PYTHONPATH
        try:
            return self._launch(bundle.path)
        except BaseException:
            self._close()
            raise

    def _launch(self, bundle_path: Path) -> ModelHello:
        self._run_dir = self._run_dir_for("evalboard-local")
        self._log = open(self._run_dir / "model.log", "w+b")  # noqa: SIM115 - closed in _close
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVALBOARD_")}
        threads = str(max(1, int(self.limits.cpus)))
        env.update(
            EVALBOARD_BUNDLE=str(bundle_path),
            EVALBOARD_THREADS=threads,
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            **self._task_environment(),
        )
        if self._site is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(self._site), *filter(None, [env.get("PYTHONPATH")])]
            )
        if self._listener is not None:
            env["EVALBOARD_CHANNEL"] = f"unix:{self._listener.path}"
            env["EVALBOARD_SOCKET"] = str(self._listener.path)
        else:
            env["EVALBOARD_CHANNEL"] = "stdio"
        started = time.monotonic()
        self._deadline = started + self.limits.timeout_s
        self._process = subprocess.Popen(
            [self.python, str(RUNNER_PATH)],
            cwd=bundle_path,
            env=env,
            stdin=subprocess.PIPE if self.channel == "stdio" else subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.channel == "stdio" else self._log,
            stderr=self._log,
            start_new_session=True,  # its own process group, killed as one
        )
        cores = self._reserve_cores()
        if cores is not None:
            # Before the model loads: the threads it starts inherit the affinity.
            os.sched_setaffinity(self._process.pid, cores)
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        hello = self._hello_over_channel(self._alive, self._pipes)
        self._startup_s = time.monotonic() - started
        return hello

    def _pipes(self) -> tuple[Reader, Callable[[bytes], None]]:
        assert self._process is not None
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None

        def write(data: bytes) -> None:
            stdin.write(data)
            stdin.flush()

        return fd_reader(stdout.fileno()), write

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def _sample(self) -> None:
        while not self._sampling.is_set() and self._alive():
            self._measure()
            self._sampling.wait(_SAMPLE_S)

    def _measure(self) -> None:
        assert self._process is not None
        with suppress(psutil.Error):
            process = psutil.Process(self._process.pid)
            tree = [process, *process.children(recursive=True)]
            rss = 0
            for member in tree:
                with suppress(psutil.Error):
                    rss += member.memory_info().rss
            self._peak = max(self._peak, rss, _high_water_mark(self._process.pid))
            times = process.cpu_times()
            self._cpu = times.user + times.system + times.children_user + times.children_system

    def _exit_info(self, wait_s: float) -> ExitInfo:
        assert self._process is not None
        try:
            code = self._process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self._kill()
            code = self._process.wait()
        return ExitInfo(128 - code if code < 0 else code)  # -9 (SIGKILL) reads as 137

    def _memory_limit(self) -> str:
        return "unlimited (local)"

    def _usage(self) -> ResourceUsage:
        if self._alive():
            self._measure()
        return ResourceUsage(
            peak_memory_bytes=self._peak or None,
            cpu_seconds=self._cpu,
            startup_s=self._startup_s,
        )

    def _log_tail(self, lines: int) -> str:
        if self._log is None or self._log.closed:
            return "\n".join((self._final_log or "").splitlines()[-lines:])
        self._log.flush()
        size = os.fstat(self._log.fileno()).st_size
        keep = min(size, self.limits.max_log_bytes)
        with open(self._log.name, "rb") as handle:
            handle.seek(size - keep)
            text = handle.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def _close(self) -> ResourceUsage:
        usage = self._usage()
        try:
            if self._process is not None and self._failure is None and self._contract is not None:
                if not self._contract.shutdown():
                    self._kill()  # before closing stdin, which a blocked write may hold
                if self._process.stdin is not None:
                    with suppress(OSError):
                        self._process.stdin.close()
                self._exit_info(wait_s=5)
        finally:
            self._kill()
            self._sampling.set()
            if self._process is not None:
                self._process.wait()
                for stream in (self._process.stdin, self._process.stdout):
                    if stream is not None:
                        with suppress(OSError):
                            stream.close()
            self._close_channel()
            self._final_log = self._log_tail(200)
            if self._log is not None:
                self._log.close()
            if self._run_dir is not None:
                shutil.rmtree(self._run_dir, ignore_errors=True)
        return usage
