"""Attacks on the surfaces added with compare, lineages, the role pages and the viewer
pages, tried against a real ``evalboard serve`` (SQLite, no worker), each held.

The platform is the seeded one, plus a lineage of three releases of alice's model (the
second unpublished), a second annotator and an open round. Races use real threads against
the server process; the database is inspected from here. The PostgreSQL side of the
retraction race is in ``test_attacks_live.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from datasets_registry import TaskSpec
from evalboard.core.context import Context
from evalboard.core.states import Access, ExampleStatus, Role
from evalboard.core.tables import Dataset, Example, Job, RoleGrant, Submission, User
from evaluator.jobs import queue
from leaderboard.accounts import create_token, create_user
from leaderboard.loop import current_round, edit_example, open_round
from leaderboard.loop.content import content_version
from tests.conftest import make_settings
from tests.helpers.journeys import signed_in
from tests.leaderboard.conftest import serve
from tests.leaderboard.seeding import PASSWORD, TASK, Seeded, seed
from tests.leaderboard.test_lineages import add_results, add_submission

pytestmark = [pytest.mark.slow]

#: An id no SQLite INTEGER holds.
TOO_LARGE = "9" * 20


@dataclass
class Served:
    url: str
    seeded: Seeded
    releases: list[int]
    tokens: dict[str, str]
    log: Path

    @property
    def ctx(self) -> Context:
        return self.seeded.ctx

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("attacks-new")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    seeded = seed(ctx, tmp)
    first = add_submission(ctx, "alice", "lineage-v1", release_of=None, when=1)
    add_results(ctx, first, wrong={"test": set(range(10))})
    second = add_submission(ctx, "alice", "lineage-v2", release_of=first, when=2)
    add_results(ctx, second, wrong={"test": set(range(5, 15))})
    third = add_submission(ctx, "alice", "lineage-v3", release_of=second, when=3)
    add_results(ctx, third, wrong={"test": set(range(12, 21))})
    with ctx.db.session() as session:
        session.execute(update(Submission).where(Submission.id == second).values(published=False))
    create_user(ctx, "vera", password=PASSWORD, roles=(Role.ANNOTATOR,))
    tokens = {**seeded.tokens, "vera": create_token(ctx, "vera")[0]}
    try:
        with serve(settings.data_dir, tmp / "server.log", args=("--no-worker",)) as (url, _):
            yield Served(url, seeded, [first, second, third], tokens, tmp / "server.log")
    finally:
        ctx.db.dispose()


# Hidden sets ------------------------------------------------------------------------------


def test_a_hidden_sets_size_is_not_in_its_jobs_progress(served: Served) -> None:
    """A worker writes how many examples it did of how many; on a hidden set the total is
    the hidden set's size, which only the task owner may know."""
    ctx, submission_id = served.ctx, served.seeded.submissions["distilbert"]
    with ctx.db.session() as session:
        job_id, size = session.execute(
            select(Job.id, Dataset.rows)
            .join(Dataset, Dataset.id == Job.dataset_id)
            .where(
                Job.submission_id == submission_id,
                Dataset.access == Access.HIDDEN.value,
                Dataset.derived_from_id.is_(None),
            )
        ).one()
    # What a worker's heartbeat writes while the job runs.
    assert queue.claim(ctx, job_id, owner="attacks-new")
    assert queue.renew(ctx, job_id, owner="attacks-new", progress=(7, size))
    for headers in ({}, served.auth("carol")):
        jobs = httpx.get(f"{served.url}/submissions/{submission_id}", headers=headers).json()
        hidden = [j for j in jobs["jobs"] if j["dataset"].startswith("hidden-")]
        assert hidden and all(j["examples_total"] is None for j in hidden), hidden
        assert all(j["examples_done"] is None for j in hidden), hidden
        # Nor in the fraction: 7/size gives size away; tenths do not.
        assert all(j["progress"] * 10 == int(j["progress"] * 10) for j in hidden), hidden
        page = httpx.get(f"{served.url}/ui/submissions/{submission_id}", headers=headers)
        assert page.status_code == 200 and f"of {size} examples" not in page.text
    owned = httpx.get(f"{served.url}/submissions/{submission_id}", headers=served.auth("owner"))
    seen = next(j for j in owned.json()["jobs"] if j["dataset"] == "hidden-test")
    assert (seen["examples_done"], seen["examples_total"]) == (7, size)
    assert seen["progress"] == pytest.approx(7 / size)


# Retracted examples -----------------------------------------------------------------------


