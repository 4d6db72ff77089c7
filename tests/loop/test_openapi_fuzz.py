"""schemathesis over the loop's routes: no server error, no answer that breaks the schema.

Anonymously (every write answers 401 before its body is read) and as the task owner, on
a task with an open round whose target is a fake model.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from datasets_registry import create_task
from evalboard.core.context import Context
from evalboard.core.states import Role
from leaderboard import create_app
from leaderboard.accounts import create_token, create_user, grant_role
from leaderboard.loop import TargetPool, open_round
from leaderboard.routes.loop import router
from tests.conftest import make_settings
from tests.helpers.tasks import sentiment_spec
from tests.loop.conftest import add_submission
from tests.loop.fakes import FakeFactory

_state: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    ctx = Context.from_settings(make_settings(tmp_path_factory.mktemp("loop-fuzz")))
    owner = create_user(ctx, "owner")
    create_task(ctx, sentiment_spec(), owner_id=owner.id)
    grant_role(ctx, "owner", Role.OWNER, task_id="sentiment")
    open_round(ctx, "sentiment", submission_ids=[add_submission(ctx, "sentiment", "fake")])
    app = create_app(ctx)
    app.state.target_pool = TargetPool(FakeFactory())
    _state.update(app=app, token=create_token(ctx, "owner")[0])
    yield
    app.state.target_pool.close()
    ctx.db.dispose()
    _state.clear()


def _loop_paths() -> str:
    paths = {
        route.path
        for route in router.routes
        if isinstance(route, APIRoute) and route.include_in_schema
    }
    return "^(" + "|".join(re.escape(p) for p in sorted(paths)) + ")$"


schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(Context.from_settings(make_settings(Path(tempfile.mkdtemp(prefix="fuzz-"))))),
).include(path_regex=_loop_paths())


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.parametrize("who", [None, "owner"])
def test_loop_api_keeps_its_schema(case: schemathesis.Case, who: str | None) -> None:
    headers = {"Authorization": f"Bearer {_state['token']}"} if who else {}
    # A body can fit the schema and still be refused with a 4xx saying why (an unknown
    # task, a label the task does not have): positive_data_acceptance is left out.
    case.call_and_validate(
        app=_state["app"], headers=headers, excluded_checks=[positive_data_acceptance]
    )
