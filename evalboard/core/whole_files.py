"""Files written whole or not at all: what a user asked a command to write (an export, a
suite, a bundle's archive) is never left half-written, by a full disk or a Ctrl-C."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalboard.core.errors import UsageError

__all__ = ["written_whole"]


@contextmanager
def written_whole(target: Path, *, fix: str) -> Iterator[Path]:
    """A path beside ``target`` for the block to write; moved onto ``target`` once the
    block ends, removed if it fails.

    Raises:
        UsageError: the file cannot be written (a folder that is not there, no room, no
            permission): ``target``, the system's reason, then ``fix``.
    """
    partial = target.with_name(f".{target.name}.partial")
    try:
        yield partial
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(f"Cannot write {target}: {exc.strerror or exc}; {fix}") from None
    except BaseException:  # interrupted: nothing half-written stays
        partial.unlink(missing_ok=True)
        raise
