"""vMER, the validated model error rate (Dynabench): how often annotators fool the target.

vMER = verified model errors / examples collected, per round and per annotator. Only
collected examples count (captured failures come from production, not from annotators
trying to fool the target); an example counts as a verified error once validation
verified it. ``fooled`` (unvalidated model errors) is reported beside it: the gap
between the two is what validators rejected or have not judged yet.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.states import ExampleStatus
from evalboard.core.tables import Example, User
from leaderboard.loop.rounds import get_round

__all__ = ["AnnotatorVmer", "RoundVmer", "round_vmer"]


@dataclass(frozen=True)
class AnnotatorVmer:
    """One annotator's examples in a round."""

    user_id: int | None
    name: str
    collected: int
    fooled: int
    verified: int

    @property
    def vmer(self) -> float | None:
        """Verified model errors per example collected (None before any example)."""
        return self.verified / self.collected if self.collected else None


@dataclass(frozen=True)
class RoundVmer:
    """A round's vMER, overall and per annotator (most verified errors first)."""

    task_id: str
    round: int
    collected: int
    fooled: int
    verified: int
    pending: int
    annotators: list[AnnotatorVmer] = field(default_factory=list)

    @property
    def vmer(self) -> float | None:
        return self.verified / self.collected if self.collected else None


def round_vmer(ctx: Context, task_id: str, number: int) -> RoundVmer:
    """Count a round's collected examples by annotator and status."""
    round_ = get_round(ctx, task_id, number)
    with ctx.db.session() as session:
        rows = session.execute(
            select(Example.author_id, Example.fooled, Example.status).where(
                Example.round_id == round_.id, Example.source == "collection"
            )
        ).all()
        authors = {a for a, _, _ in rows if a is not None}
        found = session.execute(select(User.id, User.name).where(User.id.in_(authors)))
        names: dict[int, str] = {user_id: name for user_id, name in found}
    tally: dict[int | None, list[int]] = defaultdict(lambda: [0, 0, 0])
    pending = 0
    for author_id, fooled, status in rows:
        counts = tally[author_id]
        counts[0] += 1
        counts[1] += int(bool(fooled))
        counts[2] += int(status == ExampleStatus.VERIFIED)
        pending += int(status == ExampleStatus.PENDING)
    annotators = [
        AnnotatorVmer(
            user_id=author_id,
            name=names.get(author_id, "") if author_id is not None else "",
            collected=c,
            fooled=f,
            verified=v,
        )
        for author_id, (c, f, v) in tally.items()
    ]
    annotators.sort(key=lambda a: (-a.verified, -a.collected, a.user_id or 0))
    return RoundVmer(
        task_id=task_id,
        round=number,
        collected=len(rows),
        fooled=sum(a.fooled for a in annotators),
        verified=sum(a.verified for a in annotators),
        pending=pending,
        annotators=annotators,
    )
