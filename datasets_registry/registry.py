"""The registry: tasks and their immutable, content-addressed datasets.

Adding a dataset reads and checks the whole file first, then writes its artifact and its
perturbed copies, then records all of them in one transaction: either everything is
stored or nothing is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from datasets_registry.examples import (
    ColumnMapping,
    canonical_jsonl,
    sha256_of,
    to_examples,
    to_inputs,
)
from datasets_registry.importers import Format, read_rows
from datasets_registry.outputs import GOLD_FIELDS
from datasets_registry.taskspec import TaskSpec, parse_task_spec
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, InvalidDataset, NotFound, PermissionDenied
from evalboard.core.states import Access
from evalboard.core.tables import Dataset, Task
from scoring import InvalidWeightsError, check_dataset_weight

__all__ = [
    "AddedDataset",
    "add_dataset",
    "create_task",
    "derive_perturbed",
    "export_examples",
    "get_dataset",
    "get_task",
    "list_datasets",
    "list_tasks",
    "read_examples",
    "read_inputs",
    "scoring_datasets",
    "set_dataset_weight",
]

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@dataclass(frozen=True)
class AddedDataset:
    """What ``add_dataset`` did: the dataset, whether it was new, and what it derived."""

    dataset: Dataset
    created: bool
    derived: list[Dataset]
    excluded: int = 0


# Tasks --------------------------------------------------------------------------------------


def create_task(ctx: Context, spec: TaskSpec, *, owner_id: int | None = None) -> tuple[Task, bool]:
    """Store a task; the same spec again is a no-op, a different one under its id a Conflict."""
    document = spec.model_dump(mode="json")
    with ctx.db.session() as session:
        existing = session.get(Task, spec.id)
        if existing is not None:
            if existing.spec == document:
                return existing, False
            raise Conflict(
                f"Task {spec.id!r} already exists with a different spec; task specs are "
                "fixed once datasets are scored against them. Pick another id"
            )
        task = Task(
            id=spec.id,
            name=spec.name,
            spec=document,
            default_weights=dict(spec.default_weights),
            owner_id=owner_id,
        )
        session.add(task)
        return task, True


def get_task(ctx: Context, task_id: str) -> TaskSpec:
    with ctx.db.session() as session:
        task = _stored_task(session, task_id)
        return parse_task_spec(task.spec, source=f"stored task {task_id}")


def _stored_task(session: Session, task_id: str) -> Task:
    """The task's row; NotFound, naming the tasks there are, where there is none."""
    task = session.get(Task, task_id)
    if task is None:
        known = session.scalars(select(Task.id).order_by(Task.id)).all()
        raise NotFound(
            f"Unknown task {task_id!r}; known: {', '.join(known) or 'none yet'}. "
            "Create one with `evalboard task create TASK.yaml`"
        )
    return task


def list_tasks(ctx: Context) -> list[Task]:
    with ctx.db.session() as session:
        return list(session.scalars(select(Task).order_by(Task.id)))


# Datasets -----------------------------------------------------------------------------------


@contextmanager
def _removed_on_error(ctx: Context, written: list[str]) -> Iterator[None]:
    """A full disk or a lost database half-way: no artifact of this call stays behind."""
    try:
        yield
    except BaseException:
        for stored in written:
            ctx.artifacts.delete(stored)
        raise


def _store(ctx: Context, data: bytes, written: list[str]) -> tuple[str, str]:
    """Store content-addressed bytes; a key stored by this call is added to ``written``."""
    sha = sha256_of(data)
    key = f"datasets/{sha}.jsonl"
    if not ctx.artifacts.exists(key):
        ctx.artifacts.put_bytes(key, data)
        written.append(key)
    return sha, key


