"""The regression suite file: a task's cases and their history, versioned, content-hashed.

``evalboard suite export`` writes one (the server builds it, :mod:`leaderboard.loop.suites`);
``evalboard gate BUNDLE --suite FILE`` reads it with no server and no database. It is one
JSON document::

    {"format": "evalboard-suite", "format_version": 1, "version": 3,
     "cut_at": "2026-12-02T10:00:00+00:00", "task": {the task spec},
     "releases": [{"id": 12, "lineage": 12, "number": 1, "name": "bow-v1",
                   "created_at": "..."}, ...],
     "datasets": [{"name": "r1-test", "round": 1, "access": "scoring", "sha256": "...",
                   "cases": [{"uid": "...", "inputs": {...}, "gold": {"label": "positive"},
                              "history": {"12": [{"release": 12, "passed": true}, ...]}}]}],
     "sha256": "..."}

``sha256`` is of the canonical JSON of everything else (keys sorted, no spaces, UTF-8):
it covers the content, not the layout, and the file is that canonical JSON, so exporting
the same version twice gives the same bytes. A changed file no longer matches its hash and
is refused. ``history`` maps each lineage to its scored releases' verdicts, oldest first
(:class:`leaderboard.loop.history.CaseHistory`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datasets_registry import TaskSpec, canonical_jsonl, parse_task_spec, sha256_of
from evalboard.core.errors import EvalboardError, UsageError
from evalboard.core.validation import bad_text, describe_validation_error
from evaluator import TestSet
from leaderboard.loop.history import CaseHistory, Verdict

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_SUITE_BYTES",
    "Suite",
    "SuiteCase",
    "SuiteDataset",
    "SuiteRelease",
    "SuiteVerdict",
    "parse_suite",
    "read_suite",
    "suite_bytes",
]

FORMAT: Final = "evalboard-suite"
FORMAT_VERSION: Final = 1
#: The largest suite file read (and written): a suite is cases and verdicts, not models.
MAX_SUITE_BYTES = 64 * 1024**2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SuiteRelease(_Strict):
    """A release named by the suite's histories."""

    id: int = Field(ge=1, description="Its submission id.")
    lineage: int = Field(ge=1, description="Its lineage: the first release's submission id.")
    number: int = Field(ge=1, description="1 for the lineage's first release, then in order.")
    name: str = Field(max_length=128)
    created_at: str = Field(max_length=64, description="When it was submitted (ISO 8601).")

    @property
    def label(self) -> str:
        """As reports name it (:attr:`leaderboard.lineages.Release.label`)."""
        return f"release {self.number} (submission {self.id}, {self.name})"


class SuiteVerdict(_Strict):
    release: int
    passed: bool


class SuiteCase(_Strict):
    """One example: its inputs, its gold output, and each lineage's verdicts on it."""

    uid: str = Field(max_length=256)
    inputs: dict[str, str]
    gold: dict[str, Any]
    history: dict[str, list[SuiteVerdict]] = Field(default_factory=dict)


class SuiteDataset(_Strict):
    name: str = Field(max_length=128)
    round: int = Field(ge=0)
    access: Literal["scoring", "standard", "hidden"]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="The dataset's, on the server.")
    cases: list[SuiteCase]


