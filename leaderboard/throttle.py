"""Password throttling: a few wrong passwords per name and client, then a pause.

Every place that checks a password goes through it (:meth:`LoginThrottle.verified`): the
sign-in form, and changing one's password, where a stolen token or session would
otherwise guess the account's password at full speed.

Kept in the process's memory (``app.state.login_throttle``): a server of several
processes limits each one, which still turns an online guessing attack from thousands of
tries a minute into a handful. Keyed by name *and* client address, so a stranger cannot
lock a user out from elsewhere.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from starlette.requests import Request

from evalboard.core.errors import QuotaExceeded

__all__ = ["LoginThrottle", "TooManyAttempts", "client_address", "login_throttle"]

T = TypeVar("T")


class TooManyAttempts(QuotaExceeded):
    """Too many wrong passwords lately: HTTP 429."""


class LoginThrottle:
    """At most ``limit`` failures per (name, client) within ``window_s`` seconds."""

    def __init__(
        self,
        *,
        limit: int = 10,
        window_s: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._max_keys = max_keys
        self._failures: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> list[float]:
        kept = [t for t in self._failures.get(key, []) if now - t < self.window_s]
        if kept:
            self._failures[key] = kept
        else:
            self._failures.pop(key, None)
        return kept

    def check(self, name: str, client: str) -> None:
        """Refuse before the password is even checked when the limit is reached."""
        key = (name.lower(), client)
        with self._lock:
            now = self._clock()
            recent = self._recent(key, now)
            if len(recent) >= self.limit:
                wait = int(self.window_s - (now - recent[0])) + 1
                raise TooManyAttempts(
                    f"Too many wrong passwords for {name!r} from your address; "
                    f"try again in {wait} s"
                )

    def failed(self, name: str, client: str) -> None:
        key = (name.lower(), client)
        with self._lock:
            now = self._clock()
            if len(self._failures) >= self._max_keys:
                self._failures.clear()  # bounded memory under a spray of names
            self._recent(key, now)
            self._failures.setdefault(key, []).append(now)

    def succeeded(self, name: str, client: str) -> None:
        with self._lock:
            self._failures.pop((name.lower(), client), None)

    def verified(self, name: str, client: str, verify: Callable[[], T | None]) -> T | None:
        """``verify()`` (a password check: None when wrong) under the limit: refused
        (:class:`TooManyAttempts`) before it runs once the limit is reached, a wrong one
        counted, a right one clearing the count."""
        self.check(name, client)
        found = verify()
        if found is None:
            self.failed(name, client)
        else:
            self.succeeded(name, client)
        return found


def login_throttle(request: Request) -> LoginThrottle:
    """The server's throttle (made by ``create_app``)."""
    throttle = request.app.state.login_throttle
    assert isinstance(throttle, LoginThrottle)
    return throttle


def client_address(request: Request) -> str:
    """The address a request came from, as the throttle keys it."""
    return request.client.host if request.client else ""
