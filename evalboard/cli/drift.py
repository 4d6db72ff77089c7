"""``evalboard drift check``: production inputs against a task's datasets, on the local
database (an owner's command, like ``round close``) or, with ``--server``, on a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import typer
from rich.table import Table
from rich.text import Text

from evalboard.cli._context import context
from evalboard.cli._output import print_or_describe, print_table, say
from evalboard.cli._server import TASK, TOKEN, checked, server_client
from evalboard.core.errors import UsageError

__all__ = ["app"]

app = typer.Typer(
    help="Check production inputs for drift from a task's datasets; queue the most shifted.",
    no_args_is_help=True,
)

_SUFFIXES = {"jsonl": ".jsonl", "csv": ".csv", "tsv": ".tsv"}


def _print(report: dict[str, Any]) -> None:
    say(report["verdict"])
    reference = ", ".join(f"{d['name']} ({d['inputs']})" for d in report["reference"]["datasets"])
    hidden = report["reference"]["hidden"]
    if hidden["datasets"]:
        reference += f"{', ' if reference else ''}{hidden['datasets']} hidden set(s)"
    say(
        f"Check {report['number']} of {report['task']}; reference: {reference}"
        + (f", sampled to {report['n_reference']}" if report["reference"]["sampled"] else "")
    )
    top = report.get("top")
    if top is None:  # a monitor's answer: the statistics only
        return
    table = Table(title="The most shifted traffic inputs")
    for column in ("rank", "score", "input", "queued"):
        table.add_column(column, justify="left" if column == "input" else "right")
    for item in top:
        text = " | ".join(item["inputs"].values())
        queued = (
            f"example {item['example_id']}"
            if item["example_id"]
            else ("in the task" if item["duplicate"] else "-")
        )
        table.add_row(
            str(item["rank"]),
            f"{item['score']:.3f}",
            Text(text if len(text) <= 120 else text[:117] + "..."),
            queued,
        )
    print_table(table)
    count = len(report["queued"])
    reason = report["not_queued_because"]
    say(
        f"{count} input(s) queued for labelling"
        + (f" ({report['duplicates']} already in the task)" if report["duplicates"] else "")
        + (f"; {reason}" if reason else "")
        + (f". Validators label them at /ui/tasks/{report['task']}/validate" if count else "")
    )


@app.command("check")
def check(
    file: Path = typer.Argument(..., help="JSONL, CSV or TSV: the task's input fields."),
    task: str = TASK,
    mapping: list[str] = typer.Option(  # noqa: B008 - typer's way
        [], "--map", help="FIELD=COLUMN, e.g. statement=text."
    ),
    format_: str | None = typer.Option(None, "--format", help="jsonl, csv or tsv."),
    queue: int = typer.Option(
        20, "--queue", min=0, max=100, help="The most shifted inputs to queue when shifted."
    ),
    alpha: float = typer.Option(
        0.01, "--alpha", min=0.0, max=0.5, help="Shifted when the p-value is below it."
    ),
    reporter: str | None = typer.Option(
        None, "--reporter", help="User name to record (local database only)."
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        envvar="EVALBOARD_SERVER",
        help="Send the file to this Evalboard server (default: the local database).",
    ),
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the check as JSON."),
) -> int:
    """Measure how unlike the task's datasets production inputs are (a domain classifier's
    AUC and a permutation p-value); when shifted, queue the most shifted for validators to
    label. Exit 1 when the traffic is shifted, 0 when not."""
    if format_ not in (None, *_SUFFIXES):
        raise typer.BadParameter(f"{format_!r}; allowed: jsonl, csv, tsv", param_hint="--format")
    if alpha <= 0:
        raise typer.BadParameter(f"{alpha}; it must be above 0, e.g. 0.01", param_hint="--alpha")
    if server:
        if not file.is_file():
            raise UsageError(f"{file} does not exist or is not a file")
        name = file.stem + _SUFFIXES[format_] if format_ else file.name
        form = {"map": ",".join(mapping), "queue": str(queue), "alpha": str(alpha)}
        with server_client(server, token) as client, file.open("rb") as handle:
            sent = client.post(f"/tasks/{task}/traffic", data=form, files={"file": (name, handle)})
            report = checked(sent)
    else:
        from datasets_registry import ColumnMapping, Format, get_task, parse_mapping
        from leaderboard.loop import DriftOptions, check_drift, read_traffic
        from leaderboard.loop.schemas import drift_check_public

        ctx = context()
        options = DriftOptions(queue=queue, alpha=alpha)  # bad values refused before reading
        reporter_id = None
        if reporter is not None:
            from leaderboard.accounts import get_user

            reporter_id = get_user(ctx, reporter).id
        inputs = read_traffic(
            file,
            get_task(ctx, task),
            mapping=ColumnMapping(fields=parse_mapping(mapping)),
            format=cast("Format | None", format_),
        )
        drift = check_drift(ctx, task, inputs, reporter_id=reporter_id, options=options)
        report = drift_check_public(drift, full=True).model_dump(mode="json")
    print_or_describe(report, as_json=as_json, describe=_print)
    return 1 if report["shifted"] else 0