class Suite(_Strict):
    """A suite file's content (less its ``sha256``, which :func:`parse_suite` checked)."""

    format: Literal["evalboard-suite"] = FORMAT
    format_version: Literal[1] = FORMAT_VERSION
    version: int = Field(ge=1, description="The suite version it is an export of.")
    cut_at: str = Field(max_length=64, description="When the version was cut (ISO 8601).")
    task: dict[str, Any] = Field(description="The task spec, as the server holds it.")
    releases: list[SuiteRelease]
    datasets: list[SuiteDataset]

    @property
    def task_spec(self) -> TaskSpec:
        return parse_task_spec(self.task)

    def lineage_of(self, release: int) -> int | None:
        """The lineage of a release named in the suite (None: not in it)."""
        return next((r.lineage for r in self.releases if r.id == release), None)

    @property
    def lineages(self) -> dict[int, list[SuiteRelease]]:
        """Each lineage's releases in the suite, by number."""
        found: dict[int, list[SuiteRelease]] = {}
        for release in sorted(self.releases, key=lambda r: (r.lineage, r.number)):
            found.setdefault(release.lineage, []).append(release)
        return found

    def test_sets(self) -> list[TestSet]:
        """The datasets as the evaluator runs them: each case's uid, inputs and gold."""
        sets = []
        for dataset in self.datasets:
            examples = [{"uid": c.uid, **c.inputs, **c.gold} for c in dataset.cases]
            sets.append(
                TestSet(
                    name=dataset.name,
                    examples=examples,
                    sha256=sha256_of(canonical_jsonl(examples)),
                    round=dataset.round,
                    access=dataset.access,
                )
            )
        return sets

    def histories(self, lineage: int) -> dict[str, dict[str, CaseHistory]]:
        """dataset -> uid -> the case's history in ``lineage`` (cases it has one for)."""
        key = str(lineage)
        return {
            dataset.name: {
                case.uid: CaseHistory(
                    lineage, tuple(Verdict(v.release, v.passed) for v in case.history[key])
                )
                for case in dataset.cases
                if case.history.get(key)
            }
            for dataset in self.datasets
        }


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def suite_bytes(suite: Suite) -> bytes:
    """The file of ``suite``: its canonical JSON with the content's sha256, and a newline."""
    content = suite.model_dump(mode="json")
    digest = hashlib.sha256(_canonical(content)).hexdigest()
    return _canonical({**content, "sha256": digest}) + b"\n"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a suite holds")


def parse_suite(data: bytes, *, source: str = "the suite file") -> Suite:
    """Check and read a suite file's bytes.

    Raises:
        UsageError: not a suite file, a format version this evalboard does not read, a
            content that does not match its sha256 (changed after export), text no
            server would have written (NUL), or a field that does not fit.
    """
    if len(data) > MAX_SUITE_BYTES:
        raise UsageError(
            f"{source} has {len(data)} bytes, more than a suite file's {MAX_SUITE_BYTES}; "
            "export the suite again from the server"
        )
    try:
        document = json.loads(data, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise UsageError(
            f"{source} is not a suite file (not UTF-8 JSON); export one with "
            "`evalboard suite export --task T --version V`"
        ) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise UsageError(
            f'{source} is not an Evalboard suite file (no "format": "{FORMAT}"); export '
            "one with `evalboard suite export --task T --version V`"
        )
    if document.get("format_version") != FORMAT_VERSION:
        raise UsageError(
            f"{source} is suite format version {document.get('format_version')!r}; this "
            f"evalboard reads version {FORMAT_VERSION}: use the evalboard that exported it"
        )
    claimed = document.pop("sha256", None)
    actual = hashlib.sha256(_canonical(document)).hexdigest()
    if claimed != actual:
        raise UsageError(
            f"{source} was changed after export: its content hashes to {actual[:16]}..., "
            f"not the {str(claimed)[:16]}... it claims; export it again"
        )
    if any(bad_text(text) for text in _strings(document)):
        raise UsageError(
            f"{source} holds a NUL character or an unpaired surrogate; export it again"
        )
    try:
        suite = Suite.model_validate(document)
        suite.task_spec  # noqa: B018 - parsed here so that a bad spec is a usage error
    except ValidationError as exc:
        first = describe_validation_error(exc).splitlines()[0].strip()
        raise UsageError(f"{source} is not a valid suite file: {first}") from None
    except EvalboardError as exc:
        problem = " ".join(line.strip() for line in exc.message.splitlines())
        raise UsageError(f"{source} holds a task spec that does not validate: {problem}") from None
    return suite


def read_suite(path: Path) -> Suite:
    """:func:`parse_suite` of a file, its size checked before it is read.

    Raises:
        UsageError: the file cannot be read, is too large, or is not a valid suite.
    """
    try:
        size = path.stat().st_size
        if size > MAX_SUITE_BYTES:
            raise UsageError(
                f"{path} has {size} bytes, more than a suite file's {MAX_SUITE_BYTES}; it is "
                "not a suite Evalboard exported"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"Cannot read the suite file {path}: {exc.strerror}") from None
    return parse_suite(data, source=str(path))
