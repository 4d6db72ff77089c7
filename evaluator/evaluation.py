"""One evaluation: a model bundle over every dataset of its task, in a sandbox.

Each dataset gets a fresh sandbox, so its start-up, peak memory and CPU time are its own
and one dataset that breaks the model does not sink the others. Perturbed copies run
after their originals and reuse the originals' predictions; run alone (one job), a copy
predicts the originals it needs first, outside the timed phase.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from datasets_registry import TaskSpec
from evalboard.core.errors import InvalidBundle, UsageError
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from evaluator import provenance
from evaluator.energy import EnergyMeter
from evaluator.load import LoadMeter
from evaluator.measurement import TIMED_RUNS, measure, percentile, timed_runs
from evaluator.power import HostCounters, SandboxEnergy, power_model
from evaluator.result import (
    LOG_TAIL_BYTES,
    LOG_TAIL_LINES,
    DatasetMetrics,
    DatasetOutcome,
    Energy,
    EvaluationResult,
    Failure,
    PowerModel,
)
from evaluator.scorecard import Quality, score, summarize
from evaluator.testset import TestSet, in_evaluation_order
from submission_sandbox import (
    Bundle,
    Manifest,
    Prepared,
    Sandbox,
    SandboxFailure,
    bundle_digest,
    load_bundle,
    open_sandbox,
    prepare_sandbox,
    resolve_sandbox,
)

__all__ = [
    "DatasetRun",
    "ProgressSink",
    "RunOptions",
    "check_bundle_fits",
    "evaluate",
    "evaluate_dataset",
]

logger = logging.getLogger(__name__)
_GIB = 1024**3
#: Failures that every dataset would meet again: stop after the first.
_FATAL = {FailureReason.INVALID_BUNDLE, FailureReason.BUILD_FAILED}


class ProgressSink(Protocol):
    """Told about each dataset as it goes (the CLI draws one bar per dataset)."""

    def begin(self, dataset: str, total: int) -> None: ...

    def advance(self, dataset: str, done: int) -> None: ...

    def end(self, dataset: str, note: str) -> None: ...


@dataclass(frozen=True)
class RunOptions:
    """How to run a bundle: the same for every dataset of one evaluation.

    Attributes:
        sandbox: ``gvisor``, ``docker``, ``local``, or ``auto`` (``gvisor`` where the
            engine has it, else ``docker``; ``docker`` for a bundle given a GPU), chosen
            once for every dataset.
        limits: the task's limits tightened by these (never loosened); None: the task's.
        batch_size: overrides the model's own batch size.
        country_iso_code: where the energy is drawn, for its carbon intensity.
        measure_energy: False runs no energy meter.
        seed: recorded in the provenance (the evaluator itself draws nothing at random).
        pin_cpus: each dataset's sandbox on cores of its own where the machine has them
            free (``EVALBOARD_CPU_PINNING=auto``; :mod:`submission_sandbox.cpuset`).
    """

    sandbox: str = "docker"
    limits: SandboxLimits | None = None
    batch_size: int | None = None
    country_iso_code: str = "USA"
    measure_energy: bool = True
    seed: int = 0
    pin_cpus: bool = False


@dataclass
class DatasetRun:
    """Everything one dataset's run produced, for a result or a job."""

    outcome: DatasetOutcome
    energy: Energy
    outputs: dict[str, dict[str, Any]] | None = None  # by uid, for perturbed copies
    quality: Quality | None = None  # per-example records, serialised only when kept
    model: str = ""
    image_digest: str | None = None
    gpu: str | None = None
    isolating: bool = True
    sandbox: str = ""  # the kind that ran (an alias such as ``auto`` resolved)
    power: PowerModel | None = None  # how energy_j_per_1k was worked out


def _kept_log(box: Any, test_set: TestSet) -> str | None:
    """A finished run's last log lines, capped; none for a hidden set (see DatasetOutcome)."""
    if test_set.access == "hidden":
        return None
    tail = str(box.log_tail(LOG_TAIL_LINES))
    data = tail.encode()
    if len(data) <= LOG_TAIL_BYTES:
        return tail
    # Whole lines from the end, within the byte cap.
    return data[-LOG_TAIL_BYTES:].decode(errors="ignore").partition("\n")[2]


