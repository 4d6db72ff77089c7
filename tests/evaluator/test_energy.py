"""One energy meter through an evaluation, each dataset's share a part of it (real codecarbon)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from evaluator import EnergyMeter


def test_parts_of_a_running_meter_are_each_measured() -> None:
    with EnergyMeter("FRA") as meter:
        parts = []
        for name in ("first", "second"):
            meter.begin_part(name)
            time.sleep(0.2)
            parts.append(meter.end_part())
    total = meter.energy
    assert total.kwh is not None
    for part in parts:
        assert part.kwh is not None and part.kwh > 0
        assert part.co2_kg is not None and part.co2_kg > 0
        assert part.method == total.method and part.country_iso_code == "FRA"
    # The meter ran before, between and after the parts (a float sum's rounding aside).
    assert total.kwh >= sum(part.kwh or 0 for part in parts) * (1 - 1e-9)


def test_a_part_never_begun_is_unavailable_not_an_error() -> None:
    with EnergyMeter("USA") as meter:
        energy = meter.end_part()
    assert energy.kwh is None and energy.method == "unavailable"


_START = """
import sys
from evaluator import EnergyMeter

with EnergyMeter("USA") as meter:
    meter.begin_part("d")
    part = meter.end_part()
print(part.method, "pandas" in sys.modules, "cpuinfo" in sys.modules)
"""


def test_the_hardware_probe_is_kept_for_the_next_process(tmp_path: Path) -> None:
    # codecarbon probes the machine at its first start in a process (py-cpuinfo in a
    # subprocess: about 1.5 s); a later process on the same machine reuses what it found.
    env = {**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path)}

    def start() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", _START], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    *method, _, probed = start()
    assert probed == "True" and (tmp_path / "codecarbon-hardware.json").is_file()
    *again, pandas, probed_again = start()
    assert probed_again == "False" and again == method and "codecarbon" in method
    # Nor are codecarbon's CSV tables read (pandas: 0.3 s): only the probe reads them.
    assert pandas == "False"


def test_a_foreign_kept_probe_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "codecarbon-hardware.json").write_text(
        '{"identity": {"host": "elsewhere"}, "plan": {}}', encoding="utf-8"
    )
    env = {**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _START], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split()[-1] == "True"  # probed again, and kept anew
    assert "elsewhere" not in (tmp_path / "codecarbon-hardware.json").read_text()
