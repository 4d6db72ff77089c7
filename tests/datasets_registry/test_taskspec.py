from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from datasets_registry.taskspec import load_task_spec, parse_task_spec
from evalboard.core.errors import InvalidTaskSpec
from tests.helpers.tasks import GENERATIVE_QA, QA, SENTIMENT


def test_design_example_parses() -> None:
    spec = parse_task_spec(SENTIMENT)
    assert spec.input_names == ["statement"]
    assert spec.gold_field == "label"
    assert spec.limits.memory_bytes == 4 * 1024**3
    assert spec.validation.num_matching == 3


def test_qa_shorthand_model_wrong() -> None:
    spec = parse_task_spec(QA)
    assert spec.model_wrong.rule == "string_f1"
    assert spec.model_wrong.threshold == 0.4
    assert spec.gold_field == "answers"
    assert spec.text_fields == ["question"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"perf_metric": "acc"},
            "perf_metric: allowed values are 'accuracy', 'macro_f1', 'squad_f1', 'chrf', "
            "'bleu', 'rouge_l', 'text_f1' or 'exact_match' (got 'acc')",
        ),
        ({"id": "Bad Id"}, "id: String should match pattern"),
        (
            {"default_weights": {"perf": 1, "speed": 2}},
            "Unknown metric 'speed' in the weights; known: perf, throughput",
        ),
        ({"output": {"type": "multiclass", "labels": ["only"]}}, "at least two labels"),
        ({"limits": {"memory": "lots"}}, "Size 'lots' is not understood"),
        # Limits no sandbox can be given, refused here, not at the run (Docker's overflow,
        # a deadline past the clock's range, Infinity in the spec's JSON).
        ({"limits": {"memory": "99999999999999999999g"}}, "is more than the 64t"),
        ({"limits": {"timeout_s": 1e300}}, "timeout_s: Input should be less than or equal"),
        ({"limits": {"timeout_s": float("nan")}}, "timeout_s: Input should be"),
        ({"memory_cap_gib": float("inf")}, "memory_cap_gib: Input should be"),
        ({"colour": "blue"}, "colour: unknown field"),
        ({"perf_metric": "squad_f1"}, "squad_f1 goes with output type span"),
    ],
)
def test_invalid_spec_names_field_value_and_allowed(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidTaskSpec) as info:
        parse_task_spec({**SENTIMENT, **change})
    assert expected in info.value.message


def test_bad_yaml_is_refused_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("id: x\ninput: [unclosed\n")
    with pytest.raises(InvalidTaskSpec, match="not valid YAML"):
        load_task_spec(path)


def test_yaml_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(InvalidTaskSpec, match="must be a YAML mapping"):
        load_task_spec(path)


def test_a_text_task_gets_references_and_fixed_generation_settings() -> None:
    spec = parse_task_spec(GENERATIVE_QA)
    assert spec.gold_field == "references"
    assert spec.output.generation is not None
    assert spec.output.generation.max_new_tokens == 32
    assert spec.output.generation.greedy
    # Without `generation`, the defaults are fixed too: greedy, 64 new tokens.
    default = parse_task_spec({**GENERATIVE_QA, "output": {"type": "text"}})
    assert default.output.generation is not None
    assert (default.output.generation.max_new_tokens, default.output.generation.greedy) == (
        64,
        True,
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"perf_metric": "squad_f1"},
            "chrf or bleu or rouge_l or text_f1 or exact_match with text",
        ),
        ({"output": {"type": "text", "labels": ["a", "b"]}}, "a text output has no labels"),
        (
            {"output": {"type": "text", "generation": {"greedy": False}}},
            "needs a fixed `seed`",
        ),
        (
            {"output": {"type": "span", "generation": {}}, "perf_metric": "squad_f1"},
            "`generation` is for text outputs",
        ),
        ({"input": [{"name": "references"}]}, "reserved"),
    ],
)
def test_invalid_text_task_specs_say_what_to_change(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidTaskSpec, match=re.escape(expected)):
        parse_task_spec({**GENERATIVE_QA, **change})


def test_a_classification_metric_on_a_text_task_is_refused() -> None:
    with pytest.raises(InvalidTaskSpec, match="accuracy or macro_f1 with multiclass"):
        parse_task_spec({**GENERATIVE_QA, "perf_metric": "accuracy"})


def test_a_task_may_name_exactly_the_perf_metrics_scoring_has() -> None:
    # The spec's list is written out for pydantic and the API schema; it must not drift
    # from the text metrics the scoring package registers.
    from typing import get_args

    from datasets_registry.taskspec import TaskSpec
    from scoring import TEXT_METRICS

    allowed = get_args(TaskSpec.model_fields["perf_metric"].annotation)
    assert allowed == ("accuracy", "macro_f1", "squad_f1", *TEXT_METRICS)
