"""A process's derived-data cache: least recently used first out, bounded by memory.

What the board derives from immutable inputs (a prediction file's per-example statistics,
a dataset's majority class, a bootstrap over a fixed set of results) is kept here rather
than in module globals, so it belongs to the :class:`~evalboard.core.context.Context` that
made it and goes with it. The bound is bytes, not a count: a count small enough to be safe
for the largest entries evicts the small ones a 10,000-row board needs on every request.

Written here rather than taken from ``cachetools``: twenty lines of OrderedDict, and
``cachetools`` is not otherwise a dependency.

>>> cache = MemoryCache(budget_bytes=1_000)
>>> cache.put(("a",), "x" * 10)
>>> cache.get(("a",))
'xxxxxxxxxx'
>>> cache.put(("b",), "y" * 2_000)   # larger than the whole budget: not kept
>>> cache.get(("b",)) is None
True
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FunctionType, ModuleType
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "MISSING",
    "MemoryCache",
    "approximate_size",
    "read_only",
    "sampled_size",
]

_V = TypeVar("_V")

#: A miss, for :meth:`MemoryCache.get` where None is a cached value.
MISSING: Any = object()

#: Enough for a 10,000-model board with intervals on a 500-example round: its rows
#: (53 MB), the bootstrap's draws (114 MB) and resamples (162 MB, one per dataset
#: weighting), and many weightings' rankings (about 5 MB each); or for a 100,000-model
#: board's rows (about 0.35 GB) and its rankings (``EVALBOARD_CACHE_BYTES`` sets it,
#: :class:`~evalboard.core.settings.Settings`).
DEFAULT_CACHE_BYTES = 1024**3


def approximate_size(value: Any) -> int:
    """Bytes held by ``value``: arrays by their buffer, containers by their items.

    >>> approximate_size(("ab", "cd")) > approximate_size(("ab",))
    True
    """
    return _size(value, set())


def sampled_size(
    items: Sequence[Any], *, sample: int = 16, measure: Callable[[Any], int] = approximate_size
) -> int:
    """About the bytes held by a long list of alike items: ``sample`` of them, evenly
    spaced, measured (by ``measure``) and scaled, since walking 10,000 board rows costs
    more than deriving them.

    >>> rows = [f"{i:04d}" for i in range(1_000)]
    >>> sampled_size(rows) == approximate_size(rows)
    True
    """
    if not items:
        return sys.getsizeof(items)
    picked = items[:: max(1, len(items) // sample)]
    measured = sum(measure(item) for item in picked)
    return sys.getsizeof(items) + measured * len(items) // len(picked)


def _key_size(key: Hashable) -> int:
    """About the bytes held by a cache key: a tuple's from a sample of its items, at every
    depth (:func:`sampled_size`), as :meth:`MemoryCache.put` measures a key on every put
    and a key may name 10,000 files; a short key is measured whole.

    >>> key = ("statistics", tuple(f"predictions/{i}.jsonl" for i in range(10_000)))
    >>> abs(_key_size(key) - approximate_size(key)) < approximate_size(key) // 100
    True
    """
    if isinstance(key, tuple):
        return sampled_size(key, measure=_key_size)
    return approximate_size(key)


def read_only(*arrays: Any) -> None:
    """Make these numpy arrays refuse writes: what the cache keeps is shared between
    requests, so a write fails loudly rather than changing another request's figures.

    >>> import numpy as np
    >>> kept = np.zeros(3)
    >>> read_only(kept)
    >>> kept[0] = 1.0
    Traceback (most recent call last):
    ...
    ValueError: assignment destination is read-only
    """
    for array in arrays:
        array.setflags(write=False)


def _size(value: Any, seen: set[int]) -> int:
    # ``seen``: an object reached twice (a shared string, a cycle through an enum member's
    # class) counts once and ends the walk.
    if id(value) in seen:
        return 0
    seen.add(id(value))
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes + 112  # an ndarray's header
    size = sys.getsizeof(value)
    if isinstance(value, str | bytes | int | float | type | ModuleType | FunctionType):
        return size  # no items of its own worth counting
    if isinstance(value, Mapping):
        size += sum(_size(k, seen) + _size(v, seen) for k, v in value.items())
    elif isinstance(value, list | tuple | set | frozenset):
        size += sum(_size(item, seen) for item in value)
    elif hasattr(value, "__dict__"):
        size += _size(vars(value), seen)
    else:  # a class with __slots__ (a packed board row's details)
        for name in _slot_names(type(value)):
            size += _size(getattr(value, name, None), seen)
    return size


def _slot_names(cls: type) -> tuple[str, ...]:
    """The attributes declared in ``__slots__`` by ``cls`` and its bases."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return tuple(names)


