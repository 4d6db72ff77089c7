"""The researcher's usual model, end to end: a scikit-learn pipeline trained on DynaSent dev,
as a joblib bundle (with requirements.txt) and as an ONNX bundle (skl2onnx), evaluated in
the Docker sandbox on DynaSent test with perf equal to the same model in process.

The bundles are written by docs/examples/sklearn_bundles.py, the code the docs show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator import RunOptions, TestSet, evaluate
from tests.helpers.sandbox_models import load_module
from tests.helpers.tasks import sentiment_spec, write_jsonl
from tests.submission_sandbox.conftest import docker_engine  # noqa: F401 - a fixture

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
TRAIN_ROWS = 3000  # small and fast: a few seconds of training


def _dynasent(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["gold_label"] in ("negative", "neutral", "positive"):
            rows.append(
                {
                    "uid": record["text_id"],
                    "statement": record["sentence"],
                    "label": record["gold_label"],
                }
            )
    return rows


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, list[dict[str, Any]]]:
    """The pipeline, trained on DynaSent R1 dev, and DynaSent R1 test as a canonical file."""
    pytest.importorskip("sklearn")
    from tests.conftest import SHARED_DATASETS

    dynasent = SHARED_DATASETS / "dynasent"
    if not dynasent.is_dir():
        pytest.skip(f"real datasets not found at {SHARED_DATASETS}")
    examples = load_module(EXAMPLES / "sklearn_bundles.py", "sklearn_bundles")
    train_rows = _dynasent(dynasent / "dynasent-v1.1-round01-yelp-dev.jsonl")[:TRAIN_ROWS]
    pipeline = examples.train(
        [row["statement"] for row in train_rows], [row["label"] for row in train_rows]
    )
    test_rows = _dynasent(dynasent / "dynasent-v1.1-round01-yelp-test.jsonl")
    folder = tmp_path_factory.mktemp("sklearn")
    return (examples, pipeline, folder), write_jsonl(folder / "r1-test.jsonl", test_rows), test_rows


def _macro_f1(golds: list[str], predicted: list[str]) -> float:
    from sklearn.metrics import f1_score

    return 100 * float(f1_score(golds, predicted, average="macro"))


def _in_docker(bundle: Path, test_file: Path) -> float:
    result = evaluate(
        bundle,
        task=sentiment_spec(),
        datasets=[TestSet.from_jsonl(test_file)],
        options=RunOptions(sandbox="docker", measure_energy=False),
    )
    assert not result.failed, [o.failure for o in result.failed]
    metrics = result.datasets[0].metrics
    assert metrics is not None and metrics.perf is not None
    return metrics.perf


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("docker_engine")
def test_joblib_bundle_with_requirements_equals_the_pipeline_in_process(trained: Any) -> None:
    (examples, pipeline, folder), test_file, rows = trained
    bundle = examples.write_joblib_bundle(pipeline, folder / "tfidf-logreg")
    assert "scikit-learn==" in (bundle / "requirements.txt").read_text()
    handler = load_module(bundle / "handler.py", "joblib_handler").Model(str(bundle))
    in_process = _macro_f1(
        [row["label"] for row in rows], [out["label"] for out in handler.predict(rows)]
    )
    assert 50 < in_process < 95  # a real, imperfect model
    assert _in_docker(bundle, test_file) == pytest.approx(in_process, abs=1e-9)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("docker_engine")
def test_skl2onnx_bundle_equals_the_onnx_model_in_process(trained: Any) -> None:
    pytest.importorskip("skl2onnx")
    import numpy as np
    import onnxruntime

    (examples, pipeline, folder), test_file, rows = trained
    bundle = examples.write_onnx_bundle(pipeline, folder / "tfidf-logreg-onnx")
    session = onnxruntime.InferenceSession(str(bundle / "model.onnx"))
    texts = np.array([[row["statement"]] for row in rows], dtype=object)
    probabilities = next(o for o in session.run(None, {"text": texts}) if o.ndim == 2)
    labels = [str(label) for label in pipeline.classes_]
    in_process = _macro_f1(
        [row["label"] for row in rows], [labels[i] for i in probabilities.argmax(axis=1)]
    )
    # The graph is the pipeline: its predictions are scikit-learn's, nearly to the example.
    agreement = np.mean(
        probabilities.argmax(axis=1) == pipeline.predict_proba(texts[:, 0]).argmax(axis=1)
    )
    assert agreement > 0.99
    assert _in_docker(bundle, test_file) == pytest.approx(in_process, abs=1e-9)


def test_the_docs_show_the_tested_handler() -> None:
    examples = load_module(EXAMPLES / "sklearn_bundles.py", "sklearn_bundles_docs")
    docs = (EXAMPLES.parent / "researchers-bundles.md").read_text(encoding="utf-8")
    body = examples.HANDLER.split('"""\n\n', 1)[1]  # the handler less its docstring
    assert f"```python\n{body}```" in docs
    assert '{"locale": "C"' in docs
