"""Text generation in the Docker sandbox against the same model in process; writes
benchmarks/results/generation.json.

The model is the demo's GPT-2 (evalboard/demo/gpt2.py: trained from scratch here, a
transformers bundle), answering SQuAD 2.0 dev questions (../shared/datasets) under the
generative-qa task's settings (32 new tokens at most, greedy), batch 16.

- ``docker``: the bundle in the Docker sandbox, requests pipelined as the evaluator sends
  them (``predict_stream`` with ``in_flight_for(16)`` in flight).
- ``in_process``: the runner's own ``TransformersModel`` called directly, no channel, in a
  container of the same torch runtime image under the same CPU quota, memory and thread
  count (this machine has no torch; the image is what the sandbox runs, so only the
  contract's channel and the sandbox differ).

The two run interleaved, one repetition each in turn, both kept warm. Generated tokens
are counted with sacrebleu's 13a tokenizer on the texts each side returned (the same
texts: checked), so tokens/s compares like with like; examples/s beside it. One ratio per
repetition, median and range.

Run: ``.venv/bin/python benchmarks/bench_generation.py [--repeats N] [--examples N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import load_average, machine, save, spread  # noqa: E402
from datasets_registry.taskspec import load_task_spec  # noqa: E402
from evalboard.core.limits import SandboxLimits  # noqa: E402
from evalboard.core.settings import get_settings  # noqa: E402
from evalboard.demo.gpt2 import build_gpt2_bundle  # noqa: E402
from evaluator.measurement import in_flight_for  # noqa: E402
from submission_sandbox import docker_client, open_sandbox  # noqa: E402
from submission_sandbox.build import RUNNER_PATH  # noqa: E402

BATCH = 16
THREADS = 2
LIMITS = SandboxLimits(cpus=THREADS, memory="2g", timeout_s=3600)
GOAL = 0.95
OUT = ROOT / "benchmarks" / "results" / "generation.json"
TASK = ROOT / "examples" / "tasks" / "generative-qa.yaml"

# In the torch image: waits for /work/go-N, answers the batches, writes /work/done-N.
_IN_PROCESS = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    sys.path.insert(0, "/work")
    import runner
    work = Path("/work")
    bundle = Path("/bundle")
    model = runner.load_model(bundle, runner._manifest(bundle))
    batches = json.loads((work / "batches.json").read_text())
    (work / "ready").write_text("1")
    n = 0
    while True:
        go = work / f"go-{n}"
        while not go.exists():
            time.sleep(0.005)
        if go.read_text() == "stop":
            break
        started = time.perf_counter()
        outputs = [model.predict(batch) for batch in batches]
        seconds = time.perf_counter() - started
        (work / f"done-{n}.part").write_text(json.dumps({"seconds": seconds, "outputs": outputs}))
        os.rename(work / f"done-{n}.part", work / f"done-{n}")
        n += 1
    """
)


def squad_inputs(count: int) -> list[dict[str, Any]]:
    from tests.evaluator.test_generative_qa import generative_examples

    rows = generative_examples()
    while len(rows) < count:
        rows = rows + rows
    return [
        {"uid": f"{i}", "context": r["context"], "question": r["question"]}
        for i, r in enumerate(rows[:count])
    ]


def tokens_13a(texts: list[str]) -> int:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenize = Tokenizer13a()
    return sum(len(tokenize(text).split()) for text in texts)


