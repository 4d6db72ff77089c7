"""The database engine, sessions, and migrations applied automatically on first use."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from evalboard.core.errors import PlatformError

__all__ = ["Database", "migrate"]

_MIGRATIONS = Path(__file__).parent / "migrations"
_migrate_lock = threading.Lock()


def _alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest migration (a no-op when it is already there)."""
    with _migrate_lock:
        command.upgrade(_alembic_config(engine), "head")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets the web server read while a worker writes; foreign keys are off by default.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


class Database:
    """One engine and its session factory; migrated on first use.

    Example:
        >>> db = Database("sqlite://")
        >>> with db.session() as session:
        ...     session.execute(text("select 1"))  # doctest: +SKIP
    """

    def __init__(self, url: str, *, auto_migrate: bool = True) -> None:
        self.url = make_url(url)
        if self.url.get_backend_name() == "sqlite" and self.url.database:
            Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(self.url, pool_pre_ping=True)
        if self.url.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._auto_migrate = auto_migrate
        self._migrated = False

    def _ensure_migrated(self) -> None:
        if self._migrated or not self._auto_migrate:
            return
        try:
            migrate(self.engine)
        except Exception as exc:  # a database we cannot reach is an operator's problem
            raise PlatformError(
                f"Cannot prepare the database at {self.url.render_as_string()}: {exc}. "
                "Check EVALBOARD_DATABASE_URL and that the server is running."
            ) from exc
        self._migrated = True

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error."""
        self._ensure_migrated()
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def dispose(self) -> None:
        self.engine.dispose()
