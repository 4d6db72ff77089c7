"""Two bundles from one scikit-learn pipeline: joblib (python runtime) and ONNX (skl2onnx).

Shown in docs/researchers-bundles.md and run end to end by the test suite
(tests/submission_sandbox/test_sklearn_bundles.py: trained on DynaSent dev, evaluated in
the Docker sandbox on DynaSent test, perf equal to the same model in process).

    pipeline = train(texts, labels)
    write_joblib_bundle(pipeline, Path("tfidf-logreg"))        # needs requirements.txt
    write_onnx_bundle(pipeline, Path("tfidf-logreg-onnx"))     # needs nothing but the file
"""

from __future__ import annotations

from pathlib import Path

import joblib
import sklearn
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

HANDLER = '''\
"""A scikit-learn pipeline saved with joblib: text in, label and probabilities out."""

from pathlib import Path

import joblib


class Model:
    def __init__(self, model_dir):
        self.pipeline = joblib.load(Path(model_dir) / "model.joblib")
        self.labels = [str(label) for label in self.pipeline.classes_]

    def predict(self, batch):
        texts = [example["statement"] for example in batch]
        outputs = []
        for row in self.pipeline.predict_proba(texts):
            probs = {label: float(p) for label, p in zip(self.labels, row)}
            outputs.append({"label": max(probs, key=probs.get), "probs": probs})
        return outputs
'''


def train(texts: list[str], labels: list[str]) -> Pipeline:
    """TF-IDF unigrams and bigrams, then a logistic regression (seconds on a few thousand)."""
    pipeline = Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)),
            ("logreg", LogisticRegression(max_iter=1000, C=4.0)),
        ]
    )
    return pipeline.fit(texts, labels)


def write_joblib_bundle(pipeline: Pipeline, directory: Path, *, task: str = "sentiment") -> Path:
    """The pipeline as model.joblib, a handler, and the exact versions it was saved with."""
    directory.mkdir(parents=True, exist_ok=True)
    joblib.dump(pipeline, directory / "model.joblib")
    (directory / "handler.py").write_text(HANDLER)
    # joblib files load only with the scikit-learn that wrote them: pin what trained it.
    (directory / "requirements.txt").write_text(
        f"scikit-learn=={sklearn.__version__}\njoblib=={joblib.__version__}\n"
    )
    (directory / "evalboard.yaml").write_text(
        f"name: {directory.name}\ntask: {task}\nruntime: python\nentry: handler:Model\n"
        "batch_size: 64\n"
    )
    return directory


def write_onnx_bundle(pipeline: Pipeline, directory: Path, *, task: str = "sentiment") -> Path:
    """The same pipeline as one .onnx file: no requirements, no handler."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType

    tfidf, logreg = pipeline.named_steps["tfidf"], pipeline.named_steps["logreg"]
    onnx_model = convert_sklearn(
        pipeline,
        initial_types=[("text", StringTensorType([None, 1]))],
        options={
            # Without "locale", skl2onnx writes the host's locale (e.g. en_US.UTF-8) into
            # the graph's StringNormalizer, and onnxruntime in a minimal image rejects it.
            # "tokenexp": scikit-learn's default token_pattern, so that ONNX splits words
            # as the pipeline did (measured on DynaSent R1 test: 99.75% of predictions
            # equal to scikit-learn's with it, 98.8% without).
            id(tfidf): {"locale": "C", "tokenexp": r"\b\w\w+\b"},
            # Probabilities as a [batch, labels] tensor rather than a list of maps.
            id(logreg): {"zipmap": False},
        },
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(onnx_model.SerializeToString())
    labels = ", ".join(str(label) for label in pipeline.classes_)
    (directory / "evalboard.yaml").write_text(
        f"name: {directory.name}\ntask: {task}\nruntime: onnx\nmodel: model.onnx\n"
        f"labels: [{labels}]\nbatch_size: 64\n"
    )
    return directory
