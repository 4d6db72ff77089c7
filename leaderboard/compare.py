"""Comparing two to four models of a task: their figures side by side, and the examples
on which they disagree.

The rules, each asked of its one home:

- Which models: submission ids the viewer may see on the board
  (:func:`leaderboard.cards.visible_table`: an unpublished model only for its submitter,
  the task owner and admins; an anonymous submitter's name blanked). A model the viewer
  may not see is answered as one that does not exist.
- The matrix: per dataset, each model's stored figures under the board's metric names
  (``scoring.METRICS``: label, unit, direction), and the board's own averages first.
  Hidden datasets appear only to the task owner.
- The examples: only on datasets that are not hidden (for anyone, the owner included, as
  on the model page), and only where every chosen model kept its per-example
  predictions. The inputs shown are what the models saw (``evaluator.model_inputs``:
  ``uid`` and the task's input fields, never gold), the gold is ``OutputSpec.gold`` of
  the example, each model's prediction is ``OutputSpec.prediction`` of its output. The
  models disagree on an example where their predictions are not all equal; a QA
  answer "Paris" and "paris" disagree, and each model's per-example score beside it says
  whether that matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from datasets_registry import read_examples
from evalboard.core.context import Context
from evalboard.core.errors import InvalidQuery, NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Dataset
from evaluator import model_inputs
from leaderboard.accounts import Principal
from leaderboard.cards import visible_table
from leaderboard.example_statistics import load_records
from leaderboard.schemas import from_row
from leaderboard.table import ModelEntry, TaskTable, load_table
from scoring import METRICS

__all__ = [
    "BOARD_ROW",
    "MAX_MODELS",
    "MIN_MODELS",
    "CellPublic",
    "Comparison",
    "ComparedModel",
    "ComparePublic",
    "DatasetDisagreements",
    "Disagreement",
    "DisagreementsPublic",
    "MatrixRowPublic",
    "compare_models",
    "disagreements",
    "parse_models",
]

MIN_MODELS = 2
MAX_MODELS = 4
#: The matrix's first row: the board's averages over the scoring datasets.
BOARD_ROW = "board (weighted average)"


class ComparedModel(BaseModel):
    """A chosen model as the viewer may see it."""

    submission_id: int
    name: str
    user: str | None = Field(description="None: anonymous, or no user.")
    runtime: str | None
    published: bool
    ranked: bool = Field(description="Whether it has results on every scoring dataset.")


class CellPublic(BaseModel):
    """One (dataset, metric) cell: each model's figure, and which models are best on it."""

    metric: str
    values: dict[str, float | None] = Field(description="Submission id -> figure.")
    best: list[str] = Field(description="The submission ids with the best figure.")


class MatrixRowPublic(BaseModel):
    """One dataset's row of the matrix (or the board's averages)."""

    dataset: str = Field(description="A dataset's name, or the board's averages.")
    access: str | None = Field(description="scoring, standard or hidden; None for the board.")
    cells: list[CellPublic]


class DatasetDisagreements(BaseModel):
    """How often the models disagree on one dataset that is not hidden."""

    dataset: str
    examples: int | None = Field(description="Examples every model answered.")
    disagreements: int | None = Field(description="None when a model kept no predictions.")
    note: str | None = None


class ComparePublic(BaseModel):
    """The models side by side: the dataset x metric matrix and where they disagree."""

    task: str
    perf_metric: str
    models: list[ComparedModel]
    metrics: list[dict[str, str]] = Field(description="name, label, unit and direction.")
    matrix: list[MatrixRowPublic]
    datasets: list[DatasetDisagreements]


class Disagreement(BaseModel):
    """One example on which the models disagree."""

    uid: str
    inputs: dict[str, Any] = Field(description="What the models saw.")
    gold: Any = Field(description="The gold answer (None where the example has none).")
    predictions: dict[str, Any] = Field(description="Submission id -> its prediction.")
    scores: dict[str, float | None] = Field(description="Submission id -> its example score.")


