"""The cached ranking: a warm board equals one ranked from nothing, and follows every change.

A warm request cuts its page from a ranking kept in ``ctx.cache`` under the table's
version (``leaderboard.ranking``); these tests compare it, after each kind of change, with
the ranking of a context that keeps nothing (``cache_bytes=0``), which derives every row
and bootstraps every interval again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import threading
import weakref
from collections import Counter
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, select, update

from datasets_registry import add_dataset, set_dataset_weight
from evalboard.core.artifacts import ArtifactStore
from evalboard.core.cache import MemoryCache, approximate_size
from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evalboard.core.settings import Settings
from evalboard.core.tables import BoardVersion, Result, Submission
from evaluator import summarize
from leaderboard.accounts import ANONYMOUS, Principal, principal_for_token
from leaderboard.cards import visible_table
from leaderboard.intervals import _draws_size, _resamples_size
from leaderboard.kept_draws import load_draws, save_draws, worth_saving
from leaderboard.paging import BoardQuery
from leaderboard.ranking import _Rows, build_leaderboard
from leaderboard.table import _counted, load_table
from scoring.bootstrap import Draws
from tests.helpers.tasks import write_jsonl
from tests.leaderboard.seeding import MODELS, TASK, Seeded

DATASET_WEIGHTS: list[dict[str, float] | None] = [None, {"test": 0.25}]


def _uncached(ctx: Context) -> Context:
    """A context on the same storage that keeps nothing derived: every request from scratch."""
    settings = Settings(**{**ctx.settings.model_dump(), "cache_bytes": 0})
    return Context.from_settings(settings)


def _board(
    ctx: Context,
    dataset_weights: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
    principal: Principal = ANONYMOUS,
) -> dict[str, Any]:
    table = visible_table(load_table(ctx, TASK), principal, cache=ctx.cache)
    board = build_leaderboard(ctx, table, weights, dataset_weights=dataset_weights)
    return board.model_dump(mode="json")


def _from_scratch(
    ctx: Context,
    dataset_weights: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
    principal: Principal = ANONYMOUS,
) -> dict[str, Any]:
    reader = _uncached(ctx)
    try:
        return _board(reader, dataset_weights, weights, principal)
    finally:
        reader.db.dispose()


@pytest.mark.parametrize("dataset_weights", DATASET_WEIGHTS)
def test_a_warm_board_equals_one_ranked_from_scratch(
    seeded: Seeded, dataset_weights: dict[str, float] | None
) -> None:
    cold = _board(seeded.ctx, dataset_weights)
    warm = _board(seeded.ctx, dataset_weights)  # from the cached ranking
    assert warm == cold == _from_scratch(seeded.ctx, dataset_weights)
    ranked = [r for r in warm["rows"] if r["rank"] is not None]
    assert ranked and all(r["intervals"] and r["rank_interval"] for r in ranked)
    assert sum(r["p_first"] for r in ranked) == pytest.approx(1.0)


def test_new_metric_weights_on_a_warm_board_equal_them_ranked_from_scratch(
    seeded: Seeded,
) -> None:
    # What new metric weights reuse (the rows' goods, kept per dataset weighting) must be
    # that weighting's: each request here follows one with other weights of both kinds.
    asked = [
        (None, {"perf": 4.0, "throughput": 1.0, "memory": 1.0}),
        ({"test": 0.25}, {"perf": 1.0, "throughput": 3.0}),
        (None, {"perf": 2.0, "memory": 2.0}),
        ({"test": 0.25}, {"perf": 5.0, "throughput": 1.0, "memory": 1.0}),
    ]
    for dataset_weights, weights in asked:
        warm = _board(seeded.ctx, dataset_weights, weights)
        assert warm == _from_scratch(seeded.ctx, dataset_weights, weights)


def test_pages_of_the_cached_ranking_keep_the_whole_boards_ranks(seeded: Seeded) -> None:
    table = load_table(seeded.ctx, TASK)
    whole = build_leaderboard(seeded.ctx, table).rows
    second = build_leaderboard(seeded.ctx, table, query=BoardQuery(limit=2, offset=2)).rows
    ranked = [r for r in whole if r.rank is not None]
    assert [(r.key, r.rank) for r in second] == [(r.key, r.rank) for r in ranked[2:4]]


def test_the_ranking_follows_a_dataset_weight_change(seeded: Seeded) -> None:
    before = _board(seeded.ctx)
    set_dataset_weight(seeded.ctx, task_id=TASK, name="test", weight=0.1)
    after = _board(seeded.ctx)
    assert after == _from_scratch(seeded.ctx)
    assert after["dataset_weights"] != before["dataset_weights"]
    assert [r["metrics"] for r in after["rows"]] != [r["metrics"] for r in before["rows"]]


def test_a_new_scoring_dataset_makes_every_model_pending(seeded: Seeded, tmp_path: Path) -> None:
    # A closed round adds its dataset the same way (``leaderboard.loop.close_round``).
    assert _board(seeded.ctx)["total"] > 0
    path = write_jsonl(
        tmp_path / "round-9.jsonl",
        [{"uid": f"r9-{i}", "statement": "fine", "label": "positive"} for i in range(5)],
    )
    add_dataset(seeded.ctx, task_id=TASK, name="round-9", path=path, round=9)
    after = _board(seeded.ctx)
    assert after == _from_scratch(seeded.ctx)
    assert after["total"] == 0 and after["pending"]


def test_an_unpublished_submission_leaves_the_public_board(seeded: Seeded) -> None:
    roberta = seeded.submissions["roberta-large"]
    assert roberta in {r["submission_id"] for r in _board(seeded.ctx)["rows"]}
    with seeded.ctx.db.session() as session:
        session.execute(update(Submission).where(Submission.id == roberta).values(published=False))
    after = _board(seeded.ctx)
    assert roberta not in {r["submission_id"] for r in after["rows"]}
    assert after == _from_scratch(seeded.ctx)


def test_a_deleted_submission_leaves_the_board(seeded: Seeded) -> None:
    roberta = seeded.submissions["roberta-large"]
    _board(seeded.ctx)
    with seeded.ctx.db.session() as session:
        session.execute(delete(Submission).where(Submission.id == roberta))
    after = _board(seeded.ctx)
    assert roberta not in {r["submission_id"] for r in after["rows"]}
    assert roberta not in {p["submission_id"] for p in after["pending"]}
    assert after == _from_scratch(seeded.ctx)


def test_the_cache_keeps_within_its_byte_budget(seeded: Seeded) -> None:
    budget = 60_000
    settings = Settings(**{**seeded.ctx.settings.model_dump(), "cache_bytes": budget})
    ctx = Context.from_settings(settings)
    try:
        assert ctx.cache.budget_bytes == budget
        for weights in [None, {"test": 0.5}, {"test": 2.0}, {"test": 3.0}]:
            assert _board(ctx, weights) == _from_scratch(seeded.ctx, weights)
            assert 0 < ctx.cache.held_bytes <= budget
    finally:
        ctx.db.dispose()


def test_re_weighing_without_copies_averages_as_copied_outcomes_do(seeded: Seeded) -> None:
    entry = next(m for m in load_table(seeded.ctx, TASK).models if m.complete)
    chosen = {o.dataset: 0.5 + i for i, o in enumerate(entry.outcomes)}
    copied = [o.model_copy(update={"weight": chosen[o.dataset]}) for o in entry.outcomes]
    assert summarize(entry.outcomes, weights=chosen) == summarize(copied)
    assert summarize(entry.outcomes, weights=chosen) != summarize(entry.outcomes)


@pytest.mark.parametrize("weights", [{"test": 0.25}, {"test": 3.0}])
def test_re_weighing_from_the_kept_arrays_averages_as_the_summary_does(
    seeded: Seeded, weights: dict[str, float]
) -> None:
    # The arrays kept per board version (a re-weighing is arithmetic) give the averages
    # of evaluator.summarize to the last bit, hidden sets (left out: at 0), copies and
    # standard sets alike.
    table = load_table(seeded.ctx, TASK)
    by_summary = table.reweighted(weights).models
    for _ in range(2):  # the arrays built, then read from the cache
        from_arrays = table.reweighted(weights, cache=seeded.ctx.cache).models
        assert [m.metrics for m in from_arrays] == [m.metrics for m in by_summary]
        assert from_arrays == by_summary
    assert any(m.metrics != o.metrics for m, o in zip(by_summary, table.models, strict=True))


class _WatchedCache(MemoryCache):
    """A memory cache that keeps a weak reference to every value put in it."""

    def __init__(self, budget_bytes: int) -> None:
        super().__init__(budget_bytes)
        self.put_values: list[weakref.ref[Any]] = []

    def put(
        self, key: Hashable, value: Any, *, size: int | None = None, within: Hashable = None
    ) -> None:
        with contextlib.suppress(TypeError):  # values without weak references (tuples)
            self.put_values.append(weakref.ref(value))
        super().put(key, value, size=size, within=within)


def test_rankings_the_cache_evicts_are_freed_though_frozen(seeded: Seeded) -> None:
    """The ranking's settle freezes what the process keeps (no full pass walks it); an
    evicted ranking must still be freed, by its reference count, with no collection."""
    budget = 60_000
    settings = Settings(**{**seeded.ctx.settings.model_dump(), "cache_bytes": budget})
    cache = _WatchedCache(budget)
    ctx = dataclasses.replace(Context.from_settings(settings), cache=cache)
    try:
        for weight in [0.5, 2.0, 3.0, 4.0, 5.0, 6.0]:
            _board(ctx, {"test": weight})
        assert gc.get_freeze_count() > 0  # the settle ran
        # A value still referenced is one the cache holds (or this test's frames): every
        # other one, though frozen, is gone without a collection.
        alive = [ref() for ref in cache.put_values if ref() is not None]
        held = {id(value) for value, _ in cache._entries.values()}
        assert len(cache.put_values) > len(held)  # the budget evicted some
        assert all(id(value) in held for value in alive)
    finally:
        ctx.db.dispose()


class _CountedPuts(MemoryCache):
    """A memory cache that counts the values put in it (by :meth:`put` or :meth:`keep`)
    by the first part of their key."""

    def __init__(self, budget_bytes: int) -> None:
        super().__init__(budget_bytes)
        self.puts: Counter[str] = Counter()
        self.values: dict[str, list[Any]] = {}

    def _count(self, key: Hashable, value: Any) -> None:
        if isinstance(key, tuple) and key and isinstance(key[0], str):
            self.puts[key[0]] += 1
            self.values.setdefault(key[0], []).append(value)

    def put(
        self, key: Hashable, value: Any, *, size: int | None = None, within: Hashable = None
    ) -> None:
        self._count(key, value)
        super().put(key, value, size=size, within=within)

    def keep(
        self, key: Hashable, value: Any, *, size: int | None = None, within: Hashable = None
    ) -> Any:
        self._count(key, value)
        return super().keep(key, value, size=size, within=within)


def test_kept_bootstrap_draws_serve_new_weights_and_follow_the_models(seeded: Seeded) -> None:
    """Weights no request asked for before bootstrap from the draws kept (the examples
    did not change), with the intervals of a board ranked from scratch; a model leaving
    the board draws again."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        for weight in [0.25, 3.0]:
            assert _board(ctx, {"test": weight}) == _from_scratch(seeded.ctx, {"test": weight})
        assert cache.puts["bootstrap-draws"] == 1
        roberta = seeded.submissions["roberta-large"]
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=False)
            )
        _, _, before = _kept(cache, "bootstrap-draws")
        after = _board(ctx, {"test": 2.0})
        assert after == _from_scratch(seeded.ctx, {"test": 2.0})
        assert roberta not in {r["submission_id"] for r in after["rows"]}
        assert cache.puts["bootstrap-draws"] == 2
        # The models that stayed keep their columns: the examples' draws (and any
        # measurement's picks) are the same objects, not drawn again.
        _, _, now = _kept(cache, "bootstrap-draws")
        assert now.counts is before.counts
        assert all(now.picks[key] is before.picks[key] for key in now.picks)
        assert set(now.columns) < set(before.columns)
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=True)
            )
        back = _board(ctx, {"test": 2.0})  # the model back: its column alone drawn anew
        assert back == _from_scratch(seeded.ctx, {"test": 2.0})
        assert roberta in {r["submission_id"] for r in back["rows"]}
    finally:
        ctx.db.dispose()


