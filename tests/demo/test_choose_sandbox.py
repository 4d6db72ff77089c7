"""The demo's sandbox choice: what ``auto`` means where Docker answers, and bad names."""

from __future__ import annotations

import pytest

from evalboard.core.context import Context
from evalboard.core.errors import UsageError
from evalboard.demo.run import choose_sandbox


def test_an_unknown_sandbox_is_refused_with_the_known_ones(ctx: Context) -> None:
    with pytest.raises(UsageError, match="known: auto, docker, gvisor, local"):
        choose_sandbox(ctx, "vm")


def test_local_is_chosen_only_when_asked_for_here_and_says_it_does_not_isolate(
    ctx: Context,
) -> None:
    kind, note = choose_sandbox(ctx, "local")
    assert kind == "local" and note is not None and "no isolation" in note


@pytest.mark.docker
@pytest.mark.gvisor
def test_the_default_is_gvisor_where_the_engine_has_it(ctx: Context) -> None:
    from submission_sandbox import runsc_problem

    try:
        problem = runsc_problem()
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine here
        pytest.skip(f"no Docker engine: {exc}")
    if problem is not None:
        pytest.skip(f"{problem}; run `bash docker/bootstrap.sh` as root")
    assert choose_sandbox(ctx, None) == ("gvisor", None)
    assert choose_sandbox(ctx, "auto") == ("gvisor", None)
    assert choose_sandbox(ctx, "docker") == ("docker", None)
