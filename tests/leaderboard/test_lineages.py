"""Lineages, per-case history and suite files through the API, on a seeded platform.

Three releases of alice's model are stored with predictions chosen per example (so every
verdict is known): release 1 fails test examples 0-9, release 2 fails 5-14 (it loses
10-14), release 3 fails 12-20 (it regains 10-11 and loses 15-20); on the hidden set only
release 2 fails one example. The rules for naming a release (whose, which task, what
exists) go through the real upload API.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from datasets_registry import list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import Dataset, Job, Result, Submission, utcnow
from evaluator.result import SCHEMA_VERSION, DatasetMetrics
from leaderboard import create_app
from leaderboard.accounts import principal_for
from leaderboard.lineages import lineage_to_join
from leaderboard.loop import parse_suite
from submission_sandbox.bundle import package_bundle
from tests.conftest import make_settings
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import LABELS, TASK, Seeded, seed

pytestmark = pytest.mark.anyio

RELEASE_WRONG = {1: range(0, 10), 2: range(5, 15), 3: range(12, 21)}


def _wrong(label: str) -> str:
    return LABELS[(LABELS.index(label) + 1) % len(LABELS)]


def add_submission(ctx: Context, user: str, name: str, *, release_of: int | None, when: int) -> int:
    """A submission of ``user``, a release of ``release_of``, checked as creation checks it."""
    principal = principal_for(ctx, _user_id(ctx, user))
    with ctx.db.session() as session:
        lineage = (
            lineage_to_join(session, principal, task_id=TASK, release_of=release_of)
            if release_of is not None
            else None
        )
        submission = Submission(
            task_id=TASK,
            user_id=principal.user_id,
            name=name,
            bundle_sha256="1" * 64,
            artifact_key=f"bundles/{name}.tar.gz",
            manifest={"name": name, "task": TASK, "runtime": "python", "entry": "h:M"},
            release_of_id=release_of,
            lineage_id=lineage,
            created_at=utcnow() - timedelta(hours=10 - when),
        )
        session.add(submission)
        session.flush()
        return submission.id


def add_results(ctx: Context, submission_id: int, *, wrong: dict[str, set[int]]) -> None:
    """A finished result on every dataset: right on each original's examples except the
    positions in ``wrong[dataset]``; its perturbed copies answered as the originals
    (robustness and fairness 100)."""
    answers: dict[str, str] = {}
    for dataset in list_datasets(ctx, TASK):  # originals before their copies
        examples = read_examples(ctx, dataset)
        records = []
        for index, example in enumerate(examples):
            if dataset.perturbation is None:
                label = example["label"]
                if index in wrong.get(dataset.name, set()):
                    label = _wrong(label)
                answers[f"{dataset.name}/{example['uid']}"] = label
                records.append(
                    {"uid": example["uid"], "gold": example["label"], "output": {"label": label}}
                )
            else:
                parent = _parent_name(ctx, dataset)
                label = answers[f"{parent}/{example['input_id']}"]
                records.append(
                    {"uid": example["uid"], "original": label, "output": {"label": label}}
                )
        right = sum(1 for r in records if r["output"]["label"] == r.get("gold", r.get("original")))
        metrics = DatasetMetrics(
            perf_metric="macro_f1",
            examples=len(records),
            throughput=100.0 + submission_id % 10,
            batch_size=32,
            predict_s=1.0,
            memory_gib=0.2,
            **{dataset.perturbation or "perf": 100.0 * right / len(records)},
        )
        with ctx.db.session() as session:
            job = Job(
                submission_id=submission_id,
                dataset_id=dataset.id,
                status=JobStatus.FINISHED.value,
                progress=1.0,
                attempts=1,
            )
            session.add(job)
            session.flush()
            key = f"predictions/{submission_id}/job-{job.id}.jsonl"
            ctx.artifacts.put_bytes(key, b"".join(json.dumps(r).encode() + b"\n" for r in records))
            session.add(
                Result(
                    job_id=job.id,
                    submission_id=submission_id,
                    dataset_id=dataset.id,
                    metrics={"schema_version": SCHEMA_VERSION, **metrics.model_dump(mode="json")},
                    provenance={"seeded": True},
                    predictions_key=key,
                )
            )


def _user_id(ctx: Context, name: str) -> int:
    from leaderboard.accounts import get_user

    return get_user(ctx, name).id


def _parent_name(ctx: Context, dataset: Dataset) -> str:
    with ctx.db.session() as session:
        parent = session.get(Dataset, dataset.derived_from_id)
        assert parent is not None
        return parent.name


@dataclass
class Lineaged:
    seeded: Seeded
    app: FastAPI
    releases: list[int]
    uids: list[str]
    hidden_uids: list[str]


@pytest.fixture(scope="module")
def lineaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lineaged]:
    tmp = tmp_path_factory.mktemp("lineages")
    ctx = Context.from_settings(make_settings(tmp))
    seeded = seed(ctx, tmp)
    releases: list[int] = []
    for number in (1, 2, 3):
        release = add_submission(
            ctx, "alice", f"lin-v{number}", release_of=releases[-1] if releases else None,
            when=number,
        )  # fmt: skip
        wrong = {"test": set(RELEASE_WRONG[number]), "hidden-test": {0} if number == 2 else set()}
        add_results(ctx, release, wrong=wrong)
        releases.append(release)
    datasets = {d.name: d for d in list_datasets(ctx, TASK)}
    uids = [str(e["uid"]) for e in read_examples(ctx, datasets["test"])]
    hidden = [str(e["uid"]) for e in read_examples(ctx, datasets["hidden-test"])]
    yield Lineaged(seeded, create_app(ctx), releases, uids, hidden)
    ctx.db.dispose()


async def _get(app: FastAPI, path: str, token: str | None = None, **params: Any) -> httpx.Response:
    async with make_client(app, token) as client:
        return await client.get(path, params=params)


async def test_a_lineage_lists_its_releases_in_order_with_their_scores(lineaged: Lineaged) -> None:
    first, second, third = lineaged.releases
    for named in (first, third):  # any release names its lineage
        response = await _get(lineaged.app, f"/lineages/{named}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["lineage"] == first and body["owner"] == "alice"
        assert [(r["number"], r["submission_id"], r["release_of"]) for r in body["releases"]] == [
            (1, first, None),
            (2, second, first),
            (3, third, second),
        ]
    releases = body["releases"]
    # Perf is the test set's (60 examples) and the hidden set's, averaged: scored everywhere.
    assert all(r["metrics"]["perf"] is not None for r in releases)
    assert [r["metrics"]["throughput"] for r in releases] == [
        100.0 + i % 10 for i in lineaged.releases
    ]
    # Scored on: the visible originals with their round; the hidden set only counted.
    assert [d["dataset"] for d in releases[0]["datasets"]] == ["dev", "test"]
    assert releases[0]["hidden_sets"] == 1
    owner = (await _get(lineaged.app, f"/lineages/{first}", lineaged.seeded.tokens["owner"])).json()
    assert [d["dataset"] for d in owner["releases"][0]["datasets"]] == [
        "dev",
        "hidden-test",
        "test",
    ]
    assert owner["releases"][0]["hidden_sets"] == 0
    missing = await _get(lineaged.app, "/lineages/999999")
    assert missing.status_code == 404


async def test_the_case_history_names_who_first_passed_and_who_lost_it(lineaged: Lineaged) -> None:
    first, second, third = lineaged.releases

    async def case(index: int) -> dict[str, Any]:
        uid = lineaged.uids[index]
        response = await _get(lineaged.app, f"/tasks/{TASK}/cases/{uid}/history")
        assert response.status_code == 200, response.text
        (dataset,) = response.json()["datasets"]
        assert dataset["dataset"] == "test"
        (mine,) = [entry for entry in dataset["lineages"] if entry["lineage"] == first]
        return mine

    lost_by_third = await case(15)  # releases 1 and 2 passed it, 3 lost it
    assert lost_by_third["first_passed"]["submission_id"] == first
    assert [r["submission_id"] for r in lost_by_third["lost_by"]] == [third]
    assert [r["passed"] for r in lost_by_third["releases"]] == [True, True, False]
    assert lost_by_third["passing"] is False
    regained = await case(10)  # 1 passed, 2 lost, 3 passed again
    assert [r["submission_id"] for r in regained["lost_by"]] == [second]
    assert regained["passing"] is True
    late = await case(5)  # only release 3 passed
    assert late["first_passed"]["submission_id"] == third and late["lost_by"] == []
    steady = await case(40)
    assert steady["first_passed"]["number"] == 1 and steady["lost_by"] == []
    # Each lineage of the task appears; a model never released again is not a lineage.
    body = (await _get(lineaged.app, f"/tasks/{TASK}/cases/{lineaged.uids[15]}/history")).json()
    assert {entry["lineage"] for entry in body["datasets"][0]["lineages"]} == {first}
    assert body["rule"] == "passed: the predicted label is the gold label"
    assert body["datasets"][0]["inputs"].keys() == {"statement"}


async def test_a_hidden_case_is_never_shown_to_who_may_not_see_it(lineaged: Lineaged) -> None:
    uid = lineaged.hidden_uids[0]
    path = f"/tasks/{TASK}/cases/{uid}/history"
    for token in (None, lineaged.seeded.tokens["alice"], lineaged.seeded.tokens["bob"]):
        response = await _get(lineaged.app, path, token)
        assert response.status_code == 404, response.text
        assert "hidden" not in response.text
    owner = await _get(lineaged.app, path, lineaged.seeded.tokens["owner"])
    assert owner.status_code == 200
    (dataset,) = owner.json()["datasets"]
    assert dataset["dataset"] == "hidden-test"
    (mine,) = dataset["lineages"]
    assert [r["passed"] for r in mine["releases"]] == [True, False, True]
    # Naming the hidden set outright changes nothing for the others.
    named = await _get(lineaged.app, path, lineaged.seeded.tokens["alice"], dataset="hidden-test")
    assert named.status_code == 404


async def test_bad_case_requests_are_refused_cleanly(lineaged: Lineaged) -> None:
    assert (await _get(lineaged.app, f"/tasks/{TASK}/cases/no-such-uid/history")).status_code == 404
    # A uid is any text, a slash included: it reaches the lookup, not the router's 404.
    for path in (f"/tasks/{TASK}/cases/a/b/history", f"/ui/tasks/{TASK}/cases/a%2Fb"):
        slashed = await _get(lineaged.app, path)
        assert slashed.status_code == 404, (path, slashed.text)
        assert "has no case" in slashed.text and "a/b" in slashed.text, (path, slashed.text)
    assert (await _get(lineaged.app, "/tasks/no-task/cases/x/history")).status_code == 404
    nul = await _get(lineaged.app, f"/tasks/{TASK}/cases/a%00b/history")
    assert nul.status_code == 422
    long = await _get(lineaged.app, f"/tasks/{TASK}/cases/{'x' * 300}/history")
    assert long.status_code == 422


async def test_the_pages_show_the_lineage_and_the_case(lineaged: Lineaged) -> None:
    first, _, third = lineaged.releases
    page = await _get(lineaged.app, f"/ui/lineages/{first}")
    assert page.status_code == 200
    assert "lin-v1" in page.text and "lin-v3" in page.text and "hidden-test" not in page.text
    assert "+ 1 hidden set(s)" in page.text and 'id="chart-perf"' in page.text
    uid = lineaged.uids[15]
    case = await _get(lineaged.app, f"/ui/tasks/{TASK}/cases/{uid}")
    assert case.status_code == 200
    assert f'class="lost-by" data-submission="{third}"' in case.text
    hidden = await _get(lineaged.app, f"/ui/tasks/{TASK}/cases/{lineaged.hidden_uids[0]}")
    assert hidden.status_code == 404 and "hidden-test" not in hidden.text
    model = await _get(lineaged.app, f"/ui/tasks/{TASK}/models/{first}", dataset="test")
    assert f"/ui/tasks/{TASK}/cases/{lineaged.uids[0]}?dataset=test" in model.text


async def test_a_suite_version_exports_the_same_bytes_again(lineaged: Lineaged) -> None:
    app, tokens, ctx = lineaged.app, lineaged.seeded.tokens, lineaged.seeded.ctx
    # Runs last of the module's readers: it adds releases 4 and 5.
    fourth = add_submission(ctx, "alice", "lin-v4", release_of=lineaged.releases[-1], when=4)
    async with make_client(app, tokens["alice"]) as alice:
        cut = await alice.post(f"/tasks/{TASK}/suites")
        assert cut.status_code == 201, cut.text
        version = cut.json()["version"]
        first = await alice.get(f"/tasks/{TASK}/suites/{version}")
        assert first.status_code == 200
        assert "attachment" in first.headers["content-disposition"]
        # Results arrive after the cut for a release submitted before it...
        add_results(lineaged.seeded.ctx, fourth, wrong={"test": set(range(30, 40))})
        # ... and a release submitted after it, with its results.
        fifth = add_submission(ctx, "alice", "lin-v5", release_of=fourth, when=5)
        add_results(ctx, fifth, wrong={})
        again = await alice.get(f"/tasks/{TASK}/suites/{version}")
        assert again.content == first.content
        later = (await alice.post(f"/tasks/{TASK}/suites")).json()["version"]
        assert later == version + 1
        newer = await alice.get(f"/tasks/{TASK}/suites/{later}")
    suite = parse_suite(first.content)
    assert [r.name for r in suite.releases] == ["lin-v1", "lin-v2", "lin-v3", "lin-v4"]
    newest = parse_suite(newer.content)
    assert len(newest.releases) == 5
    # Release 4 had no result at the cut: it has no verdict in version 1, one in 2.
    judged = {
        v.release for d in suite.datasets for c in d.cases for h in c.history.values() for v in h
    }
    assert judged == set(lineaged.releases)
    in_newer = next(d for d in newest.datasets if d.name == "test").cases[30].history
    assert [v.release for v in in_newer[str(lineaged.releases[0])]][-2:] == [fourth, fifth]
    # What alice may see: the test and dev sets' cases with gold, no hidden set.
    assert [d.name for d in suite.datasets] == ["dev", "test"]
    test = next(d for d in suite.datasets if d.name == "test")
    assert len(test.cases) == 60 and test.cases[15].gold.keys() == {"label"}
    history = test.cases[15].history[str(lineaged.releases[0])]
    assert [v.passed for v in history] == [True, True, False]
    # The hash covers the content: the same content laid out otherwise still reads.
    document = json.loads(first.content)
    assert parse_suite(json.dumps(document, indent=2).encode()) == suite
    content = {k: v for k, v in document.items() if k != "sha256"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert document["sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    # The owner's export holds the hidden set too.
    owner = await _get(app, f"/tasks/{TASK}/suites/{version}", tokens["owner"])
    assert "hidden-test" in [d.name for d in parse_suite(owner.content).datasets]


async def test_suite_versions_are_cut_by_who_may_upload_and_unknown_ones_are_named(
    lineaged: Lineaged,
) -> None:
    app, tokens = lineaged.app, lineaged.seeded.tokens
    async with make_client(app) as anonymous:
        assert (await anonymous.post(f"/tasks/{TASK}/suites")).status_code == 401
        unknown = await anonymous.get(f"/tasks/{TASK}/suites/9999")
        assert unknown.status_code == 404 and "no suite version 9999" in unknown.json()["detail"]
        assert (await anonymous.get("/tasks/nope/suites/1")).status_code == 404
    async with make_client(app, tokens["annie"]) as annotator:
        refused = await annotator.post(f"/tasks/{TASK}/suites")
        assert refused.status_code == 403


# Naming the model a release is of: the real upload API ---------------------------------

HANDLER = """
class Model:
    def __init__(self, model_dir):
        pass

    def predict(self, batch):
        return [{"label": "neutral"} for _ in batch]