def _kept(cache: MemoryCache, kind: str) -> Any:
    """The value ``cache`` keeps under the key starting with ``kind`` (there is one)."""
    (value,) = [value for key, (value, _) in cache._entries.items() if key[0] == kind]
    return value


def test_kept_resamples_serve_new_metric_weights_and_follow_the_models(seeded: Seeded) -> None:
    """Metric weights no request asked for before weigh the resamples kept (their goods
    and AMRS do not depend on them), with the intervals of a board ranked from scratch; a
    model leaving the board resamples again."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        for weights in [{"perf": 1.0}, {"perf": 2.0, "throughput": 1.0, "memory": 0.5}]:
            board = _board(ctx, weights=weights)
            assert board == _from_scratch(seeded.ctx, weights=weights)
            assert any(r["intervals"] for r in board["rows"])
        assert cache.puts["bootstrap-resamples"] == 1
        roberta = seeded.submissions["roberta-large"]
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=False)
            )
        weights = {"perf": 3.0, "memory": 1.0}
        assert _board(ctx, weights=weights) == _from_scratch(seeded.ctx, weights=weights)
        assert cache.puts["bootstrap-resamples"] == 2
    finally:
        ctx.db.dispose()


def test_other_dataset_weights_keep_the_owners_resamples(seeded: Seeded) -> None:
    """Resamples are kept per dataset shares: a viewer trying other dataset weights, then
    the owner's again with new metric weights, resamples once per weighting of datasets."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        for dataset_weights, weights in [
            (None, {"perf": 1.0}),
            ({"test": 0.25}, {"perf": 2.0, "memory": 1.0}),
            (None, {"perf": 3.0, "throughput": 1.0}),
            ({"test": 0.25}, {"perf": 1.0, "memory": 2.0}),
        ]:
            board = _board(ctx, dataset_weights, weights)
            assert board == _from_scratch(seeded.ctx, dataset_weights, weights)
            assert any(r["intervals"] for r in board["rows"])
        assert cache.puts["bootstrap-resamples"] == 2
    finally:
        ctx.db.dispose()