def pending_examples(ctx: Context, target: int, count: int) -> list[int]:
    """``count`` examples by annie that fooled the open round's target (``target``, opening
    the round where none is open), as collection stores them."""
    round_ = current_round(ctx, TASK) or open_round(ctx, TASK, submission_ids=[target])
    with ctx.db.session() as session:
        author = session.scalar(select(User.id).where(User.name == "annie"))
        ids = []
        for index in range(count):
            example = Example(
                task_id=TASK,
                round_id=round_.id,
                author_id=author,
                target_submission_id=round_.target_submission_ids[0],
                inputs={"statement": f"Great, it rained all week ({index})."},
                gold={"label": "negative"},
                model_output={"label": "positive"},
                fooled=True,
                status=ExampleStatus.PENDING.value,
            )
            session.add(example)
            session.flush()
            ids.append(example.id)
    return ids


def _status(ctx: Context, example_id: int) -> str:
    with ctx.db.session() as session:
        example = session.get(Example, example_id)
        assert example is not None
        return example.status


def test_a_retracted_example_takes_no_verdict(served: Served) -> None:
    """Retracted means out of validation for good: neither another annotator nor the task
    owner brings it back (it was made pending, then verified, by a verdict's post)."""
    (example_id,) = pending_examples(served.ctx, served.seeded.submissions["vader-lexicon"], 1)
    author, token = signed_in(served.url, "annie", PASSWORD, f"/ui/tasks/{TASK}/collect")
    with closing(author):
        done = author.post(f"/ui/examples/{example_id}/retract", data={"csrf_token": token})
    assert done.status_code == 303, done.text
    for judge in ("vera", "owner"):
        answer = httpx.post(
            f"{served.url}/examples/{example_id}/validations",
            headers=served.auth(judge),
            json={"verdict": "correct"},
        )
        assert answer.status_code == 409 and "retracted" in answer.json()["detail"]
        assert _status(served.ctx, example_id) == ExampleStatus.RETRACTED
    judge, token = signed_in(served.url, "vera", PASSWORD, f"/ui/tasks/{TASK}/validate")
    with closing(judge):
        page = judge.post(
            f"/ui/examples/{example_id}/validate", data={"csrf_token": token, "verdict": "correct"}
        )
    assert page.status_code == 409 and "retracted" in page.text
    assert _status(served.ctx, example_id) == ExampleStatus.RETRACTED


