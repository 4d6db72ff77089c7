"""`evalboard evaluate`: the real VADER model on the real three-dataset sentiment task, and
the exit codes a user meets."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from datasets_registry.examples import ColumnMapping
from datasets_registry.registry import add_dataset, create_task, list_datasets, read_examples
from evalboard.cli import _context, main
from evalboard.core.context import Context
from evalboard.core.settings import get_settings
from tests.evaluator.conftest import FIXTURES, BundleFactory
from tests.helpers.tasks import SENTIMENT, sentiment_rows, sentiment_spec, write_jsonl

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Run]:
    monkeypatch.setenv("EVALBOARD_DATA_DIR", str(tmp_path / "evalboard-data"))
    monkeypatch.setenv("EVALBOARD_SANDBOX", "local")
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    _context.context.cache_clear()

    def run(*args: str | Path) -> tuple[int, str, str]:
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run
    _context.context().db.dispose()
    get_settings.cache_clear()
    _context.context.cache_clear()


def _vader_in_process(examples: list[dict[str, Any]]) -> list[str]:
    spec = importlib.util.spec_from_file_location(
        "vader_handler", FIXTURES / "vader_bundle" / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model(str(FIXTURES / "vader_bundle"))
    return [output["label"] for output in model.predict(examples)]


def _add_real_task(ctx: Context, dynasent: Path) -> None:
    create_task(ctx, sentiment_spec())
    mapping = ColumnMapping(
        fields={"uid": "text_id", "statement": "sentence", "label": "gold_label"},
        exclude_labels=frozenset({"mixed", "null"}),
    )
    for name, round_, file in [
        ("r1-test", 1, "dynasent-v1.1-round01-yelp-test.jsonl"),
        ("r2-test", 2, "dynasent-v1.1-round02-dynabench-test.jsonl"),
        ("sst-dev", 0, "sst-dev-validated.jsonl"),
    ]:
        add_dataset(
            ctx, task_id="sentiment", name=name, round=round_, path=dynasent / file, mapping=mapping
        )


@pytest.mark.slow
def test_vader_on_the_real_sentiment_task_matches_in_process_macro_f1(
    cli: Run, shared_datasets: Path, tmp_path: Path
) -> None:
    from sklearn.metrics import f1_score

    ctx = _context.context()
    _add_real_task(ctx, shared_datasets / "dynasent")
    out = tmp_path / "result.json"
    code, stdout, stderr = cli(
        "evaluate",
        FIXTURES / "vader_bundle",
        "--task",
        "sentiment",
        "--sandbox",
        "local",
        "--json",
        out,
        "--predictions",
        tmp_path / "predictions",
    )
    assert code == 0, stderr
    for column in ("perf", "fair.", "robust.", "ex/s", "p95 s", "mem GiB", "CPU s", "ECE"):
        assert column in stdout
    assert "kWh" in stdout and "an estimate" in stdout
    result = json.loads(out.read_text())
    outcomes = {o["dataset"]: o for o in result["datasets"]}
    datasets = list_datasets(ctx, "sentiment")
    assert set(outcomes) == {d.name for d in datasets}
    for dataset in (d for d in datasets if d.perturbation is None):
        examples = read_examples(ctx, dataset)
        golds = [e["label"] for e in examples]
        expected = 100 * f1_score(golds, _vader_in_process(examples), average="macro")
        metrics = outcomes[dataset.name]["metrics"]
        assert abs(metrics["perf"] - expected) <= 1e-9, dataset.name
        assert metrics["examples"] == len(examples) == dataset.rows
        assert metrics["throughput"] > 0 and metrics["memory_gib"] > 0
        assert 0 <= metrics["ece"] <= 100
    for kind in ("fairness", "robustness"):
        copies = [o for o in outcomes.values() if o["perturbation"] == kind]
        assert copies and all(0 <= o["metrics"][kind] <= 100 for o in copies)
        assert result["summary"][kind] is not None
    assert result["energy"]["kwh"] > 0 and result["provenance"]["sandbox"] == "local"
    assert (tmp_path / "predictions" / "r1-test.jsonl").exists()


def _task_file(tmp_path: Path) -> Path:
    path = tmp_path / "sentiment.yaml"
    path.write_text(yaml.safe_dump(SENTIMENT))
    return path


def test_a_model_failure_exits_1_with_the_reason_and_log_tail(
    cli: Run, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    code, _, stderr = cli(
        "evaluate",
        keyword_bundle(mode="crash"),
        "--task-file",
        _task_file(tmp_path),
        "--dataset",
        data,
        "--no-energy",
    )
    assert code == 1
    assert "crashed" in stderr and "deliberate crash" in stderr


def test_json_to_stdout_with_a_task_file(
    cli: Run, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    code, stdout, _ = cli(
        "evaluate",
        keyword_bundle(),
        "--task-file",
        _task_file(tmp_path),
        "--dataset",
        data,
        "--json",
        "-",
        "--no-energy",
    )
    assert code == 0
    result = json.loads(stdout)
    assert result["schema_version"] == 1 and result["datasets"][0]["dataset"] == "mini"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "sentiment", "--task-file", "x.yaml"], "not both"),
        (["--dataset", "x.jsonl"], "--dataset goes with --task-file"),
    ],
)
def test_bad_usage_exits_2(
    cli: Run, keyword_bundle: BundleFactory, args: list[str], message: str
) -> None:
    code, _, stderr = cli("evaluate", keyword_bundle(), *args)
    assert code == 2 and message in stderr


@pytest.mark.parametrize(
    ("name", "reason"), [("missing.jsonl", "No such file or directory"), ("", "Is a directory")]
)
def test_a_dataset_file_that_cannot_be_read_exits_2_with_one_line(
    cli: Run, tmp_path: Path, keyword_bundle: BundleFactory, name: str, reason: str
) -> None:
    path = tmp_path / name
    code, _, stderr = cli(
        "evaluate",
        keyword_bundle(),
        "--task-file",
        _task_file(tmp_path),
        "--dataset",
        path,
        "--no-energy",
    )
    assert code == 2
    assert stderr.strip() == f"error: {path} cannot be read: {reason}"


@pytest.mark.parametrize(
    ("option", "target", "message"),
    [
        ("--json", "no-such-folder/result.json", "cannot write in"),
        ("--json", ".", "is a directory; give a file name"),
        ("--predictions", "mini.jsonl", "cannot be made a directory: File exists"),
        ("--predictions", "mini.jsonl/under", "cannot be made a directory"),
    ],
)
def test_an_output_that_cannot_be_written_exits_2_before_the_model_runs(
    cli: Run,
    tmp_path: Path,
    keyword_bundle: BundleFactory,
    option: str,
    target: str,
    message: str,
) -> None:
    """Not after a whole evaluation, its result lost to a traceback."""
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    code, stdout, stderr = cli(
        "evaluate",
        keyword_bundle(mode="crash"),  # it would exit 1 had it run
        "--task-file",
        _task_file(tmp_path),
        "--dataset",
        data,
        "--no-energy",
        option,
        tmp_path / target,
    )
    assert code == 2, stderr
    assert stderr.startswith(f"error: {option}") and message in stderr
    assert len(stderr.strip().splitlines()) == 1 and not stdout


def test_an_output_folder_is_not_made_for_a_command_that_fails_before_it(
    cli: Run, tmp_path: Path
) -> None:
    """The predictions folder is made by the last check: a typo elsewhere leaves none."""
    target = tmp_path / "out" / "predictions"
    code, _, stderr = cli(
        "evaluate", tmp_path / "no-such-bundle", "--predictions", target, "--no-energy"
    )
    assert code == 2 and "does not exist" in stderr
    assert not (tmp_path / "out").exists()


_AS_NOBODY = """
import sys
from pathlib import Path
from evalboard.cli.evaluate import _check_outputs
from evalboard.core.errors import UsageError
try:
    _check_outputs(Path(sys.argv[1]), None)
