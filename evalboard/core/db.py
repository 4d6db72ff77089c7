"""The database engine, sessions, and migrations applied automatically on first use.

Database faults become :class:`PlatformError` (exit 2, HTTP 503) here, in one place, with
messages that never carry the URL's host, port or user: a 503 may reach anonymous callers.
The driver's own message is logged at INFO.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DataError,
    NoSuchModuleError,
    OperationalError,
)
from sqlalchemy.orm import Session, sessionmaker

from evalboard.core.errors import InvalidText, PlatformError

__all__ = ["Database", "migrate"]

logger = logging.getLogger(__name__)
_last_logged = ""
_SUPPORTED = "postgresql+psycopg://USER@HOST/NAME or sqlite:///PATH"
# What the driver said -> what an operator should do; matched on the lowercased message.
_CAUSES = (
    ("does not exist", "the database named in EVALBOARD_DATABASE_URL does not exist; create it"),
    ("authentication failed", "the database refused the user or password"),
    ("readonly database", "the database file is read-only; make the data dir writable"),
    ("read-only", "the database file is read-only; make the data dir writable"),
    ("unable to open database file", "the database file cannot be opened or created"),
    ("disk is full", "the disk holding the database is full"),
    ("no space left", "the disk holding the database is full"),
    ("database is locked", "the database is locked by another process; try again"),
    ("deadlock detected", "two writes waited on each other and this one was stopped; try again"),
)
#: What SQLite says of a file that is not, or no longer, a database it can read (random
#: bytes, a bad header, damaged pages): no server to check, the file itself is the fault.
_CORRUPT = ("file is not a database", "malformed")


def database_fault(exc: BaseException, *, sqlite_file: str | None = None) -> PlatformError:
    """A :class:`PlatformError` saying what is wrong with the database, without the URL's
    host, port or user (logged instead); ``sqlite_file`` is logged when it is corrupt."""
    said = str(exc).lower()
    cause = next((why for needle, why in _CAUSES if needle in said), None)
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    global _last_logged
    if detail != _last_logged:  # an outage is one line in the log, not one per request
        _last_logged = detail
        logger.info("database error: %s", detail)
    if _is_corrupt(exc):
        # The file is logged, not said: the message may reach a stranger as a 503, and a
        # host's paths are not theirs to read.
        logger.warning("the SQLite file %s is not a readable database", sqlite_file)
        return PlatformError(
            "The SQLite file EVALBOARD_DATABASE_URL names is not a readable database "
            "(corrupt?); restore it from a backup or point EVALBOARD_DATABASE_URL elsewhere"
        )
    return PlatformError(
        f"The database is unavailable: {cause or 'its server does not answer'}. "
        "Check EVALBOARD_DATABASE_URL and the database server; the server log has details"
    )


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
        try:
            self.url = make_url(url)
        except ArgumentError:
            raise PlatformError(
                f"EVALBOARD_DATABASE_URL is not a database URL; use {_SUPPORTED}"
            ) from None
        backend = self.url.get_backend_name()
        self._sqlite_file = self.url.database if backend == "sqlite" else None
        if backend not in ("sqlite", "postgresql"):
            raise PlatformError(
                f"EVALBOARD_DATABASE_URL names a {backend!r} database, which Evalboard does "
                f"not support; use {_SUPPORTED}"
            )
        if backend == "sqlite" and self.url.database:
            try:
                Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise PlatformError(
                    f"Cannot create the data dir {Path(self.url.database).parent} "
                    f"({exc.strerror}); make it writable or set EVALBOARD_DATA_DIR"
                ) from None
        try:
            # A server that does not answer is a fault in seconds, not a hung request.
            connect_args = {"connect_timeout": 5} if backend == "postgresql" else {}
            self.engine = create_engine(self.url, pool_pre_ping=True, connect_args=connect_args)
        except (ImportError, NoSuchModuleError, ArgumentError):
            raise PlatformError(
                f"EVALBOARD_DATABASE_URL asks for driver {self.url.drivername!r}, which is not "
                f"installed or not known; use {_SUPPORTED}"
            ) from None
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
            raise database_fault(exc, sqlite_file=self._sqlite_file) from None
        self._migrated = True

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error."""
        self._ensure_migrated()
        session = self._sessions()
        try:
            yield session
            session.commit()
        except OperationalError as exc:
            _rollback_quietly(session)
            raise database_fault(exc, sqlite_file=self._sqlite_file) from None
        except DataError as exc:
            # A value the database cannot hold (PostgreSQL: a NUL in text, a number out of
            # range) that the edge let through: the caller's input, not our fault.
            _rollback_quietly(session)
            raise _refused_value(exc) from None
        except DatabaseError as exc:
            # The driver's plain DatabaseError is a fault of the database itself (SQLite:
            # "database disk image is malformed"); an IntegrityError and the other kinds
            # stay the caller's to handle.
            _rollback_quietly(session)
            if type(exc) is not DatabaseError:
                raise
            raise database_fault(exc, sqlite_file=self._sqlite_file) from None
        except OverflowError as exc:
            # SQLite's driver says the same of an integer past 64 bits (an id in a path).
            session.rollback()
            if _SQLITE_OVERFLOW not in str(exc):
                raise
            raise _refused_value(exc) from None
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def ping(self) -> None:
        """Raise :class:`PlatformError` unless the database answers (and is migrated)."""
        with self.session() as session:
            session.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()


#: What sqlite3 raises (an OverflowError) for an integer no SQLite column holds.
_SQLITE_OVERFLOW = "too large to convert to SQLite INTEGER"


def _is_corrupt(exc: BaseException) -> bool:
    said = str(exc).lower()
    return any(needle in said for needle in _CORRUPT)


def _refused_value(exc: BaseException) -> InvalidText:
    logger.info("refused value: %s", str(exc).splitlines()[0])
    return InvalidText(
        "A value cannot be stored (a NUL character, or a number or text too large); "
        "fix the input and try again"
    )


def _rollback_quietly(session: Session) -> None:
    try:
        session.rollback()
    except Exception:  # the connection is gone already; nothing to undo
        logger.debug("rollback after a database fault failed", exc_info=True)
