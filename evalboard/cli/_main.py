"""The ``evalboard`` command: sub-commands registered here, errors mapped to exit codes here."""

from __future__ import annotations

import gc
import signal
import sys
from functools import cache
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from evalboard import __version__
from evalboard.cli._output import err_console
from evalboard.core.errors import EvalboardError
from evalboard.core.lazy import load

__all__ = ["app", "main"]

if TYPE_CHECKING:
    app: typer.Typer


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalboard {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True),
) -> None:
    """Evalboard: upload models, evaluate them in a sandbox, rank them by a Dynascore."""


#: Each top-level command: the module that owns it and, there, its function (a command)
#: or its Typer (a group of commands), in the order of registration (--help's order).
_COMMANDS = {
    "task": ("task", "app"),
    "dataset": ("dataset", "app"),
    "model": ("model", "app"),
    "evaluate": ("evaluate", "evaluate"),
    "worker": ("worker", "worker"),
    "serve": ("serve", "serve"),
    "leaderboard": ("leaderboard", "leaderboard"),
    "user": ("users", "user_app"),
    "token": ("users", "token_app"),
    "demo": ("demo", "demo"),
    "promote": ("loop", "promote"),
    "round": ("loop", "round_app"),
    "failures": ("loop", "failures_app"),
    "gate": ("loop", "gate"),
    "snapshot": ("snapshot", "app"),
    "suite": ("suite", "app"),
    "drift": ("drift", "app"),
    "phase": ("phase", "app"),
    "predictions": ("phase", "predictions"),
}


@cache
def _app(command: str | None = None) -> typer.Typer:
    """The CLI with every command, or with ``command`` alone: a command line that names
    one imports only its module, not every other command's (about 15 ms of a start)."""
    made = typer.Typer(
        name="evalboard",
        help="Evaluation-as-a-service with dynamic, utility-weighted leaderboards.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    made.callback()(_root)
    for name, (module, attribute) in _COMMANDS.items():
        if command in (None, name):
            target = getattr(load(f"evalboard.cli.{module}"), attribute)
            if isinstance(target, typer.Typer):
                made.add_typer(target, name=name)
            else:
                made.command(name)(target)
    return made


def __getattr__(name: str) -> typer.Typer:
    # ``app``, every command registered, made when first read (the console script's
    # entry reads only what its command line names).
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _show_error(message: str) -> None:
    """``error: MESSAGE`` on stderr, the prefix styled and the message as written: a name,
    a path or a pattern in it (``^[a-z0-9]*$``) is never read as rich markup."""
    # soft_wrap: one line in a pipe or a CI log, however long (a terminal wraps it).
    line = Text.assemble(("error:", "bold red"), " ", message)
    err_console.print(line, highlight=False, soft_wrap=True)


def _show_click_error(exc: typer.TyperException) -> None:
    """A usage mistake as one error line and one hint line, never a traceback."""
    message = exc.format_message().strip()
    if not message:
        # A group called without its sub-command: typer has printed its help already.
        return
    ctx = getattr(exc, "ctx", None)
    _show_error(message)
    if ctx is not None:
        usage = ctx.get_usage().removeprefix("Usage: ")
        err_console.print(
            f"hint: {usage}; see '{ctx.command_path} --help'",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _is_scoring_error(exc: Exception) -> bool:
    """Whether scoring raised ``exc`` (it stays free of the core's error tree).

    Only a command that scores imports scoring (and numpy with it); an error from scoring
    means its module is loaded, so the check needs no import of its own.
    """
    registry = sys.modules.get("scoring.registry")
    return registry is not None and isinstance(exc, registry.ScoringError)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; exit 0 done, 1 the evaluated thing failed, 2 bad usage or input."""
    try:
        args = sys.argv[1:] if argv is None else argv
        named = args[0] if args and args[0] in _COMMANDS else None
        result = _app(named)(args=args, standalone_mode=False, prog_name="evalboard")
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        err_console.print("Aborted.")
        return 130
    except typer.TyperException as exc:
        # typer >= 0.29 vendors its own click: its usage errors (unknown option, missing
        # argument, unknown command) derive from typer.TyperException, not from an
        # installed click's ClickException. Every one of them is bad usage or input.
        _show_click_error(exc)
        return 2
    except EvalboardError as exc:
        _show_error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("Interrupted.")
        return 130
    except Exception as exc:
        if not _is_scoring_error(exc):
            raise
        _show_error(str(exc))
        return 2
    return result if isinstance(result, int) else 0


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def entry() -> None:
    """The console script: run the command, then end the process."""
    # A termination (what `timeout`, a CI's cancel and `kill` send) or a closed terminal
    # ends a command as Ctrl-C does, through the cleanups that remove its sandbox's
    # container and put its jobs back; by default the process died at once and left
    # them. The commands that serve (serve, worker) install their own handlers.
    # A signal the parent ignores stays ignored (nohup's SIGHUP).
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, _interrupted)
    # What the CLI has imported (typer, rich, pydantic, the commands) lives as long as the
    # process: frozen, the collector's passes no longer walk it. Without this, the full
    # pass that the next imports (the evaluator's, numpy) set off walked all of it, 20-40
    # ms of an `evaluate` (benchmarks/bench_startup.py); objects are still freed by their
    # reference counts.
    gc.freeze()
    code = main()
    # The process ends here, and its memory with it: the interpreter's final collections
    # would walk every object left (an evaluation's examples and outputs, every imported
    # module's) only to free what the exit frees anyway, 70-100 ms after a 10,000-example
    # evaluate (benchmarks/bench_startup.py). Frozen objects are left to the exit; files
    # and sandboxes are closed by the commands, not by the collector.
    gc.freeze()
    sys.exit(code)
