"""Which submissions lead a task: the order ``promote --top K`` picks targets from.

The leaderboard's own ranking (:func:`leaderboard.ranking.build_leaderboard`) under the
task owner's default weights, so the targets are the models the public leaderboard page
shows on top (unpublished models and predictions-only rows are never promoted). A
submission is ranked once it has results on every scoring dataset; reference rows (the
majority-class baseline) never are.
"""

from __future__ import annotations

from evalboard.core.context import Context
from leaderboard.cards import public_table
from leaderboard.ranking import build_leaderboard

__all__ = ["leaderboard_ranking"]


def leaderboard_ranking(ctx: Context, task_id: str) -> list[int]:
    """The task's ranked submission ids, best first (Dynascore, default weights)."""
    board = build_leaderboard(ctx, public_table(ctx, task_id), intervals=False)
    # A predictions-only row has no model to answer annotators: never a target.
    ranked = [
        row
        for row in board.rows
        if row.rank is not None and row.submission_id and not row.predictions_only
    ]
    ranked.sort(key=lambda row: row.rank or 0)
    return [row.submission_id for row in ranked if row.submission_id is not None]
