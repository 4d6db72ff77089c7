"""``evalboard phase create|list|reveal``: private phases of a task's hidden sets (the task
owner creates and reveals; anyone lists), and ``evalboard predictions``: a researcher's
predictions file per dataset, scored on the server like a model's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from evalboard.cli._output import print_json, print_or_describe, print_table, say
from evalboard.cli._server import SERVER, TASK, TOKEN, ask
from evalboard.core.errors import UsageError

__all__ = ["app", "predictions"]

app = typer.Typer(
    help="Private phases of hidden sets: create and reveal (task owner), list.",
    no_args_is_help=True,
)


def _describe(phase: dict[str, Any]) -> None:
    state = (
        "open" if not phase["revealed"] else "revealed" + (" (public)" if phase["public"] else "")
    )
    left = "" if phase.get("remaining") is None else f", {phase['remaining']} left for you"
    say(
        f"Phase {phase['name']}: {state}; {', '.join(phase['datasets'])}; "
        f"{phase['submission_limit']} submission(s) per user{left}"
    )


@app.command("create")
def create(
    name: str = typer.Argument(..., help="The phase's name, e.g. test-2027."),
    task: str = TASK,
    datasets: list[str] = typer.Option(  # noqa: B008 - typer's way
        ..., "--dataset", "-d", help="A hidden dataset of the task (repeat for several)."
    ),
    limit: int = typer.Option(..., "--limit", min=1, help="Submissions per user while open."),
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the phase as JSON."),
) -> None:
    """Open a private phase: its sets leave the board, each user gets --limit submissions."""
    body = {"name": name, "datasets": datasets, "submission_limit": limit}
    phase = ask(server, f"/tasks/{task}/phases", token=token, method="POST", body=body)
    print_or_describe(phase, as_json=as_json, describe=_describe)


@app.command("list")
def list_(
    task: str = TASK,
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """The task's phases, with what is left of your limit when signed in."""
    phases: list[dict[str, Any]] = ask(server, f"/tasks/{task}/phases", token=token)
    if as_json:
        print_json(phases)
        return
    table = Table("name", "state", "datasets", "limit", "left", title=f"Phases of {task}")
    for p in phases:
        state = "open" if not p["revealed"] else ("public" if p["public"] else "revealed")
        left = "-" if p["remaining"] is None else str(p["remaining"])
        table.add_row(p["name"], state, ", ".join(p["datasets"]), str(p["submission_limit"]), left)
    print_table(table)


@app.command("reveal")
def reveal(
    name: str = typer.Argument(..., help="The phase's name."),
    task: str = TASK,
    public: bool = typer.Option(False, "--public", help="Also count its sets on the public board."),
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the phase as JSON."),
) -> None:
    """Reveal and close a phase: submitters see their scores (the public too with --public)."""
    phase = ask(
        server,
        f"/tasks/{task}/phases/{name}/reveal",
        token=token,
        method="POST",
        body={"public": public},
    )
    print_or_describe(phase, as_json=as_json, describe=_describe)


def _read_predictions(spec: str) -> tuple[str, list[dict[str, Any]]]:
    dataset, sep, path_text = spec.partition("=")
    if not sep or not dataset or not path_text:
        raise UsageError(f"--file {spec!r} must be DATASET=PATH, e.g. --file test=preds.jsonl")
    path = Path(path_text)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read {path}: {exc}") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path}:{number} is not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise UsageError(f'{path}:{number} must be an object like {{"uid": ..., ...}}')
        rows.append(row)
    return dataset, rows


def predictions(
    task: str = TASK,
    name: str = typer.Option(..., "--name", "-n", help="The row's name on the board."),
    files: list[str] = typer.Option(  # noqa: B008 - typer's way
        ..., "--file", "-f", help="DATASET=PATH of a JSONL predictions file (repeat)."
    ),
    description: str = typer.Option("", "--description", help="What made the predictions."),
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the submission as JSON."),
) -> None:
    """Submit predictions made elsewhere: one JSONL file per dataset, a line per example
    (its uid and the output fields, e.g. {"uid": "a1", "label": "pos"})."""
    given: dict[str, list[dict[str, Any]]] = {}
    for spec in files:
        dataset, rows = _read_predictions(spec)
        if dataset in given:
            raise UsageError(f"Dataset {dataset!r} is given twice; give one file per dataset")
        given[dataset] = rows
    body = {"name": name, "description": description, "predictions": given}
    made = ask(server, f"/tasks/{task}/predictions", token=token, method="POST", body=body)
    if as_json:
        print_json(made)
        return
    say(f"Submission {made['id']} ({made['name']}): predictions only, {made['status']}")