def evaluate_dataset(
    bundle: Bundle | Path,
    test_set: TestSet,
    task: TaskSpec,
    *,
    options: RunOptions = RunOptions(),
    original: TestSet | None = None,
    original_outputs: Mapping[str, dict[str, Any]] | None = None,
    progress: ProgressSink | None = None,
    abort: threading.Event | None = None,
    energy_meter: EnergyMeter | None = None,
    prepared: Prepared | None = None,
) -> DatasetRun:
    """Run one dataset in a fresh sandbox and score it; a model failure is an outcome.

    Args:
        bundle: the loaded bundle (read and hashed once by the caller), or its directory.
        energy_meter: a started meter of the whole evaluation, this dataset's energy a part
            of it (the options' energy settings are then the meter's); without one the
            dataset runs its own meter.
        prepared: the evaluation's :func:`~submission_sandbox.prepare_sandbox` (the image
            built once); without it the sandbox prepares at its start.

    Raises:
        UsageError: a perturbed copy without its original.
        evaluator.measurement.Aborted: ``abort`` was set.
    """
    if test_set.perturbation and original is None and original_outputs is None:
        raise UsageError(
            f"Dataset {test_set.name!r} is a {test_set.perturbation} copy of "
            f"{test_set.derived_from!r}; evaluate it together with that dataset"
        )
    # Its own meter for a dataset run alone (a job, the gate), stopped when it ends.
    with _meter_scope(energy_meter, options) as meter:
        return _run_dataset(
            bundle,
            test_set,
            task,
            options=options,
            original=original,
            original_outputs=original_outputs,
            progress=progress,
            abort=abort,
            energy_meter=meter,
            prepared=prepared,
        )


