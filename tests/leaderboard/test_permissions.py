"""Each role is refused what it may not do, and allowed what it may."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import OTHER_TASK, TASK, Seeded

pytestmark = pytest.mark.anyio

HIDDEN = "hidden-test"


def _as(app: FastAPI, shared: Seeded, who: str | None) -> httpx.AsyncClient:
    return make_client(app, shared.tokens[who] if who else None)


@pytest.mark.parametrize("who", [None, "alice", "carol", "annie"])
async def test_hidden_datasets_are_invisible_to_all_but_the_owner(
    shared_app: FastAPI, shared: Seeded, who: str | None
) -> None:
    async with _as(shared_app, shared, who) as client:
        listed = (await client.get(f"/tasks/{TASK}/datasets")).json()
        assert HIDDEN not in {d["name"] for d in listed}
        assert not any(d["access"] == "hidden" for d in listed)
        assert (await client.get(f"/tasks/{TASK}/datasets/{HIDDEN}")).status_code == 404
        for labels in ("true", "false"):
            response = await client.get(
                f"/tasks/{TASK}/datasets/{HIDDEN}/examples", params={"labels": labels}
            )
            assert response.status_code == 404
            assert "statement" not in response.text


@pytest.mark.parametrize("who", ["owner", "admin"])
async def test_owner_and_admin_see_and_download_hidden_labels(
    shared_app: FastAPI, shared: Seeded, who: str
) -> None:
    async with _as(shared_app, shared, who) as client:
        listed = (await client.get(f"/tasks/{TASK}/datasets")).json()
        assert HIDDEN in {d["name"] for d in listed}
        response = await client.get(f"/tasks/{TASK}/datasets/{HIDDEN}/examples")
        assert response.status_code == 200
        assert '"label"' in response.text.splitlines()[0]


async def test_anyone_downloads_a_scoring_set_with_labels(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/tasks/{TASK}/datasets/test/examples")
    assert response.status_code == 200 and '"label"' in response.text
    bare = await client.get(f"/tasks/{TASK}/datasets/test/examples", params={"labels": False})
    assert '"label"' not in bare.text and '"statement"' in bare.text


@pytest.mark.parametrize("who", [None, "bob", "carol", "annie"])
async def test_other_users_never_see_a_researchers_logs(
    shared_app: FastAPI, shared: Seeded, who: str | None
) -> None:
    broken = shared.submissions["broken-model"]  # alice's, failed with an OOM
    async with _as(shared_app, shared, who) as client:
        status = (await client.get(f"/submissions/{broken}")).json()
    assert status["may_manage"] is False
    assert {job["reason"] for job in status["jobs"]} == {"oom"}
    assert all(job["log_tail"] is None and job["message"] is None for job in status["jobs"])
    assert not any(job["dataset"].startswith(HIDDEN) for job in status["jobs"])


@pytest.mark.parametrize("who", ["alice", "owner", "admin"])
async def test_submitter_owner_and_admin_read_the_logs(
    shared_app: FastAPI, shared: Seeded, who: str
) -> None:
    broken = shared.submissions["broken-model"]
    async with _as(shared_app, shared, who) as client:
        status = (await client.get(f"/submissions/{broken}")).json()
    assert status["may_manage"] is True
    # The submitter reads every log but those on hidden sets (see test_security).
    shown = [j for j in status["jobs"] if who != "alice" or not j["dataset"].startswith("hidden-")]
    assert shown and all("Killed" in job["log_tail"] for job in shown)


async def test_hidden_results_and_examples_are_refused_to_the_submitter(
    shared_app: FastAPI, shared: Seeded
) -> None:
    roberta = shared.submissions["roberta-large"]  # alice's
    async with _as(shared_app, shared, "alice") as client:
        status = (await client.get(f"/submissions/{roberta}")).json()
        assert all(
            job["metrics"] is None for job in status["jobs"] if job["dataset"].startswith("hidden-")
        )
        refused = await client.get(f"/submissions/{roberta}/examples/{HIDDEN}")
        assert refused.status_code == 404
        allowed = await client.get(f"/submissions/{roberta}/examples/test")
        assert allowed.status_code == 200 and len(allowed.json()) == 50
    async with _as(shared_app, shared, "owner") as owner:
        assert (await owner.get(f"/submissions/{roberta}/examples/{HIDDEN}")).status_code == 200


@pytest.mark.parametrize(
    ("who", "status"), [(None, 401), ("alice", 403), ("carol", 403), ("annie", 403)]
)
async def test_only_the_owner_sets_default_weights(
    app: FastAPI, seeded: Seeded, who: str | None, status: int
) -> None:
    async with _as(app, seeded, who) as client:
        response = await client.put(f"/tasks/{TASK}/weights", json={"weights": {"perf": 1}})
        assert response.status_code == status
        assert "owner" in response.json()["detail"] or "Sign in" in response.json()["detail"]
        weights = (await client.get(f"/tasks/{TASK}/weights")).json()["weights"]
    assert weights["perf"] == 4


async def test_an_owner_may_not_set_another_owners_weights(app: FastAPI, seeded: Seeded) -> None:
    async with _as(app, seeded, "owner") as owner:
        refused = await owner.put(f"/tasks/{OTHER_TASK}/weights", json={"weights": {"perf": 1}})
        assert refused.status_code == 403
        allowed = await owner.put(f"/tasks/{TASK}/weights", json={"weights": {"perf": 2}})
        assert allowed.status_code == 200
    async with _as(app, seeded, "carol") as carol:
        assert (
            await carol.put(f"/tasks/{OTHER_TASK}/weights", json={"weights": {"perf": 2}})
        ).status_code == 200


@pytest.mark.parametrize("who", ["bob", "carol", "annie"])
async def test_others_may_not_cancel_rerun_or_mark_baselines(
    app: FastAPI, seeded: Seeded, who: str
) -> None:
    broken = seeded.submissions["broken-model"]
    async with _as(app, seeded, who) as client:
        assert (await client.post(f"/submissions/{broken}/cancel")).status_code == 403
        assert (await client.post(f"/submissions/{broken}/rerun")).status_code == 403
        assert (
            await client.put(f"/submissions/{broken}/baseline", json={"is_baseline": True})
        ).status_code == 403


async def test_submitter_reruns_and_owner_marks_baseline(app: FastAPI, seeded: Seeded) -> None:
    broken = seeded.submissions["broken-model"]
    async with _as(app, seeded, "alice") as alice:
        status = (await alice.post(f"/submissions/{broken}/rerun")).json()
        assert {job["status"] for job in status["jobs"]} == {"queued"}
        assert all(job["reason"] is None for job in status["jobs"])
        cancelled = (await alice.post(f"/submissions/{broken}/cancel")).json()
        assert {job["status"] for job in cancelled["jobs"]} == {"cancelled"}
    async with _as(app, seeded, "owner") as owner:
        marked = await owner.put(f"/submissions/{broken}/baseline", json={"is_baseline": True})
        assert marked.json()["is_baseline"] is True


@pytest.mark.parametrize("who", ["alice", "owner"])
async def test_only_admins_manage_users_and_tasks(app: FastAPI, seeded: Seeded, who: str) -> None:
    async with _as(app, seeded, who) as client:
        assert (await client.get("/users")).status_code == 403
        assert (await client.post("/users", json={"name": "mallory"})).status_code == 403
        assert (
            await client.post("/users/alice/roles", json={"role": "owner", "task": TASK})
        ).status_code == 403
        assert (await client.post("/tasks", json={"spec": {}})).status_code == 403


async def test_a_bad_token_is_401_not_anonymous(client: httpx.AsyncClient) -> None:
    response = await client.get("/users/me", headers={"Authorization": "Bearer eb_nope"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
