"""Private phases and predictions-only submissions, through the API of a real app on a
seeded SQLite platform: what the board, the status and the loop show, and hostile input."""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from datasets_registry import list_datasets, read_examples
from evalboard.core.errors import QuotaExceeded
from evalboard.core.tables import PhaseEntry, Submission
from leaderboard import create_app
from leaderboard.accounts import principal_for_token
from leaderboard.loop.ranking import leaderboard_ranking
from leaderboard.phases import create_phase
from leaderboard.predictions import create_predictions
from leaderboard.schemas import PredictionsCreate, UploadCreate
from leaderboard.submissions import create_submission
from leaderboard.uploads import create_upload
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import PASSWORD, TASK, Seeded

pytestmark = pytest.mark.anyio

PUBLIC_SETS = ("test", "fairness-test", "robustness-test")
HIDDEN_SETS = ("hidden-test", "fairness-hidden-test", "robustness-hidden-test")


def _examples(seeded: Seeded, name: str) -> list[dict[str, Any]]:
    dataset = next(d for d in list_datasets(seeded.ctx, TASK) if d.name == name)
    return read_examples(seeded.ctx, dataset)


def _gold(seeded: Seeded, names: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """Perfect predictions (gold labels; the copies answer as their originals)."""
    files: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        examples = _examples(seeded, name)
        if "input_id" in examples[0]:
            original = {r["uid"]: r["label"] for r in files[name.split("-", 1)[1]]}
            files[name] = [{"uid": e["uid"], "label": original[e["input_id"]]} for e in examples]
        else:
            files[name] = [{"uid": e["uid"], "label": e["label"]} for e in examples]
    return files


def _constant(seeded: Seeded, names: tuple[str, ...], label: str) -> dict[str, list[Any]]:
    return {n: [{"uid": e["uid"], "label": label} for e in _examples(seeded, n)] for n in names}


async def _post(app: Any, path: str, body: Any, user: str, seeded: Seeded) -> httpx.Response:
    async with make_client(app, seeded.tokens[user]) as client:
        return await client.post(path, json=body)


async def _get(app: Any, path: str, user: str | None, seeded: Seeded) -> httpx.Response:
    async with make_client(app, seeded.tokens[user] if user else None) as client:
        return await client.get(path)


async def _phase(app: Any, seeded: Seeded, limit: int = 2, name: str = "final") -> None:
    made = await _post(
        app,
        f"/tasks/{TASK}/phases",
        {"name": name, "datasets": ["hidden-test"], "submission_limit": limit},
        "owner",
        seeded,
    )
    assert made.status_code == 201, made.text


# Phases -----------------------------------------------------------------------------------


async def test_a_private_phase_leaves_its_sets_off_the_board_until_revealed(app, seeded):
    before = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    assert before["phase"] == "public" and before["withheld_sets"] == 0
    await _phase(app, seeded)
    during = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    assert during["withheld_sets"] == 1
    perf = {r["name"]: r["metrics"]["perf"] for r in during["rows"] if r["kind"] != "majority"}
    old = {r["name"]: r["metrics"]["perf"] for r in before["rows"] if r["kind"] != "majority"}
    assert perf != old  # the averages no longer include the hidden set
    revealed = await _post(
        app, f"/tasks/{TASK}/phases/final/reveal", {"public": True}, "owner", seeded
    )
    assert revealed.status_code == 200, revealed.text
    assert revealed.json()["revealed"] and revealed.json()["public"]
    after = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    assert after["phase"] == "public + final" and after["withheld_sets"] == 0
    assert {
        r["name"]: r["metrics"]["perf"] for r in after["rows"] if r["kind"] != "majority"
    } == old


async def test_revealing_an_unknown_phase_names_the_known_ones(app, seeded):
    await _phase(app, seeded)
    unknown = await _post(
        app, f"/tasks/{TASK}/phases/finale/reveal", {"public": False}, "owner", seeded
    )
    assert unknown.status_code == 404, unknown.text
    assert f"Phase 'finale' of task '{TASK}' not found; known: final" in unknown.json()["detail"]


async def test_the_submitter_sees_hidden_scores_only_once_the_phase_is_revealed(app, seeded):
    await _phase(app, seeded)
    sid = seeded.submissions["bow-logreg"]  # alice's

    def hidden_metrics(status: dict[str, Any]) -> list[Any]:
        return [j["metrics"] for j in status["jobs"] if j["dataset"].startswith("hidden-")]

    status = (await _get(app, f"/submissions/{sid}", "alice", seeded)).json()
    assert hidden_metrics(status) and all(m is None for m in hidden_metrics(status))
    assert all(
        j["examples_total"] is None for j in status["jobs"] if j["dataset"].startswith("hidden-")
    )
    await _post(app, f"/tasks/{TASK}/phases/final/reveal", {}, "owner", seeded)
    status = (await _get(app, f"/submissions/{sid}", "alice", seeded)).json()
    shown = hidden_metrics(status)
    assert len(shown) == 3 and all(m is not None for m in shown)  # the set and its copies
    assert sum(m["perf"] is not None for m in shown) == 1
    # Sizes and logs stay withheld; another user still sees nothing of alice's hidden sets.
    assert all(
        j["examples_total"] is None for j in status["jobs"] if j["dataset"].startswith("hidden-")
    )
    bob = (await _get(app, f"/submissions/{sid}", "bob", seeded)).json()
    assert all(j["metrics"] is None for j in bob["jobs"] if j["dataset"].startswith("hidden-"))
    # Revealed privately: the public board still leaves the set out.
    board = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    assert board["phase"] == "public" and board["withheld_sets"] == 1


async def test_phase_creation_refuses_bad_input(app, seeded):
    cases = [
        ({"name": "Bad Name", "datasets": ["hidden-test"], "submission_limit": 1}, 400),
        ({"name": "p", "datasets": ["test"], "submission_limit": 1}, 400),  # not hidden
        ({"name": "p", "datasets": ["nope"], "submission_limit": 1}, 400),
        ({"name": "p", "datasets": [], "submission_limit": 1}, 400),
        ({"name": "p", "datasets": ["hidden-test"], "submission_limit": 0}, 400),
        ({"name": "p", "datasets": ["hidden-test"], "submission_limit": "3"}, 422),
        ({"name": "p\u0000", "datasets": ["hidden-test"], "submission_limit": 1}, 422),
    ]
    for body, status in cases:
        answer = await _post(app, f"/tasks/{TASK}/phases", body, "owner", seeded)
        assert answer.status_code == status, (body, answer.text)
        assert answer.json()["detail"]
    assert (
        await _post(app, f"/tasks/{TASK}/phases", cases[0][0] | {"name": "ok"}, "alice", seeded)
    ).status_code == 403
    await _phase(app, seeded)
    again = await _post(
        app,
        f"/tasks/{TASK}/phases",
        {"name": "other", "datasets": ["hidden-test"], "submission_limit": 1},
        "owner",
        seeded,
    )
    assert again.status_code == 409 and "another phase" in again.json()["detail"]
    assert (
        await _post(app, f"/tasks/{TASK}/phases/nope/reveal", {}, "owner", seeded)
    ).status_code == 404
    await _post(app, f"/tasks/{TASK}/phases/final/reveal", {"public": True}, "owner", seeded)
    back = await _post(
        app, f"/tasks/{TASK}/phases/final/reveal", {"public": False}, "owner", seeded
    )
    assert back.status_code == 409


async def test_phase_list_names_its_sets_but_never_their_size(app, seeded):
    await _phase(app, seeded, limit=3)
    listed = (await _get(app, f"/tasks/{TASK}/phases", "alice", seeded)).json()
    assert listed[0]["datasets"] == ["hidden-test"]
    assert listed[0]["used"] == 0 and listed[0]["remaining"] == 3
    # Names only: nothing that gives the set's size (its 40 examples) or its rows.
    assert set(listed[0]) == {
        "name", "datasets", "submission_limit", "revealed", "public", "created_at",
        "revealed_at", "used", "remaining",
    }  # fmt: skip


# Predictions ------------------------------------------------------------------------------


async def test_predictions_are_scored_marked_and_ranked_by_the_one_rule(app, seeded):
    # Before the phase, the board would count a hidden set predictions cannot cover: such a
    # file is refused up front (tests/leaderboard/test_predictions_hostile.py).
    await _phase(app, seeded)  # so the board counts the sets predictions can cover
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "oracle-preds", "predictions": _gold(seeded, PUBLIC_SETS)},
        "alice",
        seeded,
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["predictions_only"] and answer.json()["status"] == "finished"
    board = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    row = next(r for r in board["rows"] if r["name"] == "oracle-preds")
    assert row["predictions_only"] and row["metrics"]["perf"] == pytest.approx(100.0)
    assert row["metrics"]["throughput"] is None and row["metrics"]["memory"] is None
    # The one rule (scoring.fill_missing): what it lacks ranks as the board's worst figure,
    # so its term is the slowest / largest measured row's, never better.
    measured = [r for r in board["rows"] if r["rank"] is not None and not r["predictions_only"]]
    for name, worst in (("throughput", min), ("memory", max)):
        assert name in row["ranked_as_worst"]
        figure = worst(r["metrics"][name] for r in measured)
        level = next(r for r in measured if r["metrics"][name] == figure)
        assert row["contributions"][name] == pytest.approx(level["contributions"][name])
        assert all(row["contributions"][name] <= r["contributions"][name] + 1e-9 for r in measured)
    # The measured models keep throughput and memory on the board.
    names = {m["name"] for m in board["metrics"] if m["weighable"]}
    assert {"throughput", "memory"} <= names
    # The download marks it too (the board's CSV, as snapshots store it).
    text = (await _get(app, f"/tasks/{TASK}/leaderboard.csv", None, seeded)).text
    marks = {r["name"]: r["predictions_only"] for r in csv.DictReader(io.StringIO(text))}
    assert marks["oracle-preds"] == "yes"
    assert {mark for name, mark in marks.items() if name != "oracle-preds"} == {""}
    # Its status: finished jobs, nothing measured.
    status = (await _get(app, f"/submissions/{answer.json()['id']}", "alice", seeded)).json()
    assert {j["metrics"]["throughput"] for j in status["jobs"]} == {None}
    # The board page marks the row and says what it leaves out; the owner page lists the phase.
    page = (await _get(app, f"/ui/tasks/{TASK}", None, seeded)).text
    assert "predictions only" in page and "1 hidden set(s) of private phases" in page
    # The page's script re-ranks with the same filled values as the server (the worst).
    data = re.search(r'<script id="board-data" type="application/json">(.*?)</script>', page, re.S)
    assert data is not None
    client = json.loads(data[1])["table"][str(answer.json()["id"])]
    assert client["throughput"] == min(r["metrics"]["throughput"] for r in measured)
    assert client["memory"] == max(r["metrics"]["memory"] for r in measured)
    async with make_client(app) as client:
        login = await client.get("/ui/login")
        token = re.search(r'name="csrf_token" value="([^"]+)"', login.text)
        assert token is not None
        await client.post(
            "/ui/login",
            data={"name": "owner", "password": PASSWORD, "csrf_token": token[1], "next": "/ui"},
        )
        manage = await client.get(f"/ui/tasks/{TASK}/manage")
    assert manage.status_code == 200 and "Private phases" in manage.text
    assert "<td>final</td>" in manage.text and "open" in manage.text


