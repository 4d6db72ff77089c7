"""Snapshots: only the task owner takes one; it is the public board, hidden sets as on the
live board; its bytes never change when models or rounds arrive."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from evalboard.core.states import ExampleStatus
from evalboard.core.tables import Example, Submission
from leaderboard.loop import close_round, open_round
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio

HIDDEN = "hidden-test"


def _as(app: FastAPI, seeded: Seeded, who: str | None) -> httpx.AsyncClient:
    return make_client(app, seeded.tokens[who] if who else None)


async def _take(app: FastAPI, seeded: Seeded, title: str = "") -> dict[str, Any]:
    async with _as(app, seeded, "owner") as client:
        response = await client.post(f"/tasks/{TASK}/snapshots", json={"title": title})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_only_the_task_owner_takes_snapshots(app: FastAPI, seeded: Seeded) -> None:
    for who, status in [(None, 401), ("alice", 403), ("carol", 403)]:
        async with _as(app, seeded, who) as client:
            response = await client.post(f"/tasks/{TASK}/snapshots", json={})
        assert response.status_code == status, who
    first = await _take(app, seeded, "ACL 2027 camera-ready")
    second = await _take(app, seeded)
    assert (first["number"], second["number"]) == (1, 2)
    async with _as(app, seeded, None) as client:
        listed = (await client.get(f"/tasks/{TASK}/snapshots")).json()
        shown = (await client.get(f"/tasks/{TASK}/snapshots/1")).json()
        missing = await client.get(f"/tasks/{TASK}/snapshots/9")
    assert [s["number"] for s in listed] == [1, 2]
    assert shown["title"] == "ACL 2027 camera-ready" and shown["models"] == 4
    assert missing.status_code == 404
    assert shown["citation"].startswith(f"@misc{{evalboard-{TASK}-1,")
    assert shown["url"] in shown["citation"] and shown["csv_sha256"] in shown["citation"]


async def test_a_snapshot_never_changes_when_models_and_rounds_arrive(
    app: FastAPI, seeded: Seeded
) -> None:
    taken = await _take(app, seeded)
    async with _as(app, seeded, None) as client:
        before_csv = (await client.get(f"/tasks/{TASK}/snapshots/1.csv")).content
        before_json = (await client.get(f"/tasks/{TASK}/snapshots/1.json")).content
        live_before = (await client.get(f"/tasks/{TASK}/leaderboard.csv")).content
    assert before_csv == live_before  # frozen from the very same board
    ctx = seeded.ctx
    # A new model, and a round closed into a new scoring dataset.
    with ctx.db.session() as session:
        session.add(
            Submission(
                task_id=TASK,
                user_id=None,
                name="late-model",
                bundle_sha256="1" * 64,
                artifact_key="bundles/late.tar.gz",
                manifest={"name": "late-model", "task": TASK, "runtime": "onnx"},
            )
        )
    opened = open_round(ctx, TASK, submission_ids=[seeded.submissions["roberta-large"]])
    with ctx.db.session() as session:
        for index, label in enumerate(["positive", "negative", "neutral"]):
            session.add(
                Example(
                    task_id=TASK,
                    round_id=opened.id,
                    inputs={"statement": f"A new hard example {index}."},
                    gold={"label": label},
                    fooled=True,
                    status=ExampleStatus.VERIFIED.value,
                )
            )
    assert close_round(ctx, TASK).dataset is not None
    async with _as(app, seeded, None) as client:
        after_csv = (await client.get(f"/tasks/{TASK}/snapshots/1.csv")).content
        after_json = (await client.get(f"/tasks/{TASK}/snapshots/1.json")).content
        live_after = (await client.get(f"/tasks/{TASK}/leaderboard.csv")).content
        page = await client.get(f"/ui/tasks/{TASK}/snapshots/1")
        task_page = await client.get(f"/ui/tasks/{TASK}")
    assert live_after != live_before  # the live board did change
    assert after_csv == before_csv and after_json == before_json
    assert page.status_code == 200 and taken["csv_sha256"] in page.text
    assert "@misc{evalboard-sentiment-1," in page.text
    assert f'href="/ui/tasks/{TASK}/snapshots/1"' in task_page.text


async def test_hidden_sets_and_private_models_stay_out_of_a_snapshot(
    app: FastAPI, seeded: Seeded
) -> None:
    async with _as(app, seeded, "bob") as client:
        await client.patch(
            f"/submissions/{seeded.submissions['minilm-head']}/card", json={"anonymous": True}
        )
    async with _as(app, seeded, "alice") as client:
        await client.patch(
            f"/submissions/{seeded.submissions['bow-logreg']}/card", json={"published": False}
        )
    await _take(app, seeded)  # taken by the owner, who sees both: still the public view
    async with _as(app, seeded, "owner") as client:
        document = (await client.get(f"/tasks/{TASK}/snapshots/1.json")).json()
        text = (await client.get(f"/tasks/{TASK}/snapshots/1.csv")).text
    assert HIDDEN not in str(document) and HIDDEN not in text
    assert document["hidden_sets"] == 1
    assert {d["name"] for d in document["datasets"]} >= {"test"}
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert "bow-logreg" not in rows
    assert rows["minilm-head"]["user"] == ""
    assert rows["roberta-large"]["user"] == "alice"
    provenance = document["provenance"][str(seeded.submissions["roberta-large"])]
    assert set(provenance["datasets"]) == {d["name"] for d in document["datasets"]}
