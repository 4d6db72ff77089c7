"""Energy and CO2 of an evaluation, from codecarbon's offline tracker.

codecarbon measures the whole machine, not the sandbox: on a shared worker the figure
includes its neighbours. Where the CPU has no RAPL counter (these machines, most VMs) it
estimates power from CPU load and a TDP table, and :class:`Energy` says so. Its first
start in a process probes the hardware (about 1.5 s, then cached for the process); the
probe's findings are kept in the data directory for the next process on the same machine
(:mod:`evaluator._energy_probe`), so only the first evaluation after a boot pays it.
Importing codecarbon costs about 0.2 s more. :func:`warm_up` does both in the background
so that a worker's first job does not wait, and :meth:`EnergyMeter.start` returns at once.

One meter runs through a whole evaluation; each dataset's energy is a part of it
(:meth:`EnergyMeter.begin_part` / :meth:`EnergyMeter.end_part`, codecarbon's tasks), so
a later start or stop costs milliseconds, not a tracker's set-up per dataset
(benchmarks/bench_startup.py measures both).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Self

from evaluator._energy_probe import kept_cpu_spec, remember_probe, reuse_probe
from evaluator.power import CpuSpec
from evaluator.result import Energy

__all__ = ["EnergyMeter", "warm_up"]

_MEASURED_MODES = {"intel_rapl", "rapl", "apple_powermetrics", "intel_power_gadget"}
_warm_lock = threading.Lock()
_warm_started = False


#: codecarbon's JSON reference tables (``codecarbon.input``), each read when first asked for.
_JSON_TABLES = {
    "global_energy_mix": "data/private_infra/global_energy_mix.json",
    "carbon_intensity_per_source": "data/private_infra/carbon_intensity_per_source.json",
    "nordic_country_energy_mix": "data/private_infra/nordic_emissions.json",
    "china_provincial_emissions": "data/private_infra/2023/china_provincial_emissions.json",
}
_tables_lock = threading.Lock()


class _Tables(dict[str, Any]):
    """codecarbon's table cache, each table read on first use (see :func:`_read_tables_on_use`)."""

    def __missing__(self, key: str) -> Any:
        from codecarbon import input as tables

        path = _JSON_TABLES.get(key)
        if path is None:  # a pandas table, or one of another codecarbon: codecarbon's way
            tables._load_static_data()  # every table, into this cache
            if key not in self:
                raise KeyError(key)
            return dict.get(self, key)
        with open(tables._get_resource_path(path), encoding="utf-8") as file:
            self[key] = value = json.load(file)
        return value


def _read_tables_on_use() -> None:
    """Have codecarbon read each reference table when it first asks for it.

    Its first emissions figure in a process loads every table at once, the two CSV ones
    (cloud regions, CPU powers) with pandas: 0.3 s of import, most of what energy adds to
    an evaluation, for tables an offline tracker outside a cloud reads only in its hardware
    probe (and not when the probe is kept, :mod:`evaluator._energy_probe`). A JSON table is
    read as codecarbon reads it; asking for any other table loads them all its own way.
    Anything unexpected (another codecarbon's internals) leaves codecarbon as it is.
    """
    try:
        from codecarbon import input as tables

        with _tables_lock:
            if tables._STATIC_DATA_LOADED or type(tables._CACHE) is not dict:
                return  # already loaded, or already on use
            tables._CACHE = _Tables(tables._CACHE)
            tables._STATIC_DATA_LOADED = True
    except Exception:  # noqa: BLE001 - an optimisation: codecarbon loads its tables itself
        logging.getLogger(__name__).debug("codecarbon's tables load as usual", exc_info=True)


def _tracker(country_iso_code: str) -> Any:
    from codecarbon import OfflineEmissionsTracker

    _read_tables_on_use()
    # codecarbon logs at INFO before it applies log_level (its import sets INFO).
    logging.getLogger("codecarbon").setLevel(logging.ERROR)

    return OfflineEmissionsTracker(
        country_iso_code=country_iso_code, save_to_file=False, log_level="error"
    )


def _start(tracker: Any) -> None:
    """Start a tracker, with the hardware probe kept from an earlier process if it fits
    (see :mod:`evaluator._energy_probe`), keeping this one's otherwise."""
    reused = reuse_probe(tracker)
    tracker.start()
    if not reused:
        remember_probe(tracker)


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
            _start(tracker)
            tracker.stop()
        except Exception:  # noqa: BLE001 - energy is best effort; the meter reports None
            logging.getLogger(__name__).debug("codecarbon warm-up failed", exc_info=True)

    threading.Thread(target=probe, name="codecarbon-warm-up", daemon=True).start()


