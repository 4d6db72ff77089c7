"""The demo models: each export matches what was trained, and builds are cached."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
from tokenizers import Tokenizer

from evalboard.demo import models as demo_models
from evalboard.demo.bert_onnx import BertConfig, bert_graph, minilm_dir, read_safetensors
from evalboard.demo.data import LABELS, texts_and_labels
from evalboard.demo.embedding import embed, encoder_session, load_tokenizer
from evalboard.demo.lexicon import build_lexicon_bundle
from evalboard.demo.linear import bag_of_words, build_linear_bundle
from submission_sandbox import load_bundle, open_sandbox

REFERENCE = Path(__file__).parent / "minilm_reference.json"


def _runner_feed(tokenizer_file: Path, texts: list[str], names: list[str]) -> dict[str, Any]:
    """Encode as the onnx runtime's runner does (padding, truncation at 256)."""
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_padding()
    tokenizer.enable_truncation(256)
    encodings = tokenizer.encode_batch(texts)
    arrays = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    return {name: arrays[name] for name in names}


@pytest.fixture(scope="module")
def linear_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    texts, labels = texts_and_labels("train.jsonl")
    target = tmp_path_factory.mktemp("bow") / "bow-logreg"
    trained = build_linear_bundle(
        target, task_id="demo-sentiment", texts=texts, labels=labels, classes=LABELS
    )
    return target, trained


@pytest.mark.parametrize("name", ["round-1.jsonl", "round-2.jsonl", "static.jsonl"])
def test_linear_onnx_matches_scikit_learn(linear_bundle: tuple[Path, Any], name: str) -> None:
    bundle, trained = linear_bundle
    texts, _ = texts_and_labels(name)
    session = onnxruntime.InferenceSession(str(bundle / "model.onnx"))
    names = [i.name for i in session.get_inputs()]
    (exported,) = session.run(None, _runner_feed(bundle / "tokenizer.json", texts, names))
    expected = trained.classifier.predict_proba(bag_of_words(trained.tokenizer, texts))
    np.testing.assert_allclose(exported, expected, atol=1e-6)


def test_linear_model_learned_something(linear_bundle: tuple[Path, Any]) -> None:
    _, trained = linear_bundle
    texts, labels = texts_and_labels("round-1.jsonl")
    predicted = [LABELS[i] for i in trained.predict_proba(texts).argmax(axis=1)]
    accuracy = np.mean([p == g for p, g in zip(predicted, labels, strict=True)])
    assert accuracy > 0.6  # three balanced classes: chance is 1/3


def _handler(bundle: Path) -> Any:
    spec = importlib.util.spec_from_file_location("demo_vader_handler", bundle / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("compound", "label"),
    [
        (0.9, "positive"),
        (0.06, "positive"),
        (0.04, "neutral"),
        (0.0, "neutral"),
        (-0.04, "neutral"),
        (-0.06, "negative"),
        (-0.9, "negative"),
    ],
)
def test_lexicon_probabilities_follow_vaders_thresholds(
    tmp_path: Path, compound: float, label: str
) -> None:
    handler = _handler(build_lexicon_bundle(tmp_path / "vader", task_id="demo-sentiment"))
    probs = handler.compound_to_probs(compound)
    assert sum(probs) == pytest.approx(1.0)
    assert LABELS[int(np.argmax(probs))] == label


def test_lexicon_bundle_runs_without_the_installed_vader(tmp_path: Path) -> None:
    bundle = build_lexicon_bundle(tmp_path / "vader", task_id="demo-sentiment")
    assert (bundle / "vaderSentiment" / "vader_lexicon.txt").stat().st_size > 100_000
    with open_sandbox(load_bundle(bundle).path, kind="local") as box:
        (out,) = box.predict([{"uid": "1", "statement": "What a wonderful, happy day!"}])
    assert out["label"] == "positive"
    assert set(out["probs"]) == set(LABELS)


@pytest.fixture(scope="module")
def minilm_encoder() -> Any:
    source = minilm_dir()
    config = BertConfig.from_file(source / "config.json")
    model = bert_graph(read_safetensors(source / "model.safetensors"), config)
    return encoder_session(model), load_tokenizer(source)


@pytest.mark.slow
def test_minilm_onnx_matches_transformers(minilm_encoder: Any) -> None:
    # Embeddings computed once with transformers' BertModel (see the file's "source").
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    session, tokenizer = minilm_encoder
    ours = embed(session, tokenizer, reference["texts"])
    np.testing.assert_allclose(ours, np.array(reference["embeddings"]), atol=1e-5)


@pytest.mark.slow
def test_minilm_padding_does_not_change_an_embedding(minilm_encoder: Any) -> None:
    session, tokenizer = minilm_encoder
    short, long_ = "Fine.", "A much longer sentence that forces the short one to be padded."
    alone = embed(session, tokenizer, [short])
    padded = embed(session, tokenizer, [short, long_])[:1]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


@pytest.mark.docker
@pytest.mark.slow
def test_minilm_reference_still_matches_transformers_in_the_torch_image(
    minilm_encoder: Any, tmp_path: Path
) -> None:
    image = "evalboard/runtime-torch:latest"
    probe = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{image} is not built (bash docker/bootstrap.sh --torch)")
    script = tmp_path / "reference.py"
    script.write_text(
        "import json, sys, torch\n"
        "from transformers import AutoModel, AutoTokenizer\n"
        "texts = json.loads(sys.argv[1])\n"
        "tok = AutoTokenizer.from_pretrained('/model')\n"
        "model = AutoModel.from_pretrained('/model').eval()\n"
        "enc = tok(texts, padding=True, truncation=True, return_tensors='pt')\n"
        "with torch.no_grad():\n"
        "    out = model(**enc).last_hidden_state\n"
        "mask = enc['attention_mask'].unsqueeze(-1).float()\n"
        "emb = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)\n"
        "print(json.dumps(torch.nn.functional.normalize(emb, p=2, dim=1).tolist()))\n",
        encoding="utf-8",
    )
    texts = ["Not bad at all, honestly.", "Maria said the train was late again."]
    done = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-e",
            "HF_HUB_OFFLINE=1",
            "-v",
            f"{minilm_dir()}:/model:ro",
            "-v",
            f"{script}:/reference.py:ro",
            image,
            "python3",
            "/reference.py",
            json.dumps(texts),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    expected = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    session, tokenizer = minilm_encoder
    np.testing.assert_allclose(embed(session, tokenizer, texts), expected, atol=1e-5)


def test_builds_are_cached_and_rebuilt_when_their_inputs_change(tmp_path: Path) -> None:
    (lexicon,) = [m for m in demo_models.DEMO_MODELS if m.name == "vader-lexicon"]
    first = demo_models.build_model(lexicon, tmp_path, task_id="demo-sentiment")
    again = demo_models.build_model(lexicon, tmp_path, task_id="demo-sentiment")
    assert (first.reused, again.reused) == (False, True)
    assert load_bundle(again.path).manifest.name == "vader-lexicon"
    other_task = demo_models.build_model(lexicon, tmp_path, task_id="another-task")
    assert not other_task.reused
    assert load_bundle(other_task.path).manifest.task == "another-task"
    assert not list(tmp_path.glob(".vader-lexicon-*")), "no staging folder is left behind"
