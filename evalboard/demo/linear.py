"""The linear model: bag-of-words logistic regression, trained here, exported to ONNX.

Words come from a ``tokenizers`` word-level tokenizer (lower-cased, split on whitespace
and punctuation) saved as ``tokenizer.json`` next to ``model.onnx``; the onnx runtime
feeds its ids. The graph looks each id up in the classifier's weight matrix and sums the
rows over the sentence: exactly ``counts @ coef.T`` of scikit-learn, so the exported model
and the trained one agree to float64 precision. Unigrams only, so "not good" looks like
"good": fast, tiny, and fooled by negation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordLevel

__all__ = [
    "LinearModel",
    "bag_of_words",
    "build_linear_bundle",
    "build_tokenizer",
    "linear_graph",
    "train_linear",
]

PAD, UNK = "[PAD]", "[UNK]"
OPSET = 17


@dataclass(frozen=True)
class LinearModel:
    """A trained bag-of-words classifier: tokenizer, weights (vocab x classes) and bias."""

    tokenizer: Tokenizer
    weights: NDArray[np.float64]
    bias: NDArray[np.float64]
    labels: tuple[str, ...]
    #: The fitted scikit-learn estimator, kept to check the export against.
    classifier: Any = None

    def predict_proba(self, texts: Sequence[str]) -> NDArray[np.float64]:
        logits = bag_of_words(self.tokenizer, texts) @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exps = np.exp(logits)
        result: NDArray[np.float64] = exps / exps.sum(axis=1, keepdims=True)
        return result


def _blank_tokenizer(vocab: dict[str, int]) -> Tokenizer:
    tokenizer = Tokenizer(WordLevel(vocab, unk_token=UNK))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def build_tokenizer(texts: Sequence[str]) -> Tokenizer:
    """A word-level tokenizer over the words of ``texts`` ([PAD] is 0, [UNK] is 1)."""
    probe = _blank_tokenizer({PAD: 0, UNK: 1})
    counts: Counter[str] = Counter()
    for text in texts:
        normalized = probe.normalizer.normalize_str(text)
        counts.update(word for word, _ in probe.pre_tokenizer.pre_tokenize_str(normalized))
    vocab = {PAD: 0, UNK: 1}
    for word in sorted(counts):
        vocab[word] = len(vocab)
    return _blank_tokenizer(vocab)


def bag_of_words(tokenizer: Tokenizer, texts: Sequence[str]) -> NDArray[np.float64]:
    """Word counts (texts x vocab); [PAD] and [UNK] columns stay zero."""
    counts = np.zeros((len(texts), tokenizer.get_vocab_size()), dtype=np.float64)
    for row, encoding in enumerate(tokenizer.encode_batch(list(texts))):
        for token_id in encoding.ids:
            if token_id > 1:
                counts[row, token_id] += 1.0
    return counts


def train_linear(
    texts: Sequence[str], labels: Sequence[str], *, classes: Sequence[str], c: float = 4.0
) -> LinearModel:
    """Fit multinomial logistic regression on word counts (scikit-learn, lbfgs, seed-free)."""
    from sklearn.linear_model import LogisticRegression

    tokenizer = build_tokenizer(texts)
    features = bag_of_words(tokenizer, texts)
    index = {label: i for i, label in enumerate(classes)}
    target = np.array([index[label] for label in labels])
    classifier = LogisticRegression(C=c, max_iter=2000)
    classifier.fit(features, target)
    # Make the column order the task's label order whatever order sklearn saw them in.
    order = [list(classifier.classes_).index(i) for i in range(len(classes))]
    weights = np.asarray(classifier.coef_, dtype=np.float64)[order].T.copy()
    bias = np.asarray(classifier.intercept_, dtype=np.float64)[order].copy()
    weights[:2] = 0.0  # [PAD], [UNK]
    return LinearModel(
        tokenizer=tokenizer,
        weights=weights,
        bias=bias,
        labels=tuple(classes),
        classifier=classifier,
    )


def linear_graph(weights: NDArray[np.float64], bias: NDArray[np.float64]) -> onnx.ModelProto:
    """``softmax(sum over tokens of W[id] * mask + b)``: input_ids, attention_mask -> probs."""
    classes = weights.shape[1]
    nodes = [
        helper.make_node("Gather", ["W", "input_ids"], ["per_token"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.DOUBLE),
        helper.make_node("Unsqueeze", ["mask", "last_axis"], ["mask3"]),
        helper.make_node("Mul", ["per_token", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "token_axis"], ["summed"], keepdims=0),
        helper.make_node("Add", ["summed", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "bag_of_words_logreg",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        outputs=[helper.make_tensor_value_info("probs", TensorProto.DOUBLE, ["batch", classes])],
        initializer=[
            numpy_helper.from_array(weights.astype(np.float64), "W"),
            numpy_helper.from_array(bias.astype(np.float64), "b"),
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "token_axis"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="evalboard-demo"
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    onnx.checker.check_model(model, full_check=True)
    return model


def build_linear_bundle(
    target: Path,
    *,
    task_id: str,
    texts: Sequence[str],
    labels: Sequence[str],
    classes: Sequence[str],
) -> LinearModel:
    """Train on ``texts`` and write the onnx bundle to ``target``; returns the trained model."""
    trained = train_linear(texts, labels, classes=classes)
    target.mkdir(parents=True, exist_ok=True)
    onnx.save(linear_graph(trained.weights, trained.bias), str(target / "model.onnx"))
    trained.tokenizer.save(str(target / "tokenizer.json"))
    label_list = ", ".join(classes)
    (target / "evalboard.yaml").write_text(
        "name: bow-logreg\n"
        f"task: {task_id}\n"
        "runtime: onnx\n"
        "model: model.onnx\n"
        f"labels: [{label_list}]\n"
        "batch_size: 64\n"
        "description: >-\n"
        "  Bag-of-words logistic regression (scikit-learn) trained on the demo's 180\n"
        "  training sentences, exported to ONNX with its word-level tokenizer. Tiny and\n"
        "  fast; unigrams miss negation and sarcasm.\n",
        encoding="utf-8",
    )
    return trained
