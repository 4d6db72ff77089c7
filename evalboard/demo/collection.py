"""A short collection round, played by simulated annotators through the loop's own API.

The leaderboard's best model is promoted as the round's target (``promote --top 1``);
two annotators write the examples of ``collection.jsonl``, each meant to fool a sentiment
model, and see the target's answer at once; three validators judge every example that
fooled it (the demo's gold labels are right, so each verdict is ``correct``); closing
the round turns the verified examples into dataset ``round-<n>``, whose evaluation jobs
are then queued for every submission.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from evalboard.core.context import Context
from evalboard.core.errors import Conflict
from evalboard.core.states import ExampleStatus, RoundStatus, Verdict
from evalboard.core.tables import Round
from evalboard.demo.data import data_path, read_jsonl
from evalboard.demo.seed import DemoAccounts
from leaderboard.loop import (
    BundleSandboxes,
    RoundVmer,
    TargetPool,
    close_round,
    collect_example,
    current_round,
    list_rounds,
    open_round,
    round_examples,
    round_vmer,
    validate_example,
    verdicts_of,
)

__all__ = ["RoundSummary", "simulate_round"]


@dataclass(frozen=True)
class RoundSummary:
    """What the simulated round did (``reused``: a previous run had closed it)."""

    number: int
    target_ids: tuple[int, ...]
    collected: int
    fooled: int
    verified: int
    dataset: str | None
    dataset_rows: int
    jobs: int
    reused: bool

    @property
    def vmer(self) -> float | None:
        return self.verified / self.collected if self.collected else None


def _summary(
    round_: Round, vmer: RoundVmer, dataset: str | None, *, rows: int, jobs: int, reused: bool
) -> RoundSummary:
    return RoundSummary(
        number=round_.number,
        target_ids=tuple(int(i) for i in round_.target_submission_ids),
        collected=vmer.collected,
        fooled=vmer.fooled,
        verified=vmer.verified,
        dataset=dataset,
        dataset_rows=rows,
        jobs=jobs,
        reused=reused,
    )


def simulate_round(
    ctx: Context, task_id: str, *, accounts: DemoAccounts, sandbox: str
) -> RoundSummary:
    """Promote the top model, collect, validate and close one round (once per data dir)."""
    closed = [r for r in list_rounds(ctx, task_id) if r.status == RoundStatus.CLOSED]
    if closed:
        last = closed[-1]
        dataset = f"round-{last.number}" if last.dataset_id else None
        vmer = round_vmer(ctx, task_id, last.number)
        # Closed by an earlier run: its dataset is as big as its verified set.
        return _summary(last, vmer, dataset, rows=vmer.verified, jobs=0, reused=True)
    round_ = current_round(ctx, task_id) or open_round(ctx, task_id, top=1)
    factory = BundleSandboxes(ctx, kind=sandbox)
    targets = TargetPool(factory)
    rng = random.Random(0)
    try:
        targets.warm(round_.id, [int(i) for i in round_.target_submission_ids])
        written = {str(e.inputs.get("statement")) for e in round_examples(ctx, round_.id)}
        for index, row in enumerate(read_jsonl(data_path("collection.jsonl"))):
            if row["statement"] in written:  # an interrupted run wrote it already
                continue
            collect_example(
                ctx,
                task_id,
                round_.number,
                author_id=accounts.writers[index % len(accounts.writers)],
                inputs={"statement": row["statement"]},
                gold={"label": row["label"]},
                predictor=targets,
                explanation="written to fool the target: negation, sarcasm or mixed feelings",
                rng=rng,
            )
        for example in round_examples(ctx, round_.id, status=ExampleStatus.PENDING):
            judged = {v.user_id for v in verdicts_of(ctx, example.id)}
            for validator in accounts.validators:
                if validator in judged:
                    continue
                try:
                    validate_example(ctx, example.id, user_id=validator, verdict=Verdict.CORRECT)
                except Conflict:  # settled by the verdicts before this one
                    break
    finally:
        targets.release(round_.id)
        targets.close()
        factory.cleanup()
    made = close_round(ctx, task_id, round_.number)
    dataset = made.dataset.name if made.dataset is not None else None
    vmer = round_vmer(ctx, task_id, round_.number)
    return _summary(round_, vmer, dataset, rows=made.examples, jobs=len(made.jobs), reused=False)
