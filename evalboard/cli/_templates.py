"""What ``evalboard model init --from KIND`` writes besides the manifest.

``python`` is a handler to fill in. ``sklearn`` and ``onnx`` are a TF-IDF + logistic
regression with its ``train.py``: init runs it once on placeholder sentences (one per
label, cycling) so that the bundle passes ``model test`` as made; the researcher runs it
again on their data. ``sklearn`` ships the pipeline with joblib and a ``requirements.txt``
pinned to the scikit-learn that trained it; ``onnx`` converts it with skl2onnx, with the
options the sandbox's onnxruntime needs (docs/researchers-bundles.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalboard.core.errors import UsageError
from evalboard.core.scratch import scratch_tree

if TYPE_CHECKING:
    from datasets_registry import TaskSpec

__all__ = ["TEMPLATES", "train_placeholder", "write_trained_template"]

#: The kinds ``--from`` takes.
TEMPLATES = ("python", "sklearn", "onnx", "transformers")

# A tiny BERT classifier with the task's labels, random weights and a WordPiece vocabulary
# of the sample sentences: a placeholder of the right shape, saved as the runtime reads it.
# Run with this Python where torch and transformers are installed, otherwise in the
# platform's torch image (which has them), offline.
_MAKE_TRANSFORMERS = """\
import json, sys
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

out, labels, sentences = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=special)
tokenizer.train_from_iterator(sentences, trainer)
cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
tokenizer.post_processor = processors.TemplateProcessing(
    single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
    special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
    cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=128)
config = BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=1,
    num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
    num_labels=len(labels), id2label=dict(enumerate(labels)),
    label2id={label: i for i, label in enumerate(labels)})
torch.manual_seed(0)
BertForSequenceClassification(config).save_pretrained(out)
fast.save_pretrained(out)
"""

_TRAIN_HEAD = '''\
"""Train this bundle's model: python train.py TRAIN.jsonl

TRAIN.jsonl holds one JSON object per line with {fields} and "label" (one of {labels}).
`evalboard model init` ran this once on placeholder sentences so that the bundle works as
made: run it on your data, then `evalboard model test .`.
"""

import json
import sys
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

HERE = Path(__file__).resolve().parent
FIELDS = {fields!r}


def text(example):
    return " ".join(str(example[field]) for field in FIELDS)


def train(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    pipeline = Pipeline([
        ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
        ("logreg", LogisticRegression(max_iter=1000)),
    ])
    return pipeline.fit([text(row) for row in rows], [row["label"] for row in rows])
'''

_TRAIN_SKLEARN = """

def save(pipeline):
    import joblib
    import sklearn

    joblib.dump(pipeline, HERE / "model.joblib")
    # A joblib file loads only with the scikit-learn that wrote it: the image gets that one.
    (HERE / "requirements.txt").write_text(
        f"scikit-learn=={sklearn.__version__}\\njoblib=={joblib.__version__}\\n"
    )


if __name__ == "__main__":
    save(train(sys.argv[1]))
"""

_TRAIN_ONNX = """

