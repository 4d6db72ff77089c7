"""The foundation's CLI journeys, on the real DynaSent and SST data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalboard.cli import _context
from evalboard.core.settings import get_settings
from tests.cli.conftest import Cli

DYNASENT_MAP = ["--map", "statement=sentence", "--map", "label=gold_label", "--map", "uid=text_id"]


@pytest.fixture
def sentiment_task(cli: Cli, task_file: Path) -> Cli:
    assert cli("task", "create", task_file).code == 0
    return cli


def _add_real_datasets(cli: Cli, dynasent: Path) -> list[int]:
    runs = [
        ("r1-test", "1", dynasent / "dynasent-v1.1-round01-yelp-test.jsonl", []),
        ("r2-test", "2", dynasent / "dynasent-v1.1-round02-dynabench-test.jsonl", []),
        (
            "sst-dev",
            "0",
            dynasent / "sst-dev-validated.jsonl",
            ["--exclude-label", "mixed", "--exclude-label", "null"],
        ),
    ]
    codes = []
    for name, round_, path, extra in runs:
        result = cli(
            "dataset",
            "add",
            "--task",
            "sentiment",
            "--name",
            name,
            "--round",
            round_,
            *DYNASENT_MAP,
            *extra,
            path,
        )
        codes.append(result.code)
    return codes


@pytest.mark.slow
def test_three_dataset_sentiment_task_from_real_data(
    sentiment_task: Cli, shared_datasets: Path
) -> None:
    cli = sentiment_task
    dynasent = shared_datasets / "dynasent"
    assert _add_real_datasets(cli, dynasent) == [0, 0, 0]
    listing = json.loads(cli("dataset", "list", "--task", "sentiment", "--json").out)
    originals = {d["name"]: d for d in listing if d["derived_from"] is None}
    # Row counts of the data's README (SST dev: 1,101 less 172 mixed or unlabelled).
    assert {name: d["rows"] for name, d in originals.items()} == {
        "r1-test": 3600,
        "r2-test": 720,
        "sst-dev": 929,
    }
    derived = {d["name"]: d for d in listing if d["derived_from"] is not None}
    for name in originals:
        assert derived[f"robustness-{name}"]["derived_from"] == name
        assert derived[f"fairness-{name}"]["derived_from"] == name
        assert 0 < derived[f"robustness-{name}"]["rows"] <= originals[name]["rows"]

    again = cli(
        "dataset",
        "add",
        "--task",
        "sentiment",
        "--name",
        "r2-test",
        "--round",
        "2",
        *DYNASENT_MAP,
        dynasent / "dynasent-v1.1-round02-dynabench-test.jsonl",
    )
    assert again.code == 0 and "nothing to do" in again.out


def test_corrupted_copy_is_refused_with_the_line_named(
    sentiment_task: Cli, shared_datasets: Path, tmp_path: Path
) -> None:
    lines = (
        (shared_datasets / "dynasent/dynasent-v1.1-round02-dynabench-test.jsonl")
        .read_text()
        .splitlines()
    )
    lines[41] = lines[41][: len(lines[41]) // 2]  # a truncated line in the middle
    corrupted = tmp_path / "r2-corrupted.jsonl"
    corrupted.write_text("\n".join(lines) + "\n")
    result = sentiment_task(
        "dataset", "add", "--task", "sentiment", "--name", "r2", *DYNASENT_MAP, corrupted
    )
    assert result.code == 2
    assert "line 42: not valid JSON" in result.err
    assert json.loads(sentiment_task("dataset", "list", "--task", "sentiment", "--json").out) == []


def test_perturbed_files_are_byte_identical_across_runs(
    cli: Cli,
    task_file: Path,
    shared_datasets: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = shared_datasets / "dynasent/dynasent-v1.1-round02-dynabench-test.jsonl"
    digests = []
    for attempt in range(2):
        data_dir = tmp_path / f"run{attempt}"
        monkeypatch.setenv("EVALBOARD_DATA_DIR", str(data_dir))
        get_settings.cache_clear()
        _context.context.cache_clear()
        assert cli("task", "create", task_file).code == 0
        assert (
            cli("dataset", "add", "--task", "sentiment", "--name", "r2", *DYNASENT_MAP, source).code
            == 0
        )
        listing = json.loads(cli("dataset", "list", "--task", "sentiment", "--json").out)
        digests.append({d["name"]: d["sha256"] for d in listing})
    assert digests[0] == digests[1]
    assert {"robustness-r2", "fairness-r2"} <= set(digests[0])


def test_export_round_trips_and_hides_hidden_labels(
    sentiment_task: Cli, shared_datasets: Path, tmp_path: Path
) -> None:
    source = shared_datasets / "dynasent/dynasent-v1.1-round02-dynabench-test.jsonl"
    assert (
        sentiment_task(
            "dataset",
            "add",
            "--task",
            "sentiment",
            "--name",
            "secret",
            "--access",
            "hidden",
            "--no-perturb",
            *DYNASENT_MAP,
            source,
        ).code
        == 0
    )
    refused = sentiment_task("dataset", "export", "secret", "--task", "sentiment")
    assert refused.code == 2 and "owner" in refused.err
    out = tmp_path / "inputs.jsonl"
    assert (
        sentiment_task(
            "dataset", "export", "secret", "--task", "sentiment", "--no-labels", "--out", out
        ).code
        == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 720 and all(set(row) == {"uid", "statement"} for row in rows)


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("bad_yaml", ["task", "create", "{file}"], "not valid YAML"),
        (
            "none",
            ["dataset", "add", "--task", "nope", "--name", "x", "{file}"],
            "Unknown task 'nope'",
        ),
        (
            "unknown_label",
            ["dataset", "add", "--task", "sentiment", "--name", "x", "{file}"],
            "unknown label 'angry'",
        ),
        (
            "missing_column",
            ["dataset", "add", "--task", "sentiment", "--name", "x", "{file}"],
            "missing field 'statement'",
        ),
        (
            "empty",
            ["dataset", "add", "--task", "sentiment", "--name", "x", "{file}"],
            "holds no examples",
        ),
        (
            "binary",
            ["dataset", "add", "--task", "sentiment", "--name", "x", "{file}"],
            "binary file",
        ),
        (
            "huge_line",
            ["dataset", "add", "--task", "sentiment", "--name", "x", "{file}"],
            "longer than 4 MiB",
        ),
    ],
)
def test_wrong_input_exits_2_with_a_fix_and_no_traceback(
    cli_process: Cli, task_file: Path, tmp_path: Path, setup: str, args: list[str], message: str
) -> None:
    path = tmp_path / ("task.yaml" if setup == "bad_yaml" else "data.jsonl")
    contents = {
        "bad_yaml": b"id: [unclosed\n",
        "none": b'{"statement": "a", "label": "neutral"}\n',
        "unknown_label": b'{"statement": "a", "label": "angry"}\n',
        "missing_column": b'{"text": "a", "label": "neutral"}\n',
        "empty": b"",
        "binary": bytes(range(256)) * 64,
    }
    if setup == "huge_line":
        with path.open("wb") as handle:  # a 200 MB line
            handle.write(b'{"statement": "')
            block = b"a" * (1 << 20)
            for _ in range(200):
                handle.write(block)
            handle.write(b'", "label": "neutral"}\n')
    else:
        path.write_bytes(contents[setup])
    if setup != "bad_yaml":
        assert cli_process("task", "create", task_file).code == 0
    result = cli_process(*[a.replace("{file}", str(path)) for a in args])
    assert result.code == 2, result
    assert message in result.err
    assert "Traceback" not in result.err + result.out


def test_a_piped_table_keeps_every_value_whole(sentiment_task: Cli, tmp_path: Path) -> None:
    """`evalboard dataset list | grep ...`: tab-separated, nothing cut at 80 columns."""
    from tests.helpers.tasks import sentiment_rows, write_jsonl

    name = "a-dataset-name-long-enough-to-be-cut-in-a-table"
    data = write_jsonl(tmp_path / "rows.jsonl", sentiment_rows())
    added = sentiment_task("dataset", "add", "--task", "sentiment", "--name", name, data)
    assert added.code == 0, added.err
    listed = sentiment_task("dataset", "list", "--task", "sentiment")
    assert listed.code == 0 and "…" not in listed.out
    rows = [line.split("\t") for line in listed.out.splitlines()]
    assert rows[0][:2] == ["name", "round"] and all(len(row) == len(rows[0]) for row in rows)
    names = {row[0] for row in rows[1:]}
    assert {name, f"fairness-{name}", f"robustness-{name}"} <= names
    parents = {row[0]: row[rows[0].index("derived from")] for row in rows[1:]}
    assert parents[f"fairness-{name}"] == parents[f"robustness-{name}"] == name