async def test_constant_predictions_never_outrank_a_real_model(app, seeded):
    await _phase(app, seeded)
    answer = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "always-positive", "predictions": _constant(seeded, PUBLIC_SETS, "positive")},
        "alice",
        seeded,
    )
    assert answer.status_code == 201, answer.text
    board = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    ranked = [r for r in board["rows"] if r["rank"] is not None]
    constant = next(r for r in ranked if r["name"] == "always-positive")
    assert constant["not_above_baseline"]
    assert all(constant["rank"] > r["rank"] for r in ranked if not r["not_above_baseline"])


async def test_promote_refuses_a_predictions_only_submission(app, seeded):
    await _phase(app, seeded)  # the row is ranked (first: perfect predictions)
    made = await _post(
        app,
        f"/tasks/{TASK}/predictions",
        {"name": "preds", "predictions": _gold(seeded, PUBLIC_SETS)},
        "alice",
        seeded,
    )
    sid = made.json()["id"]
    refused = await _post(app, f"/tasks/{TASK}/rounds", {"submission_ids": [sid]}, "owner", seeded)
    assert refused.status_code == 400 and "predictions only" in refused.json()["detail"]
    rerun = await _post(app, f"/submissions/{sid}/rerun", {}, "alice", seeded)
    assert rerun.status_code == 409
    board = (await _get(app, f"/tasks/{TASK}/leaderboard", None, seeded)).json()
    assert next(r for r in board["rows"] if r["rank"] == 1)["submission_id"] == sid
    # ``promote --top`` picks from the board's order without it.
    ranked = leaderboard_ranking(seeded.ctx, TASK)
    assert ranked and sid not in ranked


