"""evaluate(): a bundle over every dataset, in the real local sandbox."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import ClassVar

import pytest

from evalboard.core.errors import UsageError
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from evaluator import RunOptions, TestSet, evaluate, evaluate_dataset
from evaluator.result import LOG_TAIL_BYTES, LOG_TAIL_LINES
from scoring.registry import compute
from submission_sandbox import ModelHello, SandboxFailure, known_sandboxes, sandbox
from submission_sandbox.bundle import bundle_digest
from tests.evaluator.conftest import BundleFactory
from tests.helpers.fake_sandbox import FakeSandbox
from tests.helpers.tasks import sentiment_rows, sentiment_spec

LABELS = ["negative", "neutral", "positive"]


def _sets() -> list[TestSet]:
    rows = sentiment_rows()
    copy = [  # s2 loses its cue word; s1 keeps it
        {
            "uid": "r1",
            "input_id": "s1",
            "statement": "The food was wonderful!",
            "label": "positive",
        },
        {
            "uid": "r2",
            "input_id": "s2",
            "statement": "He said the service was terible.",
            "label": "negative",
        },
    ]
    return [
        TestSet(
            name="robustness-mini",
            examples=copy,
            sha256="b" * 64,
            perturbation="robustness",
            derived_from="mini",
        ),
        TestSet(name="mini", examples=rows, sha256="a" * 64, round=1, weight=2.0),
    ]


def test_every_dataset_is_scored_measured_and_traced(
    keyword_bundle: BundleFactory, tmp_path: Path
) -> None:
    bundle = keyword_bundle()
    result = evaluate(
        bundle,
        task=sentiment_spec(),
        datasets=_sets(),
        predictions_dir=tmp_path / "predictions",
        options=RunOptions(sandbox="local", measure_energy=False, seed=7),
    )
    assert [o.dataset for o in result.datasets] == ["mini", "robustness-mini"]
    assert not result.failed  # the model would answer "gold-leaked" had it seen a label
    mini = result.outcome("mini").metrics
    assert mini is not None
    rows = sentiment_rows()
    expected = compute(
        "macro_f1",
        ["positive", "negative", "neutral", "neutral"],
        [r["label"] for r in rows],
        labels=LABELS,
    )
    assert mini.perf == expected == result.summary.perf
    assert mini.examples == 4 and mini.batch_size == 2
    assert mini.throughput > 0 and mini.startup_s is not None and mini.startup_s > 0
    assert mini.latency_p50_s is not None and mini.latency_p95_s is not None
    assert mini.latency_p50_s <= mini.latency_p95_s
    assert mini.memory_gib is not None and mini.memory_gib > 0
    assert mini.cpu_seconds is not None
    assert mini.ece == pytest.approx(5.0)
    # Two batches are too few to time in segments: the set was sent three times, and the
    # throughput is the median of those runs; the worker's load was recorded meanwhile.
    assert len(mini.throughput_runs) == 3 and len(mini.latency_p50_runs) == 3
    assert mini.throughput == sorted(mini.throughput_runs)[1]
    assert mini.load is not None and 0 <= mini.load.others_cpu_share <= 1
    assert mini.load.contended == (mini.load.others_cpu_share > 0.25)
    assert mini.load.cpuset is None  # pinning is off unless asked for
    assert mini.cpu_per_example_s is not None and mini.cpu_per_example_s >= 0
    copy = result.outcome("robustness-mini").metrics
    assert copy is not None and copy.robustness == 50.0 and copy.perf is None
    assert result.summary.robustness == 50.0
    records = [
        json.loads(line)
        for line in (tmp_path / "predictions" / "mini.jsonl").read_text().splitlines()
    ]
    assert [r["uid"] for r in records] == ["s1", "s2", "s3", "s4"]
    p = result.provenance
    assert p.bundle_sha256 == bundle_digest(bundle)
    assert p.dataset_sha256 == {"robustness-mini": "b" * 64, "mini": "a" * 64}
    assert p.seed == 7 and p.sandbox == "local" and p.sandbox_isolating is False
    assert p.limits["timeout_s"] == sentiment_spec().limits.timeout_s
    assert p.cpu_model and p.evaluator_version.startswith("evalboard")
    assert result.schema_version == 1 and result.model == "keyword-model"


def test_a_copy_run_alone_predicts_the_originals_it_needs(
    keyword_bundle: BundleFactory,
) -> None:
    copy, original = _sets()
    run = evaluate_dataset(
        keyword_bundle(),
        copy,
        sentiment_spec(),
        original=original,
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    assert run.outcome.metrics is not None and run.outcome.metrics.robustness == 50.0
    assert run.outcome.metrics.examples == 2  # the originals are outside the timed phase


def test_a_copy_without_its_original_is_refused(keyword_bundle: BundleFactory) -> None:
    with pytest.raises(UsageError, match="robustness copy of 'mini'"):
        evaluate(
            keyword_bundle(),
            task=sentiment_spec(),
            datasets=_sets()[:1],
            options=RunOptions(sandbox="local", measure_energy=False),
        )


def test_unknown_label_fails_with_protocol_error_naming_it(
    keyword_bundle: BundleFactory,
) -> None:
    result = evaluate(
        keyword_bundle(mode="unknown_label"),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    failure = result.outcome("mini").failure
    assert failure is not None and failure.reason == "protocol_error"
    assert "'banana'" in failure.message
    assert result.summary.perf is None


def test_a_crash_keeps_the_reason_and_the_log_tail(keyword_bundle: BundleFactory) -> None:
    result = evaluate(
        keyword_bundle(mode="crash"),
        task=sentiment_spec(),
        datasets=_sets(),
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    assert [o.status for o in result.datasets] == ["failed", "failed"]
    failure = result.outcome("mini").failure
    assert failure is not None and failure.reason == "crashed"
    assert "deliberate crash" in failure.log_tail + failure.message


def test_energy_is_measured_and_labelled_an_estimate_without_rapl(
    keyword_bundle: BundleFactory,
) -> None:
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="local", country_iso_code="FRA"),
    )
    assert result.energy.kwh is not None and result.energy.kwh > 0
    assert result.energy.co2_kg is not None and result.energy.country_iso_code == "FRA"
    if not Path("/sys/class/powercap/intel-rapl").exists():
        assert result.energy.estimate
    metrics = result.outcome("mini").metrics
    assert metrics is not None and metrics.energy_kwh == result.energy.kwh
    # The local sandbox has no cgroup of its own: no energy of its own, missing, not zero.
    assert metrics.energy_j_per_1k is None and metrics.energy_method is None
    assert result.summary.energy_j_per_1k is None and result.provenance.power is None


def test_limits_may_tighten_the_tasks_never_loosen_them(keyword_bundle: BundleFactory) -> None:
    from evalboard.core.limits import SandboxLimits

    bundle = keyword_bundle()
    tight = evaluate(
        bundle,
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(
            sandbox="local", measure_energy=False, limits=SandboxLimits(timeout_s=60)
        ),
    )
    assert tight.provenance.limits["timeout_s"] == 60
    with pytest.raises(UsageError, match="loosens"):
        evaluate(
            bundle,
            task=sentiment_spec(),
            datasets=_sets()[1:],
            options=RunOptions(sandbox="local", limits=SandboxLimits(cpus=8)),
        )


def test_a_large_set_is_timed_in_three_segments_of_its_one_pass(
    keyword_bundle: BundleFactory,
) -> None:
    rows = [{**r, "uid": f"{r['uid']}-{i}"} for i in range(6) for r in sentiment_rows()]
    test_set = TestSet(name="big", examples=rows, sha256="c" * 64)
    run = evaluate_dataset(
        keyword_bundle(),
        test_set,
        task=sentiment_spec(),
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    metrics = run.outcome.metrics
    assert metrics is not None and metrics.examples == 24  # one pass: 12 batches of 2
    assert len(metrics.throughput_runs) == 3 and all(t > 0 for t in metrics.throughput_runs)
    assert metrics.throughput == sorted(metrics.throughput_runs)[1]


def test_a_finished_run_keeps_the_models_last_log_lines(keyword_bundle: BundleFactory) -> None:
    result = evaluate(
        keyword_bundle(log_lines=120),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    outcome = result.outcome("mini")
    assert outcome.status == "finished" and outcome.log_tail is not None
    lines = outcome.log_tail.splitlines()
    assert lines[-1].startswith("model log line 119")
    assert len(lines) <= LOG_TAIL_LINES and "model log line 69 " not in outcome.log_tail


def test_the_kept_log_is_capped_in_bytes_at_a_line_boundary(keyword_bundle: BundleFactory) -> None:
    result = evaluate(
        keyword_bundle(log_lines=40, log_width=1000),
        task=sentiment_spec(),
        datasets=_sets()[1:],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    tail = result.outcome("mini").log_tail
    assert tail is not None and len(tail.encode()) <= LOG_TAIL_BYTES
    assert tail.startswith("model log line ") and tail.splitlines()[-1].startswith(
        "model log line 39 "
    )


def test_no_log_is_kept_for_a_hidden_set(keyword_bundle: BundleFactory) -> None:
    hidden = dataclasses.replace(_sets()[1], access="hidden")
    result = evaluate(
        keyword_bundle(log_lines=5),
        task=sentiment_spec(),
        datasets=[hidden],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    outcome = result.outcome("mini")
    assert outcome.status == "finished" and outcome.log_tail is None


def test_each_dataset_has_its_share_of_the_evaluations_energy(
    keyword_bundle: BundleFactory,
) -> None:
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets(),
        options=RunOptions(sandbox="local"),
    )
    shares = [outcome.metrics.energy_kwh for outcome in result.datasets if outcome.metrics]
    assert len(shares) == 2
    assert all(kwh is not None and kwh > 0 for kwh in shares)
    assert result.energy.kwh == pytest.approx(sum(kwh or 0 for kwh in shares))


def test_cpu_per_example_is_the_timed_phases_and_a_pinned_run_names_its_cores(
    keyword_bundle: BundleFactory,
) -> None:
    # CPU work per example: the figure is the timed phase's CPU over its examples
    # (the model's start-up is not in it), read from the sandbox's own counter.
    rows = [{**row, "uid": f"e{i}"} for i, row in enumerate(sentiment_rows() * 50)]
    bundle = keyword_bundle(work=40_000)  # a few ms of CPU per example
    pinned = len(os.sched_getaffinity(0)) >= 2
    run = evaluate_dataset(
        bundle,
        TestSet(name="busy", examples=rows, sha256="c" * 64),
        sentiment_spec(),
        options=RunOptions(
            sandbox="local",
            measure_energy=False,
            limits=SandboxLimits(cpus=1),
            pin_cpus=pinned,
        ),
    )
    m = run.outcome.metrics
    assert m is not None and m.cpu_per_example_s is not None and m.cpu_seconds is not None
    assert 0 < m.cpu_per_example_s * m.examples <= m.cpu_seconds
    assert m.load is not None
    if pinned:
        assert m.load.cpuset is not None and m.load.cpuset != str(min(os.sched_getaffinity(0)))


class _Recording(FakeSandbox):
    """A fake whose preparing and starting are written down, in order, across instances."""

    events: ClassVar[list[str]] = []
    fail_build: ClassVar[bool] = False

    def _prepare(self) -> str:
        self.events.append("prepare")
        if self.fail_build:
            raise SandboxFailure(FailureReason.BUILD_FAILED, "the image did not build")
        return "image"

    def _start(self) -> ModelHello:
        assert self._prepared is not None
        self.events.append(f"start with {self._prepared.value}")
        return super()._start()


@pytest.mark.parametrize("fail_build", [False, True])
def test_the_sandbox_is_prepared_once_before_any_dataset_runs(
    keyword_bundle: BundleFactory, fail_build: bool
) -> None:
    if "recording" not in known_sandboxes():
        sandbox("recording")(_Recording)
    _Recording.events.clear()
    _Recording.fail_build = fail_build
    result = evaluate(
        keyword_bundle(),
        task=sentiment_spec(),
        datasets=_sets(),
        options=RunOptions(sandbox="recording", measure_energy=False),
    )
    if fail_build:
        # The build's failure is each dataset's, as a failed start made it before.
        assert _Recording.events == ["prepare"]
        assert [d.failure.reason for d in result.datasets if d.failure] == ["build_failed"] * 2
    else:
        assert _Recording.events == ["prepare", "start with image", "start with image"]
        assert [d.status for d in result.datasets] == ["finished", "finished"]
