"""Raw inference in a process of its own: a bundle's model loaded as its author would load
it, its ``predict`` run once over a file of inputs in batches, timed; prints the seconds.

``bench_evaluator.py`` runs it once per repetition beside ``evalboard evaluate``, so that
both sides of a ratio run in a fresh process: the same pure-Python loop here runs 12.6 to
14.8 ms from one process to the next (where the interpreter's memory lands), steady within
each, and raw inference timed in the benchmark's own process compared every ``evaluate``
with one draw of that spread. One pass, as the sandbox makes one: a second pass of the
same process is 2-4% faster here (the interpreter's and the CPU's caches warm).

Run: ``python benchmarks/_raw_inference.py BUNDLE INPUTS.jsonl BATCH [CONFIG]``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from tests.helpers.sentiment_bundles import load_in_process  # noqa: E402


def timed_pass(bundle: Path, inputs: list[dict[str, Any]], batch: int) -> float:
    """Seconds of one pass of ``predict`` over ``inputs``, the model loaded."""
    model = load_in_process(bundle)
    started = time.perf_counter()
    for offset in range(0, len(inputs), batch):
        model.predict(inputs[offset : offset + batch])
    return time.perf_counter() - started


def main() -> None:
    bundle, path, batch = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    inputs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    print(timed_pass(bundle, inputs, batch))


if __name__ == "__main__":
    main()
