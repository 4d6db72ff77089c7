"""Alembic environment: runs against the engine handed over by ``evalboard.core.db``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from evalboard.core.tables import Base

config = context.config
engine = config.attributes.get("engine")
if engine is None:  # `alembic` run by hand: -x url=...
    engine = create_engine(context.get_x_argument(as_dictionary=True)["url"])

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
