"""The regression suite as a contract, end to end on real DynaSent data and a real server.

Rita uploads three releases of one model with ``evalboard model upload`` (the second
with ``--release-of``, the third naming the second in its manifest), evaluated by the
server's inline worker in the local sandbox: a bag-of-words logistic regression trained on
DynaSent round 1 dev rows 0-1199, another on rows 1200-2399, then VADER (a lexicon). The
task has 400 round 1 and 240 round 2 test examples. Release 4, a bag-of-words model
trained on round 2 dev, is gated before it is uploaded.

Every model is also loaded in this process, so each release's verdict on each case is
known beforehand: the lineage gate must block release 4 on exactly the cases an earlier
release passed and it fails (among them one that releases 1 and 2 passed and release 3
lost, so the single-baseline gate against release 3 misses it), naming release 1; the
history endpoint and the case page (Chromium) must agree; the exported suite must gate the
same bundle offline, with no server and no database, to the same verdict (local sandbox,
then once in Docker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from datasets_registry import add_dataset, create_task
from evalboard.cli import main
from evalboard.core.context import Context
from evalboard.core.states import Role
from leaderboard.accounts import create_token, create_user
from tests.conftest import make_settings
from tests.helpers.browser import ARTIFACTS, watched_page
from tests.helpers.engine import docker_engine_or_skip
from tests.helpers.sentiment_bundles import (
    BOW,
    VADER,
    load_in_process,
    read_rows,
    train_bow,
    write_bundle,
)
from tests.helpers.tasks import sentiment_spec, write_jsonl
from tests.leaderboard.conftest import serve, wait_until_ranked

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TASK = "dynasent"
SIZES = {"r1-test": ("dynasent-v1.1-round01-yelp-test.jsonl", 1, 400),
         "r2-test": ("dynasent-v1.1-round02-dynabench-test.jsonl", 2, 240)}  # fmt: skip
Case = tuple[str, str]  # (dataset, uid)


@dataclass
class Platform:
    url: str
    env: dict[str, str]
    tmp: Path
    token: str
    bundles: dict[str, Path]
    #: release name -> submission id (v1..v3 uploaded; v4 is the candidate)
    ids: dict[str, int] = field(default_factory=dict)
    #: model name -> case -> whether it passed, judged in this process
    right: dict[str, dict[Case, bool]] = field(default_factory=dict)

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).parent / "evalboard"), *args],
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    def lost_case(self) -> Case:
        """A case releases 1 and 2 passed, release 3 lost and release 4 fails."""
        found = [
            case
            for case, passed in self.right["v1"].items()
            if passed and self.right["v2"][case]
            and not self.right["v3"][case] and not self.right["v4"][case]
        ]  # fmt: skip
        assert found, "no case lost by release 3: the models changed"
        return found[0]


def _examples(dynasent: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [
            {"uid": r["text_id"], "statement": r["sentence"], "label": r["gold_label"]}
            for r in read_rows(dynasent / file)[:size]
        ]
        for name, (file, _, size) in SIZES.items()
    }


def _verdicts(bundle: Path, examples: dict[str, list[dict[str, Any]]]) -> dict[Case, bool]:
    model = load_in_process(bundle)
    verdicts = {}
    for name, rows in examples.items():
        outputs = model.predict([{"uid": r["uid"], "statement": r["statement"]} for r in rows])
        for row, output in zip(rows, outputs, strict=True):
            verdicts[(name, row["uid"])] = output["label"] == row["label"]
    return verdicts


def _upload(platform: Platform, name: str, *extra: str) -> int:
    done = platform.cli(
        "model", "upload", str(platform.bundles[name]), "--server", platform.url,
        "--token", platform.token, "--json", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    status: dict[str, Any] = json.loads(done.stdout)
    return int(status["id"])


@pytest.fixture(scope="module")
def platform(shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    tmp = tmp_path_factory.mktemp("lineage-e2e")
    dynasent = shared_datasets / "dynasent"
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    owner = create_user(ctx, "owner", password="correct-horse-battery", roles=(Role.RESEARCHER,))
    create_user(ctx, "rita", password="correct-horse-battery", roles=(Role.RESEARCHER,))
    create_user(ctx, "bob", password="correct-horse-battery", roles=(Role.RESEARCHER,))
    token, bob = create_token(ctx, "rita")[0], create_token(ctx, "bob")[0]
    create_task(ctx, sentiment_spec(id=TASK, name="DynaSent"), owner_id=owner.id)
    examples = _examples(dynasent)
    for name, (_, round_, _) in SIZES.items():
        path = write_jsonl(tmp / f"{name}.jsonl", examples[name])
        add_dataset(ctx, task_id=TASK, name=name, path=path, round=round_)
    ctx.db.dispose()
    env = {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(settings.data_dir),
        "EVALBOARD_SANDBOX": "local",
        "COLUMNS": "250",
    }
    r1_dev = read_rows(dynasent / "dynasent-v1.1-round01-yelp-dev.jsonl")
    r2_dev = read_rows(dynasent / "dynasent-v1.1-round02-dynabench-dev.jsonl")
    bundles = tmp / "bundles"
    bundles.mkdir()
    weights = {
        "v1": train_bow(r1_dev[:1200]),
        "v2": train_bow(r1_dev[1200:2400]),
        "v4": train_bow(r2_dev),
    }
    models = {
        name: write_bundle(bundles, f"bow-{name}", BOW, task=TASK, files={"weights.json": w})
        for name, w in weights.items()
        if name != "v4"
    }
    try:
        with serve(tmp / "data", tmp / "server.log", env=env) as (url, _process):
            platform = Platform(url=url, env=env, tmp=tmp, token=token, bundles=models)
            platform.ids["v1"] = _upload(platform, "v1")
            platform.ids["v2"] = _upload(platform, "v2", "--release-of", str(platform.ids["v1"]))
            # Release 3 names the model it is a release of in its manifest instead.
            models["v3"] = write_bundle(
                bundles, "vader-v3", VADER, task=TASK,
                manifest=f"release_of: {platform.ids['v2']}\n",
            )  # fmt: skip
            platform.ids["v3"] = _upload(platform, "v3")
            models["v4"] = write_bundle(
                bundles, "bow-v4", BOW, task=TASK, files={"weights.json": weights["v4"]},
                manifest=f"release_of: {platform.ids['v3']}\n",
            )  # fmt: skip
            platform.right = {name: _verdicts(models[name], examples) for name in models}
            # Hostile uploads are refused before a byte is sent, in one line each.
            refused = platform.cli(
                "model", "upload", str(models["v2"]), "--server", url, "--token", bob,
                "--release-of", str(platform.ids["v1"]),
            )  # fmt: skip
            assert refused.returncode == 2 and "only its owner" in refused.stderr, refused.stderr
            ghost = platform.cli(
                "model", "upload", str(models["v1"]), "--server", url, "--token", token,
                "--release-of", "999999",
            )  # fmt: skip
            assert ghost.returncode == 2 and "no submission 999999" in ghost.stderr
            assert len(ghost.stderr.strip().splitlines()) == 1, ghost.stderr
            wait_until_ranked(url, TASK, 3, tmp / "server.log", timeout_s=900)
            yield platform
    finally:
        shutil.rmtree(tmp / "data" / "scratch", ignore_errors=True)


def _history(platform: Platform, case: Case) -> dict[str, Any]:
    dataset, uid = case
    response = httpx.get(
        f"{platform.url}/tasks/{TASK}/cases/{uid}/history", params={"dataset": dataset}, timeout=60
    )
    assert response.status_code == 200, response.text
    (found,) = response.json()["datasets"]
    (lineage,) = found["lineages"]
    assert lineage["lineage"] == platform.ids["v1"]
    result: dict[str, Any] = lineage
    return result


def test_the_history_endpoint_and_the_pages_agree(platform: Platform, browser: Any) -> None:
    ids = platform.ids
    case = platform.lost_case()
    history = _history(platform, case)
    assert history["first_passed"]["submission_id"] == ids["v1"]
    assert [r["submission_id"] for r in history["lost_by"]] == [ids["v3"]]
    assert [r["passed"] for r in history["releases"]] == [True, True, False]
    ARTIFACTS.mkdir(exist_ok=True)
    dataset, uid = case
    with watched_page(browser) as watched:
        page = watched.page
        page.goto(f"{platform.url}/ui/tasks/{TASK}/cases/{uid}?dataset={dataset}")
        block = page.locator(f".lineage-case[data-lineage='{ids['v1']}']")
        assert block.locator(".first-passed").get_attribute("data-submission") == str(ids["v1"])
        lost = block.locator(".lost-by")
        assert [lost.nth(i).get_attribute("data-submission") for i in range(lost.count())] == [
            str(r["submission_id"]) for r in history["lost_by"]
        ]
        assert block.locator("td.verdict").all_inner_texts() == [
            "passed" if r["passed"] else "failed" for r in history["releases"]
        ]
        page.screenshot(path=str(ARTIFACTS / "case-history.png"), full_page=True)
        # The lineage page: one row per release, the API's figures, a drawn line per metric.
        lineage = httpx.get(f"{platform.url}/lineages/{ids['v3']}", timeout=60).json()
        page.goto(f"{platform.url}/ui/lineages/{ids['v3']}")
        rows = page.locator("#releases tbody tr")
        assert rows.count() == 3
        for index, release in enumerate(lineage["releases"]):
            row = rows.nth(index)
            assert row.get_attribute("data-submission") == str(release["submission_id"])
            perf = row.locator("td.metric[data-metric='perf']").inner_text()
            assert perf == f"{release['metrics']['perf']:.2f}"
            assert [d["dataset"] for d in release["datasets"]] == ["r1-test", "r2-test"]
        page.wait_for_selector("#chart-perf .main-svg")
        page.screenshot(path=str(ARTIFACTS / "lineage.png"), full_page=True)
        # The drill-down links each example to its case page.
        page.goto(f"{platform.url}/ui/tasks/{TASK}/models/{ids['v3']}?dataset=r1-test")
        first = page.locator("a.case-link").first
        linked = first.inner_text()
        with page.expect_navigation():
            first.click()
        assert page.locator("h1").inner_text() == f"Case {linked}"
        assert watched.problems == []


def _regressions(report: dict[str, Any]) -> dict[Case, list[str]]:
    return {(r["dataset"], r["uid"]): r["passed_by"] for r in report["regressions"]}


def _expected(platform: Platform, before: tuple[str, ...]) -> set[Case]:
    return {
        case
        for case, passed in platform.right["v4"].items()
        if not passed and any(platform.right[name][case] for name in before)
    }


@pytest.fixture(scope="module")
def server_gate(platform: Platform) -> dict[str, Any]:
    done = platform.cli(
        "gate", str(platform.bundles["v4"]), "--lineage", str(platform.ids["v1"]), "--json"
    )
    assert done.returncode == 1, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_gate_blocks_release_4_on_what_any_earlier_release_passed(
    platform: Platform, server_gate: dict[str, Any]
) -> None:
    found = _regressions(server_gate)
    assert set(found) == _expected(platform, ("v1", "v2", "v3"))
    case = platform.lost_case()
    first = f"release 1 (submission {platform.ids['v1']}, bow-v1)"
    assert found[case] == [first, f"release 2 (submission {platform.ids['v2']}, bow-v2)"]
    assert server_gate["baseline"] == f"lineage {platform.ids['v1']} (releases 1-3)"
    # Against release 3 alone (the single-baseline gate, unchanged), that case slips by.
    single = platform.cli(
        "gate", str(platform.bundles["v4"]), "--task", TASK,
        "--baseline", str(platform.ids["v3"]), "--json",
    )  # fmt: skip
    assert single.returncode == 1, single.stderr
    missed = _regressions(json.loads(single.stdout))
    assert set(missed) == _expected(platform, ("v3",)) and case not in missed
    # The text report names the release that passed it.
    text = platform.cli(
        "gate", str(platform.bundles["v4"]), "--lineage", str(platform.ids["v2"]),
    )  # fmt: skip
    assert text.returncode == 1
    assert f"REGRESSION {case[0]} {case[1]}: gold " in text.stdout
    assert f"first passed by {first}" in text.stdout


def _offline_env(platform: Platform) -> dict[str, str]:
    """No server, and a database that cannot be reached: the offline gate needs neither."""
    empty = platform.tmp / "offline"
    empty.mkdir(exist_ok=True)
    return {
        **platform.env,
        "EVALBOARD_DATA_DIR": str(empty),
        "EVALBOARD_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
    }


@pytest.fixture(scope="module")
def suite_file(platform: Platform) -> Path:
    server = ("--server", platform.url, "--token", platform.token)
    cut = platform.cli("suite", "create", "--task", TASK, "--json", *server)
    assert cut.returncode == 0, cut.stderr
    version = str(json.loads(cut.stdout)["version"])
    files = []
    for name in ("first.json", "again.json"):
        target = platform.tmp / name
        done = platform.cli(
            "suite", "export", "--task", TASK, "--version", version, "--out", str(target), *server
        )
        assert done.returncode == 0, done.stderr
        files.append(target)
    assert files[0].read_bytes() == files[1].read_bytes()
    return files[0]


def test_the_suite_holds_every_releases_verdict(platform: Platform, suite_file: Path) -> None:
    suite = json.loads(suite_file.read_bytes())
    names = {r["id"]: r["name"] for r in suite["releases"]}
    assert list(names.values()) == ["bow-v1", "bow-v2", "vader-v3"]
    by_name = {"bow-v1": "v1", "bow-v2": "v2", "vader-v3": "v3"}
    for dataset in suite["datasets"]:
        assert len(dataset["cases"]) == SIZES[dataset["name"]][2]
        for case in dataset["cases"]:
            (verdicts,) = case["history"].values()
            for verdict in verdicts:
                model = by_name[names[verdict["release"]]]
                assert verdict["passed"] == platform.right[model][(dataset["name"], case["uid"])]


def test_the_exported_suite_gates_offline_with_the_servers_verdict(
    platform: Platform, server_gate: dict[str, Any], suite_file: Path
) -> None:
    offline = _offline_env(platform)
    # No --lineage: release 4's manifest names release 3, whose lineage the suite holds.
    done = platform.cli("gate", str(platform.bundles["v4"]), "--suite", str(suite_file),
                        "--json", "--sandbox", "local", env=offline)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert _regressions(json.loads(done.stdout)) == _regressions(server_gate)
    assert not (Path(offline["EVALBOARD_DATA_DIR"]) / "evalboard.db").exists()


def test_a_bad_suite_or_a_suite_of_another_task_is_a_one_line_usage_error(
    platform: Platform, suite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In this process (the CLI's own main): each is refused before any model runs.
    candidate = str(platform.bundles["v4"])

    def refused(*args: str) -> str:
        assert main(list(args)) == 2, args
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith("warning")]
        assert len(lines) == 1 and lines[0].startswith("error:"), lines
        return lines[0]

    gate = ("gate", candidate, "--sandbox", "local")
    tampered = platform.tmp / "tampered.json"
    document = json.loads(suite_file.read_bytes())
    verdict = document["datasets"][0]["cases"][0]["history"][str(platform.ids["v1"])][0]
    verdict["passed"] = not verdict["passed"]
    tampered.write_text(json.dumps(document))
    assert "changed after export" in refused(*gate, "--suite", str(tampered))
    assert "not 'sentiment'" in refused(*gate, "--suite", str(suite_file), "--task", "sentiment")
    other = write_bundle(
        platform.tmp, "other-task-model", BOW, task="sentiment",
        files={"weights.json": (platform.bundles["v4"] / "weights.json").read_text()},
    )  # fmt: skip
    assert "of task 'sentiment'" in refused(
        "gate", str(other), "--sandbox", "local", "--suite", str(suite_file)
    )
    nameless = str(platform.bundles["v1"])  # no release_of in its manifest
    assert "name the lineage" in refused(
        "gate", nameless, "--sandbox", "local", "--suite", str(suite_file)
    )
    assert "--baseline" in refused(*gate, "--suite", str(suite_file), "--baseline", "3")
    target = platform.tmp / "unknown.json"
    unknown = refused(
        "suite", "export", "--task", TASK, "--version", "99", "--out", str(target),
        "--server", platform.url,
    )  # fmt: skip
    assert "no suite version 99" in unknown and not target.exists()


@pytest.fixture(scope="module")
def docker_engine() -> Any:
    return docker_engine_or_skip()


@pytest.mark.docker
def test_the_offline_gate_gives_the_same_verdict_in_docker(
    platform: Platform, server_gate: dict[str, Any], suite_file: Path, docker_engine: Any
) -> None:
    done = platform.cli("gate", str(platform.bundles["v4"]), "--suite", str(suite_file),
                        "--json", "--sandbox", "docker", env=_offline_env(platform))  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert _regressions(json.loads(done.stdout)) == _regressions(server_gate)