def _hostile(seeded: Seeded) -> list[tuple[str, dict[str, Any], int, str]]:
    good = _gold(seeded, PUBLIC_SETS)
    first = good["test"][0]
    copy = [{"uid": e["uid"], "label": "positive"} for e in _examples(seeded, "robustness-dev")]
    rest = good["test"][1:]
    return [
        ("unknown dataset", {"nope": good["test"], **good}, 404, "no dataset 'nope'"),
        ("hidden set, no phase", {"hidden-test": [first], **good}, 404, "no dataset 'hidden-test'"),
        (
            "a counted set left out",
            {k: v for k, v in good.items() if k != "test"},
            400,
            "missing: test",
        ),
        (
            "unknown id",
            {**good, "test": [*good["test"], {"uid": "zz-9", "label": "positive"}]},
            400,
            "'zz-9' is not an example",
        ),
        ("duplicate id", {**good, "test": [*good["test"], first]}, 400, "given twice"),
        ("missing id", {**good, "test": rest}, 400, "have no prediction"),
        ("bad label", {**good, "test": [{**first, "label": "meh"}, *rest]}, 400, "'meh'"),
        ("no uid", {**good, "test": [{"label": "positive"}, *rest]}, 400, "needs a 'uid'"),
        ("copy without original", {**good, "robustness-dev": copy}, 400, "perturbed copy"),
        ("nothing at all", {}, 400, "at least one dataset"),
    ]


