"""Attacks on the surfaces added with compare, lineages, the role pages and the viewer
pages, tried against a real ``evalboard serve`` (SQLite, no worker), each held.

The platform is the seeded one, plus a lineage of three releases of alice's model (the
second unpublished), a second annotator and an open round. Races use real threads against
the server process; the database is inspected from here. The PostgreSQL side of the
retraction race is in ``test_attacks_live.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from evalboard.core.context import Context
from evalboard.core.states import Access, Role
from evalboard.core.tables import Dataset, Job, Submission
from evaluator.jobs import queue
from leaderboard.accounts import create_token, create_user
from tests.conftest import make_settings
from tests.leaderboard.conftest import serve
from tests.leaderboard.seeding import PASSWORD, Seeded, seed
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
        page = httpx.get(f"{served.url}/ui/submissions/{submission_id}", headers=headers)
        assert page.status_code == 200 and f"of {size} examples" not in page.text
    owned = httpx.get(f"{served.url}/submissions/{submission_id}", headers=served.auth("owner"))
    seen = next(j for j in owned.json()["jobs"] if j["dataset"] == "hidden-test")
    assert (seen["examples_done"], seen["examples_total"]) == (7, size)
