"""``evalboard model``: make a bundle, test it in the server's sandbox, package it."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from evalboard.cli._output import console, err_console, print_table, warn
from evalboard.cli._sandbox import SANDBOX_HELP, chosen_sandbox
from evalboard.cli._templates import (
    TEMPLATES,
    train_placeholder,
    write_trained_template,
    write_transformers_template,
)
from evalboard.core.errors import UsageError
from evalboard.core.scratch import scratch_tree

if TYPE_CHECKING:
    from datasets_registry import TaskSpec

__all__ = ["app", "sample_inputs"]

app = typer.Typer(help="Model bundles: create, test locally, package.", no_args_is_help=True)

#: Built-in sentences for sample inputs; a task's text fields cycle through them.
SAMPLE_SENTENCES = [
    "I absolutely loved this film, the acting was wonderful.",
    "The service was slow and the food was cold.",
    "The meeting is scheduled for Tuesday at noon.",
    "Honestly not sure how I feel about the new update.",
    "What a waste of time, I want my money back!",
    "She said the book was surprisingly good.",
]
SAMPLE_CONTEXT = (
    "The Amazon rainforest covers much of the Amazon basin of South America. "
    "The basin covers seven million square kilometres, of which five and a half million "
    "are covered by the rainforest. The region includes territory of nine nations."
)
SAMPLE_QUESTIONS = [
    "How much of the basin is covered by the rainforest?",
    "How many nations have territory in the region?",
    "Which continent is the Amazon basin in?",
]


def sample_inputs(spec: TaskSpec, count: int = 6) -> list[dict[str, Any]]:
    """A few inputs shaped like the task's (no gold labels: there are none to leak)."""
    examples = []
    for index in range(count):
        example: dict[str, Any] = {"uid": f"sample-{index + 1}"}
        for position, name in enumerate(spec.input_names):
            if name == "context":
                example[name] = SAMPLE_CONTEXT
            elif spec.output.type == "span":
                example[name] = SAMPLE_QUESTIONS[index % len(SAMPLE_QUESTIONS)]
            else:
                example[name] = SAMPLE_SENTENCES[(index + position) % len(SAMPLE_SENTENCES)]
        examples.append(example)
    return examples


def _task(task_id: str | None, task_file: Path | None) -> TaskSpec:
    from datasets_registry import get_task, load_task_spec

    if task_file is not None:
        return load_task_spec(task_file)
    if task_id is None:
        raise UsageError("Name the task: --task ID (a task on the server) or --task-file TASK.yaml")
    from evalboard.cli._context import context

    return get_task(context(), task_id)


_HANDLER = '''"""{name}: a starting point. Replace the body of predict with your model.

The platform calls Model(model_dir) once, then predict(batch) with lists of inputs:
each a dict with "uid" and the task's input fields ({fields}).
Return exactly one output per input, in order: {output_doc}
"""


class Model:
    def __init__(self, model_dir: str) -> None:
        # Load weights from files in model_dir (the bundle) here.
        self.model_dir = model_dir
{init}
    def predict(self, batch: list[dict]) -> list[dict]:
{predict}
'''

_CLASSIFY_INIT = "        self.labels = {labels!r}\n"
_CLASSIFY_PREDICT = """        outputs = []
        for example in batch:
            # A placeholder: uniform probabilities, the first label.
            probs = {label: 1.0 / len(self.labels) for label in self.labels}
            outputs.append({"label": self.labels[0], "probs": probs})
        return outputs"""
_SPAN_PREDICT = """        outputs = []
        for example in batch:
            # A placeholder: the context's first word, with low confidence.
            words = example["context"].split()
            outputs.append({"answer": words[0] if words else "", "conf": 0.1})
        return outputs"""


def _model_name(name: str | None, directory: Path) -> str:
    """The bundle's name, checked by the manifest's own rule before anything is written."""
    from pydantic import TypeAdapter, ValidationError

    from submission_sandbox import Manifest

    field = Manifest.model_fields["name"]
    chosen = name if name is not None else directory.resolve().name.lower().replace("_", "-")
    rule = TypeAdapter(Annotated[str, field])
    try:
        return rule.validate_python(chosen)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
    slug = re.sub(r"[^a-z0-9]+", "-", chosen.lower()).strip("-")[:64].strip("-") or "my-model"
    origin = "--name" if name is not None else "the directory's name"
    allowed = (field.description or "").partition(": ")[2].rstrip(".")
    raise UsageError(
        f"{origin} {chosen!r} is not a valid model name: {problem} ({allowed}); pass --name {slug}"
    )


