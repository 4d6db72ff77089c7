"""``evalboard suite create|list|export``: cut a task's regression suite version on the
server, list the versions, and download one as the file ``evalboard gate --suite`` reads."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from evalboard.cli._output import err_console, print_json, print_table, say
from evalboard.cli._server import SERVER, TASK, TOKEN, ask, download, server_client
from evalboard.core.whole_files import written_whole

__all__ = ["app"]

app = typer.Typer(
    help="Versioned regression suites: create a version, list them, export one as a file.",
    no_args_is_help=True,
)


@app.command("create")
def create(
    task: str = TASK,
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the version as JSON."),
) -> None:
    """Cut the task's next suite version from what the server holds now."""
    version = ask(server, f"/tasks/{task}/suites", token=token, method="POST")
    if as_json:
        print_json(version)
        return
    say(
        f"Suite version {version['version']} of {task} cut at {version['created_at']}; "
        f"export it with `evalboard suite export --task {task} --version {version['version']}`"
    )


@app.command("list")
def list_(
    task: str = TASK,
    server: str = SERVER,
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """The task's suite versions, oldest first."""
    versions = ask(server, f"/tasks/{task}/suites")
    if as_json:
        print_json(versions)
        return
    table = Table("version", "cut at", "url", title=f"Suite versions of {task}")
    for v in versions:
        table.add_row(str(v["version"]), v["created_at"], v["url"])
    print_table(table)


def _write(target: Path, data: bytes) -> None:
    """Write whole or not at all: a CI job never reads half a suite."""
    with written_whole(target, fix="choose a writable path") as partial:
        partial.write_bytes(data)


@app.command("export")
def export(
    task: str = TASK,
    version: int = typer.Option(..., "--version", "-v", min=1, max=2**31 - 1, help="Version."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Where to write it (default: TASK-suite-VERSION.json)."
    ),
    server: str = SERVER,
    token: str | None = TOKEN,
) -> None:
    """Write a suite version to a file: the cases you may see, their gold and history,
    content-hashed (the same version exports to the same bytes)."""
    target = out or Path(f"{task}-suite-{version}.json")
    with server_client(server, token) as client:
        data = download(client, f"/tasks/{task}/suites/{version}")
    _write(target, data)
    say(
        f"Suite version {version} of {task} written to {target} ({len(data)} bytes); gate a "
        f"bundle with `evalboard gate BUNDLE --suite {target}`",
        to=err_console,
    )
