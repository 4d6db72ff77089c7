"""``evalboard evaluate``: evaluate a bundle on every dataset of its task, no server needed."""

from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, err_console, print_json, print_table, progress, warn
from evalboard.cli._sandbox import SANDBOX_HELP, chosen_sandbox
from evalboard.core.errors import EvaluationFailed, UsageError
from evalboard.core.scratch import scratch_tree

if TYPE_CHECKING:
    from datasets_registry import TaskSpec
    from evaluator import EvaluationResult, TestSet

__all__ = ["evaluate"]


class _Bars:
    """Adapts the CLI's progress display to the evaluator's ProgressSink."""

    def __init__(self, display: Any) -> None:
        self.display = display
        self.ids: dict[str, int] = {}

    def begin(self, dataset: str, total: int) -> None:
        self.ids[dataset] = self.display.add_task(dataset, total=total)

    def advance(self, dataset: str, done: int) -> None:
        self.display.update(self.ids[dataset], completed=done)

    def end(self, dataset: str, note: str) -> None:
        self.display.finish(self.ids[dataset], note)


def _registered(task_id: str) -> tuple[TaskSpec, list[TestSet]]:
    from datasets_registry import get_task, list_datasets
    from evaluator import TestSet

    ctx = context()
    spec = get_task(ctx, task_id)
    rows = list_datasets(ctx, task_id)
    names = {row.id: row.name for row in rows}
    sets = [
        TestSet.from_table(ctx, row, derived_from=names.get(row.derived_from_id or -1))
        for row in rows
    ]
    if not sets:
        raise UsageError(
            f"Task {task_id!r} has no datasets yet; add one with "
            f"`evalboard dataset add --task {task_id} --name NAME FILE`"
        )
    return spec, sets


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


#: Every per-dataset figure, in the order of the full (piped) table.
_COLUMNS = (
    "dataset",
    "round",
    "n",
    "perf",
    "fair.",
    "robust.",
    "ECE",
    "ex/s",
    "batch",
    "start s",
    "p50 s",
    "p95 s",
    "mem GiB",
    "CPU s",
    "CPU ms/ex",
    "kWh",
    "J/1k",
)
#: On a terminal the figures come as two tables that each fit 80 columns: what the model
#: got right, then what it cost. Energy is a line below them (per evaluation, and the
#: sandbox's own per 1,000 examples).
_QUALITY = ("dataset", "round", "n", "perf", "fair.", "robust.", "ECE")
_COST = ("dataset", "ex/s", "batch", "start s", "p50 s", "p95 s", "mem GiB", "CPU s")


def _rows(result: EvaluationResult) -> list[dict[str, str]]:
    rows = []
    for outcome in result.datasets:
        m = outcome.metrics
        name = outcome.dataset + ("" if outcome.access != "standard" else " (not scored)")
        if m is None:
            reason = outcome.failure.reason if outcome.failure else "failed"
            row = dict.fromkeys(_COLUMNS, "-")
            row.update(dataset=name, round=str(outcome.round), perf=f"[red]{reason}[/red]")
            rows.append(row)
            continue
        figures = (
            name,
            str(outcome.round),
            str(m.examples),
            _fmt(m.perf),
            _fmt(m.fairness),
            _fmt(m.robustness),
            _fmt(m.ece),
            _fmt(m.throughput, 1),
            str(m.batch_size),
            _fmt(m.startup_s),
            _fmt(m.latency_p50_s, 4),
            _fmt(m.latency_p95_s, 4),
            _fmt(m.memory_gib, 3),
            _fmt(m.cpu_seconds),
            _fmt(None if m.cpu_per_example_s is None else m.cpu_per_example_s * 1000, 3),
            _fmt(m.energy_kwh, 6),
            _fmt(m.energy_j_per_1k, 3),
        )
        rows.append(dict(zip(_COLUMNS, figures, strict=True)))
    s = result.summary
    figures = (
        "[bold]task (weighted)[/bold]",
        "",
        "",
        _fmt(s.perf),
        _fmt(s.fairness),
        _fmt(s.robustness),
        _fmt(s.ece),
        _fmt(s.throughput, 1),
        "",
        _fmt(s.startup_s),
        _fmt(s.latency_p50_s, 4),
        _fmt(s.latency_p95_s, 4),
        _fmt(s.memory_gib, 3),
        _fmt(s.cpu_seconds),
        "",
        _fmt(result.energy.kwh, 6),
        _fmt(s.energy_j_per_1k, 3),
    )
    rows.append(dict(zip(_COLUMNS, figures, strict=True)))
    return rows