async def test_hostile_predictions_are_refused_and_nothing_is_recorded(app, seeded):
    with seeded.ctx.db.session() as session:
        before = session.scalar(select(func.count(Submission.id)))
    for what, files, status, words in _hostile(seeded):
        answer = await _post(
            app, f"/tasks/{TASK}/predictions", {"name": "x", "predictions": files}, "alice", seeded
        )
        assert answer.status_code == status, (what, answer.text)
        assert words.lower() in answer.json()["detail"].lower(), (what, answer.text)
    with seeded.ctx.db.session() as session:
        assert session.scalar(select(func.count(Submission.id))) == before


async def test_nul_bytes_and_wrong_types_are_422(app, seeded):
    good = _gold(seeded, PUBLIC_SETS)
    for body in (
        {"name": "x\u0000", "predictions": good},
        {"name": "x", "predictions": {**good, "test": [{"uid": "a\u0000", "label": "x"}]}},
        {"name": "x", "predictions": {"test": "not a list"}},
        {"name": "x", "predictions": good, "extra": 1},
    ):
        answer = await _post(app, f"/tasks/{TASK}/predictions", body, "alice", seeded)
        assert answer.status_code == 422, answer.text


async def test_a_huge_predictions_file_is_refused_before_it_is_read(seeded):
    seeded.ctx.settings.max_request_bytes = 1024**2  # the cap the app is built with
    capped = create_app(seeded.ctx)
    row = b'{"uid": "1", "label": "positive"},'
    body = b'{"name": "x", "predictions": {"test": [' + row * (1024**2 // len(row) + 1) + b"]}}"
    async with make_client(capped, seeded.tokens["alice"]) as client:
        answer = await client.post(
            f"/tasks/{TASK}/predictions",
            content=body,
            headers={"content-type": "application/json"},
        )
    assert answer.status_code == 413, answer.text[:200]
    with seeded.ctx.db.session() as session:
        assert session.scalar(select(func.count(Submission.id)).where(Submission.name == "x")) == 0


async def test_predictions_need_an_account_and_the_researcher_role(app, seeded):
    async with make_client(app) as client:
        answer = await client.post(
            f"/tasks/{TASK}/predictions", json={"name": "x", "predictions": {}}
        )
    assert answer.status_code == 401
    body = {"name": "x", "predictions": _gold(seeded, PUBLIC_SETS)}
    annotator = await _post(app, f"/tasks/{TASK}/predictions", body, "annie", seeded)
    assert annotator.status_code == 403 and "researcher role" in annotator.json()["detail"]


async def test_hidden_predictions_within_the_phase_limit_then_refused(app, seeded):
    await _phase(app, seeded, limit=2)
    files = _gold(seeded, PUBLIC_SETS + HIDDEN_SETS)
    first = await _post(
        app, f"/tasks/{TASK}/predictions", {"name": "a", "predictions": files}, "alice", seeded
    )
    assert first.status_code == 201, first.text
    # A file that does not fit the hidden set is refused without ids or counts, and counts.
    broken = {**files, "hidden-test": files["hidden-test"][1:]}
    refused = await _post(
        app, f"/tasks/{TASK}/predictions", {"name": "b", "predictions": broken}, "alice", seeded
    )
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert "do not match" in detail and "39" not in detail and "40" not in detail
    third = await _post(
        app, f"/tasks/{TASK}/predictions", {"name": "c", "predictions": files}, "alice", seeded
    )
    assert third.status_code == 429 and "final" in third.json()["detail"]
    # Public-only predictions do not reach the phase, so they still go through.
    public = _gold(seeded, PUBLIC_SETS)
    ok = await _post(
        app, f"/tasks/{TASK}/predictions", {"name": "d", "predictions": public}, "alice", seeded
    )
    assert ok.status_code == 201, ok.text
    listed = (await _get(app, f"/tasks/{TASK}/phases", "alice", seeded)).json()
    assert listed[0]["used"] == 2 and listed[0]["remaining"] == 0
    # The owner's own are not limited; once revealed the phase takes no more predictions.
    await _post(app, f"/tasks/{TASK}/phases/final/reveal", {}, "owner", seeded)
    closed = await _post(
        app, f"/tasks/{TASK}/predictions", {"name": "e", "predictions": files}, "bob", seeded
    )
    assert closed.status_code == 404


def _at_once(count: int, call: Callable[[], Any]) -> list[Any]:
    barrier = threading.Barrier(count)

    def run() -> Any:
        barrier.wait()
        try:
            return call()
        except QuotaExceeded as exc:
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: run(), range(count)))


