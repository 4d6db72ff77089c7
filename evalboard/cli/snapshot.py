"""``evalboard snapshot create|list|show``: freeze a task's public board on the server, list
the frozen ones, show one (its citation) or download its CSV/JSON byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from evalboard.cli._output import print_json, print_or_describe, print_table, say
from evalboard.cli._server import SERVER, TASK, TOKEN, ask, checked, download, server_client
from evalboard.core.errors import UsageError

__all__ = ["app"]

app = typer.Typer(
    help="Citable snapshots of a task's board: create (task owner), list, show.",
    no_args_is_help=True,
)


def _describe(snapshot: dict[str, Any]) -> None:
    title = f": {snapshot['title']}" if snapshot["title"] else ""
    say(
        f"Snapshot {snapshot['number']} of {snapshot['task']}{title}\n"
        f"  taken {snapshot['created_at']}, {snapshot['models']} ranked model(s)\n"
        f"  page  {snapshot['url']}\n"
        f"  CSV   {snapshot['csv_url']} (sha256 {snapshot['csv_sha256']})\n"
        f"  JSON  {snapshot['json_url']}\n\n{snapshot['citation']}"
    )


@app.command("create")
def create(
    task: str = TASK,
    title: str = typer.Option("", "--title", help="What it is for, e.g. 'ACL 2027 paper'."),
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the snapshot as JSON."),
) -> None:
    """Freeze the task's public board as its next numbered snapshot (task owner)."""
    snapshot = ask(
        server, f"/tasks/{task}/snapshots", token=token, method="POST", body={"title": title}
    )
    print_or_describe(snapshot, as_json=as_json, describe=_describe)


@app.command("list")
def list_(
    task: str = TASK,
    server: str = SERVER,
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """The task's snapshots, oldest first."""
    snapshots = ask(server, f"/tasks/{task}/snapshots")
    if as_json:
        print_json(snapshots)
        return
    table = Table("number", "taken", "models", "title", "csv sha256", title=f"Snapshots of {task}")
    for s in snapshots:
        table.add_row(
            str(s["number"]), s["created_at"], str(s["models"]), Text(s["title"]), s["csv_sha256"]
        )
    print_table(table)


@app.command("show")
def show(
    number: int = typer.Argument(..., min=1, help="The snapshot's number."),
    task: str = TASK,
    server: str = SERVER,
    csv_out: Path | None = typer.Option(None, "--csv", help="Save its CSV here, byte for byte."),
    json_out: Path | None = typer.Option(None, "--json-file", help="Save its JSON here."),
    as_json: bool = typer.Option(False, "--json", help="Print the snapshot as JSON."),
) -> None:
    """One snapshot: when, its hashes, its BibTeX; optionally its CSV/JSON downloaded."""
    with server_client(server, None) as client:
        snapshot = checked(client.get(f"/tasks/{task}/snapshots/{number}"))
        for kind, target in (("csv", csv_out), ("json", json_out)):
            if target is None:
                continue
            try:
                target.write_bytes(download(client, f"/tasks/{task}/snapshots/{number}.{kind}"))
            except OSError as exc:
                raise UsageError(f"Cannot write {target}: {exc}") from None
    print_or_describe(snapshot, as_json=as_json, describe=_describe)
