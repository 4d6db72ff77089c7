"""Word attributions of a model's answer (:mod:`leaderboard.occlusion`), at a capped cost.

Two kinds of input are explained, never free text: an annotator's collected example
(to its author and the task owner: explaining a draft would be a way to probe the target
without the example counting in vMER), and an example of a dataset on a submission's
drill-down (to anyone signed in who may see that drill-down: the dataset not hidden, or
the caller the task owner). The model answers through its own sandbox: the warm target
of an open round where there is one (:class:`~leaderboard.loop.TargetPool`), else one
started for the request; the full input and every variant go in one request.

The cost is capped (:class:`AttributionLimits`, from the settings): an input with more
characters or words than the caps is refused before any model runs, and at most
``max_concurrent`` attributions are computed at once by one server (more: :class:`Busy`).
An attribution is cached in the artifact store per (submission, input text): bundles
never change, so neither does the answer; a cached one is answered whatever the load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from datasets_registry import TaskSpec, get_task, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import Busy, NotFound, PermissionDenied, UsageError
from evalboard.core.settings import Settings
from evalboard.core.states import RoundStatus
from evalboard.core.tables import Round
from leaderboard.accounts import Principal
from leaderboard.drilldown import visible_job
from leaderboard.loop import TargetPool, get_example
from leaderboard.occlusion import RULES, attribution_scores, variants, words_of
from leaderboard.submissions import visible_submission

__all__ = [
    "AttributionLimits",
    "AttributionPublic",
    "Attributor",
    "FieldPublic",
    "WordPublic",
    "attribute_collected",
    "attribute_drilldown",
]

logger = logging.getLogger(__name__)

#: Part of every cache key: a change of the method or its rules makes new entries.
METHOD_VERSION = 1

Predict = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class AttributionLimits:
    """What one attribution may cost: ``max_words`` words (so ``max_words + 1`` inputs in
    the model's one request: the input and one variant per word), ``max_chars``
    characters of input text, ``max_concurrent`` attributions at once per server."""

    max_words: int = 200
    max_chars: int = 20_000
    max_concurrent: int = 2

    @property
    def max_variants(self) -> int:
        return self.max_words + 1

    @classmethod
    def from_settings(cls, settings: Settings) -> AttributionLimits:
        return cls(
            max_words=settings.attribution_max_words,
            max_concurrent=settings.attribution_max_concurrent,
        )


class WordPublic(BaseModel):
    """One word and its attribution."""

    text: str
    start: int = Field(description="Character offset of the word in its field.")
    end: int
    score: float = Field(description="How far removing the word moved the answer (see rule).")


class FieldPublic(BaseModel):
    name: str
    text: str
    words: list[WordPublic]


class AttributionPublic(BaseModel):
    """Which words of an input moved the model's answer, by occlusion."""

    submission_id: int
    output: str = Field(description="The task's output type: multiclass, span or text.")
    method: str = "occlusion"
    rule: str = Field(description="How a word's score is computed for this task's outputs.")
    prediction: Any = Field(description="The model's answer on the full input.")
    probability: float | None = Field(
        None, description="Classification: the probability it gave that label."
    )
    fields: list[FieldPublic]
    variants: int = Field(description="Inputs the model answered: the input and one per word.")
    cached: bool = False


class Attributor:
    """Computes attributions under :class:`AttributionLimits` and caches them; one per
    server (``app.state.attributor``), so that the concurrency cap holds across requests."""

    def __init__(self, ctx: Context, limits: AttributionLimits | None = None) -> None:
        self.ctx = ctx
        self.limits = limits or AttributionLimits.from_settings(ctx.settings)
        self._slots = threading.BoundedSemaphore(self.limits.max_concurrent)

    def attribute(
        self, *, submission_id: int, task: TaskSpec, inputs: Mapping[str, Any], predict: Predict
    ) -> AttributionPublic:
        """The attribution of ``inputs`` (the task's fields) for ``submission_id``, whose
        answers ``predict`` gives (through its sandbox, checked against the contract).

        Raises:
            UsageError: the input is longer than the caps allow (nothing ran).
            Busy: ``max_concurrent`` attributions are being computed already.
            SandboxFailure: the model failed to answer.
        """
        text = {name: str(inputs.get(name, "")) for name in task.input_names}
        self._check_size(text)
        key = _cache_key(submission_id, text)
        cached = self._cached(key)
        if cached is not None:
            return cached
        if not self._slots.acquire(blocking=False):
            raise Busy(
                f"{self.limits.max_concurrent} word attributions are being computed right now, "
                "the most this server runs at once; try again in a few seconds"
            )
        try:
            words = words_of(text, task.input_names)
            batch = [{"uid": "occlusion-0", **text}] + [
                {"uid": f"occlusion-{i}", **variant}
                for i, variant in enumerate(variants(text, words), start=1)
            ]
            full, *occluded = predict(batch)
        finally:
            self._slots.release()
        scores = attribution_scores(task, full, occluded)
        label = full.get("label")
        probs = full.get("probs")
        result = AttributionPublic(
            submission_id=submission_id,
            output=task.output.type,
            rule=RULES[task.output.type],
            prediction=task.prediction(full),
            probability=float(probs[label]) if isinstance(probs, dict) and label in probs else None,
            fields=[
                FieldPublic(
                    name=name,
                    text=text[name],
                    words=[
                        WordPublic(text=w.text, start=w.start, end=w.end, score=round(s, 6))
                        for w, s in zip(words, scores, strict=True)
                        if w.field == name
                    ],
                )
                for name in task.input_names
            ],
            variants=len(batch),
        )
        self.ctx.artifacts.put_bytes(key, result.model_dump_json().encode())
        return result

    def _check_size(self, text: Mapping[str, str]) -> None:
        chars = sum(len(v) for v in text.values())
        if chars > self.limits.max_chars:
            raise UsageError(
                f"The input has {chars:,} characters; word attributions explain inputs of at "
                f"most {self.limits.max_chars:,}"
            )
        count = len(words_of(text, list(text)))
        if count > self.limits.max_words:
            raise UsageError(
                f"The input has {count} words; word attributions explain at most "
                f"{self.limits.max_words} (the model answers one variant per word, "
                f"{self.limits.max_variants} inputs in all)"
            )

    def _cached(self, key: str) -> AttributionPublic | None:
        if not self.ctx.artifacts.exists(key):
            return None
        try:
            found = AttributionPublic.model_validate_json(self.ctx.artifacts.read_bytes(key))
        except ValidationError:
            logger.warning("cached attribution %s does not parse; computing it again", key)
            return None
        return found.model_copy(update={"cached": True})


def _cache_key(submission_id: int, text: Mapping[str, str]) -> str:
    canonical = json.dumps({"method": METHOD_VERSION, "inputs": text}, sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return f"attributions/{submission_id}/{digest}.json"


def attribute_collected(
    ctx: Context, attributor: Attributor, pool: TargetPool, principal: Principal, example_id: int
) -> AttributionPublic:
    """The attribution of a collected example for the target that answered it.

    Raises:
        PermissionDenied: the caller neither wrote the example nor owns its task.
        NotFound: no such example, or it has no target.
    """
    principal.require_signed_in()
    example = get_example(ctx, example_id)
    if not (example.author_id == principal.user_id or principal.owns(example.task_id)):
        raise PermissionDenied(
            f"Only the author of example {example_id} and the task's owner see why the model "
            "answered it"
        )
    target = example.target_submission_id
    if target is None:
        raise NotFound(f"Example {example_id} was not answered by a target model")
    task = get_task(ctx, example.task_id)
    with ctx.db.session() as session:
        round_ = session.get(Round, example.round_id) if example.round_id is not None else None
        open_round = round_ is not None and round_.status == RoundStatus.OPEN
        round_id = round_.id if round_ is not None else 0

    def predict(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if open_round:  # the round's warm target, as the annotator's own prediction
            return pool.predict(round_id, target, batch, task)
        return pool.predict_any(target, batch, task)

    return attributor.attribute(
        submission_id=target, task=task, inputs=example.inputs, predict=predict
    )


def attribute_drilldown(
    ctx: Context,
    attributor: Attributor,
    pool: TargetPool,
    principal: Principal,
    *,
    submission_id: int,
    dataset: str,
    uid: str,
) -> AttributionPublic:
    """The attribution of example ``uid`` of ``dataset`` for submission ``submission_id``.

    Raises:
        NotFound: a submission the caller may not see, a dataset hidden from them, or no
            such example.
    """
    principal.require_signed_in()
    submission = visible_submission(ctx, principal, submission_id)
    job = visible_job(principal, submission, dataset)
    example = next((e for e in read_examples(ctx, job.dataset) if str(e["uid"]) == uid), None)
    if example is None:
        raise NotFound(f"Dataset {dataset!r} has no example {uid!r}")
    task = get_task(ctx, submission.task_id)
    return attributor.attribute(
        submission_id=submission_id,
        task=task,
        inputs=example,
        predict=lambda batch: pool.predict_any(submission_id, batch, task),
    )
