"""Drift-fed capture end to end on real data and a real ``evalboard serve`` (issue 17).

A DynaSent task whose reference is a seeded 300-row part of round 1's test set and a hidden
150-row part of round 2's. SST-2 test sentences (movie reviews) sent as traffic are
reported shifted (p < 0.01) and their most shifted inputs queued unlabeled; held-out
DynaSent test sentences in the same 2:1 mix are not (p > 0.05). The queued inputs reach
the validators' queue, are labelled, and enter round 1's dataset when the owner closes
it. Around it, the attacks: callers without the role, empty, one-row, oversized, binary
and mis-fielded files; a monitor learns the statistics only; the hidden set is never
named; the owner's drift page draws its plot in Chromium.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from datasets_registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.states import Access, Role
from leaderboard.accounts import create_token, create_user, grant_role
from tests.conftest import make_settings
from tests.helpers.browser import chromium, sign_in, watched_page
from tests.helpers.tasks import sentiment_spec, write_jsonl
from tests.leaderboard.conftest import serve
from tests.loop.conftest import add_submission

pytestmark = pytest.mark.slow

TASK = "dynasent"
PASSWORD = "correct-horse-battery"
TRAFFIC = 300


@dataclass
class Platform:
    url: str
    env: dict[str, str]
    tokens: dict[str, str]
    target: int
    tmp: Path
    sst_rows: list[dict[str, str]]
    hidden_texts: list[str]
    sst: dict[str, Any]  # the SST check, as `evalboard drift check --json` printed it
    sst_exit: int
    held_out: dict[str, Any]  # the held-out DynaSent check, as the API answered

    def post(
        self, who: str | None, content: bytes, name: str = "t.jsonl", **form: str
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.post(
            f"{self.url}/tasks/{TASK}/traffic",
            headers=headers,
            files={"file": (name, content)},
            data=form,
            timeout=300,
        )

    def api(self, method: str, path: str, who: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=60, **kwargs)


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _csv(rows: list[dict[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["label", "sentence"])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def platform(shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    tmp = tmp_path_factory.mktemp("drift")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    people = {
        "owner": (Role.RESEARCHER,),
        "prod": (),
        "rita": (Role.RESEARCHER,),
        **{f"val{i}": (Role.ANNOTATOR,) for i in (1, 2, 3)},
    }
    owner_id = 0
    for name, roles in people.items():
        user = create_user(ctx, name, password=PASSWORD, roles=roles)
        owner_id = user.id if name == "owner" else owner_id
    create_task(ctx, sentiment_spec(id=TASK, name="DynaSent"), owner_id=owner_id)
    grant_role(ctx, "prod", Role.MONITOR, task_id=TASK)
    tokens = {name: create_token(ctx, name)[0] for name in people}

    dynasent = shared_datasets / "dynasent"

    def shuffled(file: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in (dynasent / file).read_text().splitlines()]
        random.Random(17).shuffle(rows)
        return rows

    r1 = shuffled("dynasent-v1.1-round01-yelp-test.jsonl")
    r2 = shuffled("dynasent-v1.1-round02-dynabench-test.jsonl")
    for name, rows, access in (
        ("r1-test-part", r1[:300], Access.SCORING),
        ("r2-secret", r2[:150], Access.HIDDEN),
    ):
        examples = [
            {"uid": r["text_id"], "statement": r["sentence"], "label": r["gold_label"]}
            for r in rows
        ]
        add_dataset(
            ctx,
            task_id=TASK,
            name=name,
            path=write_jsonl(tmp / f"{name}.jsonl", examples),
            access=access,
            perturb=False,
        )
    target = add_submission(ctx, TASK, "target")  # a round's target (never run here)
    ctx.db.dispose()
    # The held-out part: the rest of both test sets, in the reference's 2:1 mix.
    held_out = _jsonl([{"statement": r["sentence"]} for r in r1[300:500] + r2[150:250]])
    with (shared_datasets / "sst" / "sst2_csv" / "test.csv").open(newline="") as handle:
        sst_rows = list(csv.DictReader(handle))
    sst = tmp / "sst-traffic.csv"
    with sst.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["label", "sentence"])
        writer.writeheader()
        writer.writerows(sst_rows[:TRAFFIC])

    env = {**os.environ, "EVALBOARD_DATA_DIR": str(settings.data_dir), "COLUMNS": "200"}
    with serve(settings.data_dir, tmp / "server.log", env=env, args=("--no-worker",)) as (url, _):
        # The owner's CLI against the server: the SST file as it comes (label,sentence).
        done = subprocess.run(
            [str(Path(sys.executable).parent / "evalboard"), "drift", "check", str(sst),
             "--task", TASK, "--map", "statement=sentence", "--server", url,
             "--token", tokens["owner"], "--json"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        platform = Platform(
            url=url,
            env=env,
            tokens=tokens,
            target=target,
            tmp=tmp,
            sst_rows=sst_rows,
            hidden_texts=[r["sentence"] for r in r2[:150]],
            sst=json.loads(done.stdout),
            sst_exit=done.returncode,
            held_out={},
        )
        answer = platform.post("owner", held_out, "held-out.jsonl")
        assert answer.status_code == 201, answer.text
        platform.held_out = answer.json()
        yield platform


def test_sst_traffic_is_shifted_and_held_out_dynasent_is_not(platform: Platform) -> None:
    sst, held = platform.sst, platform.held_out
    assert sst["shifted"] and sst["p_value"] < 0.01 and platform.sst_exit == 1
    assert sst["auc"] > 0.8 and sst["auc_interval"][0] <= sst["auc"] <= sst["auc_interval"][1]
    assert (sst["n_traffic"], sst["n_reference"]) == (TRAFFIC, 450)
    assert sst["verdict"].startswith("SHIFTED")
    assert not held["shifted"] and held["p_value"] > 0.05
    assert 0.4 < held["auc"] < 0.6 and held["queued"] == []
    for check in (sst, held):
        assert check["n_permutations"] == 999 and check["method"].startswith("domain classifier")
        histogram = check["histogram"]
        assert sum(histogram["traffic"]) == check["n_traffic"]
        assert sum(histogram["reference"]) == check["n_reference"]
    listed = platform.api("GET", f"/tasks/{TASK}/traffic", "owner").json()
    assert [c["number"] for c in listed] == [held["number"], sst["number"]]


def test_the_hidden_set_counts_but_is_never_named_or_shown(platform: Platform) -> None:
    for check in (platform.sst, platform.held_out):
        assert check["reference"]["datasets"] == [{"name": "r1-test-part", "inputs": 300}]
        assert check["reference"]["hidden"] == {"datasets": 1, "inputs": 150}
    for who in ("owner", "prod"):
        shown = platform.api("GET", f"/tasks/{TASK}/traffic/{platform.sst['number']}", who).text
        assert "r2-secret" not in shown
        assert not any(text in shown for text in platform.hidden_texts)
    page = platform.api("GET", f"/ui/tasks/{TASK}/drift", "owner").text
    assert "r2-secret" not in page and "1 hidden set(s) (150)" in page


def test_queued_inputs_are_labelled_by_validators_and_enter_the_round(
    platform: Platform,
) -> None:
    queued = platform.sst["queued"]
    assert len(queued) == 20 and platform.sst["top"][0]["example_id"] == queued[0]
    waiting = platform.api(
        "GET", f"/tasks/{TASK}/validations/queue", "val1", params={"limit": 100}
    ).json()
    assert {e["id"] for e in waiting} >= set(queued)
    first = next(e for e in waiting if e["id"] == queued[0])
    assert first["source"] == "traffic" and first["gold"] == {} and first["round"] is None
    opened = platform.api(
        "POST", f"/tasks/{TASK}/rounds", "owner", json={"submission_ids": [platform.target]}
    )
    assert opened.status_code == 201, opened.text
    number = opened.json()["number"]
    # A verdict is not what a production input takes; a label is.
    judged = platform.api(
        "POST", f"/examples/{queued[0]}/validations", "val1", json={"verdict": "correct"}
    )
    assert judged.status_code == 400 and "give its label" in judged.json()["detail"]
    labels = {queued[0]: "positive", queued[1]: "negative"}
    for example_id, label in labels.items():
        for who in ("val1", "val2", "val3"):
            voted = platform.api(
                "POST", f"/examples/{example_id}/validations", who, json={"label": label}
            )
            assert voted.status_code == 201, voted.text
        assert voted.json()["status"] == "verified" and voted.json()["gold"] == {"label": label}
        assert voted.json()["verdicts"] == {label: 3}
    closed = platform.api("POST", f"/tasks/{TASK}/rounds/{number}/close", "owner")
    assert closed.status_code == 200, closed.text
    assert closed.json()["dataset"] == f"round-{number}" and closed.json()["examples"] == 2
    rows = [
        json.loads(line)
        for line in platform.api(
            "GET", f"/tasks/{TASK}/datasets/round-{number}/examples", "owner"
        ).text.splitlines()
    ]
    texts = {e["id"]: e["inputs"]["statement"] for e in waiting}
    assert {r["statement"]: r["label"] for r in rows} == {
        texts[i]: label for i, label in labels.items()
    }


def test_a_monitor_learns_the_statistics_and_nothing_of_what_was_queued(
    platform: Platform,
) -> None:
    content = _csv(platform.sst_rows[TRAFFIC : TRAFFIC + 100])
    answer = platform.post("prod", content, "sst.csv", map="statement=sentence", queue="5")
    assert answer.status_code == 201, answer.text
    check = answer.json()
    assert check["shifted"] and check["p_value"] < 0.01
    assert check["queued"] is None and check["top"] is None and check["duplicates"] is None
    assert check["reference"]["hidden"] == {"datasets": 1, "inputs": 150}
    # The owner sees what the monitor's traffic queued.
    owners = platform.api("GET", f"/tasks/{TASK}/traffic/{check['number']}", "owner").json()
    assert len(owners["queued"]) == 5 and len(owners["top"]) == 10
    # A monitor may read the checks, not the owner's page.
    assert platform.api("GET", f"/tasks/{TASK}/traffic", "prod").status_code == 200
    assert platform.api("GET", f"/ui/tasks/{TASK}/drift", "prod").status_code == 403


_BIG = b'{"statement": "a sentence of production traffic"}\n' * (50 * 1024**2 // 50)
_ROWS = b'{"statement": "x"}\n' * 30


@pytest.mark.parametrize(
    ("who", "content", "name", "form", "status", "words"),
    [
        pytest.param(None, _ROWS, "t.jsonl", {}, 401, "Sign in first", id="anonymous"),
        pytest.param("rita", _ROWS, "t.jsonl", {}, 403, "monitor role", id="researcher"),
        pytest.param("val1", _ROWS, "t.jsonl", {}, 403, "monitor role", id="annotator"),
        pytest.param("owner", b"", "t.jsonl", {}, 400, "holds no inputs", id="0-rows"),
        pytest.param("owner", _ROWS[:19], "t.jsonl", {}, 400, "at least 20 traffic", id="1-row"),
        pytest.param("owner", _BIG, "big.jsonl", {}, 413, "at most 32 MiB", id="50-MB"),
        pytest.param(
            "owner", _ROWS * 67, "t.jsonl", {}, 400, "more than 2,000 inputs", id="2010-rows"
        ),
        pytest.param(
            "owner",
            b'{"statement": "a"}\n\x00\x00\xff\n',
            "t.jsonl",
            {},
            400,
            "NUL bytes",
            id="binary",
        ),  # fmt: skip
        pytest.param(
            "owner",
            b'{"statement": "a\\u0000b"}\n',
            "t.jsonl",
            {},
            400,
            "NUL character",
            id="escaped-NUL",
        ),  # fmt: skip
        pytest.param(
            "owner",
            b'{"text": "wrong field"}\n',
            "t.jsonl",
            {},
            400,
            "missing field 'statement'",
            id="wrong-field",
        ),  # fmt: skip
        pytest.param(
            "owner",
            b"sentence\nfine\n",
            "t.csv",
            {},
            400,
            "map statement=COLUMN",
            id="csv-unmapped",
        ),  # fmt: skip
        pytest.param("owner", _ROWS, "t.jsonl", {"queue": "1000"}, 422, "queue", id="queue"),
    ],
)
def test_hostile_traffic_is_refused_clearly_and_nothing_is_stored(
    platform: Platform,
    who: str | None,
    content: bytes,
    name: str,
    form: dict[str, str],
    status: int,
    words: str,
) -> None:
    before = len(platform.api("GET", f"/tasks/{TASK}/traffic", "owner").json())
    answer = platform.post(who, content, name, **form)
    assert answer.status_code == status, answer.text
    assert words in answer.text
    assert len(platform.api("GET", f"/tasks/{TASK}/traffic", "owner").json()) == before


def test_an_anonymous_flood_is_cut_by_the_body_cap(platform: Platform) -> None:
    answer = platform.post(None, _BIG, "big.jsonl")
    assert answer.status_code == 413


@pytest.mark.browser
def test_the_owner_sees_the_drift_plot_and_a_validator_labels_in_the_browser(
    platform: Platform,
) -> None:
    fresh = _csv(platform.sst_rows[TRAFFIC + 100 : TRAFFIC + 200])
    answer = platform.post("owner", fresh, "sst.csv", map="statement=sentence", queue="3")
    assert answer.status_code == 201 and len(answer.json()["queued"]) == 3, answer.text
    with chromium() as browser:
        with watched_page(browser) as watched:
            page = watched.page
            sign_in(page, platform.url, "owner", PASSWORD, f"/ui/tasks/{TASK}/drift")
            page.goto(f"{platform.url}/ui/tasks/{TASK}/drift?check={platform.sst['number']}")
            assert page.locator("#verdict").inner_text().startswith("SHIFTED")
            page.wait_for_selector("#chart-drift .main-svg")
            assert page.locator("#shifted tbody tr").count() >= 20
            assert page.locator("#checks tbody tr").count() >= 2
            assert watched.problems == []
        with watched_page(browser) as watched:
            page = watched.page
            sign_in(page, platform.url, "val2", PASSWORD, f"/ui/tasks/{TASK}/validate")
            assert "production input" in page.locator("#example-source").inner_text()
            page.locator("#verdict-form button[value=neutral]").click()
            page.wait_for_url(f"**/ui/tasks/{TASK}/validate")
            assert "neutral recorded" in page.content()
            assert watched.problems == []