def _check_name(name: str) -> None:
    # fullmatch: with match, "$" would let a final newline through.
    if not re.fullmatch(_NAME_PATTERN, name) or len(name) > 100:
        raise InvalidDataset(
            f"Dataset name {name!r} must be letters, digits, '.', '_' or '-' (at most 100)"
        )
    if name.startswith(("robustness-", "fairness-")):
        raise InvalidDataset(
            f"Dataset names starting robustness- or fairness- are kept for derived copies; "
            f"rename {name!r}"
        )


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Importer messages name the file already; row checks name only the line: add it."""
    try:
        yield
    except InvalidDataset as exc:
        if exc.message.startswith(path.name):
            raise
        separator = ", " if exc.message.startswith("line ") else ": "
        raise InvalidDataset(f"{path.name}{separator}{exc.message}") from None


def read_inputs(
    path: Path,
    task: TaskSpec,
    *,
    max_rows: int,
    mapping: ColumnMapping | None = None,
    format: Format | None = None,
) -> list[dict[str, str]]:
    """The task's inputs in a file of unlabeled examples (JSONL, CSV or TSV), each row
    checked as a dataset's rows are; other columns are left out.

    Raises:
        InvalidDataset: the file cannot be read, a row lacks an input field or holds
            text Evalboard does not store, or it holds no rows or more than ``max_rows``.
    """
    with _naming(path):
        return to_inputs(
            read_rows(path, format), task, mapping or ColumnMapping(), max_rows=max_rows
        )


def add_dataset(
    ctx: Context,
    *,
    task_id: str,
    name: str,
    path: Path,
    round: int = 0,
    access: Access = Access.SCORING,
    weight: float = 1.0,
    mapping: ColumnMapping | None = None,
    format: Format | None = None,
    perturb: bool = True,
) -> AddedDataset:
    """Check, store and record a dataset file (and its perturbed copies).

    Raises:
        InvalidDataset: a row does not fit the task (nothing is stored).
        Conflict: a dataset of that name exists with other content.
    """
    _check_name(name)
    if round < 0:
        raise InvalidDataset(f"round {round} must be >= 0 (0: not tied to a round)")
    _check_weight(weight, name)
    spec = get_task(ctx, task_id)
    with _naming(path):
        checked = to_examples(read_rows(path, format), spec, mapping or ColumnMapping())
    data = canonical_jsonl(checked.examples)
    sha = sha256_of(data)

    # Decide first, in a short read: the same content is a no-op, other content a Conflict.
    with ctx.db.session() as session:
        if (existing := _named(session, task_id, name)) is not None:
            return _existing(session, existing, sha, excluded=checked.excluded)
    # The slow part (perturbing every example, writing the artifacts) runs with no
    # transaction open, so a SQLite database is not locked against the workers meanwhile.
    written: list[str] = []
    with _removed_on_error(ctx, written):
        _, key = _store(ctx, data, written)
        copies = _perturbed_copies(ctx, spec, checked.examples, written) if perturb else []
        with ctx.db.session() as session:
            if (existing := _named(session, task_id, name)) is not None:  # added meanwhile
                return _existing(session, existing, sha, excluded=checked.excluded)
            dataset = Dataset(
                task_id=task_id,
                name=name,
                round=round,
                access=access.value,
                weight=weight,
                sha256=sha,
                rows=len(checked.examples),
                artifact_key=key,
            )
            session.add(dataset)
            session.flush()
            derived = _record_copies(session, dataset, copies)
    return AddedDataset(dataset, created=True, derived=derived, excluded=checked.excluded)


def _check_weight(weight: float, name: str) -> float:
    try:
        return check_dataset_weight(weight, name=name)
    except InvalidWeightsError as exc:
        raise InvalidDataset(str(exc)) from None


def _named(session: Session, task_id: str, name: str) -> Dataset | None:
    return session.scalar(select(Dataset).where(Dataset.task_id == task_id, Dataset.name == name))


def _copies_of(session: Session, parent_id: int) -> list[Dataset]:
    return list(session.scalars(select(Dataset).where(Dataset.derived_from_id == parent_id)))


def _existing(session: Session, existing: Dataset, sha: str, *, excluded: int) -> AddedDataset:
    if existing.sha256 != sha:
        raise Conflict(
            f"Dataset {existing.name!r} of task {existing.task_id!r} exists with other content "
            f"(sha256 {existing.sha256[:12]}, this file {sha[:12]}); datasets are immutable. "
            "Add the new content under a new name"
        )
    return AddedDataset(
        existing, created=False, derived=_copies_of(session, existing.id), excluded=excluded
    )


@dataclass(frozen=True)
class _Copy:
    """A stored perturbed copy, not yet recorded."""

    family: str
    sha256: str
    key: str
    rows: int


def _perturbed_copies(
    ctx: Context, spec: TaskSpec, examples: list[dict[str, Any]], written: list[str]
) -> list[_Copy]:
    from datasets_registry.perturbations import PERTURBATION_FAMILIES, perturb_dataset

    copies = []
    for family in PERTURBATION_FAMILIES:
        changed = perturb_dataset(examples, family=family, text_fields=spec.text_fields, seed=0)
        if changed:
            sha, key = _store(ctx, canonical_jsonl(changed), written)
            copies.append(_Copy(family, sha, key, len(changed)))
    return copies


def _record_copies(session: Session, parent: Dataset, copies: list[_Copy]) -> list[Dataset]:
    derived = [
        Dataset(
            task_id=parent.task_id,
            name=f"{copy.family}-{parent.name}",
            round=parent.round,
            access=parent.access,
            weight=parent.weight,
            sha256=copy.sha256,
            rows=copy.rows,
            artifact_key=copy.key,
            derived_from_id=parent.id,
            perturbation=copy.family,
        )
        for copy in copies
    ]
    session.add_all(derived)
    session.flush()
    return derived


def derive_perturbed(ctx: Context, *, task_id: str, name: str) -> list[Dataset]:
    """Make the perturbed copies of an older dataset that lacks them (on demand)."""
    spec = get_task(ctx, task_id)
    parent = get_dataset(ctx, task_id=task_id, name=name)
    if parent.derived_from_id is not None:
        raise InvalidDataset(f"{name!r} is itself a perturbed copy; perturb its original")
    with ctx.db.session() as session:
        have = _copies_of(session, parent.id)
    if have:
        return have
    written: list[str] = []
    with _removed_on_error(ctx, written):
        copies = _perturbed_copies(ctx, spec, read_examples(ctx, parent), written)
        with ctx.db.session() as session:
            return _record_copies(session, session.merge(parent), copies)


def list_datasets(ctx: Context, task_id: str) -> list[Dataset]:
    """A task's datasets: originals by round then name, each followed by its copies."""
    with ctx.db.session() as session:
        _stored_task(session, task_id)  # an unknown task is refused, not listed empty
        rows = list(session.scalars(select(Dataset).where(Dataset.task_id == task_id)))
    originals = sorted(
        (d for d in rows if d.derived_from_id is None), key=lambda d: (d.round, d.name)
    )
    ordered: list[Dataset] = []
    for original in originals:
        ordered.append(original)
        ordered.extend(
            sorted((d for d in rows if d.derived_from_id == original.id), key=lambda d: d.name)
        )
    return ordered


