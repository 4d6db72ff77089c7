"""The sandbox's own energy: what the board weighs, per 1,000 examples.

codecarbon (:mod:`evaluator.energy`) measures the whole machine, neighbours included.
This module gives the sandbox its share, over the timed phase only:

- measured, where the CPU packages' RAPL counters (``/sys/class/powercap/intel-rapl``)
  are present and readable: their energy over the phase times the sandbox's share of the
  machine's busy CPU time (its cgroup's seconds over the machine's);
- estimated otherwise: the sandbox's cgroup CPU seconds times the power codecarbon
  assumes one logical CPU draws at full load (its TDP for this CPU model, from the
  hardware probe kept by :mod:`evaluator._energy_probe`, over the logical CPUs).

A sandbox given a GPU adds that GPU's NVML energy counter over the phase, where NVML is
present (the GPU is taken to be the sandbox's alone). The :class:`PowerModel` goes into
the result's provenance, so the board can say how a figure was obtained. The counters
are a seam (:class:`Counters`): tests inject fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from evaluator.result import PowerModel

__all__ = ["RAPL_ROOT", "Counters", "CpuSpec", "HostCounters", "SandboxEnergy", "power_model"]

logger = logging.getLogger(__name__)

RAPL_ROOT = Path("/sys/class/powercap")


@dataclass(frozen=True)
class CpuSpec:
    """What codecarbon's hardware probe found about the CPU."""

    model: str
    tdp_w: float | None
    cpus: int
    mode: str
    codecarbon: str = ""


class Counters(Protocol):
    """The machine's energy and CPU counters, read around the timed phase."""

    def rapl_uj(self) -> Mapping[str, tuple[int, int]] | None:
        """Package zone -> (``energy_uj``, ``max_energy_range_uj``); None: unreadable."""

    def busy_cpu_seconds(self) -> float:
        """CPU seconds the whole machine has spent busy (every process) since boot."""

    def gpu_mj(self) -> int | None:
        """Total energy of the GPUs so far, millijoules (NVML); None: no NVML."""


class HostCounters:
    """This machine's counters: RAPL package zones, ``psutil``, and NVML for GPUs."""

    def __init__(self, *, root: Path = RAPL_ROOT, gpus: bool = False) -> None:
        self._root = root
        self._gpus = gpus

    def rapl_uj(self) -> dict[str, tuple[int, int]] | None:
        # Package zones only (intel-rapl:N): their core and dram subzones are parts of them,
        # and psys would count the rest of the platform too. Unreadable (root-only since
        # the 2020 PLATYPUS fix) reads as absent.
        zones: dict[str, tuple[int, int]] = {}
        for zone in sorted(self._root.glob("intel-rapl:*")):
            if zone.name.count(":") != 1:
                continue
            try:
                if not (zone / "name").read_text().strip().startswith("package"):
                    continue
                energy = int((zone / "energy_uj").read_text())
                top = int((zone / "max_energy_range_uj").read_text())
            except (OSError, ValueError):
                return None
            zones[zone.name] = (energy, top)
        return zones or None

    def busy_cpu_seconds(self) -> float:
        times = psutil.cpu_times()
        return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))

    def gpu_mj(self) -> int | None:
        if not self._gpus:
            return None
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                count = pynvml.nvmlDeviceGetCount()
                handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
                return sum(int(pynvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in handles)
            finally:
                pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - no driver, no NVML, a GPU older than Volta
            logger.debug("no NVML energy counter", exc_info=True)
            return None


def power_model(cpu: CpuSpec | None, counters: Counters, *, gpu: bool = False) -> PowerModel | None:
    """How this machine's sandbox energy can be worked out; None: neither RAPL nor a
    codecarbon TDP for the CPU.

    >>> class NoRapl:
    ...     def rapl_uj(self): return None
    ...     def busy_cpu_seconds(self): return 0.0
    ...     def gpu_mj(self): return None
    >>> power_model(CpuSpec("AMD EPYC", 8.0, 2, "cpu_load", "3.3.2"), NoRapl()).watts_per_cpu
    4.0
    """
    gpu_source = "NVML total energy counter" if gpu and counters.gpu_mj() is not None else None
    # A GPU the sandbox had but NVML cannot read is left out, and the source says so.
    uncounted = "; its GPU not counted (no NVML energy counter)" if gpu and not gpu_source else ""
    zones = counters.rapl_uj()
    if zones:
        return PowerModel(
            method="measured",
            source="RAPL package energy counters, shared out by the sandbox's part of the "
            f"machine's busy CPU time{uncounted}",
            cpu_model=cpu.model if cpu else "",
            rapl_zones=sorted(zones),
            cpus=psutil.cpu_count() or 0,
            gpu=gpu_source,
        )
    if cpu is None or not cpu.tdp_w or cpu.cpus < 1:
        return None
    version = f"codecarbon {cpu.codecarbon}" if cpu.codecarbon else "codecarbon"
    return PowerModel(
        method="estimated",
        source=f"{version}'s TDP for this CPU ({cpu.mode} mode) over its logical CPUs, "
        f"times the sandbox's CPU seconds{uncounted}",
        cpu_model=cpu.model,
        tdp_w=float(cpu.tdp_w),
        cpus=cpu.cpus,
        watts_per_cpu=float(cpu.tdp_w) / cpu.cpus,
        gpu=gpu_source,
    )


def _rapl_joules(
    before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]
) -> float | None:
    """Joules between two readings of the zones, a counter's wrap-around included; None
    when the zones differ."""
    if set(before) != set(after):
        return None
    total_uj = 0
    for zone, (start, top) in before.items():
        end = after[zone][0]
        total_uj += end - start if end >= start else end + top - start
    return total_uj / 1e6


