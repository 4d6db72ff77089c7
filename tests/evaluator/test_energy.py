"""One energy meter through an evaluation, each dataset's share a part of it (real codecarbon)."""

from __future__ import annotations

import time

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