def _run_dataset(
    bundle: Bundle | Path,
    test_set: TestSet,
    task: TaskSpec,
    *,
    options: RunOptions,
    original: TestSet | None,
    original_outputs: Mapping[str, dict[str, Any]] | None,
    progress: ProgressSink | None,
    abort: threading.Event | None,
    energy_meter: EnergyMeter,
    prepared: Prepared | None,
) -> DatasetRun:
    examples = test_set.examples  # measure() sends only uid and the inputs of each
    limits = options.limits or task.limits
    box = open_sandbox(
        bundle,
        kind=options.sandbox,
        limits=limits,
        prepared=prepared,
        **_pinning(options),
        **task.sandbox_options,
    )
    if progress is not None:
        progress.begin(test_set.name, len(examples))
    # The dataset's part of the meter begins while the model starts: the first part of a
    # process waits for codecarbon's hardware probe (about 1.5 s), later ones take
    # milliseconds. Either way the part begins before the first request and ends after
    # the sandbox is gone.
    beginning = threading.Thread(
        target=energy_meter.begin_part,
        args=(test_set.name,),
        name="energy-part-begin",
        daemon=True,
    )
    beginning.start()
    try:
        started = time.perf_counter()
        try:
            hello = box.start()
        finally:
            beginning.join()
        startup_s = time.perf_counter() - started
        size = options.batch_size or hello.batch_size
        if test_set.perturbation and original_outputs is None:
            assert original is not None
            wanted = {str(example["input_id"]) for example in test_set.examples}
            needed = [e for e in original.examples if str(e["uid"]) in wanted]
            before = measure(box, needed, task, batch_size=size, abort=abort)
            original_outputs = {
                str(e["uid"]): o for e, o in zip(needed, before.outputs, strict=True)
            }

        def on_batch(done: int) -> None:
            if progress is not None:
                progress.advance(test_set.name, done)

        sandbox_energy = _sandbox_energy(box, energy_meter, gpus=limits.gpus)
        meter = LoadMeter()
        if sandbox_energy is not None:
            sandbox_energy.start()
        cpu_before = box.usage().cpu_seconds
        measured = measure(box, examples, task, batch_size=size, on_batch=on_batch, abort=abort)
        runs = timed_runs(measured)
        passes = 1
        if runs is None:  # too few batches to time in segments: send it again
            again = [
                measure(box, examples, task, batch_size=size, abort=abort)
                for _ in range(TIMED_RUNS - 1)
            ]
            passes += len(again)
            runs = [
                (m.throughput, percentile(m.batch_latencies, 50) or 0.0) for m in (measured, *again)
            ]
        meter.stop()
        usage = box.usage()
        if sandbox_energy is not None:
            sandbox_energy.stop()
        cpu_timed = _spent(cpu_before, usage.cpu_seconds)  # the timed passes' alone
        # The sandbox winds down (the runner exits, the container goes) while we score.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-close") as pool:
            closing = pool.submit(box.close)
            quality = score(task, examples, measured.outputs, originals=original_outputs)
            final = closing.result()
    except SandboxFailure as failure:
        _close_quietly(box)
        energy = energy_meter.end_part()
        if progress is not None:
            progress.end(test_set.name, f"failed: {failure.reason.value}")
        return DatasetRun(
            outcome=DatasetOutcome.of(
                test_set,
                derived_from=test_set.derived_from,
                status="failed",
                failure=Failure(
                    reason=failure.reason.value, message=failure.detail, log_tail=failure.log_tail
                ),
            ),
            energy=energy,
            isolating=type(box).isolating,
            sandbox=box.kind,
        )
    except BaseException:
        _close_quietly(box)
        energy_meter.end_part()
        raise
    energy = energy_meter.end_part()
    peak = final.peak_memory_bytes or usage.peak_memory_bytes
    cpu = final.cpu_seconds if final.cpu_seconds is not None else usage.cpu_seconds
    throughputs = [t for t, _ in runs]
    energy_per_1k = (
        sandbox_energy.per_1k_j(sandbox_cpu_s=cpu_timed, examples=passes * len(measured.outputs))
        if sandbox_energy is not None
        else None
    )
    metrics = DatasetMetrics(
        perf=quality.perf,
        perf_metric=task.perf_metric,
        extra=quality.extra,
        fairness=quality.delta if test_set.perturbation == "fairness" else None,
        robustness=quality.delta if test_set.perturbation == "robustness" else None,
        examples=len(measured.outputs),
        throughput=float(statistics.median(throughputs)),
        throughput_runs=throughputs,
        latency_p50_runs=[latency for _, latency in runs],
        load=meter.load(
            sandbox_cpu_seconds=cpu_timed if cpu_timed is not None else cpu, cpuset=box.cpuset
        ),
        batch_size=size,
        predict_s=measured.predict_s,
        startup_s=usage.startup_s if usage.startup_s is not None else startup_s,
        latency_p50_s=percentile(measured.batch_latencies, 50),
        latency_p95_s=percentile(measured.batch_latencies, 95),
        memory_gib=peak / _GIB if peak is not None else None,
        cpu_seconds=cpu,
        cpu_per_example_s=cpu_timed / (passes * len(measured.outputs))
        if cpu_timed is not None and measured.outputs
        else None,
        ece=quality.ece,
        energy_kwh=energy.kwh,
        co2_kg=energy.co2_kg,
        energy_j_per_1k=energy_per_1k,
        energy_method=sandbox_energy.model.method
        if sandbox_energy is not None and energy_per_1k is not None
        else None,
    )
    if progress is not None:
        progress.end(test_set.name, _note(metrics))
    return DatasetRun(
        outcome=DatasetOutcome.of(
            test_set,
            derived_from=test_set.derived_from,
            metrics=metrics,
            log_tail=_kept_log(box, test_set),
        ),
        energy=energy,
        outputs=dict(zip(map(str, quality.uids), measured.outputs, strict=True)),
        quality=quality,
        model=hello.name,
        image_digest=hello.image_digest,
        gpu=usage.gpu or final.gpu,
        isolating=type(box).isolating,
        sandbox=box.kind,
        power=sandbox_energy.model
        if sandbox_energy is not None and energy_per_1k is not None
        else None,
    )