def test_dataset_weights_in_the_same_proportions_keep_the_resamples(seeded: Seeded) -> None:
    """Datasets weigh by their shares of the weight (``scoring.weighted_mean``): the owner
    tripling every original's weight changes no figure, to the last bit, so the kept
    resamples serve the board again (a weighting that changed nothing but a rounding made
    a board of 10,000 models resample, 1.7 s)."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        before = _board(ctx)
        for name in ("test", "hidden-test"):
            set_dataset_weight(seeded.ctx, task_id=TASK, name=name, weight=3.0)
        after = _board(ctx)
        assert after == _from_scratch(seeded.ctx)
        assert any(r["intervals"] for r in after["rows"])
        assert after["rows"] == before["rows"]
        assert cache.puts["bootstrap-resamples"] == 1
    finally:
        ctx.db.dispose()


def _prediction_keys(ctx: Context) -> list[str]:
    with ctx.db.session() as session:
        return [k for k in session.scalars(select(Result.predictions_key)) if k is not None]


def test_a_restarted_server_reads_the_kept_statistics_not_the_predictions(
    seeded: Seeded,
) -> None:
    """Each prediction file's statistics are derived once and stored beside it: a new
    server (nothing in memory) bootstraps the same intervals without reading one."""
    first = _board(seeded.ctx)
    assert any(r["intervals"] for r in first["rows"])
    for key in _prediction_keys(seeded.ctx):  # the drill-down's files, gone
        seeded.ctx.artifacts.put_bytes(key, b"not JSON\n")
    restarted = Context.from_settings(seeded.ctx.settings)
    try:
        assert _board(restarted) == first
    finally:
        restarted.db.dispose()


def test_a_store_that_cannot_keep_statistics_costs_nothing_but_time(
    seeded: Seeded, caplog: pytest.LogCaptureFixture
) -> None:
    """A full or read-only store: the statistics are derived for the request all the
    same (and again next time); a kept file that is not ours is derived again."""
    full = Context.from_settings(seeded.ctx.settings)
    full = dataclasses.replace(full, artifacts=_FullStore(full.artifacts.url))
    try:
        on_full_disk = _board(full)
        assert "interval statistics not stored" in caplog.text
        assert "bootstrap draws of task" in caplog.text
    finally:
        full.db.dispose()
    expected = _from_scratch(seeded.ctx)
    assert on_full_disk == expected
    local = [seeded.ctx.artifacts.local_path(key) for key in _prediction_keys(seeded.ctx)]
    # Only the originals' files are bootstrapped, so only they have statistics kept.
    kept = next(k for path in local if path for k in path.parent.glob(f"{path.name}.*.statistics"))
    kept.write_bytes(b"\x00" * 80)
    assert _from_scratch(seeded.ctx) == expected
    assert kept.read_bytes() != b"\x00" * 80  # derived and kept again


class _CountedReads(ArtifactStore):
    """An artifact store that counts the kept interval statistics it reads."""

    statistics_read = 0

    def read_bytes(self, key: str) -> bytes:
        if key.endswith(".statistics"):
            self.statistics_read += 1
        return super().read_bytes(key)


def test_kept_draws_read_no_statistics_and_a_new_model_reads_its_own(seeded: Seeded) -> None:
    """Once a board's bootstrap draws are kept, weights no request asked for before read
    no model's statistics (10,000 of them would not fit beside the board in the cache),
    and a model joining the board reads its own alone, with the intervals of a board
    ranked from scratch."""
    _board(seeded.ctx)  # every model's statistics derived and kept beside its predictions
    store = _CountedReads(seeded.ctx.artifacts.url)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), artifacts=store)
    try:
        _board(ctx)
        # The draws kept on disk: one model's statistics say how many examples there are.
        assert store.statistics_read <= len(_originals(ctx))
        store.statistics_read = 0
        for weights in [{"perf": 1.0}, {"perf": 2.0, "memory": 1.0}]:
            assert _board(ctx, weights=weights) == _from_scratch(seeded.ctx, weights=weights)
        assert store.statistics_read == 0
        roberta = seeded.submissions["roberta-large"]
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=False)
            )
        _board(ctx)
        # Every column kept: one model's statistics say how many examples there are.
        assert store.statistics_read <= len(_originals(ctx))
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=True)
            )
        store.statistics_read = 0
        # The board is the first one again: its resamples are still kept.
        assert _board(ctx) == _from_scratch(seeded.ctx)
        assert store.statistics_read == 0
        # Dataset weights no request asked for (a viewer's: the visible set alone), with
        # roberta back: resampled from the draws kept without roberta's column, which is
        # read alone.
        assert _board(ctx, {"test": 0.5}) == _from_scratch(seeded.ctx, {"test": 0.5})
        assert store.statistics_read == len(_originals(ctx))  # roberta's alone
        store.statistics_read = 0
        # The same shares under other weights: the same resamples, nothing read.
        assert _board(ctx, {"test": 0.25}) == _from_scratch(seeded.ctx, {"test": 0.25})
        assert store.statistics_read == 0
    finally:
        ctx.db.dispose()


def _originals(ctx: Context) -> list[Any]:
    return load_table(ctx, TASK).originals


class _FullStore(ArtifactStore):
    """An artifact store whose disk is full: every write fails as the real one reports it."""

    def open_write(self, key: str) -> Any:
        raise PlatformError(f"The artifact store at {self.url} is full")

    def put_bytes(self, key: str, data: bytes) -> None:
        raise PlatformError(f"The artifact store at {self.url} is full")


def _kept_draws(ctx: Context) -> Path:
    path = ctx.artifacts.local_path(f"bootstrap-draws/{TASK}.npz")
    assert path is not None
    return path


def test_a_restarted_server_resamples_from_the_draws_kept_on_disk(seeded: Seeded) -> None:
    """A first bootstrap keeps its draws on disk: a server started again (nothing in
    memory) gives the same board reading one model's statistics, not every model's (at
    10,000 models: the intervals 3.4 s after a start instead of 17.6 s here)."""
    first = _board(seeded.ctx)
    assert any(r["intervals"] for r in first["rows"]) and _kept_draws(seeded.ctx).is_file()
    store = _CountedReads(seeded.ctx.artifacts.url)
    restarted = dataclasses.replace(Context.from_settings(seeded.ctx.settings), artifacts=store)
    try:
        assert _board(restarted) == first
        assert _board(restarted, {"test": 0.25}) == _from_scratch(seeded.ctx, {"test": 0.25})
        assert store.statistics_read == 0  # every model's column kept, the baseline's made
    finally:
        restarted.db.dispose()


@pytest.mark.parametrize("damage", ["truncated", "foreign", "another-task-key"])
def test_kept_draws_that_do_not_read_back_are_drawn_again(
    seeded: Seeded, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A kept file cut short, not ours, or drawn for other examples (the task's datasets
    changed since): the draws are made from the statistics, as without it, and kept."""
    _board(seeded.ctx)
    path = _kept_draws(seeded.ctx)
    whole = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    elif damage == "foreign":
        path.write_bytes(b"\x00" * 4096)
    else:
        kept = load_draws(seeded.ctx, TASK, _stored_task_key(path))
        assert kept is not None and load_draws(seeded.ctx, TASK, "another-task-key") is None
        save_draws(seeded.ctx, TASK, "another-task-key", *kept)
    store = _CountedReads(seeded.ctx.artifacts.url)
    restarted = dataclasses.replace(Context.from_settings(seeded.ctx.settings), artifacts=store)
    try:
        assert _board(restarted) == _from_scratch(seeded.ctx)
        assert store.statistics_read == len(MODELS) * len(_originals(restarted))
        if damage != "another-task-key":
            assert "bootstrap draws of task" in caplog.text
        assert path.read_bytes() == whole  # drawn again, and kept again
    finally:
        restarted.db.dispose()