def save(pipeline):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType

    tfidf, logreg = pipeline.named_steps["tfidf"], pipeline.named_steps["logreg"]
    model = convert_sklearn(
        pipeline,
        initial_types=[("text", StringTensorType([None, 1]))],
        options={
            # "locale": the sandbox's onnxruntime refuses the host's; "tokenexp": split
            # words as scikit-learn's default token_pattern does.
            id(tfidf): {"locale": "C", "tokenexp": r"\\b\\w\\w+\\b"},
            id(logreg): {"zipmap": False},
        },
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    (HERE / "model.onnx").write_bytes(model.SerializeToString())
    # The manifest's labels must be the model's output order.
    manifest = HERE / "evalboard.yaml"
    labels = ", ".join(str(label) for label in pipeline.classes_)
    kept = [line for line in manifest.read_text().splitlines() if not line.startswith("labels:")]
    manifest.write_text("\\n".join([*kept, f"labels: [{labels}]"]) + "\\n")


if __name__ == "__main__":
    save(train(sys.argv[1]))
"""

_JOBLIB_HANDLER = '''\
"""{name}: a scikit-learn pipeline saved with joblib by train.py."""

from pathlib import Path

import joblib

FIELDS = {fields!r}


class Model:
    def __init__(self, model_dir):
        self.pipeline = joblib.load(Path(model_dir) / "model.joblib")
        self.labels = [str(label) for label in self.pipeline.classes_]

    def predict(self, batch):
        texts = [" ".join(str(example[field]) for field in FIELDS) for example in batch]
        outputs = []
        for row in self.pipeline.predict_proba(texts):
            probs = {{label: float(p) for label, p in zip(self.labels, row)}}
            outputs.append({{"label": max(probs, key=probs.get), "probs": probs}})
        return outputs
'''

_NEEDS = {"sklearn": ("sklearn", "joblib"), "onnx": ("sklearn", "skl2onnx")}
_PACKAGES = {"sklearn": "scikit-learn", "joblib": "joblib", "skl2onnx": "skl2onnx"}


def _check_importable(kind: str) -> None:
    import importlib.util

    missing = [m for m in _NEEDS[kind] if importlib.util.find_spec(m) is None]
    if missing:
        names = " ".join(_PACKAGES[m] for m in missing)
        raise UsageError(
            f"the {kind} template trains a placeholder model here and needs {names}; "
            f"install it (pip install {names}) or use --from python"
        )


def write_transformers_template(
    directory: Path, spec: TaskSpec, sentences: list[str]
) -> dict[str, Any]:
    """A placeholder ``save_pretrained`` classifier in ``directory/model``; the manifest's
    runtime fields.

    Raises:
        UsageError: a span task (the placeholder is a classifier).
        PlatformError: neither transformers here nor the torch image on a Docker engine.
    """
    import importlib.util
    import os

    if spec.output.type == "span":
        raise UsageError(
            f"the transformers template is a placeholder classifier; task {spec.id} wants "
            "spans: use --from python, or save your QA model with save_pretrained into a "
            "bundle with runtime: transformers"
        )
    labels = json.dumps(list(spec.output.labels or []))
    texts = json.dumps(sentences)
    target = directory / "model"
    if importlib.util.find_spec("transformers") and importlib.util.find_spec("torch"):
        done = subprocess.run(
            [sys.executable, "-c", _MAKE_TRANSFORMERS, str(target), labels, texts],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise UsageError(f"making the placeholder model failed: {done.stderr.strip()[-300:]}")
    else:
        from evalboard.core.settings import get_settings
        from submission_sandbox import run_offline

        directory.chmod(0o777)  # the container writes as the caller's uid, or as root
        try:
            run_offline(
                get_settings().torch_image,
                ["python3", "-c", _MAKE_TRANSFORMERS, "/bundle/model", labels, texts],
                mount=directory,
                at="/bundle",
                timeout_s=600,
                label="making the placeholder transformers model",
                user=f"{os.getuid()}:{os.getgid()}",
            )
        finally:
            directory.chmod(0o755)
    return {"runtime": "transformers", "model": "model"}


def write_trained_template(
    kind: str, directory: Path, spec: TaskSpec, *, name: str
) -> dict[str, Any]:
    """Write the ``sklearn`` or ``onnx`` template into ``directory`` and train it once.

    Returns:
        The manifest's runtime fields (the caller writes the manifest).

    Raises:
        UsageError: a span task, or scikit-learn (skl2onnx) missing here.
    """
    if spec.output.type == "span":
        raise UsageError(
            f"the {kind} template is a text classifier; task {spec.id} wants spans: "
            "use --from python or --from transformers"
        )
    _check_importable(kind)
    labels = list(spec.output.labels or [])
    fields = list(spec.input_names)
    train = _TRAIN_HEAD.format(fields=fields, labels=", ".join(labels))
    (directory / "train.py").write_text(
        train + (_TRAIN_SKLEARN if kind == "sklearn" else _TRAIN_ONNX)
    )
    if kind == "sklearn":
        (directory / "handler.py").write_text(_JOBLIB_HANDLER.format(name=name, fields=fields))
        return {"runtime": "python", "entry": "handler:Model"}
    return {"runtime": "onnx", "model": "model.onnx", "labels": sorted(labels)}


def train_placeholder(directory: Path, spec: TaskSpec, sentences: list[str]) -> None:
    """Run the bundle's train.py on placeholder ``sentences``, labels cycling."""
    labels = list(spec.output.labels or [])
    rows = []
    for index in range(max(len(labels) * 3, len(sentences))):
        row = {
            field: sentences[(index + offset) % len(sentences)]
            for offset, field in enumerate(spec.input_names)
        }
        rows.append({**row, "label": labels[index % len(labels)]})
    with scratch_tree("evalboard-init") as tmp:
        data = Path(tmp) / "placeholder.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "train.py", str(data)],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise UsageError(f"training the placeholder model failed: {' '.join(tail)}")
