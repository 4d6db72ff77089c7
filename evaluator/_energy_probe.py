"""codecarbon's hardware probe, kept on disk between processes (internal).

A tracker's first start in a process probes the machine: py-cpuinfo in a subprocess for
the CPU model, pandas to read codecarbon's table of CPU powers, GPU libraries. That is
about 1.5 s on a quiet 2-core machine (measured up to 5 s on a loaded one), paid by every
``evalboard evaluate``, where VADER's 10,000 examples take 0.3 s. codecarbon keeps what
the probe found as a plan per process (``codecarbon.core.hardware_cache``); this module
writes that plan to the data directory after a probe and hands it back to codecarbon
before the next process's first start, on the same machine since its last boot, with the
same codecarbon and the same tracker options. Anything unexpected (another codecarbon's
internals, an unreadable or foreign file) falls back to codecarbon's own probe.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
from pathlib import Path
from typing import Any

from evaluator.power import CpuSpec

__all__ = ["kept_cpu_spec", "remember_probe", "reuse_probe"]

logger = logging.getLogger(__name__)
_FILE = "codecarbon-hardware.json"


def _path() -> Path:
    from evalboard.core.settings import get_settings

    return get_settings().data_dir / _FILE


def _machine() -> dict[str, str]:
    """What must match for a kept plan to describe this machine since its last boot."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""  # no boot id: the plan is still this host's, kept until a change below
    return {"host": platform.node(), "boot": boot, "cpus": str(os.cpu_count())}


def _identity(tracker: Any) -> dict[str, str]:
    """What must match for a kept plan to describe this machine and this tracker."""
    from importlib.metadata import version

    from codecarbon.core import hardware_cache

    return {
        **_machine(),
        "codecarbon": version("codecarbon"),
        "options": repr(hardware_cache.make_key(tracker)),
    }


def kept_cpu_spec(path: Path | None = None) -> CpuSpec | None:
    """The CPU as the probe kept for this machine found it (no codecarbon import); None
    without a kept probe of this machine since its boot."""
    try:
        kept = json.loads((path or _path()).read_text(encoding="utf-8"))
        identity = kept["identity"]
        if any(identity.get(key) != value for key, value in _machine().items()):
            return None
        plan = kept["plan"]
        cpu = next(spec for spec in plan["hardware_specs"] if spec.get("kind") == "cpu")
        return CpuSpec(
            model=str(cpu.get("model") or ""),
            tdp_w=float(cpu["tdp"]) if cpu.get("tdp") else None,
            cpus=int(plan.get("conf", {}).get("cpu_count") or os.cpu_count() or 0),
            mode=str(cpu.get("mode") or ""),
            codecarbon=str(identity.get("codecarbon") or ""),
        )
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a cache: without it there is no estimate
        logger.debug("the kept codecarbon hardware plan has no usable CPU", exc_info=True)
        return None


def reuse_probe(tracker: Any) -> bool:
    """Give codecarbon the plan kept for this machine, before ``tracker.start()``;
    False when there is none that fits (the start then probes)."""
    try:
        from codecarbon.core import hardware_cache

        kept = json.loads(_path().read_text(encoding="utf-8"))
        if kept.get("identity") != _identity(tracker):
            return False
        plan = hardware_cache._HardwarePlan(**kept["plan"])
        with hardware_cache._cache_lock:
            hardware_cache._plans.setdefault(hardware_cache.make_key(tracker), plan)
        return True
    except FileNotFoundError:
        return False
    except Exception:  # noqa: BLE001 - a cache: codecarbon's own probe is the fallback
        logger.debug("the kept codecarbon hardware plan was not used", exc_info=True)
        return False


def remember_probe(tracker: Any) -> None:
    """Keep the plan codecarbon made for ``tracker`` (after its start), for later processes."""
    try:
        from codecarbon.core import hardware_cache

        with hardware_cache._cache_lock:
            plan = hardware_cache._plans.get(hardware_cache.make_key(tracker))
        if plan is None:
            return
        path = _path()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{_FILE}.{os.getpid()}")
        document = {"identity": _identity(tracker), "plan": dataclasses.asdict(plan)}
        partial.write_text(json.dumps(document, indent=1), encoding="utf-8")
        partial.replace(path)  # atomic: a concurrent writer wins or loses whole
    except Exception:  # noqa: BLE001 - a cache: losing it costs the next process a probe
        logger.debug("the codecarbon hardware plan was not kept", exc_info=True)
