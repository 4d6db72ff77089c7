"""schemathesis over /openapi.json: no server error, no answer that breaks the schema.

Run twice: anonymously (most writes answer 401) and as the admin (every route reached).
The admin run changes the shared platform (it may add users and tasks); nothing after it
relies on its state.
Bounded with hypothesis settings so the whole run stays well under two minutes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from evalboard.core.context import Context
from leaderboard import create_app
from tests.conftest import make_settings
from tests.leaderboard.seeding import Seeded, seed

_state: dict[str, Any] = {}


def _seeded(tmp: Path) -> Seeded:
    if "seeded" not in _state:
        ctx = Context.from_settings(make_settings(tmp))
        _state["seeded"] = seed(ctx, tmp)
    return _state["seeded"]


@pytest.fixture(scope="module", autouse=True)
def _platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _seeded(tmp_path_factory.mktemp("fuzz"))
    yield
    _state.pop("app", None)
    _state.pop("seeded").ctx.db.dispose()


def _app() -> object:
    if "app" not in _state:
        _state["app"] = create_app(_state["seeded"].ctx)
    return _state["app"]


schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(Context.from_settings(make_settings(Path(tempfile.mkdtemp(prefix="fuzz-"))))),
)


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.parametrize("who", [None, "admin"])
def test_api_keeps_its_schema(case: schemathesis.Case, who: str | None) -> None:
    headers = {"Authorization": f"Bearer {_state['seeded'].tokens[who]}"} if who else {}
    # Every other default check runs. positive_data_acceptance is left out: a body can fit
    # the schema and still be refused with a 400 that says why (a task spec is a free-form
    # object in the schema, validated by the registry; a dataset name may already exist).
    case.call_and_validate(app=_app(), headers=headers, excluded_checks=[positive_data_acceptance])
