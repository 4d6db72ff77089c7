"""One page of the leaderboard: which ranked rows a request asks for, and in what order.

The ranking itself always covers every model (a rank is a place among all of them); a
:class:`BoardQuery` then picks the rows to build and send: those whose name contains
``q``, in rank order or sorted by a metric, the Dynascore or the name, ``limit`` of them
from ``offset``. Building a row costs far more than ranking it, so a page of 100 out of
10,000 models is cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from evalboard.core.errors import InvalidQuery
from scoring import METRICS

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "SORT_KEYS", "BoardQuery", "parse_board_query"]

#: Rows the API sends when the caller gives no limit.
DEFAULT_LIMIT = 100
#: The most rows one request may ask for (the downloads send the whole table).
MAX_LIMIT = 1000
#: What rows may be sorted by; ``-`` in front sorts descending.
SORT_KEYS = ("rank", "dynascore", "name", *METRICS)
#: The longest name search accepted (a submission name is at most 128 characters).
MAX_SEARCH = 128


@dataclass(frozen=True)
class BoardQuery:
    """Which ranked rows to send. ``limit`` None: all of them."""

    limit: int | None = None
    offset: int = 0
    sort: str = "rank"
    descending: bool = False
    q: str | None = None

    def select(
        self,
        order: Sequence[str],
        *,
        names: Mapping[str, str],
        value: Callable[[str, str], float | None],
    ) -> tuple[int, list[str]]:
        """The count of rows matching ``q`` and the keys of this page, from the ranked
        ``order``; ``value(key, sort)`` gives a row's metric or Dynascore (None: last)."""
        keys = list(order)
        if self.q:
            needle = self.q.casefold()
            keys = [k for k in keys if needle in names[k].casefold()]
        if self.sort == "name":
            keys.sort(key=lambda k: names[k].casefold(), reverse=self.descending)
        elif self.sort != "rank":
            present = [k for k in keys if value(k, self.sort) is not None]
            missing = [k for k in keys if value(k, self.sort) is None]
            present.sort(key=lambda k: value(k, self.sort) or 0.0, reverse=self.descending)
            keys = present + missing
        elif self.descending:
            keys.reverse()
        end = None if self.limit is None else self.offset + self.limit
        return len(keys), keys[self.offset : end]


def _integer(
    text: str | None, *, name: str, default: int | None, low: int, high: int
) -> int | None:
    if text is None or text == "":
        return default
    try:
        number = int(text)
    except ValueError:
        raise InvalidQuery(
            f"{name} must be a whole number from {low} to {high}, not {text[:20]!r}"
        ) from None
    if not low <= number <= high:
        raise InvalidQuery(f"{name} must be from {low} to {high}, not {number}")
    return number


def parse_board_query(
    *,
    limit: str | None = None,
    offset: str | None = None,
    sort: str | None = None,
    q: str | None = None,
    default_limit: int | None = DEFAULT_LIMIT,
) -> BoardQuery:
    """The one reading of the leaderboard's paging parameters, for the API and the pages.

    >>> parse_board_query(limit="10", sort="-perf")
    BoardQuery(limit=10, offset=0, sort='perf', descending=True, q=None)

    Raises:
        InvalidQuery: a limit or offset that is not a whole number in range, an unknown
            sort key, or a search longer than a name can be.
    """
    chosen = sort or "rank"
    descending = chosen.startswith("-")
    name = chosen.removeprefix("-")
    if name not in SORT_KEYS:
        raise InvalidQuery(
            f"Unknown sort {chosen[:40]!r}; known: {', '.join(SORT_KEYS)} (prefix - to sort "
            "descending, e.g. -perf)"
        )
    if q is not None and len(q) > MAX_SEARCH:
        raise InvalidQuery(f"q (a name search) must be at most {MAX_SEARCH} characters")
    return BoardQuery(
        limit=_integer(limit, name="limit", default=default_limit, low=1, high=MAX_LIMIT),
        offset=_integer(offset, name="offset", default=0, low=0, high=10**9) or 0,
        sort=name,
        descending=descending,
        q=q.strip() or None if q is not None else None,
    )
