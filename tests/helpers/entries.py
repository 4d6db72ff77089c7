"""Board rows built by hand, for tests of what the leaderboard makes of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalboard.core.states import JobStatus
from evaluator import DatasetOutcome
from leaderboard.entry import EntryDetails, ModelEntry
from scoring import weighted_mean


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


def throughput_runs(entry: ModelEntry, weights: Mapping[str, float]) -> list[float]:
    """One row's throughput per timed run, each averaged over its originals with
    ``weights`` (run j of every dataset together), empty without repeated runs: the rule
    ``leaderboard.table.timed_runs`` applies to every row at once, written for one row."""
    timed = entry.details.timed
    if not timed or any(len(runs) < 2 for _, _, runs in timed):
        return []
    chosen = [weights.get(name, own) for name, own, _ in timed]
    if not sum(chosen) > 0:
        return []
    means = [
        weighted_mean(zip([runs[j] for _, _, runs in timed], chosen, strict=True))
        for j in range(min(len(runs) for _, _, runs in timed))
    ]
    return [m for m in means if m is not None]
