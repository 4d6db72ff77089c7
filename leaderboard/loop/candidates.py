"""Traffic candidates: the most shifted production inputs, queued unlabeled for validators.

A drift check queues the traffic inputs its domain classifier found least like the
task's datasets (see :mod:`leaderboard.loop.drift`). Each becomes an example of source
``traffic`` with no gold: ``pending`` in the open round or, with none open, in the next
one, like a captured failure. Validators give it a label rather than a verdict
(:mod:`leaderboard.loop.validation`); once ``num_matching`` agree it is ``verified`` with
that label and enters the round's dataset when the round closes.

An input already in the task is never queued: not if any dataset of the task holds it
(hidden sets and perturbed copies included, so a hidden input never reaches a public
round), nor if an example of the task has it. Inputs are compared normalised (casefolded,
whitespace collapsed), by :func:`input_key`; the stored key of a traffic example is
unique per task, so two checks at once cannot queue one input twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from datasets_registry import list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import Conflict
from evalboard.core.states import ExampleStatus, RoundStatus
from evalboard.core.tables import Example, Round

__all__ = ["MAX_QUEUE", "Candidate", "dataset_input_keys", "input_key", "queue_candidates"]

#: The most candidates one check may queue.
MAX_QUEUE = 100


def input_key(inputs: Mapping[str, str]) -> str:
    """The digest an input is compared by: each field casefolded, whitespace collapsed.

    >>> input_key({"statement": "Great  food!"}) == input_key({"statement": "great food!"})
    True
    """
    normal = {name: " ".join(str(value).casefold().split()) for name, value in inputs.items()}
    encoded = json.dumps(normal, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()


def dataset_input_keys(ctx: Context, task_id: str, input_names: Sequence[str]) -> set[str]:
    """The keys of every input in every dataset of the task, hidden ones included."""
    keys = set()
    for dataset in list_datasets(ctx, task_id):
        for example in read_examples(ctx, dataset):
            keys.add(input_key({name: example[name] for name in input_names}))
    return keys


def _example_keys(session: Session, task_id: str) -> set[str]:
    query = select(Example.input_key, Example.inputs).where(Example.task_id == task_id)
    return {stored_key or input_key(inputs) for stored_key, inputs in session.execute(query)}


@dataclass(frozen=True)
class Candidate:
    """A traffic input offered for the queue, with the note it gets (why it is there)."""

    inputs: dict[str, str]
    note: str


def queue_candidates(
    task_id: str,
    candidates: Iterable[Candidate],
    *,
    limit: int,
    known: set[str],
    session: Session,
) -> list[int | None]:
    """Queue candidates, best first, until ``limit`` are queued; skip inputs in the task.

    Args:
        known: keys of the task's dataset inputs (:func:`dataset_input_keys`).
        session: the check's own transaction (the check and its examples are one write).

    Returns:
        For each candidate looked at, its new example's id, or None for a duplicate.

    Raises:
        Conflict: another check queued one of these inputs at the same moment.
    """
    seen = known | _example_keys(session, task_id)
    open_round = session.scalar(
        select(Round.id).where(Round.task_id == task_id, Round.status == RoundStatus.OPEN)
    )
    stored: list[Example | None] = []
    queued = 0
    for candidate in candidates:
        if queued >= limit:
            break
        key = input_key(candidate.inputs)
        if key in seen:
            stored.append(None)
            continue
        seen.add(key)
        queued += 1
        example = Example(
            task_id=task_id,
            round_id=open_round,
            author_id=None,  # nobody wrote it: anyone may label it
            source="traffic",
            input_key=key,
            inputs=candidate.inputs,
            gold={},
            model_output=None,
            fooled=False,
            explanation=candidate.note,
            status=ExampleStatus.PENDING.value,
        )
        session.add(example)
        stored.append(example)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(
            f"Another drift check of task {task_id!r} queued some of these inputs just now; "
            "send the file again"
        ) from None
    return [e.id if e is not None else None for e in stored]
