"""The command-line shell (typer + rich)."""

from evalboard.cli._main import app, entry, main

__all__ = ["app", "entry", "main"]
