"""The sandbox's energy per 1,000 examples (evaluator.power), from injected readings."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from evaluator._energy_probe import kept_cpu_spec
from evaluator.power import CpuSpec, HostCounters, SandboxEnergy, power_model

_EPYC = CpuSpec(model="AMD EPYC", tdp_w=8.0, cpus=2, mode="cpu_load", codecarbon="3.3.2")


class FakeCounters:
    """Scripted readings: each call takes the next value of its list."""

    def __init__(
        self,
        *,
        rapl: list[Mapping[str, tuple[int, int]] | None] | None = None,
        busy: list[float] | None = None,
        gpu: list[int | None] | None = None,
    ) -> None:
        self._rapl: Iterator[Mapping[str, tuple[int, int]] | None] = iter(rapl or [])
        self._busy = iter(busy or [])
        self._gpu = iter(gpu or [])
        self._rapl_present = rapl is not None
        self._gpu_present = gpu is not None

    def rapl_uj(self) -> Mapping[str, tuple[int, int]] | None:
        return next(self._rapl) if self._rapl_present else None

    def busy_cpu_seconds(self) -> float:
        return next(self._busy)

    def gpu_mj(self) -> int | None:
        return next(self._gpu) if self._gpu_present else None


def _run(
    counters: FakeCounters, model_cpu: CpuSpec | None = _EPYC, *, gpu: bool = False
) -> SandboxEnergy:
    model = power_model(model_cpu, counters, gpu=gpu)
    assert model is not None
    meter = SandboxEnergy(model, counters)
    meter.start()
    meter.stop()
    return meter


def test_without_rapl_the_cgroup_cpu_time_is_priced_at_codecarbons_tdp_per_cpu() -> None:
    meter = _run(FakeCounters())
    assert meter.model.method == "estimated"
    assert meter.model.tdp_w == 8.0 and meter.model.cpus == 2 and meter.model.watts_per_cpu == 4.0
    assert "codecarbon 3.3.2" in meter.model.source
    # 0.5 CPU seconds over 250 examples at 4 W per CPU: 2 J, so 8 J per 1,000.
    assert meter.per_1k_j(sandbox_cpu_s=0.5, examples=250) == pytest.approx(8.0)


def test_rapl_energy_is_shared_out_by_the_sandboxs_part_of_the_busy_cpu_time() -> None:
    zones = [{"intel-rapl:0": (1_000_000, 2**32)}, {"intel-rapl:0": (31_000_000, 2**32)}]
    meter = _run(FakeCounters(rapl=[zones[0], *zones], busy=[100.0, 104.0]))
    assert meter.model.method == "measured" and meter.model.rapl_zones == ["intel-rapl:0"]
    # 30 J over the phase; the sandbox used 1 of the machine's 4 busy CPU seconds: 7.5 J,
    # over 500 examples: 15 J per 1,000.
    assert meter.per_1k_j(sandbox_cpu_s=1.0, examples=500) == pytest.approx(15.0)


def test_a_rapl_counter_that_wrapped_around_still_counts_forwards() -> None:
    top = 262_143_328_850
    before = {"intel-rapl:0": (top - 1_000_000, top), "intel-rapl:1": (5, top)}
    after = {"intel-rapl:0": (2_000_000, top), "intel-rapl:1": (1_000_005, top)}
    meter = _run(FakeCounters(rapl=[before, before, after], busy=[0.0, 2.0]))
    # 3 J on the wrapped package, 1 J on the other; the sandbox was all the busy time.
    assert meter.per_1k_j(sandbox_cpu_s=2.0, examples=1000) == pytest.approx(4.0)


def test_the_share_never_passes_the_whole_machine() -> None:
    # The cgroup and /proc/stat are read a moment apart: the cgroup may read a little more.
    before, after = {"intel-rapl:0": (0, 2**40)}, {"intel-rapl:0": (10_000_000, 2**40)}
    meter = _run(FakeCounters(rapl=[before, before, after], busy=[0.0, 1.0]))
    assert meter.per_1k_j(sandbox_cpu_s=1.2, examples=1000) == pytest.approx(10.0)


def test_a_gpu_the_sandbox_had_adds_its_nvml_energy_and_says_so() -> None:
    meter = _run(FakeCounters(gpu=[0, 10_000, 70_000]), gpu=True)
    assert meter.model.gpu == "NVML total energy counter"
    assert meter.model.method == "estimated"  # the CPU part is still codecarbon's TDP
    # 1 CPU second at 4 W, plus 60 J of GPU, over 100 examples: 640 J per 1,000.
    assert meter.per_1k_j(sandbox_cpu_s=1.0, examples=100) == pytest.approx(640.0)


def test_a_gpu_without_nvml_is_left_out_and_the_source_says_so() -> None:
    meter = _run(FakeCounters(), gpu=True)
    assert meter.model.gpu is None and "GPU not counted" in meter.model.source
    assert meter.per_1k_j(sandbox_cpu_s=1.0, examples=1000) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("cpu_s", "examples"),
    [(None, 100), (1.0, 0)],
    ids=["no cgroup CPU time", "no example"],
)
def test_no_figure_without_cpu_time_or_examples(cpu_s: float | None, examples: int) -> None:
    assert _run(FakeCounters()).per_1k_j(sandbox_cpu_s=cpu_s, examples=examples) is None


def test_no_figure_when_the_counters_vanish_mid_phase() -> None:
    # A zone readable at the start and not at the end (permissions changed, a hot-unplug).
    meter = _run(
        FakeCounters(
            rapl=[{"intel-rapl:0": (0, 2**32)}, {"intel-rapl:0": (0, 2**32)}, None], busy=[0.0, 1.0]
        )
    )
    assert meter.per_1k_j(sandbox_cpu_s=1.0, examples=10) is None


def test_a_figure_needs_a_stop() -> None:
    model = power_model(_EPYC, FakeCounters())
    assert model is not None
    meter = SandboxEnergy(model, FakeCounters())
    meter.start()
    assert meter.per_1k_j(sandbox_cpu_s=1.0, examples=10) is None


@pytest.mark.parametrize(
    "cpu",
    [None, CpuSpec("x", None, 2, "cpu_load"), CpuSpec("x", 8.0, 0, "cpu_load")],
    ids=["no probe", "no tdp", "no cpus"],
)
def test_no_power_model_without_rapl_or_a_usable_tdp(cpu: CpuSpec | None) -> None:
    assert power_model(cpu, FakeCounters()) is None


def _zone(root: Path, name: str, label: str, energy: str, top: str = "262143328850") -> None:
    zone = root / name
    zone.mkdir()
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(energy + "\n")
    (zone / "max_energy_range_uj").write_text(top + "\n")


def test_host_counters_read_package_zones_only(tmp_path: Path) -> None:
    _zone(tmp_path, "intel-rapl:0", "package-0", "123")
    _zone(tmp_path, "intel-rapl:0:0", "core", "100")  # a part of the package: not summed
    _zone(tmp_path, "intel-rapl:1", "psys", "999")  # the whole platform: not the CPU's
    assert HostCounters(root=tmp_path).rapl_uj() == {"intel-rapl:0": (123, 262143328850)}


@pytest.mark.parametrize("energy", ["", "not a number"])
def test_unreadable_rapl_reads_as_absent(tmp_path: Path, energy: str) -> None:
    _zone(tmp_path, "intel-rapl:0", "package-0", energy)
    assert HostCounters(root=tmp_path).rapl_uj() is None
    assert HostCounters(root=tmp_path / "missing").rapl_uj() is None


def test_the_kept_probe_gives_codecarbons_tdp_for_this_machine_only(tmp_path: Path) -> None:
    from evaluator import _energy_probe

    path = tmp_path / "codecarbon-hardware.json"
    plan = {
        "conf": {"cpu_count": 2},
        "hardware_specs": [
            {"kind": "ram"},
            {"kind": "cpu", "mode": "cpu_load", "model": "AMD EPYC", "tdp": 8},
        ],
    }
    identity = {**_energy_probe._machine(), "codecarbon": "3.3.2"}
    path.write_text(json.dumps({"identity": identity, "plan": plan}))
    assert kept_cpu_spec(path) == _EPYC
    path.write_text(json.dumps({"identity": {**identity, "boot": "another"}, "plan": plan}))
    assert kept_cpu_spec(path) is None
    path.write_text("{not json")
    assert kept_cpu_spec(path) is None
    assert kept_cpu_spec(tmp_path / "absent.json") is None
