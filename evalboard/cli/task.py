"""``evalboard task``: create, list and show tasks."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, print_json, print_table

__all__ = ["app"]

app = typer.Typer(
    help="Define tasks: inputs, outputs, metrics and default weights.", no_args_is_help=True
)


@app.command("create")
def create(
    spec_file: Path = typer.Argument(..., help="Task YAML (see docs/task-owners.md)."),
) -> None:
    """Create a task from its YAML spec (the same spec again is a no-op)."""
    from datasets_registry import create_task, load_task_spec

    spec = load_task_spec(spec_file)
    task, created = create_task(context(), spec)
    if created:
        console.print(f"Created task [bold]{task.id}[/bold] ({task.name}).")
    else:
        console.print(f"Task [bold]{task.id}[/bold] already exists with this spec; nothing to do.")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List the tasks."""
    from datasets_registry import list_tasks

    tasks = list_tasks(context())
    if as_json:
        print_json(
            [{"id": t.id, "name": t.name, "perf_metric": t.spec["perf_metric"]} for t in tasks]
        )
        return
    if not tasks:
        console.print("No tasks yet. Create one with `evalboard task create TASK.yaml`.")
        return
    table = Table("id", "name", "output", "perf metric", "default weights")
    for task in tasks:
        output = task.spec["output"]
        kind = output["type"] + (f" ({', '.join(output['labels'])})" if output["labels"] else "")
        weights = ", ".join(f"{k}={v:g}" for k, v in task.default_weights.items())
        table.add_row(task.id, task.name, kind, task.spec["perf_metric"], weights)
    print_table(table)


@app.command("show")
def show(
    task_id: str = typer.Argument(..., help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show a task's spec."""
    from datasets_registry import get_task

    spec = get_task(context(), task_id)
    if as_json:
        print_json(spec.model_dump(mode="json"))
        return
    console.print(f"[bold]{spec.id}[/bold]: {spec.name}")
    if spec.description:
        console.print(spec.description)
    console.print(f"inputs: {', '.join(spec.input_names)}")
    labels = f" ({', '.join(spec.output.labels)})" if spec.output.labels else ""
    console.print(f"output: {spec.output.type}{labels}")
    console.print(
        f"perf metric: {spec.perf_metric}; delta metrics: {', '.join(spec.delta_metrics)}"
    )
    console.print(
        "default weights: " + ", ".join(f"{k}={v:g}" for k, v in spec.default_weights.items())
    )
    limits = spec.limits
    console.print(
        f"sandbox limits: {limits.cpus:g} CPUs, {limits.memory} memory, "
        f"{limits.timeout_s:g} s, {limits.gpus} GPU; memory cap {spec.memory_cap_gib:g} GiB"
    )