except UsageError as exc:
    print(exc.message)
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become nobody"
)
def test_a_read_only_json_file_is_refused_before_the_run(tmp_path: Path) -> None:
    """Root may write any file: the check is run as nobody, as a user of the CLI would."""
    folder = Path(tempfile.mkdtemp(prefix="evalboard-readonly-", dir="/tmp"))
    try:
        folder.chmod(0o777)  # nobody may write here, not to the file
        result = folder / "result.json"
        result.write_text("{}")
        result.chmod(0o444)
        become = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        probe = subprocess.run(
            [*become, sys.executable, "-c", "import evalboard.cli.evaluate"],
            capture_output=True,
            text=True,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
            check=False,
        )
        if probe.returncode != 0:
            pytest.skip(f"nobody cannot import the checkout here: {probe.stderr[-200:]}")
        done = subprocess.run(
            [*become, sys.executable, "-c", _AS_NOBODY, str(result)],
            capture_output=True,
            text=True,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
            check=True,
        )
        assert done.stdout.strip() == f"--json {result} is read-only; give another file"
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("command", [["evaluate"], ["model", "test"], ["worker"]])
def test_help_lists_every_sandbox_and_the_default(cli: Run, command: list[str]) -> None:
    code, stdout, _ = cli(*command, "--help")
    assert code == 0
    text = " ".join(stdout.split())
    for kind in ("gvisor", "docker", "local", "auto"):
        assert kind in text, kind
    assert "EVALBOARD_SANDBOX" in text


