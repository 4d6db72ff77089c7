"""The loop's API schemas, split by direction (``*Create`` in, ``*Public`` out)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalboard.core.states import ExampleStatus, Verdict
from evalboard.core.tables import DriftCheck, Example
from leaderboard.loop.content import content_version
from leaderboard.loop.vmer import RoundVmer
from leaderboard.schemas import RoundPublic, from_row

__all__ = [
    "ClosedRoundPublic",
    "DriftCheckPublic",
    "ExampleCreate",
    "ExamplePublic",
    "ExplanationUpdate",
    "FailureItem",
    "FailuresCreate",
    "RoundCreate",
    "ValidationCreate",
    "ValidationPublic",
    "VmerPublic",
    "drift_check_public",
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
    source: str = Field(
        description="collection, failure or traffic (a production input: no gold until "
        "validators agree on its label)."
    )
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
    version: str = Field(
        description="Its content version: send it with a verdict, so that an edit made "
        "after you read it is refused (409) instead of judged unseen."
    )
    latency_ms: float | None = Field(None, description="How long the target took to answer.")


def example_public(
    example: Example, round_number: int | None, latency_s: float | None = None
) -> ExamplePublic:
    return from_row(
        ExamplePublic,
        example,
        task=example.task_id,
        round=round_number,
        status=ExampleStatus(example.status),
        version=content_version(example),
        latency_ms=latency_s * 1000 if latency_s is not None else None,
    )


class ValidationCreate(_In):
    """A verdict on an example; for an unlabeled traffic input, its label (or flagged)."""

    verdict: Literal[Verdict.CORRECT, Verdict.INCORRECT, Verdict.FLAGGED] | None = Field(
        None,
        description="correct (the intended answer is right: a model error), incorrect, "
        "flagged. A traffic input takes a label instead, or flagged.",
    )
    label: str | None = Field(
        None, max_length=200, description="A traffic input's label, one of the task's."
    )
    version: str | None = Field(
        None,
        max_length=16,
        description="The example's version you judged (its `version`); if it was edited "
        "since, the verdict is refused with 409. Without it, the current version is judged.",
    )

    @model_validator(mode="after")
    def _one_vote(self) -> ValidationCreate:
        if (self.verdict is None) == (self.label is None):
            raise ValueError("give either a verdict or a label")
        return self


class ValidationPublic(BaseModel):
    example_id: int
    status: ExampleStatus
    verdicts: dict[str, int] = Field(
        description="Verdicts so far, by kind (for a traffic input, by label given, and flagged)."
    )
    gold: dict[str, Any] = Field(description="The example's gold ({} for an unlabeled input).")
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
    return from_row(
        VmerPublic,
        report,
        task=report.task_id,
        annotators=[from_row(AnnotatorVmerPublic, a) for a in report.annotators],
    )


class ReferenceDatasetPublic(BaseModel):
    name: str
    inputs: int


class HiddenReferencePublic(BaseModel):
    """Hidden sets in the reference: counted, never named."""

    datasets: int
    inputs: int


class ReferencePublic(BaseModel):
    datasets: list[ReferenceDatasetPublic] = Field(description="The shown datasets used.")
    hidden: HiddenReferencePublic
    sampled: bool = Field(description="Whether the inputs were a seeded sample of them.")


class HistogramPublic(BaseModel):
    """Shift scores of both sides in common bins (``len(edges) == len(traffic) + 1``)."""

    edges: list[float]
    traffic: list[int]
    reference: list[int]


class ShiftedInputPublic(BaseModel):
    rank: int = Field(description="1: the traffic input least like the reference.")
    score: float = Field(description="Its out-of-fold shift score.")
    inputs: dict[str, str]
    example_id: int | None = Field(description="The queued example, if it was queued.")
    duplicate: bool = Field(description="Not queued: the input is in the task already.")


class DriftCheckPublic(BaseModel):
    """A drift check: traffic against the task's datasets (docs/task-owners-rounds.md)."""

    task: str
    number: int
    created_at: datetime
    verdict: str = Field(description="One line: shifted or not, with the figures.")
    method: str = Field(description="The two-sample test used.")
    statistic: str = Field(description="The test statistic: the cross-validated AUC.")
    auc: float = Field(description="0.5: traffic indistinguishable from the reference.")
    auc_interval: tuple[float, float] = Field(description="Its 95% bootstrap interval.")
    p_value: float = Field(description="Permutation p-value (one-sided).")
    alpha: float
    shifted: bool = Field(description="p_value < alpha.")
    n_traffic: int
    n_reference: int
    n_permutations: int
    folds: int
    features: int
    seed: int
    reference: ReferencePublic
    histogram: HistogramPublic
    queued: list[int] | None = Field(
        None, description="Examples queued for labelling (task owner only)."
    )
    duplicates: int | None = Field(
        None, description="Shifted inputs not queued: already in the task (task owner only)."
    )
    not_queued_because: str | None = None
    top: list[ShiftedInputPublic] | None = Field(
        None, description="The most shifted traffic inputs (task owner only)."
    )


#: The stored report's figures everyone sees (a list, so that a figure added to the report
#: stays hidden until it is named here) and what only the task owner sees: what the
#: check queued, and the inputs themselves.
_PUBLIC = (
    "method",
    "statistic",
    "auc",
    "p_value",
    "alpha",
    "shifted",
    "n_traffic",
    "n_reference",
    "n_permutations",
    "folds",
    "features",
    "seed",
    "reference",
    "histogram",
)
_OWNER_ONLY = ("queued", "duplicates", "not_queued_because", "top")


def _verdict(report: dict[str, Any]) -> str:
    figures = (
        f"AUC {report['auc']:.3f} [{report['auc_low']:.3f}, {report['auc_high']:.3f}], "
        f"p = {report['p_value']:.3g}, {report['n_traffic']} traffic vs "
        f"{report['n_reference']} reference inputs"
    )
    if report["shifted"]:
        return f"SHIFTED: the traffic is unlike the task's datasets ({figures})"
    return f"not shifted at alpha {report['alpha']:g}: no evidence of drift ({figures})"


def drift_check_public(check: DriftCheck, *, full: bool) -> DriftCheckPublic:
    """The check as the API shows it; ``full`` (the task owner) adds what was queued."""
    report = check.report
    shown = {key: report[key] for key in _PUBLIC + (_OWNER_ONLY if full else ())}
    return DriftCheckPublic.model_validate(
        shown
        | {
            "task": check.task_id,
            "number": check.number,
            "created_at": check.created_at,
            "verdict": _verdict(report),
            "auc_interval": (report["auc_low"], report["auc_high"]),
        }
    )
