"""``evalboard dataset``: add, list, show, export and perturb datasets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, print_json, print_table
from evalboard.core.errors import UsageError
from evalboard.core.states import Access
from evalboard.core.whole_files import written_whole

if TYPE_CHECKING:
    from datasets_registry import Format
    from evalboard.core.tables import Dataset

__all__ = ["app"]

app = typer.Typer(
    help="Add immutable datasets (rounds, static and hidden sets) to a task.", no_args_is_help=True
)


def _describe(dataset: Dataset, names: dict[int, str]) -> dict[str, object]:
    return {
        "name": dataset.name,
        "round": dataset.round,
        "access": dataset.access,
        "weight": dataset.weight,
        "rows": dataset.rows,
        "sha256": dataset.sha256,
        "derived_from": names.get(dataset.derived_from_id) if dataset.derived_from_id else None,
        "perturbation": dataset.perturbation,
    }


@app.command("add")
def add(
    file: Path = typer.Argument(..., help="JSONL, CSV, TSV or SQuAD JSON file."),
    task: str = typer.Option(..., "--task", help="Task id."),
    name: str = typer.Option(..., "--name", help="Dataset name, unique within the task."),
    round_: int = typer.Option(0, "--round", help="Round number (0: not tied to a round)."),
    access: Access = typer.Option(Access.SCORING, "--access", help="scoring, standard or hidden."),
    weight: float = typer.Option(
        1.0, "--weight", help="Weight in the leaderboard averages (> 0; change it with `weight`)."
    ),
    mapping: list[str] = typer.Option([], "--map", help="FIELD=COLUMN, e.g. statement=sentence."),
    label_map: list[str] = typer.Option([], "--label-map", help="VALUE=LABEL, e.g. 0=negative."),
    exclude: list[str] = typer.Option(
        [], "--exclude-label", help="Skip rows with this gold value (null: missing label)."
    ),
    format_: str | None = typer.Option(None, "--format", help="jsonl, csv, tsv or squad."),
    perturb: bool = typer.Option(
        True, "--perturb/--no-perturb", help="Derive robustness/fairness copies."
    ),
) -> None:
    """Add a dataset; the same content again is a no-op, other content under its name is refused."""
    if format_ not in (None, "jsonl", "csv", "tsv", "squad"):
        raise typer.BadParameter(
            f"{format_!r}; allowed: jsonl, csv, tsv, squad", param_hint="--format"
        )
    from datasets_registry import ColumnMapping, add_dataset, parse_mapping
    from evaluator import queue_missing_jobs

    file_format = cast("Format | None", format_)
    column_mapping = ColumnMapping(
        fields=parse_mapping(mapping),
        labels=parse_mapping(label_map, what="--label-map"),
        exclude_labels=frozenset(exclude),
    )
    ctx = context()
    added = add_dataset(
        ctx,
        task_id=task,
        name=name,
        path=file,
        round=round_,
        access=access,
        weight=weight,
        mapping=column_mapping,
        format=file_format,
        perturb=perturb,
    )
    dataset = added.dataset
    if not added.created:
        console.print(
            f"Dataset [bold]{name}[/bold] already holds this content "
            f"(sha256 {dataset.sha256[:12]}); nothing to do."
        )
        return
    skipped = f", {added.excluded} rows skipped by --exclude-label" if added.excluded else ""
    console.print(
        f"Added [bold]{name}[/bold] to {task}: {dataset.rows} examples, round {dataset.round}, "
        f"{dataset.access}, sha256 {dataset.sha256[:12]}{skipped}."
    )
    for child in added.derived:
        console.print(f"  derived [bold]{child.name}[/bold]: {child.rows} perturbed examples")
    # Keep the leaderboard complete: every submission gets evaluated on the new data.
    queued = queue_missing_jobs(ctx, task)
    if queued:
        console.print(
            f"Queued {len(queued)} evaluation jobs for the task's submissions; a running "
            "`evalboard serve` or `evalboard worker` picks them up."
        )


@app.command("list")
def list_(
    task: str = typer.Option(..., "--task", help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List a task's datasets with rows, access and short sha256."""
    from datasets_registry import list_datasets

    datasets = list_datasets(context(), task)
    names = {d.id: d.name for d in datasets}
    if as_json:
        print_json([_describe(d, names) for d in datasets])
        return
    if not datasets:
        console.print(f"Task {task} has no datasets yet. Add one with `evalboard dataset add`.")
        return
    table = Table("name", "round", "access", "weight", "rows", "sha256", "derived from")
    for d in datasets:
        parent = names.get(d.derived_from_id, "") if d.derived_from_id else ""
        table.add_row(
            d.name, str(d.round), d.access, f"{d.weight:g}", str(d.rows), d.sha256[:12], parent
        )
    print_table(table)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Dataset name."),
    task: str = typer.Option(..., "--task", help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show one dataset's record."""
    from datasets_registry import get_dataset, list_datasets

    ctx = context()
    dataset = get_dataset(ctx, task_id=task, name=name)
    names = {d.id: d.name for d in list_datasets(ctx, task)}
    info = _describe(dataset, names)
    if as_json:
        print_json(info)
        return
    for key, value in info.items():
        console.print(f"{key}: {value}")


@app.command("weight")
def weight_(
    name: str = typer.Argument(..., help="Dataset name (an original; its copies follow)."),
    weight: float = typer.Argument(..., help="Its weight in every leaderboard average, > 0."),
    task: str = typer.Option(..., "--task", help="Task id."),
) -> None:
    """Set a dataset's weight in the leaderboard's averages (the examples stay as they are)."""
    from datasets_registry import set_dataset_weight

    dataset = set_dataset_weight(context(), task_id=task, name=name, weight=weight)
    console.print(
        f"{dataset.name} now weighs {dataset.weight:g} (its copies too).", highlight=False
    )


@app.command("export")
def export(
    name: str = typer.Argument(..., help="Dataset name."),
    task: str = typer.Option(..., "--task", help="Task id."),
    out: Path | None = typer.Option(None, "--out", "-o", help="File to write (default: stdout)."),  # noqa: UP045
    labels: bool = typer.Option(True, "--labels/--no-labels", help="Include the gold output."),
    as_owner: bool = typer.Option(
        False, "--as-owner", help="You are the task owner: export a hidden set's labels too."
    ),
) -> None:
    """Export a dataset as canonical JSON lines."""
    from datasets_registry import export_examples, get_dataset

    if out is not None:
        # Refused before the export is read, as evaluate refuses its --json.
        if out.is_dir():
            raise UsageError(f"--out {out} is a directory; give a file name")
        if out.exists() and not os.access(out, os.W_OK):
            raise UsageError(f"--out {out} is read-only; give another file")
    ctx = context()
    dataset = get_dataset(ctx, task_id=task, name=name)
    examples = export_examples(ctx, dataset, labels=labels, may_see_hidden=as_owner)
    lines = "".join(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n" for e in examples)
    if out is None:
        sys.stdout.write(lines)
    else:
        with written_whole(out, fix="give a file in a writable folder") as partial:
            partial.write_text(lines, encoding="utf-8")
        console.print(f"Wrote {len(examples)} examples to {out}.", highlight=False, markup=False)


@app.command("perturb")
def perturb(
    name: str = typer.Argument(..., help="Dataset name."),
    task: str = typer.Option(..., "--task", help="Task id."),
) -> None:
    """Derive the robustness and fairness copies of a dataset that lacks them."""
    from datasets_registry import derive_perturbed

    derived = derive_perturbed(context(), task_id=task, name=name)
    for child in derived:
        console.print(f"{child.name}: {child.rows} perturbed examples")
