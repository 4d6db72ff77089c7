"""Sandbox overheads, side by side in one run; writes benchmarks/results/sandbox.json.

1. Per-message cost of the channel: a round trip of one tiny request, unix socket vs
   stdio, in the docker, gvisor (where the engine has runsc) and local sandboxes.
2. Start-up: open_sandbox(...).start() until the model's hello (image already built).
3. Inference: a real model (MiniLM embeddings + a head trained on DynaSent, an onnx
   bundle) in the docker and gvisor sandboxes against the same model in this process, at batch 1 and
   batch 32, the same number of threads on both sides; in the sandbox both one request
   at a time (``predict``) and pipelined (``predict_stream``, two in flight, as the
   evaluator runs it). The three are interleaved within each repetition, so drift in the
   machine's load touches all of them alike.

Figures are medians. Run: ``.venv/bin/python benchmarks/bench_sandbox.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalboard.core.limits import SandboxLimits  # noqa: E402
from submission_sandbox import gvisor_available, open_sandbox  # noqa: E402
from tests.helpers.sandbox_models import (  # noqa: E402
    build_minilm_bundle,
    in_process_model,
    sample_sentences,
)

ECHO = (
    "class Model:\n    def __init__(self, d):\n        pass\n    def predict(self, batch):\n"
    "        return [{'label': 'positive'} for _ in batch]\n"
)
THREADS = 2
LIMITS = SandboxLimits(cpus=THREADS, memory="2g", timeout_s=600)


def _echo_bundle(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "evalboard.yaml").write_text(
        "name: echo\ntask: sentiment\nruntime: python\nentry: handler:Model\n"
    )
    (directory / "handler.py").write_text(ECHO)
    return directory


def per_message(bundle: Path, kind: str, channel: str, count: int) -> float:
    message = [{"uid": "1", "statement": "a short sentence"}]
    with open_sandbox(bundle, kind=kind, limits=LIMITS, channel=channel) as box:
        for _ in range(20):
            box.predict(message)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            box.predict(message)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def startup(bundle: Path, kind: str, count: int) -> float:
    with open_sandbox(bundle, kind=kind, limits=LIMITS):
        pass  # builds the image once, outside the timing
    times = []
    for _ in range(count):
        box = open_sandbox(bundle, kind=kind, limits=LIMITS)
        started = time.perf_counter()
        box.start()
        times.append(time.perf_counter() - started)
        box.close()
    return statistics.median(times)


def _timed(run: Any, batches: list[list[dict[str, Any]]]) -> float:
    started = time.perf_counter()
    run(batches)
    return time.perf_counter() - started


def _box_runs(kind: str, box: Any) -> dict[str, Any]:
    return {
        kind: lambda chunks: [box.predict(chunk) for chunk in chunks],
        f"{kind}_pipelined": lambda chunks: list(box.predict_stream(chunks, in_flight=2)),
    }


def inference(
    bundle: Path, batch: int, reps: int, inputs: list[dict[str, Any]], kinds: list[str]
) -> dict[str, Any]:
    os.environ["EVALBOARD_THREADS"] = str(THREADS)
    local = in_process_model(bundle)
    batches = [inputs[i : i + batch] for i in range(0, len(inputs), batch)]
    expected = [{"label": o["label"], "probs": o["probs"]} for o in local.predict(batches[0])]
    with ExitStack() as stack:
        boxes = {k: stack.enter_context(open_sandbox(bundle, kind=k, limits=LIMITS)) for k in kinds}
        runs: dict[str, Any] = {
            "in_process": lambda chunks: [local.predict(chunk) for chunk in chunks]
        }
        for kind, box in boxes.items():
            runs.update(_box_runs(kind, box))
        for run in runs.values():  # warm-up
            run(batches[:2])
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(reps):
            for name, run in runs.items():
                seconds[name].append(_timed(run, batches))
        same = all(
            box.predict(batches[0]) == expected
            and next(box.predict_stream(batches[:1])) == expected
            for box in boxes.values()
        )
    rate = {name: len(inputs) / statistics.median(times) for name, times in seconds.items()}
    row: dict[str, Any] = {"batch_size": batch}
    for name in runs:
        row[f"{name}_examples_per_s"] = round(rate[name], 1)
    for kind in kinds:
        for way in ("", "_pipelined"):
            row[f"ratio_{kind}{way}_to_in_process"] = round(
                rate[f"{kind}{way}"] / rate["in_process"], 3
            )
    row["goal_ratio_pipelined"] = 0.95
    if "gvisor" in kinds:  # the second wall against the first, as the evaluator runs them
        for way in ("", "_pipelined"):
            row[f"ratio_gvisor{way}_to_docker{way}"] = round(
                rate[f"gvisor{way}"] / rate[f"docker{way}"], 3
            )
        row["goal_ratio_gvisor_to_docker"] = 0.9
    row["same_predictions"] = same
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks/results/sandbox.json")
    args = parser.parse_args()
    messages, starts, reps = (200, 3, 3) if args.quick else (1000, 7, 9)
    # gVisor where the engine has it (docker/bootstrap.sh registers it); said in the JSON.
    kinds = ["docker", "gvisor"] if gvisor_available() else ["docker"]
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as scratch:
        work = Path(scratch)
        echo = _echo_bundle(work / "echo")
        results: dict[str, Any] = {
            "schema_version": 1,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "threads": THREADS,
            "per_message_us": {
                f"{kind}_{channel}": round(per_message(echo, kind, channel, messages), 1)
                for kind in (*kinds, "local")
                for channel in ("unix", "stdio")
            },
            "startup_s": {
                kind: round(startup(echo, kind, starts), 3) for kind in (*kinds, "local")
            },
            "sandboxes": kinds,
        }
        model = build_minilm_bundle(work / "minilm")
        inputs = sample_sentences(1024)  # batch 32: 32 batches, long enough to time
        results["model"] = "MiniLM token embeddings + logistic head (DynaSent r1), onnx"
        for kind in kinds:
            results["startup_s"][f"{kind}_minilm"] = round(startup(model, kind, starts), 3)
        results["inference"] = [
            inference(model, batch, reps, inputs[: 64 if batch == 1 else 1024], kinds)
            for batch in (1, 32)
        ]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
