"""Energy and CO2 of an evaluation, from codecarbon's offline tracker.

codecarbon measures the whole machine, not the sandbox: on a shared worker the figure
includes its neighbours. Where the CPU has no RAPL counter (these machines, most VMs) it
estimates power from CPU load and a TDP table, and :class:`Energy` says so. Its first
start in a process probes the hardware (about 1.5 s, then cached for the process):
:func:`warm_up` does that in the background so that the first job does not wait.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any, Self

from evaluator.result import Energy

__all__ = ["EnergyMeter", "warm_up"]

_MEASURED_MODES = {"intel_rapl", "rapl", "apple_powermetrics", "intel_power_gadget"}
_warm_lock = threading.Lock()
_warm_started = False


def _tracker(country_iso_code: str) -> Any:
    from codecarbon import OfflineEmissionsTracker

    # codecarbon logs at INFO before it applies log_level (its import sets INFO).
    logging.getLogger("codecarbon").setLevel(logging.ERROR)

    return OfflineEmissionsTracker(
        country_iso_code=country_iso_code, save_to_file=False, log_level="error"
    )


def warm_up(country_iso_code: str = "USA") -> None:
    """Probe the hardware once, in a background thread (idempotent)."""
    global _warm_started
    with _warm_lock:
        if _warm_started:
            return
        _warm_started = True

    def probe() -> None:
        try:
            tracker = _tracker(country_iso_code)
            tracker.start()
            tracker.stop()
        except Exception:  # noqa: BLE001 - energy is best effort; the meter reports None
            logging.getLogger(__name__).debug("codecarbon warm-up failed", exc_info=True)

    threading.Thread(target=probe, name="codecarbon-warm-up", daemon=True).start()


class EnergyMeter:
    """Measures energy between ``start()`` and ``stop()``; never fails an evaluation.

    Example:
        >>> with EnergyMeter("USA", enabled=False) as meter:
        ...     pass
        >>> meter.energy.kwh is None
        True
    """

    def __init__(self, country_iso_code: str = "USA", *, enabled: bool = True) -> None:
        self.country_iso_code = country_iso_code
        self.enabled = enabled
        self.energy = Energy(country_iso_code=country_iso_code, method="disabled")
        self._tracker: Any = None
        self._error = ""

    def start(self) -> None:
        if not self.enabled:
            return
        try:
            self._tracker = _tracker(self.country_iso_code)
            self._tracker.start()
        except Exception as exc:  # noqa: BLE001 - see class docstring
            self._tracker, self._error = None, f"codecarbon failed to start: {exc}"

    def stop(self) -> Energy:
        if self._tracker is None:
            if self.enabled:
                self.energy = Energy(
                    country_iso_code=self.country_iso_code, method=self._error or "unavailable"
                )
            return self.energy
        try:
            self._tracker.stop()
            data = self._tracker.final_emissions_data
            mode = _cpu_mode(self._tracker)
            self.energy = Energy(
                kwh=float(data.energy_consumed),
                co2_kg=float(data.emissions),
                estimate=mode not in _MEASURED_MODES,
                method=f"codecarbon {data.codecarbon_version} offline, cpu: {mode}",
                country_iso_code=self.country_iso_code,
            )
        except Exception as exc:  # noqa: BLE001 - see class docstring
            self.energy = Energy(
                country_iso_code=self.country_iso_code, method=f"codecarbon failed: {exc}"
            )
        finally:
            self._tracker = None
        return self.energy

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _cpu_mode(tracker: Any) -> str:
    # codecarbon keeps how it reads the CPU on its hardware objects (`cpu_load`, `intel_rapl`,
    # `tdp`...); there is no public accessor.
    for hardware in getattr(tracker, "_hardware", []):
        if type(hardware).__name__ == "CPU":
            return str(getattr(hardware, "_mode", "unknown"))
    return "unknown"
