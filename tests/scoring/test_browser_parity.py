"""leaderboard/static/dynascore.js agrees with scoring.dynascore, run under Node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scoring import dynascore, floor_order, rank

SCRIPT = Path(__file__).resolve().parents[2] / "leaderboard" / "static" / "dynascore.js"
NODE = shutil.which("node")

RUNNER = """
const Dynascore = require(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = cases.map(c => ({
  scores: Dynascore.compute(c.table, c.weights, c.directions, c.offsets, c.perf),
  rank: Dynascore.rank(c.table, c.weights, c.directions, c.offsets, c.perf),
  floored: Dynascore.floorOrder(
    Dynascore.rank(c.table, c.weights, c.directions, c.offsets, c.perf), c.flagged || []),
}));
process.stdout.write(JSON.stringify(out));
"""

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def random_case(rng: np.random.Generator) -> dict[str, Any]:
    n_models = int(rng.integers(1, 12))
    metrics = [
        "perf",
        *rng.choice(
            ["fairness", "memory", "robustness", "throughput", "co2"],
            size=int(rng.integers(0, 6)),
            replace=False,
        ).tolist(),
    ]
    table: dict[str, dict[str, float]] = {}
    for i in range(n_models):
        row = {}
        for metric in metrics:
            # Integers now and then, so that ties (in perf and elsewhere) happen.
            value = float(rng.integers(0, 5)) if rng.random() < 0.3 else rng.uniform(0, 100)
            row[metric] = value
        table[f"model-{rng.integers(0, 1000)}-{i}"] = row
    directions = {m: float(rng.choice([1, -1])) for m in metrics if rng.random() < 0.4}
    offsets = {m: float(rng.uniform(0, 200)) for m in metrics if rng.random() < 0.4}
    weights = {m: float(rng.choice([0.0, rng.uniform(0, 5)])) for m in metrics}
    weights["perf"] = float(rng.uniform(0.1, 5))
    flagged = [m for m in table if rng.random() < 0.3]
    return {
        "flagged": flagged,
        "table": table,
        "weights": weights,
        "directions": directions,
        "offsets": offsets,
        "perf": "perf",
    }


def run_node(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", RUNNER, str(SCRIPT)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def test_javascript_matches_python_on_random_tables() -> None:
    rng = np.random.default_rng(20240531)
    cases = [random_case(rng) for _ in range(300)]
    for case, got in zip(cases, run_node(cases), strict=True):
        kwargs = {k: case[k] for k in ("weights", "directions", "offsets", "perf")}
        expected = dynascore(case["table"], **kwargs)
        assert got["scores"].keys() == expected.keys()
        for model, value in expected.items():
            assert got["scores"][model] == pytest.approx(value, rel=1e-9, abs=1e-9)
        ordered = sorted(expected.values(), reverse=True)
        gaps = [a - b for a, b in zip(ordered, ordered[1:], strict=False)]
        # Equal scores rank by the tie-break in both; near-equal ones could round apart.
        if all(gap == 0 or gap > 1e-9 for gap in gaps):
            assert got["rank"] == rank(case["table"], **kwargs)
            assert got["floored"] == floor_order(got["rank"], set(case["flagged"]))


def test_javascript_matches_the_hand_computed_case() -> None:
    from tests.scoring.test_dynascore import DIRECTIONS, OFFSETS, TABLE

    weights = {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1}
    case = {
        "table": TABLE,
        "weights": weights,
        "directions": DIRECTIONS,
        "offsets": OFFSETS,
        "perf": "perf",
    }
    (got,) = run_node([case])
    expected = dynascore(TABLE, weights=weights, directions=DIRECTIONS, offsets=OFFSETS)
    assert got["scores"] == pytest.approx(expected, abs=1e-12, rel=0)
    assert got["rank"] == rank(TABLE, weights=weights, directions=DIRECTIONS, offsets=OFFSETS)