def test_an_unknown_sandbox_exits_2_listing_the_known_ones(
    cli: Run, keyword_bundle: BundleFactory
) -> None:
    code, _, stderr = cli("evaluate", keyword_bundle(), "--sandbox", "vm")
    assert code == 2
    assert "Unknown sandbox 'vm'; known: auto, docker, gvisor, local" in " ".join(stderr.split())


_EARLY_ERRORS = """
import contextlib, io, json, sys
from evalboard.cli import main

codes = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(main(argv))
print(json.dumps({"codes": codes, "meter": "codecarbon" in sys.modules}))
"""


def test_an_early_error_with_energy_starts_no_energy_meter(
    tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    # A bad bundle or task is told at once, with no codecarbon set-up to wait for: a first
    # one after a boot probes the hardware (about 1.5 s), and the process's exit waits.
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    task_file = _task_file(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "evalboard.yaml").write_text("name: bad\ntask: sentiment\n")
    misfit = tmp_path / "misfit"  # its prompt names {review}; the task's input is `statement`
    (misfit / "model").mkdir(parents=True)
    (misfit / "model" / "config.json").write_text("{}")
    (misfit / "evalboard.yaml").write_text(
        'name: g\ntask: sentiment\nruntime: transformers\nmodel: model\nprompt: "{review}"\n'
    )
    bundle = keyword_bundle()
    cases = [
        [bad, "--task-file", task_file, "--dataset", data],  # not a valid manifest
        [bundle, "--task-file", task_file],  # no dataset
        [bundle, "--task", "no-such-task"],  # not registered
        [misfit, "--task-file", task_file, "--dataset", data],  # evaluate()'s own check
    ]
    argvs = [["evaluate", *map(str, case), "--sandbox", "local", "--energy"] for case in cases]
    done = subprocess.run(
        [sys.executable, "-c", _EARLY_ERRORS, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path / "data")},
        timeout=300,
        check=True,
    )
    assert json.loads(done.stdout) == {"codes": [2, 2, 2, 2], "meter": False}


