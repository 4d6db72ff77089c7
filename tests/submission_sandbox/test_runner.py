"""The in-sandbox runner's serving loops, in process: order, errors, shutdown, EOF."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
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