def _check_directory(directory: Path) -> None:
    """Refuse a bundle directory that exists and is not empty, or cannot be made."""
    try:
        existing = next(path for path in [directory, *directory.parents] if path.exists())
        if not existing.is_dir():
            raise UsageError(
                f"cannot create the bundle directory {directory}: {existing} is a file, not a "
                "directory; choose a new directory"
            )
        if existing == directory and any(directory.iterdir()):
            raise UsageError(f"{directory} is not empty; choose a new directory")
    except OSError as exc:
        raise UsageError(
            f"cannot use {directory} as the bundle directory: {exc.strerror}; "
            "choose a directory you can write"
        ) from None


def _make_directory(directory: Path) -> Path | None:
    """Create ``directory`` (checked); returns the topmost folder made, to undo."""
    try:
        created = next(
            (path for path in reversed([directory, *directory.parents]) if not path.exists()),
            None,
        )
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create the bundle directory {directory}: {exc.strerror}; "
            "choose a directory you can write"
        ) from None
    return created


def _undo(directory: Path, created: Path | None) -> None:
    """Remove what ``init`` made: the folders it created, or the files it put in an empty
    one."""
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
        return
    for path in directory.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _manifest_text(model_name: str, spec: TaskSpec, runtime: dict[str, Any]) -> str:
    """``evalboard.yaml`` as YAML a value cannot break; ``runtime``: the template's fields."""
    import yaml

    fields = {"name": model_name, "task": spec.id, **runtime, "batch_size": 32, "gpus": 0}
    return yaml.dump(
        fields, Dumper=_manifest_dumper(), sort_keys=False, allow_unicode=True, width=2**16
    )


