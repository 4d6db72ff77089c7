"""Pairing outputs with gold (or with the model's own original predictions) and averaging."""

from __future__ import annotations

import pytest

from datasets_registry.taskspec import parse_task_spec
from evaluator.result import DatasetMetrics, DatasetOutcome, Failure
from evaluator.scorecard import score, summarize
from scoring.registry import compute
from tests.helpers.tasks import GENERATIVE_QA, QA, sentiment_rows, sentiment_spec


def _outputs(*labels: str, probs: bool = False) -> list[dict[str, object]]:
    outputs: list[dict[str, object]] = []
    for label in labels:
        output: dict[str, object] = {"label": label}
        if probs:
            output["probs"] = {"negative": 0.1, "neutral": 0.1, "positive": 0.1, label: 0.8}
        outputs.append(output)
    return outputs


def test_perf_is_the_task_metric_against_gold_with_accuracy_beside_it() -> None:
    rows = sentiment_rows()  # gold: positive, negative, neutral, negative
    outputs = _outputs("positive", "negative", "neutral", "neutral")
    quality = score(sentiment_spec(), rows, outputs)
    golds = [row["label"] for row in rows]
    predictions = [o["label"] for o in outputs]
    assert quality.perf == compute(
        "macro_f1", predictions, golds, labels=["negative", "neutral", "positive"]
    )
    assert quality.extra == {"accuracy": 75.0}
    assert [r["score"] for r in quality.records] == [1.0, 1.0, 1.0, 0.0]
    assert quality.records[3] == {
        "uid": "s4",
        "output": outputs[3],
        "gold": "negative",
        "score": 0.0,
    }
    assert quality.ece is None  # no probabilities given


def test_ece_only_when_every_output_has_probabilities() -> None:
    rows = sentiment_rows()
    quality = score(
        sentiment_spec(), rows, _outputs("positive", "negative", "neutral", "neutral", probs=True)
    )
    # Confidence 0.8 everywhere, accuracy 0.75: |0.75 - 0.8| x100.
    assert quality.ece == pytest.approx(5.0)


def test_delta_compares_with_the_models_own_original_prediction_not_gold() -> None:
    perturbed = [
        {"uid": "p1", "input_id": "s1", "statement": "x", "label": "positive"},
        {"uid": "p2", "input_id": "s2", "statement": "y", "label": "negative"},
    ]
    originals = {"s1": {"label": "neutral"}, "s2": {"label": "negative"}}
    # p1 keeps the (wrong) original prediction: unchanged counts, whatever the gold says.
    quality = score(
        sentiment_spec(), perturbed, _outputs("neutral", "positive"), originals=originals
    )
    assert quality.delta == 50.0 and quality.perf is None
    assert quality.records[0]["original"] == "neutral" and quality.records[0]["score"] == 1.0


def test_span_tasks_score_answers_with_squad_f1_and_em() -> None:
    qa = parse_task_spec(QA)
    rows = [
        {
            "uid": "q1",
            "context": "The blue whale.",
            "question": "What?",
            "answers": [{"text": "blue whale", "answer_start": 4}],
        },
        {"uid": "q2", "context": "Nothing here.", "question": "Who?", "answers": []},
    ]
    quality = score(qa, rows, [{"answer": "the blue whale"}, {"answer": "Nothing"}])
    assert quality.perf == 50.0 and quality.extra == {"squad_em": 50.0}
    assert quality.records[0]["gold"] == ["blue whale"]


def _finished(
    name: str,
    weight: float,
    perf: float,
    throughput: float,
    *,
    perturbation: str | None = None,
    access: str = "scoring",
) -> DatasetOutcome:
    figure = {perturbation: perf} if perturbation else {"perf": perf}
    return DatasetOutcome(
        dataset=name,
        sha256="0" * 64,
        weight=weight,
        access=access,
        perturbation=perturbation,  # type: ignore[arg-type]
        derived_from="a" if perturbation else None,
        metrics=DatasetMetrics(
            perf_metric="macro_f1",
            examples=10,
            throughput=throughput,
            batch_size=1,
            predict_s=1.0,
            memory_gib=1.0,
            **figure,
        ),
    )


def test_summary_is_dataset_weighted_over_scored_finished_datasets() -> None:
    outcomes = [
        _finished("a", 1.0, 60.0, 10.0),
        _finished("b", 3.0, 80.0, 30.0),
        _finished("shown", 5.0, 0.0, 0.0, access="standard"),
        _finished("robustness-a", 1.0, 90.0, 10.0, perturbation="robustness"),
        DatasetOutcome(
            dataset="broken",
            sha256="0" * 64,
            status="failed",
            failure=Failure(reason="crashed", message="boom"),
        ),
    ]
    summary = summarize(outcomes)
    assert summary.perf == pytest.approx((60 + 3 * 80) / 4)
    assert summary.throughput == pytest.approx((10 + 3 * 30) / 4)
    assert summary.robustness == 90.0 and summary.fairness is None
    assert summary.ece is None


def test_text_tasks_report_every_text_metric_and_chrf_for_the_copies() -> None:
    task = parse_task_spec(GENERATIVE_QA)
    rows = [
        {
            "uid": "a",
            "context": "c",
            "question": "Who?",
            "references": ["Rollo", "Rollo the Viking"],
        },
        {"uid": "b", "context": "c", "question": "When?", "references": ["in 911"]},
    ]
    outputs = [{"text": "Rollo the Viking"}, {"text": "911 AD"}]
    quality = score(task, rows, outputs)
    texts = ["Rollo the Viking", "911 AD"]
    golds = [row["references"] for row in rows]
    assert quality.perf == compute("chrf", texts, golds)
    assert set(quality.extra) == {"bleu", "rouge_l", "text_f1", "exact_match"}
    assert quality.extra["exact_match"] == 50.0
    assert quality.extra["bleu"] == compute("bleu", texts, golds)
    # The drill-down scores are token F1 (chrF is a corpus figure), the gold the references.
    assert quality.scores == [1.0, pytest.approx(0.5)]
    assert quality.records[1]["gold"] == ["in 911"]

    copies = [{**rows[0], "uid": "a-t", "input_id": "a"}]
    delta = score(task, copies, [{"text": "Rollo the viking"}], originals={"a": outputs[0]})
    assert delta.delta is not None and 0 < delta.delta < 100


def test_summary_averages_the_extra_metrics_every_original_has() -> None:
    a = _finished("a", 1.0, 60.0, 10.0)
    b = _finished("b", 3.0, 80.0, 30.0)
    copy = _finished("robustness-a", 1.0, 90.0, 10.0, perturbation="robustness")
    assert a.metrics is not None and b.metrics is not None and copy.metrics is not None
    a.metrics.extra = {"bleu": 20.0, "rouge_l": 40.0}
    b.metrics.extra = {"bleu": 40.0}
    copy.metrics.extra = {"bleu": 0.0}  # copies have no perf figures; never averaged in
    assert summarize([a, b, copy]).extra == {"bleu": pytest.approx((20 + 3 * 40) / 4)}
