"""Per-example statistics for the board's bootstrap, kept beside each prediction file.

Each ranked model's drill-down file (``Result.predictions_key``, one JSON record per
example with ``uid``, ``output`` and ``gold``) gives the perf metric's per-example
statistics (:func:`scoring.statistics`). A file's statistics are derived once and stored
beside it (prediction files never change once written): a server started again reads
10,000 small arrays, not 5 million JSON records. They are read only to draw a model's
column of the bootstrap (:class:`Statistics`), so they are not held in memory.
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from datasets_registry import read_examples
from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evaluator import read_records
from leaderboard.table import TaskTable
from scoring import statistics

__all__ = ["Statistics", "Unpaired", "constant_statistics", "load_records"]

logger = logging.getLogger(__name__)


def load_records(ctx: Context, key: str) -> list[dict[str, Any]]:
    """The per-example records of one result (its drill-down file)."""
    return read_records(ctx.artifacts.read_bytes(key))


def _statistics(ctx: Context, table: TaskTable, key: str) -> tuple[str, Any]:
    """A prediction file's per-example statistics in its examples' uid order, with a
    digest of that order (two files answered the same examples where the digests match).

    Read from the file kept beside the predictions, derived (and kept) the first time.
    Not held in memory: they are needed only to draw a model's column of the bootstrap
    (:class:`Statistics`), and 10,000 of them (365 MB at 500 examples of macro-F1) would
    push the board, its draws and rankings out of the cache on every request.
    """
    labels = tuple(table.task.output.labels or ())
    stored = f"{key}.{_digest(table.task.perf_metric, labels)[:16]}.statistics"
    result = _read_kept(ctx, stored)
    if result is None:  # not derived yet
        records = sorted(load_records(ctx, key), key=lambda r: str(r["uid"]))
        predictions = [table.task.prediction(r["output"]) for r in records]
        golds = [r["gold"] for r in records]
        stats = statistics(table.task.perf_metric, predictions, golds, labels=labels or None)
        result = (_uids_digest(str(r["uid"]) for r in records), stats)
        _keep(ctx, stored, *result)
    return result


class Unpaired(Exception):
    """The models did not answer the same examples: no paired bootstrap, no intervals."""


class Statistics(Mapping[str, Mapping[str, Any]]):
    """Model key -> original's name -> the model's per-example statistics, each model's
    read on first use: what the bootstrap looks up only for the columns it draws, so a
    request whose draws are kept reads none.

    ``uids``: each original's examples' digest, as every model read must match (seeded
    with the kept draws' own, which were checked when drawn); a model that answered other
    examples raises :class:`Unpaired`.
    """

    def __init__(
        self,
        ctx: Context,
        table: TaskTable,
        files: Mapping[str, tuple[str, ...]],
        uids: Mapping[str, str],
    ) -> None:
        self._ctx, self._table, self._files = ctx, table, files
        self.uids = dict(uids)
        self._read: dict[str, dict[str, Any]] = {}

    def __getitem__(self, model: str) -> Mapping[str, Any]:
        found = self._read.get(model)
        if found is None:
            found = {}
            for dataset, key in zip(self._table.originals, self._files[model], strict=True):
                ids, stats = _statistics(self._ctx, self._table, key)
                if self.uids.setdefault(dataset.name, ids) != ids:
                    raise Unpaired(f"{key} answered other examples of {dataset.name}")
                found[dataset.name] = stats
            self._read[model] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


# A kept file: the uids' digest (64 hex characters), then the statistics as a .npy array
# (np.load of one small .npy is a fifth of an .npz's time: 10,000 at a server's start).
_DIGEST_BYTES = 64


def _keep(ctx: Context, key: str, uids: str, stats: Any) -> None:
    """Store a file's statistics; a store that cannot take them (full, read-only) costs
    deriving them again next time, never the request."""
    buffer = io.BytesIO()
    buffer.write(uids.encode("ascii"))
    np.save(buffer, stats, allow_pickle=False)
    try:
        ctx.artifacts.put_bytes(key, buffer.getvalue())
    except PlatformError as exc:
        logger.warning("interval statistics not stored at %s: %s", key, exc)


def _read_kept(ctx: Context, key: str) -> tuple[str, Any] | None:
    """What :func:`_keep` stored under ``key``; None where nothing (readable) is."""
    try:
        data = ctx.artifacts.read_bytes(key)
        stats = np.load(io.BytesIO(data[_DIGEST_BYTES:]), allow_pickle=False)
        return data[:_DIGEST_BYTES].decode("ascii"), stats
    except (OSError, ValueError, UnicodeDecodeError):  # absent, or not ours
        return None


def _uids_digest(uids: Iterable[str]) -> str:
    return hashlib.sha256("\x00".join(uids).encode()).hexdigest()


def constant_statistics(
    ctx: Context, table: TaskTable, uids: Mapping[str, str]
) -> list[dict[str, Any]] | None:
    """For each label, the per-example statistics of answering it everywhere, on each
    original in the models' example order: the majority-class baseline of every resample
    is the best of them. None when the models did not answer exactly the datasets'
    examples, or the task has no labels."""
    labels = table.task.output.labels
    if table.majority_label is None or not labels:
        return None
    found: list[dict[str, Any]] = [{} for _ in labels]
    for dataset in table.originals:
        cache_key = ("constant-statistics", table.task.perf_metric, dataset.sha256)
        cached = ctx.cache.get(cache_key)
        if cached is None:
            rows = sorted(read_examples(ctx, dataset), key=lambda e: str(e["uid"]))
            golds = [str(table.task.gold(e)) for e in rows]
            per_label = [
                statistics(table.task.perf_metric, [label] * len(golds), golds, labels=labels)
                for label in labels
            ]
            cached = (_uids_digest(str(e["uid"]) for e in rows), per_label)
            ctx.cache.put(cache_key, cached)
        ids, per_label = cached
        if uids.get(dataset.name) != ids:
            return None
        for i, stats in enumerate(per_label):
            found[i][dataset.name] = stats
    return found


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()
