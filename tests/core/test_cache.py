from __future__ import annotations

import threading

import numpy as np
import pytest

from evalboard.core.cache import MISSING, MemoryCache, approximate_size


def test_the_least_recently_used_goes_first_when_the_budget_is_spent() -> None:
    one = np.zeros(100)  # 800 bytes of data
    cache = MemoryCache(budget_bytes=3 * approximate_size((("k", 0), one)))
    for i in range(3):
        cache.put(("k", i), one)
    cache.get(("k", 0))  # 0 is now the most recent: 1 goes next
    cache.put(("k", 3), one)
    assert [cache.has(("k", i)) for i in range(4)] == [True, False, True, True]
    assert cache.held_bytes <= cache.budget_bytes


def test_arrays_count_by_their_buffer_and_none_is_a_value() -> None:
    assert approximate_size(np.zeros(10_000)) >= 80_000
    cache = MemoryCache(budget_bytes=1_000)
    cache.put("missing-intervals", None)
    assert cache.has("missing-intervals") and cache.get("missing-intervals") is None
    assert cache.get("missing-intervals", MISSING) is None  # a hit, in one locked call
    assert cache.get("never-put", MISSING) is MISSING


def test_replacing_a_key_keeps_the_count_of_bytes_right() -> None:
    cache = MemoryCache(budget_bytes=10_000)
    cache.put("k", "x" * 100)
    first = cache.held_bytes
    cache.put("k", "x" * 100)
    assert cache.held_bytes == first and len(cache) == 1


def test_threads_putting_at_once_stay_within_the_budget() -> None:
    cache = MemoryCache(budget_bytes=50_000)

    def fill(offset: int) -> None:
        for i in range(500):
            cache.put((offset, i), "v" * (i % 50))
            cache.get((offset, i // 2))

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 0 < cache.held_bytes <= cache.budget_bytes


class _MeasuredName(str):
    """A key part that counts how often the cache measures it (``sys.getsizeof``)."""

    measured = 0

    __hash__ = str.__hash__

    def __sizeof__(self) -> int:
        _MeasuredName.measured += 1
        return str.__sizeof__(self)


def test_a_long_key_is_measured_from_a_sample_and_still_counted() -> None:
    names = tuple(_MeasuredName(f"predictions/{i}/test.jsonl") for i in range(10_000))
    key = ("statistics", ("macro_f1", names))
    whole = approximate_size(key)
    _MeasuredName.measured = 0
    cache = MemoryCache(budget_bytes=10 * whole)
    cache.put(key, "v")
    assert 0 < _MeasuredName.measured <= 40  # a sample, not 10,000
    assert abs(cache.held_bytes - whole) < whole // 20  # the key's bytes still count
    small = MemoryCache(budget_bytes=whole // 2)
    small.put(key, "v")  # a key beyond the budget is not kept
    assert not small.has(key) and small.held_bytes == 0


def test_what_is_kept_within_an_entry_leaves_with_it() -> None:
    cache = MemoryCache(budget_bytes=100_000)
    cache.put("board", "x" * 1_000)
    cache.put("ranking", "y" * 100, within="board")
    cache.put("page", "z" * 10, within="ranking")
    cache.put("other", "w" * 10)
    alone = approximate_size("other") + approximate_size("w" * 10)
    cache.put("board", "x" * 1_000)  # a new value: what held the old one goes
    assert not cache.has("ranking") and not cache.has("page")
    cache.put("ranking", "y" * 100, within="board")
    cache.discard("board")
    assert [cache.has(k) for k in ("board", "ranking", "other")] == [False, False, True]
    assert cache.held_bytes == alone and len(cache) == 1


def test_nothing_is_kept_within_an_entry_the_cache_does_not_hold() -> None:
    cache = MemoryCache(budget_bytes=2_000)
    cache.put("board", "x" * 5_000)  # over the budget: not kept
    cache.put("ranking", "y", within="board")
    assert len(cache) == 0 and cache.held_bytes == 0


def test_evicting_an_entry_evicts_what_is_kept_within_it() -> None:
    one = np.zeros(100)
    each = approximate_size("board") + approximate_size(one)  # every key here is 5 letters
    cache = MemoryCache(budget_bytes=3 * each + 200)
    cache.put("board", one)
    cache.put("ranks", one, within="board")
    cache.put("other", one)
    cache.get("board")  # the ranking is now the least recently used: it goes alone
    cache.put("extra", one)
    assert [cache.has(k) for k in ("board", "ranks", "other", "extra")] == [
        True,
        False,
        True,
        True,
    ]
    cache.put("ranks", one, within="board")  # evicts "other": its board is more recent
    cache.get("ranks")
    cache.put("fresh", one)  # evicts the board, the least recently used, with its ranking
    assert [cache.has(k) for k in ("board", "ranks", "extra", "fresh")] == [
        False,
        False,
        True,
        True,
    ]
    assert cache.held_bytes == 2 * each


def test_a_value_kept_within_what_is_missing_or_would_go_evicts_nothing() -> None:
    one = np.zeros(100)
    each = approximate_size("board") + approximate_size(one)
    cache = MemoryCache(budget_bytes=2 * each + 100)
    cache.put("board", one)
    cache.put("other", one)
    cache.put("ranks", one, within="nope!")  # no such entry: nothing evicted for it
    assert [cache.has(k) for k in ("board", "other", "ranks")] == [True, True, False]
    cache.get("other")  # the board is the least recently used
    cache.put("ranks", one, within="board")  # room only by evicting its own board
    assert [cache.has(k) for k in ("board", "other", "ranks")] == [True, True, False]
    assert cache.held_bytes == 2 * each
    with pytest.raises(ValueError, match="within itself"):
        cache.put("board", one, within="board")


def test_keep_leaves_a_kept_value_and_what_is_kept_within_it() -> None:
    cache = MemoryCache(budget_bytes=10_000)
    first, second = ["rows"], ["rows"]
    assert cache.keep("board", first) is first
    cache.put("ranking", "r", within="board")
    assert cache.keep("board", second) is first  # another thread derived the same
    assert cache.has("ranking")
    assert MemoryCache(budget_bytes=10).keep("board", second) is second  # not kept