class DisagreementsPublic(BaseModel):
    """One page of a dataset's disagreements; ``total`` counts them all."""

    dataset: str
    total: int
    offset: int
    limit: int
    examples: list[Disagreement]


def parse_models(text: str | None) -> list[int]:
    """The submission ids of ``models=a,b,c``: two to four distinct ones.

    Raises:
        InvalidQuery: not ids, too few, too many, or one named twice.
    """
    parts = [p.strip() for p in (text or "").split(",") if p.strip()]
    if not all(p.isascii() and p.isdigit() and len(p) <= 10 for p in parts):
        raise InvalidQuery(
            f"models={text!r}: give submission ids separated by commas, e.g. models=3,7"
        )
    ids = [int(p) for p in parts]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidQuery(
            f"models names submission {', '.join(map(str, twice))} twice; name each model once"
        )
    if not MIN_MODELS <= len(ids) <= MAX_MODELS:
        raise InvalidQuery(f"Compare {MIN_MODELS} to {MAX_MODELS} models; models= names {len(ids)}")
    return ids


@dataclass(frozen=True)
class Comparison:
    """The chosen models of a task as the viewer sees them, and what may be shown."""

    table: TaskTable
    models: list[ModelEntry]
    #: Datasets of the matrix: every dataset, hidden ones for the task owner only.
    shown: list[Dataset]

    @property
    def keys(self) -> list[str]:
        return [m.key for m in self.models]

    def browsable(self, name: str) -> Dataset:
        """The dataset ``name`` if its examples may be shown: not hidden, with predictions
        from every chosen model.

        Raises:
            NotFound: no such dataset the viewer may browse (hidden ones are never named).
        """
        dataset = next(
            (d for d in self.shown if d.name == name and d.access != Access.HIDDEN), None
        )
        if dataset is None:
            raise NotFound(f"Task {self.table.task.id!r} has no dataset {name!r} you may browse")
        lacking = _lacking(self.models, dataset)
        if lacking:
            raise NotFound(
                f"Dataset {name!r} has no per-example predictions from {', '.join(lacking)}"
            )
        return dataset

    def public(self, ctx: Context) -> ComparePublic:
        """The matrix and each browsable dataset's count of disagreements."""
        task = self.table.task
        rows = [_matrix_row(BOARD_ROW, None, {m.key: m.metrics for m in self.models if m.complete})]
        unpacked = [m.per_dataset for m in self.models]
        for dataset in self.shown:
            figures = {
                m.key: _board_names(per_dataset[dataset.name])
                for m, per_dataset in zip(self.models, unpacked, strict=True)
                if dataset.name in per_dataset
            }
            rows.append(_matrix_row(dataset.name, dataset.access, figures))
        used = {cell.metric for row in rows for cell in row.cells}
        return ComparePublic(
            task=task.id,
            perf_metric=task.perf_metric,
            models=[from_row(ComparedModel, m, ranked=m.complete) for m in self.models],
            metrics=[
                {"name": n, "label": m.label, "unit": m.unit, "direction": m.direction}
                for n, m in METRICS.items()
                if n in used
            ],
            matrix=rows,
            datasets=[self._counted(ctx, d) for d in self.shown if d.access != Access.HIDDEN],
        )

    def _counted(self, ctx: Context, dataset: Dataset) -> DatasetDisagreements:
        lacking = _lacking(self.models, dataset)
        if lacking:
            return DatasetDisagreements(
                dataset=dataset.name,
                examples=None,
                disagreements=None,
                note=f"no per-example predictions from {', '.join(lacking)}",
            )
        answered, found = _disagreements(ctx, self, dataset)
        return DatasetDisagreements(
            dataset=dataset.name, examples=answered, disagreements=len(found)
        )


def _lacking(models: list[ModelEntry], dataset: Dataset) -> list[str]:
    return [m.name for m in models if dataset.name not in m.predictions]


def _board_names(stored: dict[str, Any]) -> dict[str, float | None]:
    """One dataset's stored figures under the board's metric names."""
    return {name: stored.get(metric.result_field) for name, metric in METRICS.items()}


