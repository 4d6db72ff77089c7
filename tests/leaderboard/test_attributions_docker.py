"""Word attributions for every runtime, through the Docker sandbox and the target pool
that serves live predictions: a python bundle, an onnx bundle (the embedding-bag model,
MiniLM's token embeddings) and an image bundle (the docs' contract example, a container
that is not Python-runtime code). Each attribution is what the same model, run in this
process, says about the same variants."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.context import Context
from evalboard.core.limits import SandboxLimits
from leaderboard.attributions import Attributor
from leaderboard.loop import TargetPool
from leaderboard.occlusion import attribution_scores, variants, words_of
from submission_sandbox import Sandbox, open_sandbox
from tests.helpers.sandbox_models import (
    CONTRACT_EXAMPLE,
    build_contract_image_bundle,
    load_module,
)
from tests.helpers.tasks import sentiment_spec
from tests.loop.platform import FIXTURES
from tests.submission_sandbox.conftest import docker_engine  # noqa: F401 - a fixture

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SENTENCE = "What a great film it was"
LIMITS = SandboxLimits(cpus=1, memory="1g", timeout_s=120)
#: The platform's smallest offline base image (Python 3, nothing else).
SMALL_BASE = "evalboard/base:bookworm"

#: A bundle directory and the same model's answers computed in this process.
Made = tuple[Path, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]]


def _python(tmp: Path, engine: Any, request: pytest.FixtureRequest) -> Made:
    bundle = tmp / "keyword"
    shutil.copytree(FIXTURES / "keyword", bundle, ignore=shutil.ignore_patterns("__pycache__"))
    model = load_module(bundle / "handler.py", "keyword_handler").Model(str(bundle))
    return bundle, model.predict


def _onnx(tmp: Path, engine: Any, request: pytest.FixtureRequest) -> Made:
    from tests.helpers.sandbox_models import in_process_model

    bundle: Path = request.getfixturevalue("embedding_bag_bundle")  # built once per run
    return bundle, in_process_model(bundle).predict


def _image(tmp: Path, engine: Any, request: pytest.FixtureRequest) -> Made:
    try:
        engine.images.get(SMALL_BASE)
    except Exception:  # noqa: BLE001 - absent or unreadable: not usable
        pytest.skip(f"{SMALL_BASE} is missing; run docker/bootstrap.sh")
    bundle = build_contract_image_bundle(
        engine,
        tmp / "image-bundle",
        base_image=SMALL_BASE,
        tag="evalboard-test/contract-example-attribution:latest",
    )
    classify = load_module(CONTRACT_EXAMPLE, "contract_model").classify
    return bundle, lambda batch: [classify(x["statement"]) for x in batch]


MAKERS = {"python": _python, "onnx": _onnx, "image": _image}


@pytest.fixture(params=list(MAKERS))
def made(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    docker_engine: Any,  # noqa: F811 - the fixture imported above
) -> Iterator[tuple[str, Made]]:
    runtime: str = request.param
    yield runtime, MAKERS[runtime](tmp_path_factory.mktemp(runtime), docker_engine, request)


def test_every_runtime_is_explained_through_its_docker_sandbox(
    made: tuple[str, Made], ctx: Context
) -> None:
    runtime, (bundle, in_process) = made
    task = sentiment_spec()
    opened: list[Sandbox] = []

    def factory(submission_id: int) -> Sandbox:
        box = open_sandbox(bundle, kind="docker", limits=LIMITS)
        opened.append(box)
        return box

    pool = TargetPool(factory)
    try:
        result = Attributor(ctx).attribute(
            submission_id=1,
            task=task,
            inputs={"statement": SENTENCE},
            predict=lambda batch: pool.predict_any(1, batch, task),
        )
    finally:
        pool.close()
    assert [box.kind for box in opened] == ["docker"]  # one sandbox, one request
    assert result.variants == 7
    (field,) = result.fields
    assert [w.text for w in field.words] == SENTENCE.split()
    # What the same model says in this process about the same input and variants.
    text = {"statement": SENTENCE}
    full, *occluded = in_process(
        [
            {"uid": "0", **text},
            *(
                {"uid": str(i), **v}
                for i, v in enumerate(variants(text, words_of(text, ["statement"])), start=1)
            ),
        ]
    )
    expected = attribution_scores(task, full, occluded)
    assert result.prediction == full["label"]
    assert [w.score for w in field.words] == pytest.approx(expected, abs=1e-5)
    if runtime in ("python", "image"):
        # Both word-list models answer positive because of "great" alone.
        scores = {w.text: w.score for w in field.words}
        assert scores.pop("great") == pytest.approx(0.55 if runtime == "python" else 0.5)
        assert set(scores.values()) == {0.0}
    else:
        assert any(abs(s) > 0.01 for s in expected)  # a real model: words matter
