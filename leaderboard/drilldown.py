"""Per-example drill-down: each example's inputs, gold answer, the model's output and score.

Only for datasets the caller may see (callers check access); the records come from the
result's predictions file, the inputs from the dataset itself. A page of them may be
searched (any text of the example, its uid, gold or prediction) and sorted by score or uid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from datasets_registry import GOLD_FIELDS, get_task, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import InvalidQuery, NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Job, Submission
from leaderboard.accounts import Principal
from leaderboard.example_statistics import load_records

__all__ = ["EXAMPLE_SORTS", "ExamplesPage", "drilldown_page", "example_sort", "visible_job"]

# Not the model's inputs: the gold (of any output type) and the bookkeeping fields.
_NOT_INPUTS = ("uid", *GOLD_FIELDS, "input_id", "perturbation")

ExampleSort = Literal["file", "score", "-score", "uid", "-uid"]
#: The orders of the examples: as in the file, by score (worst first), by uid.
EXAMPLE_SORTS: tuple[ExampleSort, ...] = ("file", "score", "-score", "uid", "-uid")


def visible_job(principal: Principal, submission: Submission, dataset: str) -> Job:
    """The submission's job on ``dataset`` if ``principal`` may see its examples: a hidden
    dataset's only for the task owner.

    Raises:
        NotFound: no such job, or a hidden one (named as if it did not exist).
    """
    job = next((j for j in submission.jobs if j.dataset.name == dataset), None)
    if job is None or (
        job.dataset.access == Access.HIDDEN and not principal.owns(submission.task_id)
    ):
        raise NotFound(
            f"Submission {submission.id} has no results on a dataset {dataset!r} you may see"
        )
    return job


@dataclass(frozen=True)
class ExamplesPage:
    """One page of a dataset's examples and how many match the search in all."""

    total: int
    rows: list[dict[str, Any]]


def example_sort(text: str | None) -> ExampleSort:
    """``text`` as an order of the examples (None or empty: file order).

    Raises:
        InvalidQuery: not one of :data:`EXAMPLE_SORTS`.
    """
    for known in EXAMPLE_SORTS:
        if (text or "file") == known:
            return known
    raise InvalidQuery(
        f"Unknown example order {str(text)[:30]!r}; known: {', '.join(EXAMPLE_SORTS)}"
    )


def _text(row: dict[str, Any]) -> str:
    parts = [row["uid"], str(row["gold"]), str(row["prediction"])]
    parts += [str(v) for v in row["inputs"].values()]
    return "\n".join(parts).casefold()


def drilldown_page(
    ctx: Context,
    submission: Submission,
    job: Job,
    *,
    offset: int = 0,
    limit: int = 50,
    wrong_only: bool = False,
    q: str | None = None,
    sort: ExampleSort = "file",
) -> ExamplesPage:
    """Examples ``offset .. offset+limit`` of those matching ``wrong_only`` and ``q``
    (any case), in ``sort`` order, with their count."""
    if job.result is None or not job.result.predictions_key:
        return ExamplesPage(total=0, rows=[])
    records = load_records(ctx, job.result.predictions_key)
    if wrong_only:
        records = [r for r in records if float(r.get("score", 1.0)) < 1.0]
    task = get_task(ctx, submission.task_id)
    inputs = {
        str(e["uid"]): {k: v for k, v in e.items() if k not in _NOT_INPUTS}
        for e in read_examples(ctx, job.dataset)
    }
    rows = []
    for record in records:
        output = record.get("output", {})
        rows.append(
            {
                "uid": str(record.get("uid")),
                "inputs": inputs.get(str(record.get("uid")), {}),
                "gold": record.get("gold", record.get("original")),
                "prediction": task.prediction(output) if output else None,
                "probs": output.get("probs"),
                "score": record.get("score"),
            }
        )
    if q:
        needle = q.casefold()
        rows = [row for row in rows if needle in _text(row)]
    if sort != "file":
        field = sort.removeprefix("-")
        # A row without a score sorts after every scored one, whichever the direction.
        rows.sort(key=lambda row: row["uid"])
        scored = [r for r in rows if r[field] is not None]
        scored.sort(key=lambda row: row[field], reverse=sort.startswith("-"))
        rows = scored + [r for r in rows if r[field] is None]
    return ExamplesPage(total=len(rows), rows=rows[offset : offset + limit])