"""


def _archive(root: Path, name: str, extra: str = "") -> Path:
    bundle = root / name
    bundle.mkdir(parents=True)
    (bundle / "evalboard.yaml").write_text(
        f"name: {name}\ntask: {TASK}\nruntime: python\nentry: handler:Model\n{extra}"
    )
    (bundle / "handler.py").write_text(HANDLER)
    archive, _ = package_bundle(bundle, root / f"{name}.tar.gz")
    return archive


async def _upload(
    client: httpx.AsyncClient, archive: Path, **fields: Any
) -> tuple[httpx.Response, httpx.Response | None]:
    data = archive.read_bytes()
    started = await client.post(
        "/uploads",
        json={
            "task": TASK,
            "filename": archive.name,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            **fields,
        },
    )
    if started.status_code != 201:
        return started, None
    url = f"/uploads/{started.json()['id']}"
    await client.patch(url, params={"offset": 0}, content=data)
    return started, await client.post(f"{url}/complete")


@pytest.fixture
def platform(seeded: Seeded) -> Seeded:
    return seeded


async def test_a_release_joins_its_lineage_and_only_its_owner_may_add_one(
    platform: Seeded, app: FastAPI, tmp_path: Path
) -> None:
    ctx, tokens, ids = platform.ctx, platform.tokens, platform.submissions
    root = ids["bow-logreg"]  # alice's
    async with make_client(app, tokens["alice"]) as alice:
        _, done = await _upload(alice, _archive(tmp_path, "bow-v2"), release_of=root)
        assert done is not None and done.status_code == 200, done.text
        second = done.json()
        assert (second["release_of"], second["lineage"]) == (root, root)
        # A release of the release joins the first one's lineage (named in the manifest).
        _, done = await _upload(
            alice, _archive(tmp_path, "bow-v3", f"release_of: {second['id']}\n")
        )
        assert done is not None and done.status_code == 200, done.text
        assert (done.json()["release_of"], done.json()["lineage"]) == (second["id"], root)
        # The upload and the manifest must agree when both name one.
        _, done = await _upload(
            alice, _archive(tmp_path, "bow-v4", f"release_of: {root}\n"), release_of=second["id"]
        )
        assert done is not None and done.status_code == 400
        assert "make them agree" in done.json()["detail"]
        # Another task's model: refused before a byte is sent.
        other = await alice.post(
            "/uploads",
            json={"task": platform.other_task, "filename": "x.tar.gz", "size": 10,
                  "sha256": "0" * 64, "release_of": root},
        )  # fmt: skip
        assert other.status_code in (400, 403), other.text
    async with make_client(app, tokens["bob"]) as bob:
        # Someone else's model: 403 at once, naming why and what to do instead.
        started, _ = await _upload(bob, _archive(tmp_path, "stolen"), release_of=root)
        assert started.status_code == 403
        assert "only its owner" in started.json()["detail"]
        # ... and named in the manifest only: refused when it would become a submission.
        _, done = await _upload(bob, _archive(tmp_path, "stolen-2", f"release_of: {root}\n"))
        assert done is not None and done.status_code == 403
        # A submission that does not exist, or that bob may not see: the same 404.
        started, _ = await _upload(bob, _archive(tmp_path, "ghost"), release_of=999_999)
        assert started.status_code == 404 and "no submission 999999" in started.json()["detail"]
        for bad in ("12", 0, -1, 2**31, True, "\u0000"):
            refused, _ = await _upload(bob, _archive(tmp_path, f"bad-{id(bad)}"), release_of=bad)
            assert refused.status_code == 422, (bad, refused.text)
    with ctx.db.session() as session:
        stolen = session.scalars(
            select(Submission).where(Submission.name.in_(["stolen", "stolen-2", "ghost"]))
        ).all()
        assert stolen == []
    # An admin may add a release to anyone's lineage.
    async with make_client(app, tokens["admin"]) as admin:
        _, done = await _upload(admin, _archive(tmp_path, "by-admin"), release_of=root)
        assert done is not None and done.status_code == 200
        assert done.json()["lineage"] == root
    lineage = (await _get(app, f"/lineages/{root}")).json()
    assert [r["name"] for r in lineage["releases"]] == [
        "bow-logreg",
        "bow-v2",
        "bow-v3",
        "by-admin",
    ]


async def test_an_unpublished_release_is_left_out_for_others_and_numbers_stay(
    platform: Seeded, app: FastAPI, tmp_path: Path
) -> None:
    ctx, tokens, ids = platform.ctx, platform.tokens, platform.submissions
    root = ids["bow-logreg"]
    async with make_client(app, tokens["alice"]) as alice:
        _, second = await _upload(alice, _archive(tmp_path, "v2"), release_of=root)
        _, third = await _upload(alice, _archive(tmp_path, "v3"), release_of=root)
    assert second is not None and third is not None
    with ctx.db.session() as session:
        session.execute(
            update(Submission).where(Submission.id == second.json()["id"]).values(published=False)
        )
    mine = (await _get(app, f"/lineages/{root}", tokens["alice"])).json()
    theirs = (await _get(app, f"/lineages/{root}", tokens["bob"])).json()
    assert [r["number"] for r in mine["releases"]] == [1, 2, 3]
    assert [r["number"] for r in theirs["releases"]] == [1, 3]
    hidden = await _get(app, f"/lineages/{second.json()['id']}", tokens["bob"])
    assert hidden.status_code == 404
    # And bob may not name it as the model his upload is a release of (as if it did not
    # exist), nor alice's public one (not his lineage).
    async with make_client(app, tokens["bob"]) as bob:
        started, _ = await _upload(bob, _archive(tmp_path, "x"), release_of=second.json()["id"])
        assert started.status_code == 404
