"""The ``evalboard`` command: sub-commands registered here, errors mapped to exit codes here."""

from __future__ import annotations

import gc
import sys

import typer

from evalboard import __version__
from evalboard.cli._output import err_console
from evalboard.core.errors import EvalboardError

__all__ = ["app", "main"]

app = typer.Typer(
    name="evalboard",
    help="Evaluation-as-a-service with dynamic, utility-weighted leaderboards.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalboard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True),
) -> None:
    """Evalboard: upload models, evaluate them in a sandbox, rank them by a Dynascore."""


def _register() -> None:
    # One line per command group; each module owns its commands.
    from evalboard.cli import dataset, model, task

    app.add_typer(task.app, name="task")
    app.add_typer(dataset.app, name="dataset")
    app.add_typer(model.app, name="model")
    from evalboard.cli import card, upload

    model.app.command("upload")(upload.upload)
    model.app.command("card")(card.card)
    from evalboard.cli import evaluate, worker

    app.command("evaluate")(evaluate.evaluate)
    app.command("worker")(worker.worker)
    from evalboard.cli import leaderboard, serve, users

    app.command("serve")(serve.serve)
    app.command("leaderboard")(leaderboard.leaderboard)
    app.add_typer(users.user_app, name="user")
    app.add_typer(users.token_app, name="token")
    from evalboard.cli import demo

    app.command("demo")(demo.demo)
    from evalboard.cli import loop

    app.command("promote")(loop.promote)
    app.add_typer(loop.round_app, name="round")
    app.add_typer(loop.failures_app, name="failures")
    app.command("gate")(loop.gate)
    from evalboard.cli import snapshot, suite

    app.add_typer(snapshot.app, name="snapshot")
    app.add_typer(suite.app, name="suite")
    from evalboard.cli import drift

    app.add_typer(drift.app, name="drift")
    from evalboard.cli import phase

    app.add_typer(phase.app, name="phase")
    app.command("predictions")(phase.predictions)


_register()


def _show_click_error(exc: typer.TyperException) -> None:
    """A usage mistake as one error line and one hint line, never a traceback."""
    message = exc.format_message().strip()
    if not message:
        # A group called without its sub-command: typer has printed its help already.
        return
    ctx = getattr(exc, "ctx", None)
    err_console.print(f"[bold red]error:[/bold red] {message}", highlight=False, soft_wrap=True)
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
        result = app(args=argv, standalone_mode=False, prog_name="evalboard")
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
        # soft_wrap: one line in a pipe or a CI log, however long (a terminal wraps it).
        err_console.print(
            f"[bold red]error:[/bold red] {exc.message}", highlight=False, soft_wrap=True
        )
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("Interrupted.")
        return 130
    except Exception as exc:
        if not _is_scoring_error(exc):
            raise
        err_console.print(f"[bold red]error:[/bold red] {exc}", highlight=False)
        return 2
    return result if isinstance(result, int) else 0


def entry() -> None:
    """The console script: run the command, then end the process."""
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
