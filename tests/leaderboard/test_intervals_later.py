"""A large board's first answer for new weights comes at once, its intervals after.

With ``intervals_inline_models`` at 1, the seeded board counts as large: the API and the
page answer without the intervals of a weighting not asked before (``intervals_pending``,
``Retry-After``) while the context's background thread makes them, and with them once
made, equal to a board ranked from scratch. The downloads wait for them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from evalboard.core.context import Context
from leaderboard.app import create_app
from leaderboard.paging import DEFAULT_LIMIT
from tests.helpers.background import hold
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded
from tests.leaderboard.test_board_cache import _from_scratch

pytestmark = pytest.mark.anyio

WEIGHTS = "test:0.25"


def _large(seeded: Seeded, models: int = 1) -> Context:
    """The seeded context, with boards of ``models`` or more ranked models counted large."""
    settings = seeded.ctx.settings.model_copy(update={"intervals_inline_models": models})
    return dataclasses.replace(seeded.ctx, settings=settings)


def _ranked(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in body["rows"] if row["rank"] is not None]


async def test_new_weights_answer_at_once_then_with_the_intervals_from_scratch(
    seeded: Seeded,
) -> None:
    ctx = _large(seeded)
    release = hold(ctx.background)  # busy: the intervals wait their turn
    url = f"/tasks/{TASK}/leaderboard?dataset_weights={WEIGHTS}"
    async with make_client(create_app(ctx)) as client:
        first = await client.get(url)
        assert first.status_code == 200
        assert first.headers["retry-after"] == "1"
        pending = first.json()
        assert pending["intervals_pending"] is True
        assert pending["rows"]
        for row in _ranked(pending):
            assert row["rank_interval"] is None and row["p_first"] is None
            assert "perf" not in (row["intervals"] or {})
        again = await client.get(url)  # asked again while they are being made
        assert again.json() == pending
        section = await client.get(f"/ui/tasks/{TASK}/ranking?dataset_weights={WEIGHTS}")
        assert "data-intervals-pending" in section.text

        release.set()
        assert ctx.background.wait_idle(timeout=60)
        done = await client.get(url)
        assert "retry-after" not in done.headers
        full = done.json()
        section = await client.get(f"/ui/tasks/{TASK}/ranking?dataset_weights={WEIGHTS}")
    assert full["intervals_pending"] is False
    assert "data-intervals-pending" not in section.text
    scratch = _from_scratch(seeded.ctx, {"test": 0.25})
    assert _ranked(full) == _ranked(scratch)
    assert all(row["rank_interval"] is not None for row in _ranked(full))
    # The order shown meanwhile was the final one here: no model near the baseline.
    assert [r["key"] for r in _ranked(pending)] == [r["key"] for r in _ranked(full)]


async def test_the_downloads_and_a_small_board_wait_for_the_intervals(seeded: Seeded) -> None:
    for ctx, path in (
        (_large(seeded), f"/tasks/{TASK}/leaderboard.json?dataset_weights={WEIGHTS}"),
        (_large(seeded, models=10_000), f"/tasks/{TASK}/leaderboard?dataset_weights=test:3"),
    ):
        release = hold(ctx.background)  # nothing left to it would be made meanwhile
        try:
            async with make_client(create_app(ctx)) as client:
                response = await client.get(path)
        finally:
            release.set()
        body = response.json()
        assert body["intervals_pending"] is False
        assert all(row["rank_interval"] is not None for row in _ranked(body))


async def test_intervals_a_cache_cannot_keep_are_made_in_the_request(seeded: Seeded) -> None:
    settings = _large(seeded).settings.model_copy(update={"cache_bytes": 0})
    ctx = Context.from_settings(settings)  # a cache that keeps nothing
    try:
        async with make_client(create_app(ctx)) as client:
            body = (await client.get(f"/tasks/{TASK}/leaderboard?dataset_weights=test:2")).json()
    finally:
        ctx.db.dispose()
    assert body["intervals_pending"] is False
    assert all(row["rank_interval"] is not None for row in _ranked(body))


async def test_a_download_waits_for_the_intervals_being_made_rather_than_making_them(
    seeded: Seeded,
) -> None:
    ctx = _large(seeded)
    release = hold(ctx.background)
    app = create_app(ctx)
    async with make_client(app) as client:
        first = await client.get(f"/tasks/{TASK}/leaderboard?dataset_weights={WEIGHTS}")
        assert first.json()["intervals_pending"] is True  # their work waits its turn
        download = asyncio.create_task(
            client.get(f"/tasks/{TASK}/leaderboard.json?dataset_weights={WEIGHTS}")
        )
        await asyncio.sleep(0.5)
        assert not download.done()  # waiting for the background, not resampling itself
        release.set()
        body = (await asyncio.wait_for(download, timeout=60)).json()
    assert body["intervals_pending"] is False
    assert _ranked(body) == _ranked(_from_scratch(seeded.ctx, {"test": 0.25}))


async def test_the_background_ranks_the_first_page_with_the_intervals(seeded: Seeded) -> None:
    """The request that finds the intervals made ranks no row: the background ranked the
    first page's rows (and who leads) with them."""
    ctx = _large(seeded)
    async with make_client(create_app(ctx)) as client:
        pending = await client.get(f"/tasks/{TASK}/leaderboard?dataset_weights={WEIGHTS}")
        assert pending.json()["intervals_pending"] is True
        assert ctx.background.wait_idle(timeout=60)
    made = [
        value
        for key, (value, *_) in list(ctx.cache._entries.items())
        if isinstance(key, tuple) and key[:1] == ("bootstrap",) and value is not None
    ]
    assert len(made) == 1
    intervals = made[0]
    first_page = intervals.order[:DEFAULT_LIMIT]
    assert set(intervals._rows) == set(first_page) and intervals._first_counts is not None
