"""The in-sandbox runner's serving loops, in process: order, errors, shutdown, EOF."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from submission_sandbox.build import RUNNER_PATH


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evalboard_runner_under_test", RUNNER_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()
SERVES = [RUNNER.serve]


class Echo:
    """Labels each input with its uid; fails on the uid ``boom``, answers NaN on ``nan``."""

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if any(example["uid"] == "boom" for example in batch):
            raise RuntimeError("boom")
        return [
            {"label": example["uid"], "conf": float("nan") if example["uid"] == "nan" else 1.0}
            for example in batch
        ]


def _lines(*messages: dict[str, Any]) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in messages))


def _request(request_id: int, *uids: str) -> dict[str, Any]:
    return {"id": request_id, "inputs": [{"uid": uid} for uid in uids]}


def _answers(writer: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in writer.getvalue().splitlines()]


@pytest.mark.parametrize("serve", SERVES)
def test_answers_in_order_until_shutdown(serve: Any) -> None:
    requests = [_request(n, *(f"{n}-{i}" for i in range(3))) for n in range(1, 21)]
    writer = io.BytesIO()
    code = serve(Echo(), _lines(*requests, {"type": "shutdown"}, _request(99, "late")), writer)
    answers = _answers(writer)
    assert code == 0
    assert [a["id"] for a in answers] == list(range(1, 21))
    assert all(
        [o["label"] for o in a["outputs"]] == [f"{a['id']}-{i}" for i in range(3)] for a in answers
    )


@pytest.mark.parametrize("serve", SERVES)
def test_end_of_input_is_a_clean_end(serve: Any) -> None:
    writer = io.BytesIO()
    assert serve(Echo(), _lines(_request(1, "a")), writer) == 0
    assert [a["id"] for a in _answers(writer)] == [1]


@pytest.mark.parametrize("serve", SERVES)
@pytest.mark.parametrize("bad", ["boom", "nan"])
def test_a_failed_answer_is_reported_in_order_and_ends_the_run(serve: Any, bad: str) -> None:
    writer = io.BytesIO()
    requests = [_request(1, "a"), _request(2, "b"), _request(3, bad), _request(4, "d")]
    assert serve(Echo(), _lines(*requests), writer) == 1
    answers = _answers(writer)
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert "outputs" in answers[1] and "error" in answers[2]
    assert ("boom" if bad == "boom" else "ValueError") in answers[2]["error"]


_FIXTURES = RUNNER_PATH.parents[1] / "tests" / "evaluator" / "fixtures"
#: Manifests of the other runtimes, with the keys only they read.
_MANIFESTS = {
    "transformers": "name: gen\ntask: qa\nruntime: transformers\nmodel: model\n"
    'batch_size: 8\nprompt: "{context}\\nQ: {question}\\nA:"\nstop: ["\\n", "Q:"]\n',
    "onnx": "name: clf\ntask: sentiment\nruntime: onnx\nmodel: m.onnx\nlabels:\n  - neg\n  - pos\n",
}


def _bundle(kind: str, root: Path) -> Path:
    if kind not in _MANIFESTS:
        return _FIXTURES / kind
    (root / "model").mkdir(parents=True)
    (root / "model" / "config.json").write_text("{}")
    (root / "m.onnx").write_bytes(b"")
    (root / "evalboard.yaml").write_text(_MANIFESTS[kind])
    return root


@pytest.mark.parametrize(
    "kind", ["vader_bundle", "keyword_bundle", "first_sentence_bundle", *_MANIFESTS]
)
def test_the_manifest_the_host_passes_is_the_file_the_runner_would_read(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host passes the manifest it validated (EVALBOARD_MANIFEST), what of it the runner
    # reads, so the runner loads no YAML parser; a runner started without it reads
    # evalboard.yaml.
    from evalboard.core.limits import SandboxLimits
    from submission_sandbox import LocalSandbox

    bundle = _bundle(kind, tmp_path / "bundle")
    monkeypatch.delenv("EVALBOARD_MANIFEST", raising=False)
    from_file = RUNNER._manifest(bundle)
    passed = LocalSandbox(bundle, limits=SandboxLimits())._task_environment()
    monkeypatch.setenv("EVALBOARD_MANIFEST", passed["EVALBOARD_MANIFEST"])
    read = {key: value for key, value in from_file.items() if key in RUNNER.MANIFEST_KEYS}
    assert RUNNER._manifest(tmp_path) == read  # tmp_path has no evalboard.yaml


def test_a_long_model_card_is_not_passed_to_the_model(tmp_path: Path) -> None:
    # 20,000 control characters are 120,000 bytes of JSON: with a long description the
    # variable would pass the kernel's 128 KiB for one and the sandbox could not start.
    from evalboard.core.limits import SandboxLimits
    from submission_sandbox import LocalSandbox

    # A copy: appending to the fixture itself grew it by 80 kB a run, and the committed
    # VADER bundle that the benchmarks evaluate came to carry three such cards.
    bundle = shutil.copytree(_bundle("vader_bundle", tmp_path), tmp_path / "bundle")
    manifest = bundle / "evalboard.yaml"
    card = "\\x01" * 20_000
    manifest.write_text(
        manifest.read_text(encoding="utf-8") + f'card: "{card}"\n', encoding="utf-8"
    )
    passed = LocalSandbox(bundle, limits=SandboxLimits())._task_environment()
    assert "card" not in json.loads(passed["EVALBOARD_MANIFEST"])
    assert len(passed["EVALBOARD_MANIFEST"]) < 10_000