def retract_and_judge_at_once(
    served_url: str, ctx: Context, examples: list[int], judge: dict[str, str], outcome: str
) -> list[str]:
    """For each example, annie's retraction (her page form) and ``judge``'s verdict (the
    API) released together; what went wrong, if anything: both answered as done, or the
    one that was done is not what the example says."""
    author, token = signed_in(served_url, "annie", PASSWORD, f"/ui/tasks/{TASK}/collect")
    cookies = dict(author.cookies)
    author.close()
    wrong = []
    for example_id in examples:
        barrier = threading.Barrier(2)

        def retract(example_id: int = example_id, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            done = httpx.post(
                f"{served_url}/ui/examples/{example_id}/retract",
                data={"csrf_token": token},
                cookies=cookies,
            )
            assert done.status_code in (303, 409), done.text
            return done.status_code == 303

        def judge_it(example_id: int = example_id, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            done = httpx.post(
                f"{served_url}/examples/{example_id}/validations",
                headers=judge,
                json={"verdict": "correct"},
            )
            assert done.status_code in (201, 409), done.text
            return done.status_code == 201

        with ThreadPoolExecutor(2) as pool:
            retracted, judged = (f.result() for f in (pool.submit(retract), pool.submit(judge_it)))
        status = _status(ctx, example_id)
        if (retracted and judged) or (retracted and status != ExampleStatus.RETRACTED):
            wrong.append(f"{example_id}: retracted={retracted} judged={judged} -> {status}")
        elif judged and status != outcome:
            wrong.append(f"{example_id}: judged, but {status}")
    return wrong


@pytest.mark.parametrize(("judge", "outcome"), [("owner", "verified"), ("vera", "pending")])
def test_a_retraction_and_a_verdict_at_once_never_both_hold(
    served: Served, judge: str, outcome: str
) -> None:
    examples = pending_examples(served.ctx, served.seeded.submissions["vader-lexicon"], 12)
    wrong = retract_and_judge_at_once(served.url, served.ctx, examples, served.auth(judge), outcome)
    assert not wrong, wrong


class _AlwaysPositive:
    def predict(
        self, round_id: int, submission_id: int, inputs: list[dict[str, Any]], task: TaskSpec
    ) -> list[dict[str, Any]]:
        return [{"label": "positive", "probs": [0.0, 0.0, 1.0]} for _ in inputs]


def test_a_verdict_on_a_version_edited_since_is_refused(served: Served) -> None:
    """vera reads an example, annie rewrites it (still unjudged, so she may), vera's
    "correct" for the text she read must not settle the text she never saw."""
    (example_id,) = pending_examples(served.ctx, served.seeded.submissions["vader-lexicon"], 1)
    queued = httpx.get(
        f"{served.url}/tasks/{TASK}/validations/queue",
        headers=served.auth("vera"),
        params={"limit": 100},
    ).json()
    read = next(e["version"] for e in queued if e["id"] == example_id)
    # The seeded targets are rows without bundles, so annie's edit runs in this process
    # with an injected target that is fooled again; the server sees only the new content.
    with served.ctx.db.session() as session:
        annie = session.scalar(select(User.id).where(User.name == "annie"))
    assert annie is not None
    edit_example(
        served.ctx,
        example_id,
        author_id=annie,
        inputs={"statement": "What a lovely, sunny, wonderful day."},
        gold={"label": "negative"},
        predictor=_AlwaysPositive(),
    )
    stale = httpx.post(
        f"{served.url}/examples/{example_id}/validations",
        headers=served.auth("vera"),
        json={"verdict": "correct", "version": read},
    )
    assert stale.status_code == 409 and "edited" in stale.json()["detail"], stale.text
    judge, csrf = signed_in(served.url, "vera", PASSWORD, f"/ui/tasks/{TASK}/validate")
    with closing(judge):
        page = judge.post(
            f"/ui/examples/{example_id}/validate",
            data={"csrf_token": csrf, "verdict": "correct", "version": read},
        )
    assert page.status_code == 409 and "edited" in page.text
    assert _status(served.ctx, example_id) == ExampleStatus.PENDING
    with served.ctx.db.session() as session:
        example = session.get(Example, example_id)
        assert example is not None
        current = content_version(example)
    assert current != read
    fresh = httpx.post(
        f"{served.url}/examples/{example_id}/validations",
        headers=served.auth("vera"),
        json={"verdict": "correct", "version": current},
    )
    assert fresh.status_code == 201, fresh.text


# The database's limits --------------------------------------------------------------------


def test_an_id_no_database_column_holds_is_a_422_page(served: Served) -> None:
    """Page routes take plain ints in their paths; SQLite's driver raises OverflowError on
    one past 64 bits, which was a 500 and a traceback, for anyone (GET) or any user."""
    refused = httpx.get(f"{served.url}/ui/submissions/{TOO_LARGE}")
    assert refused.status_code == 422 and "<html" in refused.text, refused.text[:200]
    client, token = signed_in(served.url, "annie", PASSWORD, "/ui/me/tokens")
    with closing(client):
        for path in (
            f"/ui/me/tokens/{TOO_LARGE}/revoke",
            f"/ui/examples/{TOO_LARGE}/retract",
            f"/ui/examples/{TOO_LARGE}/edit",
        ):
            answer = client.post(path, data={"csrf_token": token})
            assert answer.status_code == 422 and "too large" in answer.text, (path, answer.text)
    assert "Traceback" not in served.log.read_text()


# What held already, kept as attacks -------------------------------------------------------


def test_json_endpoints_that_take_a_cookie_need_its_csrf_token(served: Served) -> None:
    """A cross-site form or fetch rides on the admin's cookie but cannot read the token."""
    client, token = signed_in(served.url, "admin", PASSWORD, "/ui/me")
    first = served.releases[0]
    changes = [
        ("POST", f"/tasks/{TASK}/suites", None),
        ("POST", f"/submissions/{first}/examples/test/attributions", {"uid": "29-0"}),
        ("POST", "/examples/1/attributions", None),
        ("DELETE", "/users/bob/roles/researcher", None),
    ]
    cut_before = httpx.get(f"{served.url}/tasks/{TASK}/suites").json()
    with closing(client):
        for method, path, body in changes:
            for headers in ({}, {"X-CSRF-Token": token[::-1]}):
                answer = client.request(method, path, json=body, headers=headers)
                assert answer.status_code == 403 and "CSRF" in answer.text, (path, answer.text)
    with served.ctx.db.session() as session:
        bob = select(User.id).where(User.name == "bob").scalar_subquery()
        grants = session.scalars(select(RoleGrant.role).where(RoleGrant.user_id == bob)).all()
    assert "researcher" in grants
    assert httpx.get(f"{served.url}/tasks/{TASK}/suites").json() == cut_before
    assert "Traceback" not in served.log.read_text()


def test_unpublished_releases_stay_out_of_every_new_surface(served: Served) -> None:
    """Lineage, case history, compare, suite export and attributions, to anyone but those
    who may see the unpublished release: as if it did not exist."""
    first, unpublished, third = served.releases
    for headers in ({}, served.auth("bob")):
        lineage = httpx.get(f"{served.url}/lineages/{third}", headers=headers).json()
        assert [r["number"] for r in lineage["releases"]] == [1, 3]
        assert "lineage-v2" not in httpx.get(f"{served.url}/ui/lineages/{first}").text
        for path in (f"/lineages/{unpublished}", f"/ui/lineages/{unpublished}"):
            assert httpx.get(f"{served.url}{path}", headers=headers).status_code == 404
        case = httpx.get(f"{served.url}/tasks/{TASK}/cases/29-7/history", headers=headers)
        assert case.status_code == 200 and "lineage-v2" not in case.text
        compared = httpx.get(
            f"{served.url}/tasks/{TASK}/compare",
            params={"models": f"{first},{unpublished}"},
            headers=headers,
        )
        assert compared.status_code == 404 and "lineage-v2" not in compared.text
    cut = httpx.post(f"{served.url}/tasks/{TASK}/suites", headers=served.auth("bob"))
    assert cut.status_code == 201, cut.text
    suite = httpx.get(cut.json()["url"], headers=served.auth("bob"))
    assert "lineage-v2" not in suite.text and "hidden-test" not in suite.text
    explained = httpx.post(
        f"{served.url}/submissions/{unpublished}/examples/test/attributions",
        headers=served.auth("bob"),
        json={"uid": "29-0"},
    )
    assert explained.status_code == 404
    owned = httpx.get(f"{served.url}/lineages/{third}", headers=served.auth("owner")).json()
    assert [r["number"] for r in owned["releases"]] == [1, 2, 3]


def test_another_users_token_is_not_revoked_from_my_page(served: Served) -> None:
    token, row = create_token(served.ctx, "carol", label="carol's")
    client, form = signed_in(served.url, "annie", PASSWORD, "/ui/me/tokens")
    with closing(client):
        answer = client.post(f"/ui/me/tokens/{row.id}/revoke", data={"csrf_token": form})
    assert answer.status_code == 404
    mine = httpx.get(f"{served.url}/users/me", headers={"Authorization": f"Bearer {token}"})
    assert mine.status_code == 200 and mine.json()["name"] == "carol"


def test_nul_and_lone_surrogates_in_the_new_fields_are_422(served: Served) -> None:
    bob = {**served.auth("bob"), "Content-Type": "application/json"}
    url = served.url
    tries = [
        httpx.post(
            f"{url}/submissions/1/examples/test/attributions",
            headers=bob,
            content=b'{"uid": "a\\u0000"}',
        ),
        httpx.post(
            f"{url}/submissions/1/examples/test/attributions",
            headers=bob,
            content=b'{"uid": "\\ud800"}',
        ),
        httpx.get(f"{url}/tasks/{TASK}/compare", params={"models": "1,2\x00"}),
        httpx.get(f"{url}/tasks/{TASK}/compare/te%ED%A0%80st", params={"models": "1,2"}),
        httpx.get(f"{url}/tasks/{TASK}/cases/a%00/history"),
        httpx.get(f"{url}/tasks/{TASK}/cases/a/history", params={"dataset": "\x00"}),
        httpx.get(f"{url}/ui/tasks/{TASK}/cases/%ED%A0%80"),
        httpx.get(f"{url}/ui/tasks/{TASK}/compare", params={"m": "1\x00"}),
        httpx.get(f"{url}/ui/tasks/{TASK}/ranking?hide=%ED%A0%80"),
        httpx.get(f"{url}/ui/tasks/{TASK}/ranking", params={"q": "a\x00"}),
        httpx.get(f"{url}/ui/tasks/{TASK}/models/1/examples?q=%ED%A0%80"),
        httpx.get(f"{url}/ui/admin/jobs", params={"status": "\x00"}, headers=served.auth("admin")),
    ]
    assert [t.status_code for t in tries] == [422] * len(tries), [t.text[:100] for t in tries]
    assert "Traceback" not in served.log.read_text()


def test_suite_versions_cut_at_once_get_distinct_numbers(served: Served) -> None:
    barrier = threading.Barrier(6)

    def cut(_: int) -> httpx.Response:
        barrier.wait()
        return httpx.post(f"{served.url}/tasks/{TASK}/suites", headers=served.auth("bob"))

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(cut, range(6)))
    assert {a.status_code for a in answers} <= {201, 409}, [a.text for a in answers]
    numbers = [a.json()["version"] for a in answers if a.status_code == 201]
    assert numbers and len(numbers) == len(set(numbers))
    listed = [v["version"] for v in httpx.get(f"{served.url}/tasks/{TASK}/suites").json()]
    assert listed == sorted(set(listed)) and set(numbers) <= set(listed)
