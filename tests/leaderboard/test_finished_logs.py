"""A finished run's last log lines on the submission page: the submitter's, not anyone's."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import update

from evalboard.core.tables import Job
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import Seeded

pytestmark = pytest.mark.anyio

LOG = "loaded 3 files\nmodel says hello"


async def test_the_submitter_sees_a_finished_runs_log_and_others_do_not(
    app: FastAPI, seeded: Seeded
) -> None:
    submission = seeded.submissions["roberta-large"]  # alice's
    with seeded.ctx.db.session() as session:
        # As evaluator.jobs.queue.finish records them (test_pool checks that path).
        session.execute(update(Job).where(Job.submission_id == submission).values(log_tail=LOG))
    async with make_client(app, seeded.tokens["alice"]) as alice:
        status = (await alice.get(f"/submissions/{submission}")).json()
        page = (await alice.get(f"/ui/submissions/{submission}")).text
    finished = [j for j in status["jobs"] if j["status"] == "finished"]
    shown = [j for j in finished if not j["dataset"].startswith("hidden-")]
    assert shown and all(j["log_tail"] == LOG for j in shown)
    # Never a hidden set's (the evaluator does not keep them; the page would not show them).
    assert all(j["log_tail"] is None for j in finished if j not in shown)
    assert page.count("model says hello") == len(shown)
    async with make_client(app, seeded.tokens["bob"]) as bob:
        status = (await bob.get(f"/submissions/{submission}")).json()
        page = (await bob.get(f"/ui/submissions/{submission}")).text
    assert all(j["log_tail"] is None for j in status["jobs"])
    assert "model says hello" not in page