def set_dataset_weight(ctx: Context, *, task_id: str, name: str, weight: float) -> Dataset:
    """Set an original dataset's weight in the leaderboard's averages (its perturbed
    copies follow). Only the weight changes: the examples stay immutable.

    Raises:
        InvalidDataset: ``weight`` is not a finite number in (0, 1e6], or ``name`` is a
            perturbed copy (set its original's weight instead).
        NotFound: the task has no dataset ``name``.
    """
    value = _check_weight(weight, name)
    found = get_dataset(ctx, task_id=task_id, name=name)
    if found.derived_from_id is not None:
        raise InvalidDataset(
            f"{name!r} is a perturbed copy: it follows its original's weight; set that one's"
        )
    with ctx.db.session() as session:
        dataset = session.get(Dataset, found.id)
        assert dataset is not None
        for changed in [dataset, *_copies_of(session, found.id)]:
            changed.weight = value
        session.flush()
        return dataset


def get_dataset(ctx: Context, *, task_id: str, name: str) -> Dataset:
    with ctx.db.session() as session:
        dataset = _named(session, task_id, name)
        if dataset is None:
            known = session.scalars(
                select(Dataset.name).where(Dataset.task_id == task_id).order_by(Dataset.name)
            ).all()
            raise NotFound.among(f"Dataset {name!r} of task {task_id!r}", known)
        return dataset


def read_examples(ctx: Context, dataset: Dataset) -> list[dict[str, Any]]:
    """The dataset's canonical examples, gold included (never hand these to a sandbox)."""
    data = ctx.artifacts.read_bytes(dataset.artifact_key)
    if sha256_of(data) != dataset.sha256:
        raise Conflict(
            f"Stored artifact of dataset {dataset.name!r} does not match its sha256; the "
            "artifact store was altered. Restore it from a backup"
        )
    return [json.loads(line) for line in data.splitlines()]


def export_examples(
    ctx: Context, dataset: Dataset, *, labels: bool = True, may_see_hidden: bool = False
) -> list[dict[str, Any]]:
    """Examples for download; a hidden dataset's gold is only for those who may see it."""
    if dataset.access == Access.HIDDEN and labels and not may_see_hidden:
        raise PermissionDenied(
            f"Dataset {dataset.name!r} is hidden: its labels are for the task owner only. "
            "Export inputs only (--no-labels), or ask the owner"
        )
    examples = read_examples(ctx, dataset)
    if not labels:
        examples = [
            {k: v for k, v in example.items() if k not in GOLD_FIELDS} for example in examples
        ]
    return examples


def scoring_datasets(datasets: Sequence[Dataset]) -> list[Dataset]:
    """The datasets that count for the leaderboard (scoring and hidden, not standard)."""
    return [d for d in datasets if d.access != Access.STANDARD]