def test_servers_starting_at_once_each_keep_whole_draws(seeded: Seeded) -> None:
    """Several servers on one store bootstrapping the same board at once (each writes its
    draws: every column is new to each): every board equals one ranked from scratch, and
    what is left on disk is one whole file that a later server reads back."""
    expected = _from_scratch(seeded.ctx)
    contexts = [Context.from_settings(seeded.ctx.settings) for _ in range(6)]
    start = threading.Barrier(len(contexts))
    found: list[dict[str, Any]] = []

    def server(ctx: Context) -> None:
        start.wait()
        found.append(_board(ctx))

    threads = [threading.Thread(target=server, args=(ctx,)) for ctx in contexts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert len(found) == len(contexts) and all(board == expected for board in found)
        path = _kept_draws(seeded.ctx)
        assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial left
        assert load_draws(seeded.ctx, TASK, _stored_task_key(path)) is not None
    finally:
        for ctx in contexts:
            ctx.db.dispose()


def _stored_task_key(path: Path) -> str:
    with np.load(path, allow_pickle=False) as stored:
        return str(json.loads(bytes(stored["header"]).decode())["task_key"])


def test_kept_draws_read_back_as_they_were_drawn(seeded: Seeded) -> None:
    _board(seeded.ctx)
    key = _stored_task_key(_kept_draws(seeded.ctx))
    files, uids, draws = seeded.ctx.cache.get(("bootstrap-draws", key))
    kept = load_draws(seeded.ctx, TASK, key)
    assert kept is not None
    assert kept[0] == files and kept[1] == uids
    read = kept[2]
    _assert_same_draws(read, draws)
    # Repeated measurements' picks (the seeded board has none): side by side in the file.
    rng = np.random.default_rng(0)
    picks = {
        ("1", "throughput"): rng.integers(0, 3, (draws.n_resamples, 3)),
        ("2", "throughput"): rng.integers(0, 5, (draws.n_resamples, 5)),
    }
    measured = dataclasses.replace(draws, picks=picks)
    save_draws(seeded.ctx, TASK, key, files, uids, measured)
    again = load_draws(seeded.ctx, TASK, key)
    assert again is not None
    _assert_same_draws(again[2], measured)


def _assert_same_draws(read: Draws, drawn: Draws) -> None:
    for attribute in ("metric", "datasets", "columns", "n_resamples", "seed", "whole"):
        assert getattr(read, attribute) == getattr(drawn, attribute), attribute
    for attribute in ("counts", "perf", "estimate"):
        for mine, theirs in zip(getattr(read, attribute), getattr(drawn, attribute), strict=True):
            np.testing.assert_array_equal(mine, theirs)
            assert mine.dtype == theirs.dtype
    assert read.picks.keys() == drawn.picks.keys()
    for pick, array in drawn.picks.items():
        np.testing.assert_array_equal(read.picks[pick], array)


def test_draws_are_kept_when_most_of_their_columns_are_new() -> None:
    assert worth_saving(10_000, 10_000) and worth_saving(10_000, 1_000)
    assert not worth_saving(10_000, 999) and not worth_saving(10_000, 0)
    assert worth_saving(5, 1)


def test_new_metric_weights_rank_the_figures_kept_per_version(seeded: Seeded) -> None:
    """Metric weights no request asked for before rank the board's own figures kept as
    arrays under its version (not read from every row again), as a board ranked from
    scratch does; a model leaving the board keeps them anew."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        for weights in [None, {"perf": 1.0}, {"perf": 3.0, "throughput": 1.0}]:
            assert _board(ctx, weights=weights) == _from_scratch(seeded.ctx, weights=weights)
        assert cache.puts["own-figures"] == 1
        roberta = seeded.submissions["roberta-large"]
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=False)
            )
        after = _board(ctx, weights={"perf": 2.0, "memory": 1.0})
        assert after == _from_scratch(seeded.ctx, weights={"perf": 2.0, "memory": 1.0})
        assert roberta not in {r["submission_id"] for r in after["rows"]}
        assert cache.puts["own-figures"] == 2
    finally:
        ctx.db.dispose()


def test_every_viewer_sees_the_warm_visible_rows_a_board_from_scratch_shows(
    seeded: Seeded,
) -> None:
    """The rows a viewer may see are kept per board version and grants: each viewer's
    warm board (anonymous, submitter, other researcher, task owner, admin, annotator)
    equals one ranked from scratch, with unpublished and anonymous models; the kept rows
    are made once per viewer, and again after a change."""
    roberta, minilm = seeded.submissions["roberta-large"], seeded.submissions["minilm-head"]
    with seeded.ctx.db.session() as session:
        session.execute(update(Submission).where(Submission.id == roberta).values(published=False))
        session.execute(
            update(Submission).where(Submission.id == minilm).values(card={"anonymous": True})
        )
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    viewers: dict[str | None, Principal] = {None: ANONYMOUS}
    for name, token in seeded.tokens.items():
        found = principal_for_token(ctx, token)
        assert found is not None
        viewers[name] = found
    try:
        seen: dict[str | None, dict[str, str | None]] = {}
        for _ in range(2):
            for name, principal in viewers.items():
                board = _board(ctx, principal=principal)
                assert board == _from_scratch(seeded.ctx, principal=principal), name
                seen[name] = {r["name"]: r["user"] for r in board["rows"] if r["rank"]}
        assert cache.puts["visible-rows"] == len(viewers)
        for name in (None, "bob", "carol", "annie"):
            assert "roberta-large" not in seen[name], name
        for name in ("alice", "owner", "admin"):
            assert seen[name]["roberta-large"] == "alice", name
        for name in (None, "alice", "carol"):
            assert seen[name]["minilm-head"] is None, name
        for name in ("bob", "owner", "admin"):
            assert seen[name]["minilm-head"] == "bob", name
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == roberta).values(published=True)
            )
        after = _board(ctx, principal=viewers["bob"])
        assert after == _from_scratch(seeded.ctx, principal=viewers["bob"])
        assert "roberta-large" in {r["name"] for r in after["rows"]}
        assert cache.puts["visible-rows"] == len(viewers) + 1
    finally:
        ctx.db.dispose()


def test_the_arrays_kept_for_the_rankings_refuse_writes(seeded: Seeded) -> None:
    """Kept arrays are shared by every request that reads them: a write fails loudly
    rather than changing another request's board."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        _board(ctx)
        _board(ctx, weights={"perf": 3.0, "throughput": 1.0})
        _board(ctx, {"test": 0.25})
        kept = [v for name in ("own-figures", "counted", "ranked-rows") for v in cache.values[name]]
        rankings = cache.values["ranking"]
        assert len(kept) == 3 and len(rankings) == 3
        holders = [*kept, *rankings, *(r.figures for r in rankings)]
        arrays = [a for h in holders for a in vars(h).values() if isinstance(a, np.ndarray)]
        assert len(arrays) >= 3 * 2 + 3 * 6
        assert not any(a.flags.writeable for a in arrays)
        for array in (a for a in arrays if a.size):
            with pytest.raises(ValueError, match="read-only"):
                array.flat[0] = array.flat[0]
        assert _board(ctx) == _from_scratch(seeded.ctx)
    finally:
        ctx.db.dispose()


#: What the cache keeps that holds the board's rows without counting them.
_HOLDING_ROWS = ("ranking", "ranked-rows", "visible-rows", "own-figures", "bootstrap")


def test_a_board_too_large_to_keep_leaves_nothing_that_holds_its_rows(seeded: Seeded) -> None:
    """A board over the cache's budget is read anew for each request; what is derived from
    it is not kept either, since each would hold a board the cache does not count (at
    100,000 models, one more copy of the board per kept ranking)."""
    _board(seeded.ctx)
    (rows_size,) = [
        size for key, (_, size) in seeded.ctx.cache._entries.items() if key[0] == "board-rows"
    ]
    settings = Settings(**{**seeded.ctx.settings.model_dump(), "cache_bytes": rows_size - 1})
    ctx = Context.from_settings(settings)
    try:
        for weights in [None, {"perf": 3.0, "throughput": 1.0}]:
            for dataset_weights in DATASET_WEIGHTS:
                board = _board(ctx, dataset_weights, weights)
                assert board == _from_scratch(seeded.ctx, dataset_weights, weights)
        kinds = {key[0] for key in ctx.cache._entries}
        assert "board" in kinds and "counted" in kinds  # what holds no rows is kept
        assert not kinds & {"board-rows", *_HOLDING_ROWS}
    finally:
        ctx.db.dispose()


def test_a_write_that_changes_no_row_keeps_what_was_derived_from_the_rows(
    seeded: Seeded,
) -> None:
    """The task's counter moving with every row's facts unchanged reads the rows again
    to the same version: the rankings derived from them stay; a changed row lets go of
    them and of the older rows."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        first = _board(ctx, weights={"perf": 2.0, "memory": 1.0})
        with seeded.ctx.db.session() as session:
            session.execute(update(BoardVersion).values(version=BoardVersion.version + 1))
        assert _board(ctx, weights={"perf": 2.0, "memory": 1.0}) == first
        assert cache.puts["ranking"] == 1 and cache.puts["board-rows"] == 1
        with seeded.ctx.db.session() as session:
            session.execute(
                update(Submission)
                .where(Submission.id == seeded.submissions["roberta-large"])
                .values(published=False)
            )
        after = _board(ctx, weights={"perf": 2.0, "memory": 1.0})
        assert after == _from_scratch(seeded.ctx, weights={"perf": 2.0, "memory": 1.0})
        assert cache.puts["ranking"] == 2 and cache.puts["board-rows"] == 2
        kinds = Counter(key[0] for key in cache._entries)
        assert kinds["board-rows"] == 1 and kinds["ranking"] == 1
    finally:
        ctx.db.dispose()


def test_rows_kept_though_the_note_of_the_current_version_was_evicted_are_reused(
    seeded: Seeded,
) -> None:
    """The small entry naming the current version may be evicted before the rows it
    names (it is read first, so it is the older of the two): the next request finds the
    rows by their version, derives none, and keeps what was derived from them."""
    cache = _CountedPuts(seeded.ctx.settings.cache_bytes)
    ctx = dataclasses.replace(Context.from_settings(seeded.ctx.settings), cache=cache)
    try:
        first = _board(ctx, weights={"perf": 2.0, "memory": 1.0})
        cache.discard(("board", TASK))
        assert _board(ctx, weights={"perf": 2.0, "memory": 1.0}) == first
        assert cache.puts["board-rows"] == 1 and cache.puts["ranking"] == 1
        assert cache.has(("board", TASK))
    finally:
        ctx.db.dispose()


def test_the_kept_rows_and_arrays_are_sized_near_what_a_full_walk_measures(
    seeded: Seeded,
) -> None:
    """The ranked rows and the per-outcome arrays are sized from a sample (a walk of
    10,000 of each cost 100 ms a put); the estimate stays near the walk's figure."""
    table = load_table(seeded.ctx, TASK)
    rows = _Rows.of([m for m in table.models if m.complete])
    counted = _counted(table, seeded.ctx.cache)
    assert counted is not None
    for kept in (rows, counted):
        walked = approximate_size(kept)
        assert 0.75 * walked <= kept.approximate_size() <= 1.25 * walked, type(kept).__name__
    _board(seeded.ctx)  # the bootstrap's resamples, kept
    resamples = _kept(seeded.ctx.cache, "bootstrap-resamples")
    _, _, draws = _kept(seeded.ctx.cache, "bootstrap-draws")
    for kept, measured in ((resamples, _resamples_size), (draws, _draws_size)):
        walked = approximate_size(kept)
        assert 0.75 * walked <= measured(kept) <= 1.25 * walked, type(kept).__name__


def test_threads_ranking_mixed_weights_through_a_small_cache_see_the_boards_from_scratch(
    seeded: Seeded,
) -> None:
    """Eight threads at once, each asking for its own mix of default, metric and dataset
    weights through a cache too small for all they derive (so entries, and what is kept
    within them, are evicted while others read them): every board equals one ranked from
    scratch, and the cache stays within its budget."""
    asked: list[tuple[dict[str, float] | None, dict[str, float] | None]] = [
        (dataset_weights, weights)
        for dataset_weights in [None, {"test": 0.25}, {"test": 2.0}]
        for weights in [None, {"perf": 1.0}, {"perf": 2.0, "memory": 1.0}]
    ]
    expected = {repr(a): _from_scratch(seeded.ctx, *a) for a in asked}
    # The board's rows (about 180 kB) fit, but not beside the draws (about 215 kB) and
    # every weighting's resamples: the rows go and come back while threads read them.
    budget = 450_000
    settings = Settings(**{**seeded.ctx.settings.model_dump(), "cache_bytes": budget})
    ctx = Context.from_settings(settings)
    failures: list[str] = []

    def ask(offset: int) -> None:
        for i in range(len(asked)):
            chosen = asked[(offset + i) % len(asked)]
            try:
                if _board(ctx, *chosen) != expected[repr(chosen)]:
                    failures.append(f"{chosen!r}: differs")
            except Exception as exc:  # a thread's error is otherwise only printed
                failures.append(f"{chosen!r}: {exc!r}")

    try:
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert 0 < ctx.cache.held_bytes <= budget
    finally:
        ctx.db.dispose()
