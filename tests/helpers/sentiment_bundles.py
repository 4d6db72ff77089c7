"""Small real sentiment models as python bundles, for end-to-end tests on DynaSent.

A constant model, VADER (the vaderSentiment lexicon, tests/evaluator/fixtures) and a
bag-of-words logistic regression trained here with scikit-learn on whatever rows a test
gives it (its weights are a JSON file the bundle reads with numpy). The same bundle loads
in this process (:func:`load_in_process`) to know its predictions beforehand.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

__all__ = [
    "BOW",
    "CONSTANT",
    "LABELS",
    "VADER",
    "load_in_process",
    "read_rows",
    "train_bow",
    "write_bundle",
]

LABELS = ["negative", "neutral", "positive"]
VADER = (
    Path(__file__).resolve().parents[1] / "evaluator" / "fixtures" / "vader_bundle" / "handler.py"
).read_text()

CONSTANT = """
class Model:
    def __init__(self, model_dir):
        pass

    def predict(self, batch):
        return [{"label": "neutral"} for _ in batch]
"""

BOW = """
import json
import os
import re

import numpy as np

TOKEN = re.compile(r"[a-z']+")


class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "weights.json")) as f:
            weights = json.load(f)
        self.vocab = weights["vocab"]
        self.coef = np.asarray(weights["coef"])
        self.bias = np.asarray(weights["bias"])
        self.labels = weights["labels"]

    def predict(self, batch):
        outputs = []
        for example in batch:
            counts = np.zeros(len(self.vocab))
            for token in TOKEN.findall(example["statement"].lower()):
                if token in self.vocab:
                    counts[self.vocab[token]] += 1
            z = self.coef @ counts + self.bias
            p = np.exp(z - z.max())
            p /= p.sum()
            outputs.append(
                {"label": self.labels[int(p.argmax())], "probs": dict(zip(self.labels, p.tolist()))}
            )
        return outputs
"""


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows (DynaSent's own fields: ``sentence``, ``gold_label``, ...)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def write_bundle(
    root: Path,
    name: str,
    handler: str,
    *,
    task: str,
    files: dict[str, str] | None = None,
    manifest: str = "",
) -> Path:
    """A python bundle ``root/name`` running ``handler``; ``manifest``: extra YAML lines."""
    bundle = root / name
    bundle.mkdir()
    (bundle / "evalboard.yaml").write_text(
        f"name: {name}\ntask: {task}\nruntime: python\nentry: handler:Model\nbatch_size: 64\n"
        + manifest
    )
    (bundle / "handler.py").write_text(handler)
    for file, text in (files or {}).items():
        (bundle / file).write_text(text)
    return bundle


def load_handler(bundle: Path) -> Any:
    """The bundle's ``handler.py``, imported in this process."""
    spec = importlib.util.spec_from_file_location(f"handler_{bundle.name}", bundle / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_in_process(bundle: Path) -> Any:
    """The bundle's ``Model``, loaded in this process."""
    return load_handler(bundle).Model(str(bundle))


def train_bow(rows: list[dict[str, Any]]) -> str:
    """``weights.json`` of a bag-of-words logistic regression fitted on DynaSent rows."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(token_pattern=r"[a-z']+", lowercase=True)
    counts = vectorizer.fit_transform([r["sentence"] for r in rows])
    fitted = LogisticRegression(max_iter=2000).fit(counts, [r["gold_label"] for r in rows])
    assert list(fitted.classes_) == LABELS
    return json.dumps(
        {
            "vocab": {k: int(v) for k, v in vectorizer.vocabulary_.items()},
            "coef": fitted.coef_.tolist(),
            "bias": fitted.intercept_.tolist(),
            "labels": LABELS,
        }
    )
