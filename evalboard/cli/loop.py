"""The loop from the shell: ``promote``, ``round list|close``, ``failures add``, ``gate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, err_console, print_json, print_table, say, warn
from evalboard.cli._sandbox import SANDBOX_HELP, chosen_sandbox
from evalboard.cli._server import TASK

if TYPE_CHECKING:
    from evalboard.core.tables import Round
    from leaderboard.loop import GateReport

# Each command imports what it needs from leaderboard.loop: the web service, the database
# layer and the evaluator load only when a command runs, not for --help or a usage error.

__all__ = ["failures_app", "gate", "promote", "round_app"]

round_app = typer.Typer(help="List and close a task's collection rounds.", no_args_is_help=True)
failures_app = typer.Typer(
    help="Report inputs a deployed model got wrong into the validation queue.",
    no_args_is_help=True,
)


def _describe(round_: Round) -> dict[str, object]:
    return {
        "number": round_.number,
        "status": round_.status,
        "targets": [int(i) for i in round_.target_submission_ids],
        "dataset_id": round_.dataset_id,
        "opened_at": round_.opened_at,
        "closed_at": round_.closed_at,
    }


def promote(
    task: str = TASK,
    top: int | None = typer.Option(
        None, "--top", min=1, help="Promote the leaderboard's best K submissions."
    ),
    submissions: list[int] = typer.Option(  # noqa: B008 - typer's way
        [], "--submission", "-s", help="A target submission id (repeat for several)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the round as JSON."),
) -> None:
    """Open the task's next round with target models (annotators then try to fool them)."""
    from leaderboard.loop import open_round

    opened = open_round(context(), task, submission_ids=submissions or None, top=top)
    if as_json:
        print_json(_describe(opened))
        return
    targets = ", ".join(str(i) for i in opened.target_submission_ids)
    console.print(
        f"Round {opened.number} of {task} is open; target submission(s) {targets}. "
        f"Annotators write examples at /ui/tasks/{task}/collect",
        highlight=False,
    )