class InProcess:
    """The runner's model in a container of the torch image, driven through files."""

    def __init__(self, client: Any, bundle: Path, batches: list[Any], generation: dict[str, Any]):
        self.work = Path(tempfile.mkdtemp(prefix="bench-generation-"))
        self.work.chmod(0o777)
        (self.work / "runner.py").write_text(RUNNER_PATH.read_text())
        (self.work / "drive.py").write_text(_IN_PROCESS)
        (self.work / "batches.json").write_text(json.dumps(batches))
        self.n = 0
        self.container = client.containers.run(
            get_settings().torch_image,
            ["python3", "/work/drive.py"],
            detach=True,
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": ""},
            nano_cpus=int(LIMITS.cpus * 1e9),
            mem_limit=LIMITS.memory_bytes,
            environment={
                "EVALBOARD_THREADS": str(THREADS),
                "OMP_NUM_THREADS": str(THREADS),
                "EVALBOARD_GENERATION": json.dumps(generation),
                "HOME": "/tmp",
            },
            volumes={
                str(self.work): {"bind": "/work", "mode": "rw"},
                str(bundle): {"bind": "/bundle", "mode": "ro"},
            },
            labels={"org.evalboard.bench": "generation"},
        )
        self._wait(self.work / "ready", 300)

    def _wait(self, path: Path, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not path.exists():
            self.container.reload()
            if self.container.status == "exited" or time.monotonic() > deadline:
                raise RuntimeError(self.container.logs().decode(errors="replace")[-3000:])
            time.sleep(0.01)

    def run(self) -> tuple[float, list[list[dict[str, Any]]]]:
        (self.work / f"go-{self.n}").write_text("go")
        done = self.work / f"done-{self.n}"
        self._wait(done, 1200)
        self.n += 1
        result = json.loads(done.read_text())
        return float(result["seconds"]), result["outputs"]

    def close(self) -> None:
        (self.work / f"go-{self.n}").write_text("stop")
        try:
            self.container.remove(force=True)
        finally:
            import shutil

            shutil.rmtree(self.work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--examples", type=int, default=64)
    parser.add_argument("--bundle", type=Path, help="a built GPT-2 bundle (default: train one)")
    args = parser.parse_args(argv)
    load_before = load_average()
    task = load_task_spec(TASK)
    generation = task.sandbox_options["generation"]
    inputs = squad_inputs(args.examples)
    batches = [inputs[i : i + BATCH] for i in range(0, len(inputs), BATCH)]
    client = docker_client(timeout=120)
    with tempfile.TemporaryDirectory(prefix="bench-gpt2-") as tmp:
        bundle = args.bundle
        train: dict[str, Any] | None = None
        if bundle is None:
            bundle = Path(tmp) / "bundle"
            train = build_gpt2_bundle(bundle, task_id=task.id)
        os.environ["EVALBOARD_THREADS"] = str(THREADS)
        local = InProcess(client, bundle, batches, generation)
        box = open_sandbox(bundle, kind="docker", limits=LIMITS, **task.sandbox_options)
        try:
            box.start()
            depth = in_flight_for(BATCH)

            def sandboxed() -> tuple[float, list[list[dict[str, Any]]]]:
                started = time.perf_counter()
                outputs = list(box.predict_stream(batches, in_flight=depth))
                return time.perf_counter() - started, outputs

            sandboxed(), local.run()  # warm-up
            seconds: dict[str, list[float]] = {"docker": [], "in_process": []}
            outputs: dict[str, list[list[dict[str, Any]]]] = {}
            for _ in range(args.repeats):
                for name, run in (("docker", sandboxed), ("in_process", local.run)):
                    took, outputs[name] = run()
                    seconds[name].append(took)
        finally:
            box.close()
            local.close()
    texts = {name: [o["text"] for batch in out for o in batch] for name, out in outputs.items()}
    tokens = tokens_13a(texts["in_process"])
    report: dict[str, Any] = {
        "schema_version": 1,
        "model": "the demo's GPT-2 (evalboard/demo/gpt2.py), transformers runtime",
        "task_generation": generation,
        "batch_size": BATCH,
        "in_flight_pipelined": in_flight_for(BATCH),
        "examples": len(inputs),
        "threads": THREADS,
        "limits": {"cpus": LIMITS.cpus, "memory": LIMITS.memory},
        "tokens_counted_with": "sacrebleu 13a tokenizer, on the generated texts",
        "generated_tokens": tokens,
        "same_outputs": texts["docker"] == texts["in_process"],
        "in_process_is": "the runner's TransformersModel called directly in a container of "
        "the torch runtime image with the same CPU quota, memory and threads",
        "train": train,
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
    }
    for name, times in seconds.items():
        report[f"{name}_tokens_per_s"] = spread([tokens / t for t in times], 2)
        report[f"{name}_examples_per_s"] = spread([len(inputs) / t for t in times], 2)
    report["ratio_docker_to_in_process"] = spread(
        [b / a for a, b in zip(seconds["docker"], seconds["in_process"], strict=True)], 4
    )
    report["goal_ratio"] = GOAL
    save(OUT, report)
    print(json.dumps({k: report[k] for k in report if "per_s" in k or "ratio" in k}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
