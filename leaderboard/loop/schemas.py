"""The loop's API schemas, split by direction (``*Create`` in, ``*Public`` out)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalboard.core.states import ExampleStatus, Verdict
from evalboard.core.tables import Example
from leaderboard.loop.vmer import RoundVmer
from leaderboard.schemas import RoundPublic

__all__ = [
    "ClosedRoundPublic",
    "ExampleCreate",
    "ExamplePublic",
    "ExplanationUpdate",
    "FailureItem",
    "FailuresCreate",
    "RoundCreate",
    "ValidationCreate",
    "ValidationPublic",
    "VmerPublic",
    "example_public",
    "vmer_public",
]


#: An id as the database stores it (a 32-bit integer, positive).
Id = Annotated[int, Field(ge=1, le=2**31 - 1)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoundCreate(_In):
    """Targets of the new round: by submission id, or the leaderboard's top K."""

    submission_ids: list[Id] | None = Field(
        None, min_length=1, max_length=20, description="Target submissions of the task."
    )
    top: int | None = Field(None, ge=1, le=20, description="Promote the top K of the leaderboard.")

    @model_validator(mode="after")
    def _one_choice(self) -> RoundCreate:
        if (self.submission_ids is None) == (self.top is None):
            raise ValueError("give either submission_ids or top")
        return self


class ClosedRoundPublic(BaseModel):
    round: RoundPublic
    dataset: str | None = Field(description="The new dataset (none without verified examples).")
    derived: list[str] = Field(description="Its perturbed copies.")
    examples: int = Field(description="Verified examples in the dataset.")
    jobs_queued: int = Field(description="Evaluation jobs queued for every submission.")


class ExampleCreate(_In):
    """An annotator's example: the inputs and the answer they intend."""

    inputs: dict[str, str] = Field(description="The task's input fields.")
    label: str | None = Field(None, description="Classification: the intended label.")
    answer: str | None = Field(None, description="QA: the answer, a span of the context.")
    answer_start: int | None = Field(
        None, ge=0, le=20_000, description="QA: where the answer starts (default: first one)."
    )
    references: list[str] | None = Field(
        None,
        max_length=20,
        description="Text generation: the reference answer(s) the annotator intends.",
    )
    explanation: str = Field("", max_length=2000, description="Why the model should be fooled.")

    def gold(self) -> dict[str, Any]:
        if self.references is not None:
            return {"references": self.references}
        if self.answer is not None:
            return {"answer": self.answer, "answer_start": self.answer_start}
        return {"label": self.label}


class ExplanationUpdate(_In):
    explanation: str = Field(max_length=2000)


class ExamplePublic(BaseModel):
    id: int
    task: str
    round: int | None = Field(description="Round number (None: a failure awaiting a round).")
    source: str = Field(description="collection or failure.")
    author_id: int | None
    target_submission_id: int | None
    inputs: dict[str, Any]
    gold: dict[str, Any]
    model_output: dict[str, Any] | None = Field(
        description="The target's answer: label and probs, or answer and conf."
    )
    fooled: bool = Field(description="By the task's model-wrong rule.")
    explanation: str
    status: ExampleStatus
    latency_ms: float | None = Field(None, description="How long the target took to answer.")


def example_public(
    example: Example, round_number: int | None, latency_s: float | None = None
) -> ExamplePublic:
    return ExamplePublic(
        id=example.id,
        task=example.task_id,
        round=round_number,
        source=example.source,
        author_id=example.author_id,
        target_submission_id=example.target_submission_id,
        inputs=example.inputs,
        gold=example.gold,
        model_output=example.model_output,
        fooled=example.fooled,
        explanation=example.explanation,
        status=ExampleStatus(example.status),
        latency_ms=latency_s * 1000 if latency_s is not None else None,
    )


class ValidationCreate(_In):
    verdict: Verdict = Field(
        description="correct (the intended answer is right: a model error), incorrect, flagged."
    )


class ValidationPublic(BaseModel):
    example_id: int
    status: ExampleStatus
    verdicts: dict[str, int] = Field(description="Verdicts so far, by kind.")
    owner_verdict: str | None = Field(
        None, description="The task owner's verdict, which settles the example, if given."
    )


class FailureItem(_In):
    """One input a deployed model got wrong, with the correct output."""

    inputs: dict[str, str]
    label: str | None = None
    answer: str | None = None
    answer_start: int | None = Field(None, ge=0, le=20_000)
    prediction: dict[str, Any] | None = Field(None, description="What the deployed model said.")
    submission_id: Id | None = Field(None, description="The deployed submission, if known.")
    explanation: str = Field("", max_length=2000)


class FailuresCreate(_In):
    failures: list[FailureItem] = Field(min_length=1, max_length=1000)


class AnnotatorVmerPublic(BaseModel):
    user_id: int | None
    name: str
    collected: int
    fooled: int
    verified: int
    vmer: float | None


class VmerPublic(BaseModel):
    """Verified model errors / examples collected (collected examples only)."""

    task: str
    round: int
    collected: int
    fooled: int
    verified: int
    pending: int
    vmer: float | None
    annotators: list[AnnotatorVmerPublic]


def vmer_public(report: RoundVmer) -> VmerPublic:
    return VmerPublic(
        task=report.task_id,
        round=report.round,
        collected=report.collected,
        fooled=report.fooled,
        verified=report.verified,
        pending=report.pending,
        vmer=report.vmer,
        annotators=[
            AnnotatorVmerPublic(
                user_id=a.user_id,
                name=a.name,
                collected=a.collected,
                fooled=a.fooled,
                verified=a.verified,
                vmer=a.vmer,
            )
            for a in report.annotators
        ],
    )
