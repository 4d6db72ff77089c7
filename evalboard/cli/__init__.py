"""The command-line shell (typer + rich).

A command module imports at its top only typer, rich, the standard library and the CLI's
own helpers; what a command needs (the database layer, the evaluator, the sandboxes, the
web service) it imports inside the command, so that ``evalboard --help`` and a usage
error start in a fraction of a second (tests/cli/test_startup.py checks it).
"""

from evalboard.cli._main import app, entry, main

__all__ = ["app", "entry", "main"]