def _meter_scope(
    energy_meter: EnergyMeter | None, options: RunOptions
) -> AbstractContextManager[EnergyMeter]:
    """The caller's started meter (the caller stops it), else a meter of this run's own,
    started and stopped with it."""
    if energy_meter is not None:
        return nullcontext(energy_meter)
    return EnergyMeter(options.country_iso_code, enabled=options.measure_energy)


def _pinning(options: RunOptions) -> dict[str, Any]:
    # Asked only when pinning: a sandbox that cannot pin (a test double) needs no option.
    return {"pin_cpus": True} if options.pin_cpus else {}


def _sandbox_energy(box: Sandbox, energy_meter: EnergyMeter, *, gpus: int) -> SandboxEnergy | None:
    """The meter of the sandbox's own energy, where its CPU time is its cgroup's (an
    isolating sandbox; the local one counts a process tree) and the machine has RAPL or a
    codecarbon TDP (:mod:`evaluator.power`)."""
    if not type(box).isolating:
        return None
    counters = HostCounters(gpus=gpus > 0)
    model = power_model(energy_meter.cpu_spec(), counters, gpu=gpus > 0)
    return SandboxEnergy(model, counters) if model is not None else None


def _spent(before: float | None, after: float | None) -> float | None:
    """CPU seconds between two readings of the sandbox's counter (None: not read)."""
    if before is None or after is None:
        return None
    return max(0.0, after - before)


def _close_quietly(box: Sandbox) -> None:
    # The model already failed; a second error while removing it must not hide the first.
    try:
        box.close()
    except Exception:
        logger.warning("closing the sandbox after a failure failed", exc_info=True)


def _loaded(bundle: Bundle | Path) -> Bundle | Path:
    """The bundle read once for the whole evaluation; a directory that is not a usable
    bundle stays a path, and each dataset's sandbox reports it as ``invalid_bundle``."""
    if isinstance(bundle, Bundle):
        return bundle
    try:
        return load_bundle(bundle)
    except InvalidBundle:
        return bundle


def _within(task: TaskSpec, limits: SandboxLimits | None) -> SandboxLimits:
    """The task's limits, tightened by the caller's; loosening them is refused."""
    if limits is None:
        return task.limits
    try:
        return task.limits.tightened(**limits.model_dump(exclude_unset=True))
    except ValueError as exc:
        raise UsageError(f"Limits for task {task.id!r}: {exc}") from None


def _note(metrics: DatasetMetrics) -> str:
    for name in ("perf", "fairness", "robustness"):
        value = getattr(metrics, name)
        if value is not None:
            return f"{name} {value:.2f}, {metrics.throughput or 0.0:.1f} ex/s"
    return "done"


def _total_energy(runs: Sequence[DatasetRun], country_iso_code: str) -> Energy:
    measured = [run.energy for run in runs if run.energy.kwh is not None]
    if not measured:
        method = runs[0].energy.method if runs else "disabled"
        return Energy(country_iso_code=country_iso_code, method=method)
    return Energy(
        kwh=sum(e.kwh or 0.0 for e in measured),
        co2_kg=sum(e.co2_kg or 0.0 for e in measured),
        estimate=any(e.estimate for e in measured),
        method=measured[0].method,
        country_iso_code=country_iso_code,
    )


def check_bundle_fits(manifest: Manifest, task: TaskSpec) -> None:
    """What a bundle asks of its task's inputs, checked before anything runs: a prompt
    naming a field the task lacks would make every example crash.

    Raises:
        InvalidBundle: the prompt names a field the task has no input for.
    """
    missing = [name for name in manifest.prompt_fields if name not in task.input_names]
    if missing:
        raise InvalidBundle(
            f"The bundle's prompt names {{{missing[0]}}}, but task {task.id!r} has no such "
            f"input; name its inputs ({', '.join(task.input_names)}) in `prompt:` of "
            "evalboard.yaml"
        )