@round_app.command("list")
def list_(
    task: str = TASK,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Each round with its targets, its dataset and its vMER."""
    from leaderboard.loop import list_rounds, round_vmer

    ctx = context()
    rows = []
    for round_ in list_rounds(ctx, task):
        report = round_vmer(ctx, task, round_.number)
        rows.append(
            {
                **_describe(round_),
                "collected": report.collected,
                "fooled": report.fooled,
                "verified": report.verified,
                "pending": report.pending,
                "vmer": report.vmer,
            }
        )
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"Rounds of {task}")
    for column in ("round", "status", "targets", "collected", "fooled", "verified", "vMER"):
        table.add_column(column, justify="left" if column in ("status", "targets") else "right")
    for row in rows:
        vmer = row["vmer"]
        table.add_row(
            str(row["number"]),
            str(row["status"]),
            ", ".join(map(str, row["targets"])),  # type: ignore[call-overload]
            str(row["collected"]),
            str(row["fooled"]),
            str(row["verified"]),
            f"{100 * vmer:.1f}%" if isinstance(vmer, float) else "-",
        )
    if rows:
        print_table(table)
    else:
        console.print(f"Task {task} has no rounds yet; open one with promote.")


@round_app.command("close")
def close(
    task: str = TASK,
    number: int | None = typer.Option(None, "--round", "-r", help="Default: the open round."),
    weight: float | None = typer.Option(
        None,
        "--weight",
        help="The new dataset's weight in the averages (default: min(1, examples/500)).",
    ),
) -> None:
    """Close a round: its verified examples become dataset round-N, every model is queued."""
    from leaderboard.loop import close_round

    closed = close_round(context(), task, number, weight=weight)
    if closed.dataset is None:
        console.print(f"Round {closed.round.number} closed with no verified example: no dataset.")
        return
    copies = ", ".join(d.name for d in closed.derived) or "none"
    console.print(
        f"Round {closed.round.number} closed: dataset {closed.dataset.name} "
        f"({closed.examples} examples, weight {closed.dataset.weight:g}; "
        f"perturbed copies: {copies}); "
        f"{len(closed.jobs)} evaluation jobs queued",
        highlight=False,
    )


@failures_app.command("add")
def add_failures(
    file: Path = typer.Argument(..., help="JSONL: inputs, the correct label/answers, ..."),
    task: str = TASK,
    reporter: str | None = typer.Option(None, "--reporter", help="User name to record."),
) -> None:
    """Queue failures of a deployed model for validation (into the open or the next round)."""
    from leaderboard.loop import capture_failures, read_failures

    ctx = context()
    reporter_id = None
    if reporter is not None:
        from leaderboard.accounts import get_user

        reporter_id = get_user(ctx, reporter).id
    stored = capture_failures(ctx, task, read_failures(ctx, task, file), reporter_id=reporter_id)
    where = "the open round" if stored[0].round_id is not None else "the next round opened"
    console.print(f"{len(stored)} failure(s) queued for validation in {where}.")


def _print_report(report: GateReport, server: str | None) -> None:
    table = Table(title=f"Gate: {report.candidate} against {report.baseline} on {report.task}")
    for column in ("dataset", "n", "baseline right", "candidate right", "regressed", "improved"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for d in report.datasets:
        if d.failure:
            table.add_row(d.dataset, str(d.examples), "-", f"[red]{d.failure}[/red]", "-", "-")
            continue
        table.add_row(
            d.dataset,
            str(d.examples),
            str(d.baseline_right),
            str(d.candidate_right),
            str(d.regressions),
            str(d.improvements),
        )
    print_table(table, to=err_console)
    for r in report.regressions:
        if r.passed_by:
            others = f" (also {', '.join(r.passed_by[1:])})" if len(r.passed_by) > 1 else ""
            before = f"first passed by {r.passed_by[0]}{others}"
        else:
            before = f"baseline {r.baseline!r}"
        say(f"REGRESSION {r.dataset} {r.uid}: gold {r.gold!r}, {before}, candidate {r.candidate!r}")
    if report.compare_url:
        err_console.print(f"Side by side: {report.compare_url}", highlight=False)
    elif server and report.candidate_submission is None:
        err_console.print(
            f"The candidate is not uploaded to {report.task}; upload it (evalboard model "
            "upload) to see it beside the baseline on the compare page.",
            highlight=False,
        )
    verdict = "passed" if report.passed else "FAILED"
    err_console.print(
        f"Gate {verdict}: {len(report.regressions)} regression(s)"
        + (
            f", {sum(1 for d in report.datasets if d.failure)} failed dataset(s)"
            if any(d.failure for d in report.datasets)
            else ""
        ),
        highlight=False,
    )


def _against(
    task: str | None, baseline: str | None, lineage: int | None, suite: Path | None
) -> str:
    """Which gate was asked for: ``baseline``, ``lineage`` or ``suite`` (usage checked)."""
    from evalboard.core.errors import UsageError

    if suite is not None:
        if baseline is not None:
            raise UsageError("--suite gates against the suite's lineage; drop --baseline")
        return "suite"
    if baseline is not None and lineage is not None:
        raise UsageError(
            "--baseline (one model) and --lineage (every earlier release) are two gates; "
            "give one of them"
        )
    if baseline is None and lineage is None:
        raise UsageError(
            "Name what the candidate must not regress against: --baseline ID|BUNDLE (with "
            "--task), --lineage ID (every earlier release), or --suite FILE (offline)"
        )
    if baseline is not None and task is None:
        raise UsageError("--baseline needs --task: the task whose datasets the gate runs on")
    return "baseline" if baseline is not None else "lineage"


def gate(
    candidate: Path = typer.Argument(..., help="The candidate bundle (directory or archive)."),
    task: str | None = typer.Option(
        None, "--task", "-t", help="Task id (with --lineage/--suite: checked against theirs)."
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", "-b", help="A submission id of the task, or a baseline bundle."
    ),
    lineage: int | None = typer.Option(
        None,
        "--lineage",
        "-l",
        min=1,
        max=2**31 - 1,
        help="Fail on any case an earlier release of this lineage passed (any release's id).",
    ),
    suite: Path | None = typer.Option(
        None,
        "--suite",
        help="An exported suite file: the lineage gate offline (no server, no database); "
        "the lineage is --lineage or the bundle's release_of.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    server: str | None = typer.Option(
        None,
        "--server",
        envvar="EVALBOARD_SERVER",
        help="The Evalboard server, for a link to the two models side by side.",
    ),
) -> int:
    """The release gate: exit 1 listing each example the candidate got wrong that the
    baseline (or any earlier release of a lineage) got right, on every round and static
    set; exit 0 otherwise. With a server and both models uploaded (single-baseline
    mode), it prints the URL of their compare page."""
    against = _against(task, baseline, lineage, suite)
    kind = chosen_sandbox(sandbox)
    if kind == "local":
        warn("the local sandbox does not isolate the model: run only code you trust")
    if suite is not None:
        from leaderboard.loop import read_suite, run_suite_gate

        report = run_suite_gate(
            read_suite(suite),
            candidate,
            sandbox=kind,
            lineage=lineage,
            task_id=task,
            source=str(suite),
        )
    elif against == "lineage":
        from leaderboard.loop import run_lineage_gate

        assert lineage is not None
        report = run_lineage_gate(context(), candidate, lineage=lineage, task_id=task, sandbox=kind)
    else:
        from leaderboard.loop import run_gate

        assert task is not None and baseline is not None
        report = run_gate(
            context(), candidate, task_id=task, baseline=baseline, sandbox=kind, server=server
        )
    if as_json:
        print_json(report.to_dict())
    else:
        _print_report(report, server)
    return 0 if report.passed else 1
