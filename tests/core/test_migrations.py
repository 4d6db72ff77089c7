"""The migrations build exactly the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from evalboard.core.context import Context
from evalboard.core.db import migrate
from evalboard.core.tables import Base


def test_migrations_match_the_models(any_ctx: Context) -> None:
    migrate(any_ctx.db.engine)
    with any_ctx.db.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == [], "run `alembic revision --autogenerate` after changing tables.py"


def test_first_use_migrates_and_a_second_migrate_is_a_noop(any_ctx: Context) -> None:
    with any_ctx.db.session():
        pass
    tables = set(inspect(any_ctx.db.engine).get_table_names())
    assert {"tasks", "datasets", "submissions", "jobs", "results", "alembic_version"} <= tables
    migrate(any_ctx.db.engine)