class SandboxEnergy:
    """Reads the counters at :meth:`start` and :meth:`stop` of the timed phase; then
    :meth:`per_1k_j` gives the sandbox's energy per 1,000 examples."""

    def __init__(self, model: PowerModel, counters: Counters) -> None:
        self.model = model
        self._counters = counters
        self._start: dict[str, Any] = {}
        self._stop: dict[str, Any] = {}

    def _read(self) -> dict[str, Any]:
        reading: dict[str, Any] = {"gpu_mj": self._counters.gpu_mj() if self.model.gpu else None}
        if self.model.method == "measured" or self.model.rapl_zones:
            reading["rapl"] = self._counters.rapl_uj()
            reading["busy_s"] = self._counters.busy_cpu_seconds()
        return reading

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> None:
        self._stop = self._read()

    def per_1k_j(self, *, sandbox_cpu_s: float | None, examples: int) -> float | None:
        """Joules per 1,000 examples; None without the sandbox's CPU time, an example, or a
        second reading of the counters the model needs.

        Args:
            sandbox_cpu_s: the sandbox's cgroup CPU seconds over the timed phase.
            examples: examples predicted in it (every timed pass counted).
        """
        if sandbox_cpu_s is None or examples <= 0 or not self._stop:
            return None
        joules = self._cpu_joules(sandbox_cpu_s)
        if joules is None:
            return None
        if self.model.gpu:
            before, after = self._start.get("gpu_mj"), self._stop.get("gpu_mj")
            if before is None or after is None:
                return None
            joules += max(0, after - before) / 1e3
        return joules * 1000 / examples

    def _cpu_joules(self, sandbox_cpu_s: float) -> float | None:
        if self.model.rapl_zones:
            before, after = self._start.get("rapl"), self._stop.get("rapl")
            if not before or not after:
                return None
            package = _rapl_joules(before, after)
            busy = float(self._stop["busy_s"]) - float(self._start["busy_s"])
            if package is None or busy <= 0:
                return None
            # The cgroup's seconds and the machine's are read at slightly different
            # moments: the share cannot pass the whole.
            return package * min(1.0, sandbox_cpu_s / busy)
        assert self.model.watts_per_cpu is not None
        return sandbox_cpu_s * self.model.watts_per_cpu