def _table(rows: list[dict[str, str]], columns: tuple[str, ...], title: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        if column == "dataset":
            # Long dataset names fold onto a second line; figures are never cut.
            table.add_column(column, overflow="fold", ratio=1)
        else:
            table.add_column(column, justify="right", no_wrap=True)
    for index, row in enumerate(rows):
        if index == len(rows) - 1:
            table.add_section()
        table.add_row(*(row[column] for column in columns))
    return table


def _report(result: EvaluationResult) -> None:
    rows = _rows(result)
    name = f"{result.model or 'model'} on {result.task}"
    if console.is_terminal:
        console.print(_table(rows, _QUALITY, f"{name}: quality"))
        console.print(_table(rows, _COST, f"{name}: cost (latency and start-up in seconds)"))
    else:
        print_table(_table(rows, _COLUMNS, None))
    energy = result.energy
    if energy.kwh is not None:
        note = " (an estimate: no RAPL counter here)" if energy.estimate else ""
        console.print(
            f"Energy {energy.kwh:.6f} kWh, CO2 {energy.co2_kg or 0:.6f} kg "
            f"({energy.country_iso_code}){note}; {energy.method}"
        )
    power, own = result.provenance.power, result.summary.energy_j_per_1k
    if power is not None and own is not None:
        console.print(
            f"The sandbox's own energy {own:.3g} J per 1,000 examples ({power.method}: "
            f"{power.source})"
        )
    p = result.provenance
    console.print(
        f"bundle {p.bundle_sha256[:16]}, image {p.image_digest or '-'}, "
        f"sandbox {p.sandbox}, {p.cpu_model} x{p.cpu_count}, GPU {p.gpu or 'none'}, "
        f"seed {p.seed}, {p.evaluator_version}",
        highlight=False,
    )


def _check_outputs(json_out: Path | None, predictions: Path | None) -> None:
    """Refuse, before any model runs, an output the run could not write at its end (a
    missing or read-only folder, a file where a folder goes): the ``--predictions``
    folder is made now, and a file is made and removed in each folder to be sure."""
    if json_out is not None and str(json_out) != "-":
        if json_out.is_dir():
            raise UsageError(f"--json {json_out} is a directory; give a file name")
        if json_out.exists() and not os.access(json_out, os.W_OK):
            raise UsageError(f"--json {json_out} is read-only; give another file")
        _writable("--json", json_out.parent)
    if predictions is not None:
        try:
            predictions.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"--predictions {predictions} cannot be made a directory: {exc.strerror}"
            ) from None
        _writable("--predictions", predictions)


def _writable(option: str, folder: Path) -> None:
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageError(f"{option}: cannot write in {folder}: {exc.strerror}") from None


