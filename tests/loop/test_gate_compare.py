from __future__ import annotations

from typing import Any

from datasets_registry.taskspec import parse_task_spec
from leaderboard.loop import GateReport, Regression, compare
from leaderboard.loop.gate import DatasetComparison
from tests.helpers.tasks import QA, sentiment_spec

TASK = sentiment_spec()
EXAMPLES = [
    {"uid": f"u{i}", "statement": "x", "label": label}
    for i, label in enumerate(["positive", "negative", "neutral", "positive"])
]


def _outputs(*labels: str) -> dict[str, dict[str, Any]]:
    return {f"u{i}": {"label": label} for i, label in enumerate(labels)}


def test_lists_exactly_what_the_baseline_got_right_and_the_candidate_wrong() -> None:
    baseline = _outputs("positive", "negative", "positive", "negative")  # right: u0, u1
    candidate = _outputs("negative", "negative", "neutral", "neutral")  # right: u1, u2
    summary, regressions = compare(TASK, "static", EXAMPLES, baseline, candidate)
    assert regressions == [Regression("static", "u0", "positive", "positive", "negative")]
    assert summary == DatasetComparison(
        "static", examples=4, regressions=1, improvements=1, baseline_right=2, candidate_right=2
    )


def test_equal_or_better_has_no_regression() -> None:
    baseline = _outputs("positive", "neutral", "neutral", "neutral")
    candidate = _outputs("positive", "negative", "neutral", "positive")
    summary, regressions = compare(TASK, "static", EXAMPLES, baseline, candidate)
    assert regressions == [] and summary.improvements == 2


def test_a_missing_candidate_output_counts_as_wrong() -> None:
    baseline = _outputs("positive", "negative", "neutral", "positive")
    candidate = _outputs("positive", "negative", "neutral")
    _, regressions = compare(TASK, "static", EXAMPLES, baseline, candidate)
    assert [(r.uid, r.candidate) for r in regressions] == [("u3", None)]


def test_qa_uses_the_string_f1_threshold() -> None:
    task = parse_task_spec(QA)
    examples = [
        {
            "uid": "q",
            "context": "c",
            "question": "q",
            "answers": [{"text": "blue whale", "answer_start": 0}],
        }
    ]
    _, kept = compare(
        task,
        "d",
        examples,
        {"q": {"answer": "blue whale"}},
        {"q": {"answer": "the blue whale species"}},
    )  # F1 0.8: still right
    _, lost = compare(
        task, "d", examples, {"q": {"answer": "blue whale"}}, {"q": {"answer": "a shark"}}
    )
    assert kept == [] and [r.candidate for r in lost] == ["a shark"]


def test_report_passes_only_without_regressions_or_failures() -> None:
    assert GateReport("t", "1", "c").passed
    failed = GateReport("t", "1", "c", datasets=[DatasetComparison("d", 3, failure="crashed")])
    assert not failed.passed
    regressed = GateReport("t", "1", "c", regressions=[Regression("d", "u", "a", "a", "b")])
    assert not regressed.passed and regressed.to_dict()["passed"] is False
