"""Each figure's range over the last whole runs on one kind of machine
(``benchmarks/whole_runs.py``), as the README states it and ``reproduce`` checks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import _pool
from benchmarks.figures import figure, machines, reproduced, rows
from benchmarks.reproduce import compare, main
from benchmarks.whole_runs import (
    EARLIER,
    KEPT_RUNS,
    MACHINES,
    REPRODUCED,
    RUNS,
    carry,
    cpu_generation,
    kind_folder,
    kind_name,
    machine_kind,
    stated_range,
)

KIND = {"cpu": "AMD EPYC", "cpus": 2, "python": "3.11.7"}
OTHER = {"cpu": "Intel(R) Xeon(R) Processor", "cpus": 2, "python": "3.11.7"}


def _spread(median: float, low: float, high: float) -> dict[str, Any]:
    return {"median": median, "min": low, "max": high, "runs": 5}


def _run(ratio: dict[str, Any], api: dict[str, Any] | None = None) -> dict[str, Any]:
    timing = api or {"p50_ms": 8.0, "min_ms": 6.0, "max_ms": 9.0, "p95_ms": 8.8, "n": 200}
    return {"ratio": ratio, "by_batch": [{"ratio": dict(ratio)}], "warm": {"api": timing}}


def test_a_run_carries_the_ranges_of_the_runs_before_on_the_same_kind_of_machine() -> None:
    first = _run(_spread(1.0, 0.9, 1.1))
    assert carry(None, first, KIND) == 1 and EARLIER not in first["ratio"]
    second = _run(_spread(1.3, 1.2, 1.4))
    assert carry(first, second, KIND) == 2
    assert second["ratio"][EARLIER] == [[0.9, 1.1]]
    assert second["by_batch"][0]["ratio"][EARLIER] == [[0.9, 1.1]]  # a list's items too
    assert second["warm"]["api"][EARLIER] == [[6.0, 9.0]]  # a timing's least and greatest
    assert stated_range(second["ratio"], ("median", "min", "max")) == (0.9, 1.4, 2)
    assert [run["kind"] for run in second[RUNS]] == [KIND, KIND]


def test_only_the_last_runs_are_kept_and_another_machine_starts_over() -> None:
    latest = _run(_spread(1.0, 0.9, 1.1))
    carry(None, latest, KIND)
    for step in range(1, KEPT_RUNS + 2):
        before, latest = latest, _run(_spread(1.0 + step, 0.9 + step, 1.1 + step))
        carry(before, latest, KIND)
    assert len(latest[RUNS]) == KEPT_RUNS
    assert len(latest["ratio"][EARLIER]) == KEPT_RUNS - 1
    assert latest["ratio"][EARLIER][0] == [0.9 + 2, 1.1 + 2]  # the two oldest dropped
    elsewhere = _run(_spread(5.0, 4.0, 6.0))
    assert carry(latest, elsewhere, OTHER) == 1
    assert EARLIER not in elsewhere["ratio"]
    unstamped = _run(_spread(5.0, 4.0, 6.0))  # results from before whole runs were kept
    assert carry({"ratio": _spread(1.0, 0.9, 1.1)}, unstamped, KIND) == 1
    assert EARLIER not in unstamped["ratio"]


def test_a_figure_new_in_this_run_states_its_own_range() -> None:
    first, second = {"ratio": _spread(1.0, 0.9, 1.1)}, _run(_spread(1.3, 1.2, 1.4))
    carry(None, first, KIND)
    carry(first, second, KIND)
    assert EARLIER not in second["warm"]["api"]
    assert stated_range(second["ratio"], ("median", "min", "max"))[2] == 2


def test_the_readme_states_the_range_over_the_whole_runs(tmp_path: Path) -> None:
    first = {"end_to_end_10k": {"vader": {"ratio_cli_to_raw": _spread(2.2, 2.1, 2.3)}}}
    second = {"end_to_end_10k": {"vader": {"ratio_cli_to_raw": _spread(2.5, 2.4, 2.6)}}}
    for case in (first, second):
        case["end_to_end_10k"]["vader"].update(
            model="vader", examples=10000, sandbox="local", raw_us_per_example=31.0
        )
    carry(None, first, KIND)
    carry(first, second, KIND)
    (tmp_path / "evaluator.json").write_text(json.dumps(second), encoding="utf-8")
    assert [r.measured for r in rows(tmp_path)] == ["2.5 (2.1-2.6, 5 runs in each of 2 whole runs)"]
    assert figure(_spread(2.5, 2.4, 2.6)) == "2.5 (2.4-2.6, 5 runs)"


def test_reproduce_checks_a_median_against_the_stated_range(tmp_path: Path) -> None:
    first, second = _run(_spread(1.0, 0.9, 1.1)), _run(_spread(1.3, 1.2, 1.4))
    carry(None, first, KIND)
    carry(first, second, KIND)
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "x.json").write_text(json.dumps(second), encoding="utf-8")
    (tmp_path / "new").mkdir()
    # Outside the last run's own range (1.2-1.4), inside the first run's.
    (tmp_path / "new" / "x.json").write_text(json.dumps(_run(_spread(1.0, 0.95, 1.05))))
    found = {c.where: c.within for c in compare(tmp_path / "ref", tmp_path / "new")}
    assert found["x.json: ratio"] is True


def test_the_runner_pools_a_file_a_benchmark_just_wrote(tmp_path: Path) -> None:
    before = _run(_spread(1.0, 0.9, 1.1))
    carry(None, before, machine_kind())
    written = tmp_path / "x.json"
    written.write_text(json.dumps(_run(_spread(1.3, 1.2, 1.4))), encoding="utf-8")
    _pool(written, before)
    pooled = json.loads(written.read_text(encoding="utf-8"))
    assert pooled["ratio"][EARLIER] == [[0.9, 1.1]] and len(pooled[RUNS]) == 2
    again = tmp_path / "y.json"
    again.write_text(json.dumps(_run(_spread(1.3, 1.2, 1.4))), encoding="utf-8")
    _pool(again, None)  # no earlier results: this run alone
    assert len(json.loads(again.read_text(encoding="utf-8"))[RUNS]) == 1


def test_a_benchmark_that_did_not_finish_is_not_pooled(tmp_path: Path) -> None:
    """Its file may be partial: not a whole run. This kind's whole runs wait under
    ``machines/`` for the next whole run, which pools with them."""
    here = machine_kind()
    before = _stamped(_spread(1.0, 0.9, 1.1), here)
    written = tmp_path / "x.json"
    written.write_text(json.dumps(_run(_spread(9.0, 8.0, 10.0))), encoding="utf-8")
    _pool(written, before, whole=False)
    partial = json.loads(written.read_text(encoding="utf-8"))
    assert RUNS not in partial and EARLIER not in partial["ratio"]  # this run's own, unstamped
    kept = tmp_path / MACHINES / kind_folder(here) / "x.json"
    assert json.loads(kept.read_text(encoding="utf-8")) == before
    # The run's other benchmarks finished: this kind's folder is not another kind's.
    (tmp_path / "y.json").write_text(json.dumps(before), encoding="utf-8")
    assert machines(tmp_path) == kind_name(here)
    written.write_text(json.dumps(_run(_spread(1.05, 1.0, 1.1))), encoding="utf-8")
    _pool(written, partial)  # the next whole run
    pooled = json.loads(written.read_text(encoding="utf-8"))
    assert pooled["ratio"][EARLIER] == [[0.9, 1.1]] and len(pooled[RUNS]) == 2
    assert pooled[REPRODUCED]["within"] == 3 and not kept.parent.exists()


def _restart(api: float, page: float) -> dict[str, Any]:
    return {"sizes": {"1000": {"restart": {"api_ms": api, "page_ms": page, "n": 1}}}}


def test_a_thing_measured_once_a_run_states_its_range_over_the_runs(tmp_path: Path) -> None:
    runs = [_restart(90.0, 160.0), _restart(110.0, 150.0), _restart(80.0, 170.0)]
    before = None
    for latest in runs:
        carry(before, latest, KIND)
        before = latest
    restart = runs[-1]["sizes"]["1000"]["restart"]
    assert restart["earlier_values"] == {"api_ms": [90.0, 110.0], "page_ms": [160.0, 150.0]}
    (tmp_path / "leaderboard.json").write_text(json.dumps(runs[-1]), encoding="utf-8")
    stated = [r.measured for r in rows(tmp_path) if "first request of a restarted" in r.what]
    assert stated == ["80 / 170 ms (1 request each; 80-110 / 150-170 over 3 whole runs)"]
    # reproduce: a new run's value against that range; a reference of one run states none.
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "leaderboard.json").write_text(json.dumps(_restart(120.0, 155.0)))
    found = {c.where: c.within for c in compare(tmp_path, tmp_path / "new")}
    assert found == {
        "leaderboard.json: sizes/1000/restart/api_ms": False,
        "leaderboard.json: sizes/1000/restart/page_ms": True,
    }
    found = {c.where for c in compare(tmp_path / "new", tmp_path)}
    assert not any("restart" in where for where in found)


def _stability(throughput: float, cpu: float) -> dict[str, Any]:
    found = {
        "throughput_examples_per_s": _spread(1000.0, 950.0, 1050.0),
        "throughput_max_over_min": throughput,
        "cpu_max_over_min": cpu,
        "cores": ["1"],
    }
    return {"runs": 5, "goal_max_over_min": 1.1, "series": {"docker": {"neighbour": found}}}


def test_a_models_spread_over_its_evaluations_states_its_range_over_the_runs(
    tmp_path: Path,
) -> None:
    first, second = _stability(1.05, 1.02), _stability(1.12, 1.04)
    carry(None, first, KIND)
    carry(first, second, KIND)
    found = second["series"]["docker"]["neighbour"]
    earlier = {"throughput_max_over_min": [1.05], "cpu_max_over_min": [1.02]}
    assert found["earlier_values"] == earlier
    (tmp_path / "stability.json").write_text(json.dumps(second), encoding="utf-8")
    (row,) = rows(tmp_path)
    over = "; max/min throughput / CPU 1.05-1.12 / 1.02-1.04 over 2 whole runs)"
    assert row.measured.endswith(over)
    assert row.goal == "<= 1.1"


def test_a_kind_of_machine_has_a_folder_name_of_its_own() -> None:
    assert kind_folder(OTHER) == "intel-xeon-processor-2cpus-python3.11.7"
    assert kind_folder(KIND) == "amd-epyc-2cpus-python3.11.7"
    newer = {**KIND, "generation": "family 25 model 1"}
    assert kind_folder(newer) == "amd-epyc-family-25-model-1-2cpus-python3.11.7"
    assert kind_name(newer) == "AMD EPYC (family 25 model 1) x2, Python 3.11.7"
    assert kind_name(OTHER) == "Intel(R) Xeon(R) Processor x2, Python 3.11.7"


def test_two_generations_named_alike_are_two_kinds(tmp_path: Path) -> None:
    """A hypervisor names both "AMD EPYC"; their family and model numbers tell them apart."""
    cpuinfo = tmp_path / "cpuinfo"
    first = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
    second = first.replace("0", "1").replace("25", "26")
    cpuinfo.write_text(f"{first}model name\t: AMD EPYC\n\n{second}", encoding="utf-8")
    assert cpu_generation(cpuinfo) == "family 25 model 1"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some ARM core\n", encoding="utf-8")
    assert cpu_generation(cpuinfo) is None
    assert cpu_generation(tmp_path / "absent") is None


def _stamped(ratio: dict[str, Any], kind: dict[str, Any]) -> dict[str, Any]:
    results = _run(ratio)
    carry(None, results, kind)
    return results


def test_another_kinds_results_are_kept_and_this_kinds_pooled_again(tmp_path: Path) -> None:
    here, elsewhere = machine_kind(), {"cpu": "Another CPU", "cpus": 64, "python": "3.11.7"}
    # This kind's last results, kept when a run on the other kind replaced them.
    kept = tmp_path / MACHINES / kind_folder(here) / "x.json"
    kept.parent.mkdir(parents=True)
    kept.write_text(json.dumps(_stamped(_spread(1.0, 0.9, 1.1), here)), encoding="utf-8")
    replaced = _stamped(_spread(3.0, 2.9, 3.1), elsewhere)
    written = tmp_path / "x.json"
    # This run: its median outside this kind's range, by more than 10%.
    written.write_text(json.dumps(_run(_spread(1.3, 1.2, 1.4))), encoding="utf-8")
    _pool(written, replaced)
    pooled = json.loads(written.read_text(encoding="utf-8"))
    assert pooled["ratio"][EARLIER] == [[0.9, 1.1]]  # this kind's, not the other's
    assert pooled[REPRODUCED] == {"whole_runs": 1, "figures": 3, "within": 1, "far_outside": 2}
    assert not kept.parent.exists()  # pooled into the results folder: one copy of each kind
    other = tmp_path / MACHINES / kind_folder(elsewhere) / "x.json"
    assert json.loads(other.read_text(encoding="utf-8")) == replaced  # nothing lost
    # The README says what it was measured on and how the run reproduced.
    assert machines(tmp_path) == (
        f"{kind_name(here)}; the last results of other "
        f"kinds: `{tmp_path.parent.name}/{tmp_path.name}/machines/` ({kind_folder(elsewhere)})"
    )
    assert reproduced(tmp_path) == (
        "1 of 3 medians within the ranges stated before this run on this kind of machine "
        "(over 1 whole run), 2 more than 10% outside; by file: x 1 of 3"
    )


def test_reproduce_checks_each_file_against_the_same_kind_of_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "ref"
    (reference / MACHINES / kind_folder(OTHER)).mkdir(parents=True)
    (reference / "x.json").write_text(json.dumps(_stamped(_spread(3.0, 2.9, 3.1), KIND)))
    other = reference / MACHINES / kind_folder(OTHER) / "x.json"
    other.write_text(json.dumps(_stamped(_spread(1.0, 0.9, 1.1), OTHER)), encoding="utf-8")
    (tmp_path / "new").mkdir()
    new = tmp_path / "new" / "x.json"
    new.write_text(json.dumps(_stamped(_spread(1.05, 1.0, 1.1), OTHER)), encoding="utf-8")
    assert {c.where: c.within for c in compare(reference, tmp_path / "new")} == {
        "x.json: ratio": True,
        "x.json: by_batch/0/ratio": True,
        "x.json: warm/api": True,
    }
    other.unlink()  # no reference of that kind: nothing compared, the file named
    assert compare(reference, tmp_path / "new") == []
    assert main([str(reference), str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "no reference on this kind of machine: x.json" in out
    assert "0 of 0 figures within the reference's range (0 more than 10% outside)" in out


def test_a_file_without_figures_records_no_reproduction(tmp_path: Path) -> None:
    before = {"shift": {"p_value": 0.3}}
    carry(None, before, machine_kind())
    written = tmp_path / "drift.json"
    written.write_text(json.dumps({"shift": {"p_value": 0.2}}), encoding="utf-8")
    _pool(written, before)
    pooled = json.loads(written.read_text(encoding="utf-8"))
    assert REPRODUCED not in pooled and len(pooled[RUNS]) == 2