def evaluate(
    bundle: Path = typer.Argument(..., help="Bundle directory or .tar.gz/.zip archive."),
    task: str | None = typer.Option(
        None, "--task", "-t", help="A registered task id (default: the manifest's task)."
    ),
    task_file: Path | None = typer.Option(
        None, "--task-file", help="A task YAML instead of a registered task; give --dataset."
    ),
    datasets: list[Path] = typer.Option(  # noqa: B008 - typer's way
        [],
        "--dataset",
        "-d",
        help="With --task-file: a canonical JSONL file (repeat). "
        "Files named robustness-X / fairness-X are perturbed copies of X.",
    ),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the full result as JSON to this file ('-': stdout)."
    ),
    predictions: Path | None = typer.Option(
        None, "--predictions", help="Write per-example predictions (DATASET.jsonl) here."
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Override the bundle's batch size."
    ),
    seed: int = typer.Option(0, "--seed", help="Recorded in the provenance."),
    country: str = typer.Option("USA", "--country", help="ISO code for the CO2 estimate."),
    energy: bool = typer.Option(True, "--energy/--no-energy", help="Measure energy."),
    pin_cpus: bool | None = typer.Option(
        None,
        "--pin-cpus/--share-cpus",
        help="Run each sandbox on cores of its own where the machine has them free (never "
        "the first core), or on every core. Default: EVALBOARD_CPU_PINNING (auto, the "
        "default: pin).",
    ),
) -> int:
    """Evaluate a model bundle on every dataset of its task and print all the metrics.

    Exit 0 when every dataset finished, 1 when the model failed on any (the reason and the
    model's last log lines are printed), 2 for bad usage or input.
    """
    if task is not None and task_file is not None:
        raise UsageError("Give --task or --task-file, not both")
    if datasets and task_file is None:
        raise UsageError("--dataset goes with --task-file; a registered task has its datasets")
    requested = chosen_sandbox(sandbox, choose=False)  # chosen once the bundle is read
    if pin_cpus is None:
        from evalboard.core.settings import get_settings  # only when not given (see _sandbox)

        pin_cpus = get_settings().cpu_pinning == "auto"
    with scratch_tree("evalboard-evaluate") as tmp:
        # Imported here, not at the top: the evaluator, the sandboxes and their
        # dependencies load only when a bundle is evaluated, not for --help or a usage error.
        from datasets_registry import load_task_spec
        from evaluator import RunOptions, TestSet
        from evaluator import evaluate as run_evaluation
        from submission_sandbox import load_bundle, task_mismatch

        loaded = load_bundle(bundle, unpack_to=Path(tmp) / "bundle")
        if task_file is not None:
            spec = load_task_spec(task_file)
            if not datasets:
                raise UsageError("--task-file needs at least one --dataset FILE.jsonl")
            test_sets = [TestSet.from_jsonl(path) for path in datasets]
        else:
            spec, test_sets = _registered(task or loaded.manifest.task)
        if (mismatch := task_mismatch(loaded.manifest, spec.id)) is not None:
            warn(mismatch)
        kind = chosen_sandbox(requested, manifest=loaded.manifest, limits=spec.limits)
        # Last of the checks, as it makes the predictions folder: not for a typo above.
        _check_outputs(json_out, predictions)
        if kind == "local":
            warn("the local sandbox does not isolate the model: run only code you trust")
        # What this command loaded (the evaluator, numpy, the examples) lives until the
        # process ends: frozen, as entry() froze the CLI's imports, no full pass of the
        # collector walks it again (each walked it all: 12-19 ms for 10,000 examples).
        gc.freeze()
        # The evaluation's one energy meter is evaluate()'s, started once the bundle fits
        # the task: an error before then waits for no codecarbon set-up (a first one after
        # a boot probes the hardware, about 1.5 s, which the process's exit would wait for).
        with progress() as display:
            result = run_evaluation(
                loaded,
                task=spec,
                datasets=test_sets,
                options=RunOptions(
                    sandbox=kind,
                    batch_size=batch_size,
                    seed=seed,
                    country_iso_code=country,
                    measure_energy=energy,
                    pin_cpus=pin_cpus,
                ),
                predictions_dir=predictions,
                progress=_Bars(display),
            )
    if json_out is not None and str(json_out) == "-":
        print_json(result.model_dump(mode="json"))
    else:
        if json_out is not None:
            json_out.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
        _report(result)
    for outcome in result.failed:
        failure = outcome.failure
        assert failure is not None
        err_console.print(
            f"[bold red]{outcome.dataset}: {failure.reason}[/bold red]: {failure.message}",
            highlight=False,
        )
        if failure.log_tail:
            err_console.print(
                f"  last lines of the model's log:\n{failure.log_tail}",
                highlight=False,
                markup=False,
            )
    if result.failed:
        reasons = sorted({o.failure.reason for o in result.failed if o.failure})
        raise EvaluationFailed(
            f"the model failed on {len(result.failed)} of {len(result.datasets)} datasets "
            f"({', '.join(reasons)}); see the reasons and log lines above"
        )
    return 0
