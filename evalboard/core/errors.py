"""The one exception tree of Evalboard.

    EvalboardError                    root; never raised itself
    ├── UsageError                    bad input or bad usage: exit 2, HTTP 400
    │   ├── InvalidTaskSpec           a task YAML that does not validate
    │   ├── InvalidDataset            a dataset file that does not fit its task
    │   ├── InvalidBundle             a model bundle or manifest that cannot be used
    │   ├── InvalidWeights            Dynascore weights that cannot be used: HTTP 422
    │   ├── InvalidText               text no column can hold (NUL, lone surrogate): HTTP 422
    │   └── InvalidQuery              a listing's paging, sorting or search: HTTP 422
    ├── NotFound                      the named thing does not exist: exit 2, 404
    ├── Conflict                      clashes with what is stored (immutability): exit 2, 409
    ├── PermissionDenied              the caller may not do this: exit 2, 403
    ├── QuotaExceeded                 the caller's daily quota is spent: exit 2, 429
    ├── EvaluationFailed              the evaluated thing failed (a model, a gate): exit 1, 422
    └── PlatformError                 our side is missing something (no Docker engine): exit 2, 503
        └── Busy                      at a capacity limit for now (try again shortly): 503

Every message says what was wrong and how to fix it. Deep code raises these; the CLI and
the HTTP layer map them to exit codes and statuses in one place each.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "Busy",
    "Conflict",
    "EvalboardError",
    "EvaluationFailed",
    "InvalidBundle",
    "InvalidDataset",
    "InvalidQuery",
    "InvalidTaskSpec",
    "InvalidText",
    "InvalidWeights",
    "NotFound",
    "PermissionDenied",
    "PlatformError",
    "QuotaExceeded",
    "UsageError",
]


class EvalboardError(Exception):
    """Root of every error Evalboard raises on purpose."""

    exit_code: int = 2
    http_status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(EvalboardError):
    """Bad input or bad usage; the message says how to fix it."""

    http_status = 400


class InvalidTaskSpec(UsageError):
    """A task spec that does not validate."""


class InvalidDataset(UsageError):
    """A dataset file that does not fit its task; nothing of it was stored."""


class InvalidBundle(UsageError):
    """A model bundle or manifest that cannot be used."""


class InvalidWeights(UsageError):
    """Dynascore weights that name unknown metrics or are not usable numbers."""

    http_status = 422


class InvalidQuery(UsageError):
    """A listing's limit, offset, sort or search that cannot be used."""

    http_status = 422


class InvalidText(UsageError):
    """Text holding a NUL character or a lone surrogate, which no database column stores."""

    http_status = 422


class NotFound(EvalboardError):
    """The named thing does not exist."""

    http_status = 404

    #: How many known names :meth:`among` lists before it only counts the rest.
    LISTED = 10

    @classmethod
    def among(cls, what: str, known: Iterable[object], *, fix: str = "") -> NotFound:
        """The one wording of "``what`` not found; known: a, b, c", then ``fix`` if given.

        Past :attr:`LISTED` names the rest are counted, not listed:

        >>> NotFound.among("Round 13", range(1, 13), fix="Open one").message
        'Round 13 not found; known: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 (and 2 more). Open one'
        """
        names = [str(name) for name in known]
        listed = ", ".join(names[: cls.LISTED]) or "none yet"
        if len(names) > cls.LISTED:
            listed += f" (and {len(names) - cls.LISTED} more)"
        return cls(f"{what} not found; known: {listed}" + (f". {fix}" if fix else ""))


class Conflict(EvalboardError):
    """The request clashes with what is stored (datasets are immutable, names unique)."""

    http_status = 409


class PermissionDenied(EvalboardError):
    """The caller's role does not allow this."""

    http_status = 403


class QuotaExceeded(EvalboardError):
    """The caller's upload quota for the day is spent."""

    http_status = 429


class EvaluationFailed(EvalboardError):
    """The evaluated thing failed: a model crashed, a gate found regressions."""

    exit_code = 1
    http_status = 422


class PlatformError(EvalboardError):
    """Something the platform needs is missing or broken; not the user's fault."""

    http_status = 503


class Busy(PlatformError):
    """The platform is at a capacity limit for the moment; the same request later works."""