def _manifest_dumper() -> type[Any]:
    """A safe dumper writing block mappings and one-line lists (the onnx train.py replaces
    the `labels:` line)."""
    import yaml

    class ManifestDumper(yaml.SafeDumper):
        pass

    def one_line(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    ManifestDumper.add_representer(list, one_line)
    return ManifestDumper


@app.command("init")
def init(
    directory: Path = typer.Argument(..., help="Where to create the bundle (new or empty)."),
    task_id: str | None = typer.Option(None, "--task", help="The task's id on the server."),
    task_file: Path | None = typer.Option(None, "--task-file", help="Or the task's YAML."),
    name: str | None = typer.Option(None, help="Model name (default: the directory's name)."),
    kind: str = typer.Option(
        "python",
        "--from",
        help="python (a handler to fill in), sklearn (joblib pipeline + requirements.txt), "
        "onnx (the same pipeline through skl2onnx): both trained on placeholder sentences, "
        "with the train.py to run on your data; transformers (a tiny random BERT classifier "
        "in model/, to replace with your save_pretrained model).",
    ),
) -> None:
    """Create a bundle for a task that passes `evalboard model test` as made."""
    if kind not in TEMPLATES:
        raise UsageError(f"Unknown template {kind!r}; known: {', '.join(TEMPLATES)}")
    from submission_sandbox import MANIFEST_NAME

    _check_directory(directory)
    model_name = _model_name(name, directory)
    spec = _task(task_id, task_file)
    created = _make_directory(directory)
    try:
        if kind == "transformers":
            runtime = write_transformers_template(directory, spec, SAMPLE_SENTENCES)
            (directory / MANIFEST_NAME).write_text(_manifest_text(model_name, spec, runtime))
        elif kind != "python":
            runtime = write_trained_template(kind, directory, spec, name=model_name)
            (directory / MANIFEST_NAME).write_text(_manifest_text(model_name, spec, runtime))
            train_placeholder(directory, spec, SAMPLE_SENTENCES)
        else:
            runtime = {"runtime": "python", "entry": "handler:Model"}
            (directory / MANIFEST_NAME).write_text(_manifest_text(model_name, spec, runtime))
            _write_handler(directory, spec, model_name)
    except OSError as exc:
        _undo(directory, created)  # nothing half-written
        raise UsageError(
            f"cannot write the bundle in {directory}: {exc.strerror}; "
            "choose a directory you can write"
        ) from None
    except BaseException:
        _undo(directory, created)
        raise
    if kind == "transformers":
        console.print(
            f"Created bundle [bold]{directory}[/bold] (transformers) for task "
            f"[bold]{spec.id}[/bold] with a tiny random placeholder in model/.\n"
            "Next: model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR) of your "
            f"own into {directory}/model, then `evalboard model test {directory}`."
        )
    elif kind != "python":
        console.print(
            f"Created bundle [bold]{directory}[/bold] ({kind}) for task [bold]{spec.id}[/bold], "
            "trained on placeholder sentences.\n"
            f"Next: `python {directory}/train.py YOUR.jsonl`, then "
            f"`evalboard model test {directory}`."
        )
    else:
        console.print(
            f"Created bundle [bold]{directory}[/bold] for task [bold]{spec.id}[/bold].\n"
            f"Next: edit handler.py, then `evalboard model test {directory}`."
        )


def _write_handler(directory: Path, spec: TaskSpec, model_name: str) -> None:
    if spec.output.type == "span":
        output_doc = '{"answer": a substring of the context, "conf": 0..1}.'
        init_code, predict_code = "", _SPAN_PREDICT
    else:
        output_doc = '{"label": one of the labels, "probs": {label: probability}} (sum 1).'
        init_code, predict_code = (
            _CLASSIFY_INIT.format(labels=spec.output.labels),
            _CLASSIFY_PREDICT,
        )
    (directory / "handler.py").write_text(
        _HANDLER.format(
            name=model_name,
            fields=", ".join(spec.input_names),
            output_doc=output_doc,
            init=init_code,
            predict=predict_code,
        )
    )


@app.command("test")
def test(
    directory: Path = typer.Argument(..., help="The bundle directory (or .tar.gz / .zip)."),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    task_id: str | None = typer.Option(None, "--task", help="Task id (default: the manifest's)."),
    task_file: Path | None = typer.Option(None, "--task-file", help="Or the task's YAML."),
    timeout_s: float = typer.Option(600, help="Wall-clock limit for the whole test."),
) -> None:
    """Run the bundle in the server's sandbox on sample inputs and check every output."""
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise UsageError(
            f"--timeout-s {timeout_s:g}: the limit must be a positive, finite number of "
            "seconds, e.g. --timeout-s 60"
        )
    from datasets_registry import OutputProblem
    from evaluator import check_bundle_fits, measure
    from submission_sandbox import SandboxFailure, check_bundle_task, load_bundle, open_sandbox

    with scratch_tree("evalboard-test") as scratch:
        bundle = load_bundle(directory, unpack_to=Path(scratch) / "bundle")
        spec = _task(task_id or (None if task_file else bundle.manifest.task), task_file)
        check_bundle_task(bundle.manifest, spec.id)
        check_bundle_fits(bundle.manifest, spec)
        limits = spec.limits.tightened(timeout_s=min(timeout_s, spec.limits.timeout_s))
        sandbox = chosen_sandbox(sandbox, manifest=bundle.manifest, limits=limits)
        if sandbox == "local":
            warn("the local sandbox does NOT isolate the model: use it for your own code only")
        inputs = sample_inputs(spec)
        err_console.print(
            f"Testing {bundle.manifest.name} ({bundle.manifest.runtime.value}, sha256 "
            f"{bundle.short_digest}) in the {sandbox} sandbox on {len(inputs)} sample inputs",
            highlight=False,
        )
        box = open_sandbox(bundle, kind=sandbox, limits=limits, **spec.sandbox_options)
        # The evaluation's own measurement, so the test and the real run check alike; here
        # every bad output is gathered rather than the first one stopping the run.
        problems: list[OutputProblem] = []
        try:
            box.start()
            outputs = measure(
                box, inputs, spec, batch_size=bundle.manifest.batch_size, collect=problems
            ).outputs
            usage = box.usage()
        except SandboxFailure as failure:
            box.close()
            err_console.print(
                f"[bold red]FAILED[/bold red] ({failure.reason.value}): {failure.detail}",
                highlight=False,
            )
            if failure.log_tail:
                err_console.print(
                    "Last lines of the model's log:\n" + failure.log_tail,
                    highlight=False,
                    markup=False,
                )
            raise typer.Exit(1) from None
        box.close()
    by_index: dict[int, list[str]] = {}
    for problem in problems:
        by_index.setdefault(problem.index or 0, []).append(problem.problem)
    table = Table("uid", "output", "check")
    for index, (example, output) in enumerate(zip(inputs, outputs, strict=False)):
        shown = spec.prediction(output) if index not in by_index else output
        issues = by_index.get(index)
        table.add_row(
            example["uid"],
            str(shown)[:60],
            "[red]" + "; ".join(issues) + "[/red]" if issues else "[green]ok[/green]",
        )
    print_table(table)
    memory = f"{usage.peak_memory_bytes / 1024**2:.0f} MiB" if usage.peak_memory_bytes else "n/a"
    console.print(
        f"start-up {usage.startup_s or 0:.2f} s, peak memory {memory}, "
        f"CPU {usage.cpu_seconds or 0:.2f} s"
    )
    if problems:
        console.print(f"[bold red]FAIL[/bold red]: {len(problems)} problem(s)")
        raise typer.Exit(1)
    console.print(f"[bold green]PASS[/bold green]: {len(outputs)} outputs, all valid")


@app.command("package")
def package(
    directory: Path = typer.Argument(..., help="The bundle directory."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Archive to write."),
) -> None:
    """Write the bundle as a reproducible .tar.gz and print its sha256."""
    from submission_sandbox import package_bundle

    if not directory.is_dir():
        raise UsageError(f"{directory} is not a bundle directory")
    archive, digest = package_bundle(directory, output)
    console.print(f"{archive}\nsha256 {digest}", highlight=False)


# The group's commands that live in modules of their own.
from evalboard.cli import card, upload  # noqa: E402 - after the group they join

app.command("upload")(upload.upload)
app.command("card")(card.card)