def _matrix_row(
    dataset: str, access: str | None, figures: dict[str, dict[str, float | None]]
) -> MatrixRowPublic:
    cells = []
    for name, metric in METRICS.items():
        values = {key: figures.get(key, {}).get(name) for key in figures}
        present = {k: float(v) for k, v in values.items() if v is not None}
        if not present:
            continue
        top = max(present.values()) if metric.direction == "higher" else min(present.values())
        cells.append(
            CellPublic(
                metric=name,
                values=values,
                # No mark where one model has a figure or all have the same one.
                best=[k for k, v in present.items() if v == top]
                if len(set(present.values())) > 1
                else [],
            )
        )
    return MatrixRowPublic(dataset=dataset, access=access, cells=cells)


def compare_models(
    ctx: Context, principal: Principal, task_id: str, submission_ids: list[int]
) -> Comparison:
    """The models of ``submission_ids`` on task ``task_id``, as ``principal`` sees them.

    Raises:
        NotFound: a model the task does not have, or that the viewer may not see (the
            same answer, so that an unpublished model's existence does not leak).
    """
    table = visible_table(load_table(ctx, task_id), principal, cache=ctx.cache)
    models = []
    for submission_id in submission_ids:
        entry = table.entry(submission_id)
        if entry is None:
            raise NotFound(f"Task {task_id!r} has no submission {submission_id} you may see")
        models.append(entry)
    see_hidden = principal.owns(task_id)
    shown = [d for d in table.datasets if d.access != Access.HIDDEN or see_hidden]
    return Comparison(table=table, models=models, shown=shown)


def _prediction(comparison: Comparison, record: dict[str, Any] | None) -> Any:
    output = (record or {}).get("output")
    if not output:
        return None
    try:
        return comparison.table.task.prediction(output)
    except KeyError:  # an output stored before the contract was checked
        return None


def _disagreements(
    ctx: Context, comparison: Comparison, dataset: Dataset
) -> tuple[int, list[Disagreement]]:
    """How many examples every model answered, and those on which they disagree (in the
    dataset's order); cached, since datasets and prediction files never change."""
    files = tuple(m.predictions[dataset.name] for m in comparison.models)
    cache_key = ("disagreements", dataset.sha256, tuple(comparison.keys), files)
    cached = ctx.cache.get(cache_key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    task = comparison.table.task
    records = [{str(r["uid"]): r for r in load_records(ctx, key) if "uid" in r} for key in files]
    answered = 0
    found: list[Disagreement] = []
    for example in read_examples(ctx, dataset):
        uid = str(example["uid"])
        if not all(uid in by_uid for by_uid in records):
            continue
        answered += 1
        picked = [_prediction(comparison, by_uid[uid]) for by_uid in records]
        if all(p == picked[0] for p in picked):
            continue
        (inputs,) = model_inputs([example], task.input_names)
        inputs.pop("uid", None)
        found.append(
            Disagreement(
                uid=uid,
                inputs=inputs,
                gold=task.gold(example) if task.output.gold_field in example else None,
                predictions=dict(zip(comparison.keys, picked, strict=True)),
                scores={
                    key: by_uid[uid].get("score")
                    for key, by_uid in zip(comparison.keys, records, strict=True)
                },
            )
        )
    result = (answered, found)
    ctx.cache.put(cache_key, result)
    return result


def disagreements(
    ctx: Context, comparison: Comparison, dataset: str, *, offset: int = 0, limit: int = 50
) -> DisagreementsPublic:
    """One page of the examples of ``dataset`` on which the models disagree.

    Raises:
        NotFound: a hidden dataset, an unknown one, or one a model kept no predictions on.
    """
    chosen = comparison.browsable(dataset)
    _, found = _disagreements(ctx, comparison, chosen)
    return DisagreementsPublic(
        dataset=chosen.name,
        total=len(found),
        offset=offset,
        limit=limit,
        examples=found[offset : offset + limit],
    )