class EnergyMeter:
    """Measures energy between ``start()`` and ``stop()``; never fails an evaluation.

    Between them, ``begin_part(name)`` and ``end_part()`` give one stretch's share (a
    dataset's), one part at a time.

    Example:
        >>> with EnergyMeter("USA", enabled=False) as meter:
        ...     meter.begin_part("dataset")
        ...     meter.end_part().method
        'disabled'
        >>> meter.energy.kwh is None
        True
    """

    def __init__(self, country_iso_code: str = "USA", *, enabled: bool = True) -> None:
        self.country_iso_code = country_iso_code
        self.enabled = enabled
        self.energy = Energy(country_iso_code=country_iso_code, method="disabled")
        self._tracker: Any = None
        self._error = ""
        self._starting: threading.Thread | None = None

    def start(self) -> None:
        """Start measuring, in a thread (a first start probes the hardware, see module)."""
        if not self.enabled:
            return
        self._starting = threading.Thread(
            target=self._start, name="energy-meter-start", daemon=True
        )
        self._starting.start()

    def _start(self) -> None:
        try:
            self._tracker = _tracker(self.country_iso_code)
            _start(self._tracker)
        except Exception as exc:  # noqa: BLE001 - see class docstring
            self._tracker, self._error = None, f"codecarbon failed to start: {exc}"

    def _started(self) -> Any:
        """The running tracker once ``start`` is done (None: disabled or failed)."""
        if self._starting is not None:
            self._starting.join()
            self._starting = None
        return self._tracker

    def cpu_spec(self) -> CpuSpec | None:
        """What codecarbon's probe found about the CPU, for :mod:`evaluator.power`: the
        running tracker's (waits for ``start``), else the probe kept for this machine."""
        tracker = self._started() if self.enabled else None
        return (_tracker_cpu_spec(tracker) if tracker is not None else None) or kept_cpu_spec()

    def _absent(self) -> Energy:
        """What a figure says when there is no tracker to read."""
        if not self.enabled:
            return Energy(country_iso_code=self.country_iso_code, method="disabled")
        return Energy(country_iso_code=self.country_iso_code, method=self._error or "unavailable")

    def begin_part(self, name: str) -> None:
        """Start one part's share (waits for ``start`` to finish)."""
        tracker = self._started()
        if tracker is None:
            return
        try:
            tracker.start_task(name)
        except Exception:  # noqa: BLE001 - see class docstring; end_part reports it
            logging.getLogger(__name__).debug("codecarbon start_task failed", exc_info=True)

    def end_part(self) -> Energy:
        """The energy since ``begin_part``; the meter keeps running."""
        tracker = self._started()
        if tracker is None:
            return self._absent()
        try:
            data = tracker.stop_task()  # the part begun last
            if data is None:  # no part begun: begin_part failed (logged)
                return Energy(country_iso_code=self.country_iso_code, method="unavailable")
            return self._figure(tracker, data)
        except Exception as exc:  # noqa: BLE001 - see class docstring
            return Energy(
                country_iso_code=self.country_iso_code, method=f"codecarbon failed: {exc}"
            )

    def stop(self) -> Energy:
        """Stop; the energy since ``start``."""
        tracker = self._started()
        if tracker is None:
            if self.enabled:
                self.energy = self._absent()
            return self.energy
        try:
            tracker.stop()
            self.energy = self._figure(tracker, tracker.final_emissions_data)
        except Exception as exc:  # noqa: BLE001 - see class docstring
            self.energy = Energy(
                country_iso_code=self.country_iso_code, method=f"codecarbon failed: {exc}"
            )
        finally:
            self._tracker = None
        return self.energy

    def _figure(self, tracker: Any, data: Any) -> Energy:
        """An Energy from codecarbon's EmissionsData (a whole run's or one part's)."""
        mode = _cpu_mode(tracker)
        return Energy(
            kwh=float(data.energy_consumed),
            co2_kg=float(data.emissions),
            estimate=mode not in _MEASURED_MODES,
            method=f"codecarbon {data.codecarbon_version} offline, cpu: {mode}",
            country_iso_code=self.country_iso_code,
        )

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _tracker_cpu_spec(tracker: Any) -> CpuSpec | None:
    # As _cpu_mode: codecarbon's CPU object has no public accessors.
    try:
        from importlib.metadata import version

        for hardware in getattr(tracker, "_hardware", []):
            if type(hardware).__name__ == "CPU":
                tdp = getattr(hardware, "_tdp", None)
                return CpuSpec(
                    model=str(getattr(hardware, "_model", "")),
                    tdp_w=float(tdp) if tdp else None,
                    cpus=int(tracker._conf.get("cpu_count") or hardware._cpu_count),
                    mode=str(getattr(hardware, "_mode", "")),
                    codecarbon=version("codecarbon"),
                )
    except Exception:  # noqa: BLE001 - another codecarbon's internals: the kept probe then
        logging.getLogger(__name__).debug("no CPU spec from codecarbon", exc_info=True)
    return None


def _cpu_mode(tracker: Any) -> str:
    # codecarbon keeps how it reads the CPU on its hardware objects (`cpu_load`, `intel_rapl`,
    # `tdp`...); there is no public accessor.
    for hardware in getattr(tracker, "_hardware", []):
        if type(hardware).__name__ == "CPU":
            return str(getattr(hardware, "_mode", "unknown"))
    return "unknown"
