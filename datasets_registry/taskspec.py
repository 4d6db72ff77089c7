"""Task specs: the Dynatask-style YAML a task owner writes, validated with pydantic."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from datasets_registry.outputs import OutputSpec
from evalboard.core.errors import InvalidTaskSpec
from evalboard.core.limits import MAX_SIZE_BYTES, SandboxLimits
from evalboard.core.validation import describe_validation_error
from scoring import DEFAULT_WEIGHTS, TEXT_METRICS, WEIGHABLE_METRICS, check_weights

__all__ = [
    "InputField",
    "ModelWrongRule",
    "OutputSpec",
    "TaskSpec",
    "load_task_spec",
    "parse_task_spec",
]

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]


class InputField(BaseModel):
    """One input of a task's examples, e.g. ``statement`` or ``context``."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    type: Literal["string"] = "string"


class ModelWrongRule(BaseModel):
    """When a target model counts as fooled: a wrong label or answer (``exact_match``), QA
    string F1 under a threshold, or a generated text's sentence chrF (a fraction in
    [0, 1]) against the annotator's references under a threshold (``chrf_below``)."""

    model_config = ConfigDict(extra="forbid")

    rule: Literal["exact_match", "string_f1", "chrf_below"] = "exact_match"
    threshold: float = Field(0.4, ge=0, le=1)


class ValidationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    num_matching: int = Field(3, ge=1, le=20)


class TaskSpec(BaseModel):
    """A task, as the YAML of DESIGN.md describes it."""

    model_config = ConfigDict(extra="forbid")

    id: Slug
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    input: list[InputField] = Field(min_length=1)
    output: OutputSpec
    perf_metric: Literal[
        "accuracy", "macro_f1", "squad_f1", "chrf", "bleu", "rouge_l", "text_f1", "exact_match"
    ]
    delta_metrics: list[Literal["fairness", "robustness"]] = Field(
        default_factory=lambda: ["fairness", "robustness"]  # type: ignore[arg-type]
    )
    default_weights: dict[str, float] = Field(
        # Dynaboard's (perf 4, the rest 1), but 0 for a metric the board adds off.
        default_factory=lambda: dict(DEFAULT_WEIGHTS)
    )
    memory_cap_gib: float = Field(16, gt=0, le=MAX_SIZE_BYTES / 1024**3)
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    model_wrong: ModelWrongRule = Field(default_factory=ModelWrongRule)
    validation: ValidationSpec = Field(default_factory=ValidationSpec)

    @field_validator("model_wrong", mode="before")
    @classmethod
    def _model_wrong_shorthand(cls, value: Any) -> Any:
        # YAML says `exact_match`, `{string_f1: 0.4}` or `{chrf_below: 0.5}`.
        if isinstance(value, str):
            return {"rule": value}
        if isinstance(value, dict) and len(value) == 1:
            [(rule, threshold)] = value.items()
            if rule in ("string_f1", "chrf_below"):
                return {"rule": rule, "threshold": threshold}
        return value

    @field_validator("default_weights")
    @classmethod
    def _known_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        # The one weight check (scoring.check_weights); its error is a ValueError.
        return check_weights(weights, known=WEIGHABLE_METRICS)

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        names = [field.name for field in self.input]
        if len(set(names)) != len(names):
            raise ValueError(f"input field names repeat: {names}")
        reserved = {"uid", "label", "answers", "references", "input_id"} & set(names)
        if reserved:
            raise ValueError(f"input field name(s) {sorted(reserved)} are reserved")
        is_span = self.output.type == "span"
        is_text = self.output.type == "text"
        if is_span != (self.perf_metric == "squad_f1") or is_text != (
            self.perf_metric in TEXT_METRICS
        ):
            raise ValueError(
                "perf_metric squad_f1 goes with output type span, "
                f"{' or '.join(TEXT_METRICS)} with text, accuracy or macro_f1 with multiclass"
            )
        if is_span and "context" not in names:
            raise ValueError("a span task needs an input field named `context`")
        if self.model_wrong.rule == "string_f1" and not is_span:
            raise ValueError("model_wrong string_f1 is for span tasks; use exact_match")
        if self.model_wrong.rule == "chrf_below" and not is_text:
            raise ValueError("model_wrong chrf_below is for text tasks; use exact_match")
        return self

    # Convenience ---------------------------------------------------------------------------

    @property
    def input_names(self) -> list[str]:
        return [field.name for field in self.input]

    @property
    def gold_field(self) -> str:
        """``label`` for classification, ``answers`` for QA, ``references`` for text."""
        return self.output.gold_field

    def prediction(self, output: Mapping[str, Any]) -> Any:
        """The part of a checked output the metric scores (:meth:`OutputSpec.prediction`)."""
        return self.output.prediction(output)

    def gold(self, example: Mapping[str, Any]) -> Any:
        """What the metric compares predictions with (:meth:`OutputSpec.gold`)."""
        return self.output.gold(example)

    @property
    def sandbox_options(self) -> dict[str, Any]:
        """What a sandbox is told of this task for its model: a text task's generation
        settings (``open_sandbox(..., **task.sandbox_options)``; docs/contract.md)."""
        generation = self.output.generation
        return {} if generation is None else {"generation": generation.model_dump()}

    @property
    def text_fields(self) -> list[str]:
        """The fields perturbations may change (for QA, the question, never the context)."""
        return [name for name in self.input_names if name != "context"]


def parse_task_spec(data: Any, *, source: str = "task spec") -> TaskSpec:
    """Validate a parsed YAML/JSON document; errors name the field, value and allowed values."""
    if not isinstance(data, dict):
        raise InvalidTaskSpec(
            f"{source} must be a YAML mapping with fields id, name, input, output, "
            f"perf_metric...; got {type(data).__name__}"
        )
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidTaskSpec(
            f"{source} is not a valid task spec:\n{describe_validation_error(exc)}"
        ) from None


def load_task_spec(path: Path) -> TaskSpec:
    """Read and validate a task YAML file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidTaskSpec(f"Task file {path} does not exist") from None
    except UnicodeDecodeError:
        raise InvalidTaskSpec(
            f"Task file {path} is not UTF-8 text; is it the right file?"
        ) from None
    except OSError as exc:  # a directory, no permission: the path, not the spec
        raise InvalidTaskSpec(
            f"Cannot read the task file {path}: {exc.strerror or exc}; give a readable YAML file"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidTaskSpec(f"Task file {path} is not valid YAML: {exc}") from None
    return parse_task_spec(data, source=str(path))