@dataclass
class _Flight:
    """The threads making one entry: one holds the lock, the rest wait on it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: int = 0


class MemoryCache:
    """A thread-safe LRU mapping whose entries together hold at most ``budget_bytes``.

    A value is stored with its size, measured once when it is put; ``None`` is a value
    like any other: pass :data:`MISSING` as ``default`` to tell it from a miss in one call.
    """

    def __init__(self, budget_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._held = 0
        # put(..., within=parent): parent -> its dependents, and each dependent's parent.
        self._dependents: dict[Hashable, set[Hashable]] = {}
        self._parent: dict[Hashable, Hashable] = {}
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    @contextmanager
    def one_at_a_time(self, key: Hashable) -> Iterator[None]:
        """Run the block for ``key`` in one thread at a time: threads that miss the same
        entry at once make it once, each looking in the cache again inside the block, so
        the ones that waited find what the first kept. Eight requests for a 10,000-model
        board a restarted server had not read yet each read it, all at once: 6.4 s each
        on two cores, where one alone took 1.1 s.

        Only threads that ask at once hold a lock: none is left behind for a key (a
        viewer's weighting, say) once its last thread is done.

        >>> cache = MemoryCache()
        >>> with cache.one_at_a_time("board"):
        ...     cache.put("board", "rows")
        >>> cache._flights
        {}
        """
        with self._lock:
            flight = self._flights.setdefault(key, _Flight())
            flight.threads += 1
        try:
            with flight.lock:
                yield
        finally:
            with self._lock:
                flight.threads -= 1
                if not flight.threads:
                    del self._flights[key]

    def made_once(
        self,
        key: Hashable,
        make: Callable[[], tuple[_V, int]],
        *,
        within: Hashable = None,
        usable: Callable[[_V], bool] | None = None,
    ) -> _V:
        """The value kept under ``key`` (where ``usable`` accepts it), or ``make``'s (the
        value and its bytes), kept (:meth:`put`): threads that miss it at once make it
        once (:meth:`one_at_a_time`); a hit takes no lock.

        >>> cache = MemoryCache()
        >>> cache.made_once("rows", lambda: ([1, 2], 64))
        [1, 2]
        >>> cache.made_once("rows", lambda: ([3], 64))  # kept: not made again
        [1, 2]
        """

        def kept() -> _V | None:
            found: _V | None = self.get(key)
            return found if found is not None and (usable is None or usable(found)) else None

        found = kept()
        if found is None:
            with self.one_at_a_time(key):
                found = kept()
                if found is None:
                    found, size = make()
                    self.put(key, found, size=size, within=within)
        return found

    def has(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (now the most recently used), ``default`` on a miss."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return default
            self._entries.move_to_end(key)
            return found[0]

    def put(
        self, key: Hashable, value: Any, *, size: int | None = None, within: Hashable = None
    ) -> None:
        """Keep ``value``, evicting the least recently used until it fits.

        ``size``: the value's bytes where the caller knows them better or cheaper
        (:func:`sampled_size`); measured with :func:`approximate_size` otherwise. The key
        counts too (:func:`_key_size`).

        ``within``: the key of an entry whose objects ``value`` holds without counting them
        (a ranking holding a board's rows, measured without them). Such a value is kept
        only while that entry is, and leaves with it: kept alone, it would hold a board
        the cache no longer counts, and a board too large to keep at all would be held
        once by each value derived from it, as many times as requests built it. It is not
        kept (and evicts nothing) where that entry is not kept, or would have to be evicted
        to make room.

        >>> cache = MemoryCache(budget_bytes=10_000)
        >>> cache.put("board", "x" * 100)
        >>> cache.put("ranking", "y", within="board")
        >>> cache.discard("board")
        >>> cache.get("ranking") is None
        True
        >>> cache.put("ranking", "y", within="board")   # its board is not kept: nor is it
        >>> cache.get("ranking") is None
        True
        """
        self._put(key, value, size, within, replace=True)

    def keep(
        self, key: Hashable, value: Any, *, size: int | None = None, within: Hashable = None
    ) -> Any:
        """:meth:`put` unless ``key`` is already kept; the value kept under ``key`` after
        (``value`` where it could not be kept). Two threads that derived the same value at
        once then share one, and what was already kept within it stays.

        >>> cache = MemoryCache(budget_bytes=10_000)
        >>> cache.keep("board", "first")
        'first'
        >>> cache.keep("board", "second")
        'first'
        """
        return self._put(key, value, size, within, replace=False)

    def _put(
        self, key: Hashable, value: Any, size: int | None, within: Hashable, *, replace: bool
    ) -> Any:
        if within is not None and within == key:
            raise ValueError(f"An entry cannot be kept within itself: {key!r}")
        size = _key_size(key) + (approximate_size(value) if size is None else size)
        with self._lock:
            if not replace and key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            self._drop(key)
            if size > self.budget_bytes:
                return value
            if within is not None and within not in self._entries:
                return value
            needed = self._lineage(within)
            while self._held + size > self.budget_bytes:
                oldest = next(iter(self._entries))
                if oldest in needed:
                    return value  # room only by evicting what it is kept within
                self._drop(oldest)
            if within is not None:
                self._parent[key] = within
                self._dependents.setdefault(within, set()).add(key)
            self._entries[key] = (value, size)
            self._held += size
            return value

    def _lineage(self, key: Hashable) -> set[Hashable]:
        # Under the lock: ``key`` and every entry it is kept within, up to one kept alone.
        found: set[Hashable] = set()
        while key is not None and key not in found:
            found.add(key)
            key = self._parent.get(key)
        return found

    def discard(self, key: Hashable) -> None:
        """Forget ``key``, and what was kept within it (:meth:`put`)."""
        with self._lock:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        # Under the lock: the entry, its link to its parent, and its dependents.
        found = self._entries.pop(key, None)
        if found is None:
            return
        self._held -= found[1]
        parent = self._parent.pop(key, None)
        if parent is not None:
            siblings = self._dependents[parent]
            siblings.discard(key)
            if not siblings:
                del self._dependents[parent]
        for dependent in self._dependents.pop(key, ()):
            self._parent.pop(dependent, None)
            self._drop(dependent)

    @property
    def held_bytes(self) -> int:
        return self._held

    def __len__(self) -> int:
        return len(self._entries)
