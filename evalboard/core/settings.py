"""Settings, read once from ``EVALBOARD_*`` variables and injected everywhere else."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from evalboard.core.cache import DEFAULT_CACHE_BYTES
from evalboard.core.errors import UsageError
from evalboard.core.validation import describe_validation_error

__all__ = ["MIN_SECRET_LENGTH", "PUBLISHED_SECRETS", "Settings", "get_settings"]

#: Secrets that were printed in this project's code or docs: anyone can sign with them.
PUBLISHED_SECRETS = frozenset({"evalboard-development-secret-change-me"})
MIN_SECRET_LENGTH = 32
_MAKE_ONE = "(e.g. `python3 -c 'import secrets; print(secrets.token_hex(32))'`)"
#: Broker URL schemes a worker can use (Redis, RabbitMQ); kombu's name for the transport
#: is what comes before ``://`` (and before any ``+``).
BROKER_SCHEMES = ("redis", "rediss", "sentinel", "amqp", "amqps", "pyamqp")


def _default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "evalboard"


class Settings(BaseSettings):
    """Everything that differs between one laptop and a fleet of workers."""

    model_config = SettingsConfigDict(env_prefix="EVALBOARD_", extra="ignore")

    environment: Literal["development", "production"] = Field(
        "development", description="`production` refuses development defaults (the secret)."
    )
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Where the SQLite database and local artifacts live by default.",
    )
    database_url: str = Field(
        "", description="SQLAlchemy URL; empty means a SQLite file under the data dir."
    )
    broker_url: str = Field(
        "", description="Celery broker (redis:// or amqp://); empty means the inline worker."
    )
    artifacts: str = Field(
        "", description="fsspec URL of the artifact store; empty means data_dir/artifacts."
    )
    secret_key: str = Field(
        "",
        description="Signs browser sessions. Required in production; elsewhere, empty means "
        "a random key made on first start and kept in data_dir/secret_key (mode 0600).",
        repr=False,
    )
    sandbox: Literal["auto", "gvisor", "docker", "local"] = Field(
        "auto",
        description="Sandbox for evaluations: `auto` is `gvisor` (a container under gVisor's "
        "kernel: two walls) where the Docker engine has the runsc runtime, else `docker` "
        "(one wall); `local` does not isolate.",
    )
    cpu_pinning: Literal["off", "auto"] = Field(
        "auto",
        description="`auto` runs each sandbox on cores of its own where the machine has "
        "them free (never the first core; each result says which, or that it ran "
        "unpinned), away from the evaluator's own work, so a busy neighbour moves "
        "throughput less (and under gVisor, which moves less between cores, more is done); "
        "`off` shares every core.",
    )
    base_image: str = Field(
        "evalboard/runtime-python:latest", description="Runtime image for python/onnx bundles."
    )
    torch_image: str = Field(
        "evalboard/runtime-torch:latest", description="Runtime image for transformers bundles."
    )
    worker_concurrency: int = Field(1, ge=1, description="Inline worker threads.")
    platform_fault_budget_s: float = Field(
        3600.0,
        gt=0,
        description="How long a job waits out an unreachable part of the platform (the "
        "sandbox engine, the artifact store) before it fails as `platform_error`.",
    )
    platform_backoff_s: float = Field(
        5.0, gt=0, description="First wait before a job that met a platform fault is retried."
    )
    platform_backoff_max_s: float = Field(
        300.0, gt=0, description="Longest wait between retries of a job that met a platform fault."
    )
    daily_upload_quota: int = Field(20, ge=0, description="Submissions per user and day.")
    max_upload_bytes: int = Field(8 * 1024**3, description="Largest accepted upload.")
    session_idle_hours: float = Field(
        12, gt=0, description="A browser session ends after this long without a request."
    )
    session_max_hours: float = Field(
        7 * 24, gt=0, description="A browser session ends this long after sign-in, whatever."
    )
    max_open_uploads: int = Field(
        3, ge=1, description="Uploads one user may have open (started, not completed) at once."
    )
    max_upload_bytes_in_flight: int = Field(
        16 * 1024**3, description="Bytes one user's open uploads may announce together."
    )
    upload_expiry_hours: float = Field(
        24, gt=0, description="An open upload with no chunk for this long is deleted."
    )
    attribution_max_words: int = Field(
        200,
        ge=1,
        le=10_000,
        description="The most words one word-attribution request explains; the model then "
        "answers at most this many variants plus the input itself, in one request.",
    )
    attribution_max_concurrent: int = Field(
        2,
        ge=1,
        description="Word attributions computed at once by one server; more are refused "
        "(503) until one ends. Cached ones are always answered.",
    )
    cache_bytes: int = Field(
        DEFAULT_CACHE_BYTES,
        ge=0,
        description="Memory one process's derived-data cache may hold (the board's parsed "
        "rows and rankings, interval statistics), in bytes; the least recently used go "
        "first. 0 keeps nothing (every request derives again).",
    )
    intervals_inline_models: int = Field(
        1000,
        ge=0,
        description="A board of at least this many ranked models bootstraps a weighting no "
        "request asked for before (or its first ranking after a start or a new result) in "
        "the background: the API and the page answer at once, intervals pending, and have "
        "them when asked again (seconds later at 10,000 models). 0: every board.",
    )
    max_request_bytes: int = Field(
        1024**3,
        description="Largest single request body from a signed-in caller (a dataset form, "
        "an upload chunk); callers with no credentials get 64 KiB.",
    )
    # A JSON body (or url-encoded form) is read whole and parsed into Python objects, about
    # 20 times its size in memory (48 MB of predictions took 0.9 GB more). The largest one
    # a task sends is a predictions submission: at ~170 bytes an example with a long uid
    # and three probabilities, the largest shared test set (TweetEval sentiment, 12,284)
    # with two perturbed copies comes to 6.3 MB. 32 MiB leaves room for five times that
    # and caps one request near 0.7 GB; files go as multipart, models in chunks.
    max_json_bytes: int = Field(
        32 * 1024**2,
        ge=1,
        description="Largest JSON or url-encoded body, even from a signed-in caller (it is "
        "parsed in memory, about 20 times its size); other bodies (multipart forms, "
        "upload chunks) may reach max_request_bytes.",
    )

    @model_validator(mode="after")
    def _refuse_unknown_broker(self) -> Settings:
        # A model-level check: its message never echoes the URL, which may hold a password.
        scheme, found, _ = self.broker_url.partition("://")
        if self.broker_url and (not found or scheme.partition("+")[0] not in BROKER_SCHEMES):
            given = f"scheme {scheme!r}" if found else "no scheme"
            raise ValueError(
                f"EVALBOARD_BROKER_URL has {given}; supported: "
                f"{', '.join(s + '://' for s in BROKER_SCHEMES)} (unset it for the inline "
                "worker)"
            )
        return self

    @model_validator(mode="after")
    def _fill_defaults_and_refuse_weak_secrets(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'evalboard.db'}"
        if not self.artifacts:
            self.artifacts = str(self.data_dir / "artifacts")
        if self.secret_key in PUBLISHED_SECRETS:
            raise ValueError(
                "EVALBOARD_SECRET_KEY is a published example, so anyone could sign sessions "
                f"with it; set a random secret {_MAKE_ONE} or unset it"
            )
        if self.environment == "production" and len(self.secret_key) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"EVALBOARD_SECRET_KEY must be set to at least {MIN_SECRET_LENGTH} random "
                f"characters in production {_MAKE_ONE}; every server of one deployment needs "
                "the same one"
            )
        return self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, built on first use from the environment.

    Raises:
        UsageError: an ``EVALBOARD_*`` variable has a value that cannot be used.
    """
    try:
        return Settings()
    except ValidationError as exc:
        raise UsageError(
            "An EVALBOARD_* setting cannot be used:\n" + describe_validation_error(exc)
        ) from None