def evaluate(
    bundle: Bundle | Path,
    *,
    task: TaskSpec,
    datasets: Sequence[TestSet],
    options: RunOptions = RunOptions(),
    predictions_dir: Path | None = None,
    progress: ProgressSink | None = None,
    energy_meter: EnergyMeter | None = None,
) -> EvaluationResult:
    """Evaluate a bundle on every dataset given (originals and their copies).

    Args:
        bundle: the bundle, or its unpacked directory (with its ``evalboard.yaml``), read
            and hashed here once for every dataset.
        task: the task spec; its limits apply, tightened by ``options.limits``.
        datasets: the task's datasets, perturbed copies included; gold stays on the host.
        predictions_dir: where to write ``<dataset>.jsonl`` per-example predictions.
        progress: told about each dataset as it runs.
        energy_meter: a meter the caller started early (its codecarbon set-up then runs
            while the caller loads the rest) and stops; the options' energy settings are
            then the meter's. Without one the evaluation runs its own.
    """
    started_at = datetime.now(UTC)
    provenance.look_up_machine()
    limits = _within(task, options.limits)
    loaded = _loaded(bundle)
    manifest = loaded.manifest if isinstance(loaded, Bundle) else None
    if manifest is not None:
        check_bundle_fits(manifest, task)
    options = replace(
        options,
        limits=limits,
        sandbox=resolve_sandbox(options.sandbox, manifest=manifest, limits=limits),
    )
    runs: list[DatasetRun] = []
    outputs: dict[str, dict[str, dict[str, Any]]] = {}
    by_name = {test_set.name: test_set for test_set in datasets}
    fatal: DatasetOutcome | None = None
    # The image is built (or found) once, before any dataset runs; a build that fails is
    # the first dataset's failure, as it would have been at that sandbox's start.
    prepared = prepare_sandbox(loaded, kind=options.sandbox, limits=limits, **_pinning(options))
    # One meter for the whole evaluation, each dataset a part of it: codecarbon is set up
    # once, not once per dataset.
    with _meter_scope(energy_meter, options) as meter:
        for test_set in in_evaluation_order(datasets):
            if fatal is not None:
                runs.append(
                    DatasetRun(
                        outcome=DatasetOutcome.of(
                            test_set,
                            derived_from=test_set.derived_from,
                            status="failed",
                            failure=fatal.failure,
                        ),
                        energy=Energy(method="not run"),
                    )
                )
                continue
            original = by_name.get(test_set.derived_from or "")
            run = evaluate_dataset(
                loaded,
                test_set,
                task,
                options=options,
                original=original,
                original_outputs=outputs.get(test_set.derived_from or ""),
                progress=progress,
                energy_meter=meter,
                prepared=prepared,
            )
            runs.append(run)
            if run.outputs is not None and test_set.perturbation is None:
                outputs[test_set.name] = run.outputs
            failure = run.outcome.failure
            if failure is not None and FailureReason(failure.reason) in _FATAL:
                fatal = run.outcome
            if predictions_dir is not None and run.quality is not None:
                predictions_dir.mkdir(parents=True, exist_ok=True)
                path = predictions_dir / f"{test_set.name}.jsonl"
                path.write_bytes(run.quality.jsonl())
                run.outcome.predictions = str(path)
    finished = [run for run in runs if run.outcome.status == "finished"]
    return EvaluationResult(
        task=task.id,
        model=next((run.model for run in finished if run.model), ""),
        datasets=[run.outcome for run in runs],
        summary=summarize([run.outcome for run in runs]),
        energy=_total_energy(finished, options.country_iso_code),
        provenance=provenance.collect(
            bundle_sha256=loaded.sha256 if isinstance(loaded, Bundle) else bundle_digest(loaded),
            image_digest=next((r.image_digest for r in finished if r.image_digest), None),
            dataset_sha256={test_set.name: test_set.sha256 for test_set in datasets},
            sandbox=options.sandbox,
            sandbox_isolating=all(run.isolating for run in runs),
            limits=limits.model_dump(mode="json"),
            gpu=next((r.gpu for r in finished if r.gpu), None),
            seed=options.seed,
            started_at=started_at,
            power=next((r.power for r in finished if r.power is not None), None),
        ),
    )