def _evaluate_in_a_process(
    tmp_path: Path, bundle: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it (the console decides at start-up)."""
    # A dataset name longer than a terminal column: it must come out whole.
    data = write_jsonl(
        tmp_path / "a-rather-long-dataset-name-from-round-one.jsonl", sentiment_rows()
    )
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "evalboard"),
            "evaluate",
            str(bundle),
            "--task-file",
            str(_task_file(tmp_path)),
            "--dataset",
            str(data),
            "--sandbox",
            "local",
            "--no-energy",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path / "data"), **env},
        timeout=300,
        check=False,
    )


def test_the_summary_fits_80_columns_on_a_terminal(
    tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    # TTY_COMPATIBLE is rich's switch for "treat the output as a terminal".
    result = _evaluate_in_a_process(
        tmp_path, keyword_bundle(), {"TTY_COMPATIBLE": "1", "COLUMNS": "80", "NO_COLOR": "1"}
    )
    assert result.returncode == 0, result.stderr
    lines = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout).splitlines()
    table_lines = [line for line in lines if "│" in line or "┃" in line]
    assert len(table_lines) >= 6
    assert max(len(line) for line in table_lines) <= 80
    assert "…" not in result.stdout
    for column in ("perf", "fair.", "robust.", "ECE", "ex/s", "p95 s", "mem GiB", "CPU s"):
        assert column in result.stdout


def test_the_summary_in_a_pipe_is_tab_separated_and_whole(
    tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    result = _evaluate_in_a_process(tmp_path, keyword_bundle(), {"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    header = rows[0]
    assert header[:4] == ["dataset", "round", "n", "perf"] and "kWh" in header
    assert all(len(row) == len(header) for row in rows)
    names = [row[0] for row in rows[1:]]
    assert "a-rather-long-dataset-name-from-round-one" in names
    assert "task (weighted)" in names
    assert "…" not in result.stdout


@pytest.mark.parametrize(
    ("variable", "value"),
    [("EVALBOARD_WORKER_CONCURRENCY", "0"), ("EVALBOARD_ENVIRONMENT", "production")],
)
def test_a_bad_setting_exits_2_as_every_command_reports_it(
    cli: Run,
    tmp_path: Path,
    keyword_bundle: BundleFactory,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    # --sandbox given, --pin-cpus not: evaluate still reads the settings, and refuses them.
    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    argv = ["--task-file", _task_file(tmp_path), "--dataset", data, "--sandbox", "local"]
    with monkeypatch.context() as env:
        env.setenv(variable, value)
        env.delenv("EVALBOARD_SECRET_KEY", raising=False)
        get_settings.cache_clear()
        code, stdout, stderr = cli("evaluate", keyword_bundle(), *argv, "--no-energy")
        elsewhere = cli("task", "list")
    get_settings.cache_clear()
    assert (code, stdout, stderr) == elsewhere
    assert code == 2 and stderr.count("error:") == 1 and "Traceback" not in stderr
    assert stderr.startswith("error: An EVALBOARD_* setting cannot be used")


@pytest.mark.docker
@pytest.mark.slow
def test_a_terminated_evaluate_removes_its_container(
    tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    """SIGTERM (a `timeout`, a CI's cancel, `kill`) ends a command as Ctrl-C does: its
    sandbox's container removed, not left for a later reaper."""
    import docker
    from submission_sandbox.build import LABEL

    data = write_jsonl(tmp_path / "mini.jsonl", sentiment_rows())
    command = [
        str(Path(sys.executable).parent / "evalboard"),
        "evaluate",
        str(keyword_bundle(delay_s=1.0)),  # a second a batch: it is still running when told
        "--task-file",
        str(_task_file(tmp_path)),
        "--dataset",
        str(data),
        "--sandbox",
        "docker",
        "--no-energy",
    ]
    env = {**os.environ, "EVALBOARD_DATA_DIR": str(tmp_path / "data")}
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    engine = docker.from_env()
    owned = {"label": f"{LABEL}.owner={socket.gethostname()}:{process.pid}"}
    try:
        deadline = time.monotonic() + 120
        while not engine.containers.list(filters=owned):
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the model's container never started"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr[-2000:]
        assert "Traceback" not in stderr
        assert engine.containers.list(all=True, filters=owned) == []
    finally:
        process.kill()
        engine.close()