def test_two_submissions_racing_at_the_limit_never_both_pass(seeded):
    """Real threads against the SQLite file: with one submission left in the phase, two
    released together make exactly one submission."""
    ctx = seeded.ctx
    owner = principal_for_token(ctx, seeded.tokens["owner"])
    alice = principal_for_token(ctx, seeded.tokens["alice"])
    assert owner is not None and alice is not None
    create_phase(ctx, owner, TASK, name="final", datasets=["hidden-test"], submission_limit=1)
    body = PredictionsCreate(name="race", predictions=_gold(seeded, PUBLIC_SETS + HIDDEN_SETS))
    outcomes = _at_once(2, lambda: create_predictions(ctx, alice, TASK, body))
    made = [o for o in outcomes if isinstance(o, Submission)]
    assert len(made) == 1, outcomes
    assert any(isinstance(o, QuotaExceeded) for o in outcomes), outcomes
    with ctx.db.session() as session:
        assert session.scalar(select(func.count(PhaseEntry.id))) == 1


def test_bundle_submissions_count_in_every_open_phase_and_uploads_stop_early(seeded):
    ctx = seeded.ctx
    owner = principal_for_token(ctx, seeded.tokens["owner"])
    alice = principal_for_token(ctx, seeded.tokens["alice"])
    assert owner is not None and alice is not None
    create_phase(ctx, owner, TASK, name="final", datasets=["hidden-test"], submission_limit=1)

    def submit(who: Any) -> Submission:
        return create_submission(
            ctx,
            who,
            task_id=TASK,
            manifest={"name": "m", "task": TASK, "runtime": "python", "entry": "h:M"},
            bundle_sha256="1" * 64,
            artifact_key="bundles/m.tar.gz",
        )

    submit(alice)
    with pytest.raises(QuotaExceeded, match="phase 'final'"):
        submit(alice)
    submit(owner)  # the owner has no limit
    upload = UploadCreate(task=TASK, filename="m.tar.gz", size=10, sha256="2" * 64)
    with pytest.raises(QuotaExceeded, match="phase 'final'"):
        create_upload(ctx, alice, upload)
    with ctx.db.session() as session:
        assert session.scalar(select(func.count(PhaseEntry.id))) == 1
