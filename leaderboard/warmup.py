"""Boards read into memory as the server starts, so that its first visitors do not wait.

A started server keeps nothing in memory: the first request for a board reads and parses
each of its stored rows and ranks them (about 1 s for 10,000 models here, 5 s for
100,000). The server reads every task's board as the public sees it, ranked with the
owner's weights, in a thread of its own as it starts; a request for a board being read
waits for that read rather than making another (``MemoryCache.one_at_a_time``), and one
for a board already read answers from memory. ``/ready`` says whether the boards are
read yet (``"boards"``: ``"warming"``, ``"warm"`` or ``"failed"``), without being unready: the
server answers every request all along, the first ones slower.

Before the boards, what the first request of each kind would otherwise make: the app's
own (:func:`leaderboard.app.create_app` passes it in: FastAPI's handling of every route,
the compiled templates), each about a tenth of a second here.

Its own thread, not ``ctx.background``'s: a download waits for a weighting's intervals
that the background makes, and must not wait behind the reading of every other board.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from datasets_registry import list_tasks
from evalboard.core.context import Context
from evalboard.core.errors import Busy, PlatformError
from leaderboard.accounts import ANONYMOUS
from leaderboard.paging import DEFAULT_LIMIT, BoardQuery
from leaderboard.routes.leaderboards import visible_board

__all__ = ["Warmup", "warm_boards"]

logger = logging.getLogger(__name__)


def warm_boards(ctx: Context, stop: threading.Event | None = None) -> tuple[int, int]:
    """Read and rank every task's public board with its default weights, as the API's
    first page asks for it; how many boards were read, of how many tasks (-1: the tasks
    could not be listed). A board that cannot be read (a
    write raced it, its data is broken) is logged and passed over: its first request
    meets the same; a database that does not answer, or ``stop`` set, ends the warm-up."""
    try:
        tasks = [task.id for task in list_tasks(ctx)]
    except PlatformError as exc:
        logger.warning("boards not read as the server starts: %s", exc.message)
        return 0, -1
    read = 0
    for task_id in tasks:
        if stop is not None and stop.is_set():
            break
        try:
            visible_board(
                ctx,
                ANONYMOUS,
                task_id,
                None,
                None,
                BoardQuery(limit=DEFAULT_LIMIT),
                wait_for_intervals=False,
            )
        except Busy as exc:  # this board only (a write raced its read)
            logger.info("board of task %s not read as the server starts: %s", task_id, exc)
            continue
        except PlatformError as exc:
            logger.warning("boards not read as the server starts: %s", exc.message)
            break
        except Exception:  # noqa: BLE001 - one task's fault: the others are read
            logger.exception("board of task %s not read as the server starts", task_id)
            continue
        read += 1
    logger.info("%d of %d boards read as the server started", read, len(tasks))
    return read, len(tasks)


class Warmup:
    """:func:`warm_boards` in a daemon thread of its own, started, after ``before_boards``
    (what the app makes before any board; a failure there is logged, the boards read all
    the same); ``state`` is ``"warming"``, then ``"warm"``, or ``"failed"`` where the boards'
    reading ended early (a database that does not answer; the log says why). :meth:`stop`
    ends it between two boards."""

    def __init__(self, ctx: Context, *, before_boards: Callable[[], None] | None = None) -> None:
        self.state = "warming"
        self._before_boards = before_boards
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ctx,), name="board-warmup", daemon=True
        )
        self._thread.start()

    def _run(self, ctx: Context) -> None:
        if self._before_boards is not None:
            try:
                self._before_boards()
            except Exception:  # noqa: BLE001 - only time lost: its first request makes it
                logger.exception("the app's first-request work not done as the server starts")
        try:
            read, tasks = warm_boards(ctx, self._stop)
            self.state = "warm" if read == tasks or self._stop.is_set() else "failed"
        except Exception:  # noqa: BLE001 - a thread's failure is logged, never raised into nothing
            logger.exception("boards not read as the server starts")
            self.state = "failed"

    def stop(self, timeout: float = 5.0) -> None:
        """Ask it to end after the board it reads, and wait for that (at most ``timeout``:
        a server stopping does not wait long; where it stores derived rows, a stop in
        the middle rolls their transaction back)."""
        self._stop.set()
        self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
