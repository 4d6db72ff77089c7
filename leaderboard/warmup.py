"""Boards read into memory as the server starts, so that its first visitors do not wait.

A started server keeps nothing in memory: the first request for a board reads and parses
each of its stored rows and ranks them (about 1 s for 10,000 models here, 5 s for
100,000). The server reads every task's board as the public sees it, ranked with the
owner's weights, in a thread of its own as it starts; a request for a board being read
waits for that read rather than making another (``MemoryCache.one_at_a_time``), and one
for a board already read answers from memory. ``/ready`` says whether the boards are
read yet (``"boards": "warming"`` or ``"warm"``), without being unready meanwhile: the
server answers every request all along, the first ones slower.

Its own thread, not ``ctx.background``'s: a download waits for a weighting's intervals
that the background makes, and must not wait behind the reading of every other board.
"""

from __future__ import annotations

import logging
import threading

from datasets_registry import list_tasks
from evalboard.core.context import Context
from evalboard.core.errors import EvalboardError, PlatformError
from leaderboard.accounts import ANONYMOUS
from leaderboard.paging import DEFAULT_LIMIT, BoardQuery
from leaderboard.routes.leaderboards import visible_board

__all__ = ["start_warmup", "warm_boards"]

logger = logging.getLogger(__name__)


def warm_boards(ctx: Context) -> int:
    """Read and rank every task's public board with its default weights, as the API's
    first page asks for it; the number of boards read. A board that cannot be read is
    logged and passed over (its first request meets the same error); a database that
    does not answer ends the warm-up."""
    try:
        tasks = [task.id for task in list_tasks(ctx)]
    except PlatformError as exc:
        logger.warning("boards not read as the server starts: %s", exc.message)
        return 0
    read = 0
    for task_id in tasks:
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
        except PlatformError as exc:
            logger.warning("boards not read as the server starts: %s", exc.message)
            break
        except EvalboardError as exc:  # one task's fault: the others are read
            logger.warning("board of task %s not read as the server starts: %s", task_id, exc)
            continue
        read += 1
    logger.info("%d of %d boards read as the server started", read, len(tasks))
    return read


def start_warmup(ctx: Context) -> threading.Thread:
    """:func:`warm_boards` in a daemon thread of its own, started. A server stopping does
    not wait for it: it reads, and where it stores derived rows (``board_entries``) a
    stop in the middle rolls their transaction back."""
    thread = threading.Thread(target=_warm, args=(ctx,), name="board-warmup", daemon=True)
    thread.start()
    return thread


def _warm(ctx: Context) -> None:
    try:
        warm_boards(ctx)
    except Exception:  # noqa: BLE001 - a thread's failure is logged, never raised into nothing
        logger.exception("boards not read as the server starts")
