"""The command-line shell (typer + rich).

A command module imports at its top only typer, rich, the standard library and the CLI's
own helpers; what a command needs (the database layer, the evaluator, the sandboxes, the
web service) it imports inside the command, so that ``evalboard --help`` and a usage
error start in a fraction of a second (tests/cli/test_startup.py checks it).
"""

from typing import TYPE_CHECKING

from evalboard.core.lazy import lazy_exports

if TYPE_CHECKING:
    from evalboard.cli._main import app, entry, main

# ``app`` is made on first read (every command's module imported): the console script's
# ``entry`` imports only the command its command line names (evalboard.cli._main).
__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"evalboard.cli._main": ("app", "entry", "main")}
)
