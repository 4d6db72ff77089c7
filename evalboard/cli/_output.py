"""How the CLI talks: rich on a terminal, plain lines otherwise, JSON when asked."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

__all__ = [
    "console",
    "err_console",
    "print_json",
    "print_or_describe",
    "print_table",
    "progress",
    "say",
    "warn",
]

# soft_wrap: a long line (a path, a digest) stays one line in a pipe or a log; a terminal
# wraps it itself. Rich would otherwise cut every line at 80 columns off a terminal.
console = Console(soft_wrap=True)
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else on it."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def print_or_describe(data: Any, *, as_json: bool, describe: Callable[[Any], None]) -> None:
    """A command's answer: JSON when asked (``--json``), else ``describe``'s words."""
    if as_json:
        print_json(data)
    else:
        describe(data)


def _plain(cell: object) -> str:
    # A str cell is the code's own markup, read as a terminal reads it; data is Text.
    text = Text.from_markup(cell) if isinstance(cell, str) else cell
    value = text.plain if isinstance(text, Text) else str(text)
    return " ".join(value.split("\t")).replace("\n", " ")


def print_table(table: Table, *, to: Console | None = None) -> None:
    """A table: drawn on a terminal, tab-separated full values anywhere else.

    Off a terminal (``| grep``, ``| cut -f2``, a log) rich would squeeze the table into
    80 columns and cut values with an ellipsis; the plain rendering keeps every value
    whole, a header line first, one row per line, no title and no markup.

    A ``str`` cell is read as rich markup (``"[red]failed[/red]"``), on a terminal and off
    it alike; a cell that holds data (a name, a title, free text) goes in as ``Text(value)``
    so that its square brackets show as written.
    """
    target = to or console
    if target.is_terminal:
        target.print(table)
        return
    columns = [list(column.cells) for column in table.columns]
    lines = ["\t".join(_plain(column.header) for column in table.columns)]
    lines += ["\t".join(_plain(cell) for cell in row) for row in zip(*columns, strict=True)]
    target.file.write("\n".join(lines) + "\n")


def say(text: str, *, to: Console | None = None) -> None:
    """A message as it is written: no markup read, nothing highlighted."""
    (to or console).print(text, highlight=False, markup=False)


def warn(message: str) -> None:
    """``warning: MESSAGE`` on stderr; the message is never read as markup."""
    err_console.print(Text.assemble(("warning:", "yellow"), " ", message), highlight=False)


class _PlainProgress:
    """Progress as plain lines, for logs and pipes."""

    def __init__(self) -> None:
        self._tasks: dict[int, tuple[str, float]] = {}

    def add_task(self, description: str, total: float | None = None) -> int:
        task_id = len(self._tasks)
        self._tasks[task_id] = (description, total or 0)
        err_console.print(f"{description} ...", highlight=False)
        return task_id

    def update(self, task_id: int, *, completed: float | None = None, **_: Any) -> None:
        pass

    def advance(self, task_id: int, advance: float = 1) -> None:
        pass

    def finish(self, task_id: int, note: str = "done") -> None:
        description, _ = self._tasks[task_id]
        err_console.print(f"{description}: {note}", highlight=False)


class _RichProgress(Progress):
    def finish(self, task_id: int, note: str = "done") -> None:
        task = self._tasks[task_id]  # type: ignore[index]
        self.update(task_id, completed=task.total, description=f"{task.description} ({note})")  # type: ignore[arg-type]


@contextmanager
def progress() -> Iterator[Any]:
    """A progress display: bars on a terminal, one line per step elsewhere."""
    if err_console.is_terminal:
        bar = _RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f}"),
            TimeElapsedColumn(),
            console=err_console,
        )
        with bar:
            yield bar
    else:
        yield _PlainProgress()
