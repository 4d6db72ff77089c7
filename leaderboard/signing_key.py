"""The key that signs session cookies: from settings, or made once and kept in the data dir.

There is no built-in key: a key printed in code or docs lets anyone sign a session as the
admin. Outside production an unset ``EVALBOARD_SECRET_KEY`` means a random key written on
first start to ``data_dir/secret_key`` with mode 0600 and reused after; production
refuses to start without one (settings), since several servers must share it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from evalboard.core.errors import PlatformError
from evalboard.core.settings import MIN_SECRET_LENGTH, Settings

__all__ = ["KEY_FILE", "signing_key"]

KEY_FILE = "secret_key"


def _read(path: Path) -> str | None:
    try:
        key = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)  # someone loosened it; a readable key is a forgeable session
    return key if len(key) >= MIN_SECRET_LENGTH else None


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        # A hard link never replaces: when two processes start at once, both use the
        # first key; and the key is whole or absent, never half written.
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


def signing_key(settings: Settings) -> str:
    """The session-signing key: ``settings.secret_key``, else the data dir's own."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / KEY_FILE
    try:
        key = _read(path)
        if key is None:
            _create(path)
            key = _read(path)
    except OSError as exc:
        raise PlatformError(
            f"Cannot keep the session key in {path} ({exc.strerror or exc}); make the data "
            "dir writable or set EVALBOARD_SECRET_KEY"
        ) from exc
    assert key is not None
    return key
