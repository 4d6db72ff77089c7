"""Board rows built by hand, for tests of what the leaderboard makes of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalboard.core.states import JobStatus
from evaluator import DatasetOutcome
from leaderboard.entry import EntryDetails, ModelEntry


def finished_entry(
    key: str, submission_id: int, outcomes: Sequence[DatasetOutcome], **fields: Any
) -> ModelEntry:
    """A complete row for the model ``key`` (its name too), with a finished result on each
    of ``outcomes``; ``fields``: the row's other fields (metrics, methods, ...)."""
    return ModelEntry(
        key=key,
        submission_id=submission_id,
        name=key,
        user=None,
        user_id=None,
        is_baseline=False,
        status=JobStatus.FINISHED,
        complete=True,
        details=EntryDetails.of({}, outcomes),
        **fields,
    )
