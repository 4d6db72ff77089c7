"""A generative task end to end: two real text models (a template n-gram model and a
copy-the-first-sentence baseline) on SQuAD 2.0 dev questions, answered in free text and
scored with every text metric; chrF and BLEU are sacrebleu's own corpus figures.

The questions are read from ../shared/datasets (never copied into the repository); the
test skips where that folder is absent.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import sacrebleu

from datasets_registry.examples import ColumnMapping, to_examples
from datasets_registry.importers import read_rows
from datasets_registry.taskspec import TaskSpec, load_task_spec, parse_task_spec
from evalboard.demo import overlap_answer
from evaluator import RunOptions, TestSet, evaluate
from evaluator.result import EvaluationResult
from scoring import TEXT_METRICS, compute
from tests.helpers.tasks import QA

ROOT = Path(__file__).resolve().parents[2]
SQUAD = ROOT.parent / "shared" / "datasets" / "squad_v2_dev_subset" / "dev-v2.0-first5articles.json"
FIXTURES = Path(__file__).parent / "fixtures"
N_QUESTIONS = 60


@functools.cache
def bundle_dir(name: str) -> Path:
    """A test bundle's folder: the fixture's, but the template model's handler is the
    demo's own module (evalboard/demo/overlap_answer.py), so that there is one copy of it."""
    if name != "overlap_answer_bundle":
        return FIXTURES / name
    target = Path(tempfile.mkdtemp(prefix="evalboard-test-overlap-"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    shutil.copyfile(FIXTURES / name / "evalboard.yaml", target / "evalboard.yaml")
    shutil.copyfile(Path(overlap_answer.__file__), target / "handler.py")
    return target


def generative_examples() -> list[dict[str, Any]]:
    """The first answerable SQuAD questions, their distinct answer texts as references."""
    if not SQUAD.is_file():
        pytest.skip(f"{SQUAD} is absent (the shared datasets are not on this machine)")
    qa = to_examples(read_rows(SQUAD), parse_task_spec(QA), ColumnMapping()).examples
    examples = []
    for example in qa:
        references = list(dict.fromkeys(answer["text"] for answer in example["answers"]))
        if references:
            inputs = {"uid": example["uid"], "context": example["context"]}
            examples.append({**inputs, "question": example["question"], "references": references})
    return examples[:N_QUESTIONS]


def generative_sets() -> list[TestSet]:
    examples = generative_examples()
    # A robustness copy: the same questions in lower case, scored against the model's own
    # answers on the originals with chrF.
    copy = [
        {**e, "uid": f"{e['uid']}-lower", "input_id": e["uid"], "question": e["question"].lower()}
        for e in examples[:20]
    ]
    return [
        TestSet(name="squad-gen", examples=examples, sha256="c" * 64, round=1),
        TestSet(
            name="squad-gen-lower",
            examples=copy,
            sha256="d" * 64,
            perturbation="robustness",
            derived_from="squad-gen",
        ),
    ]


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return load_task_spec(ROOT / "examples" / "tasks" / "generative-qa.yaml")


def run(
    bundle: str, task: TaskSpec, sandbox: str, tmp_path: Path
) -> tuple[EvaluationResult, list[dict[str, Any]]]:
    result = evaluate(
        bundle_dir(bundle),
        task=task,
        datasets=generative_sets(),
        options=RunOptions(sandbox=sandbox, measure_energy=False),
        predictions_dir=tmp_path / bundle,
    )
    assert not result.failed, result.outcome("squad-gen").failure
    path = result.outcome("squad-gen").predictions
    assert path is not None
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return result, records


def check_the_two_models(task: TaskSpec, sandbox: str, tmp_path: Path) -> None:
    results = {
        name: run(name, task, sandbox, tmp_path)
        for name in ("overlap_answer_bundle", "first_sentence_bundle")
    }
    figures: dict[str, dict[str, float]] = {}
    for name, (result, records) in results.items():
        metrics = result.outcome("squad-gen").metrics
        assert metrics is not None and metrics.perf is not None
        texts = [r["output"]["text"] for r in records]
        references = [r["gold"] for r in records]
        width = max(map(len, references))
        streams = [[r[k] if k < len(r) else None for r in references] for k in range(width)]
        # The board's chrF (perf) and BLEU are sacrebleu's own corpus figures.
        assert metrics.perf == sacrebleu.corpus_chrf(texts, streams).score
        assert metrics.extra["bleu"] == sacrebleu.corpus_bleu(texts, streams).score
        assert metrics.extra["rouge_l"] == pytest.approx(compute("rouge_l", texts, references))
        figures[name] = {"chrf": metrics.perf, **metrics.extra}
        # The summary carries every text metric: perf (chrF) and the others beside it.
        assert result.summary.perf == metrics.perf
        assert set(result.summary.extra) == set(TEXT_METRICS) - {"chrf"}
        copy = result.outcome("squad-gen-lower").metrics
        assert copy is not None and copy.robustness is not None and 0 <= copy.robustness <= 100
    # The template model beats copying the first sentence on every text metric.
    for metric in TEXT_METRICS:
        assert (
            figures["overlap_answer_bundle"][metric] > figures["first_sentence_bundle"][metric]
        ), (
            metric,
            figures,
        )


def test_two_text_models_in_process(task: TaskSpec, tmp_path: Path) -> None:
    check_the_two_models(task, "local", tmp_path)


@pytest.mark.docker
def test_two_text_models_in_the_docker_sandbox(task: TaskSpec, tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # any failure means: no usable engine here
        pytest.skip(f"no Docker engine ({exc})")
    check_the_two_models(task, "docker", tmp_path)
