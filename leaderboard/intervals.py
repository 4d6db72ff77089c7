"""Bootstrap intervals for the leaderboard, from the per-example predictions kept per result.

Each ranked model's drill-down file (``Result.predictions_key``, one JSON record per
example with ``uid``, ``output`` and ``gold``) gives the perf metric's per-example
statistics; :func:`scoring.bootstrap` resamples the same examples for every model. When a
model lacks a file, or the models answered different examples, there are no intervals
(shown as such), never made-up ones.

A file's statistics are derived once and stored beside it (prediction files never change
once written): a server started again reads 10,000 small arrays, not 5 million JSON
records.
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from datasets_registry import read_examples
from evalboard.core.cache import MISSING, approximate_size, sampled_size
from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evaluator import read_records
from leaderboard.table import ModelEntry, TaskTable
from scoring import (
    BootstrapResult,
    ScoringError,
    bootstrap,
    draw,
    resample,
    statistics,
)

__all__ = ["N_RESAMPLES", "bootstrap_size", "leaderboard_intervals", "load_records"]

logger = logging.getLogger(__name__)

N_RESAMPLES = 1000
LEVEL = 0.95


def load_records(ctx: Context, key: str) -> list[dict[str, Any]]:
    """The per-example records of one result (its drill-down file)."""
    return read_records(ctx.artifacts.read_bytes(key))


def _statistics(ctx: Context, table: TaskTable, key: str) -> tuple[str, Any]:
    """A prediction file's per-example statistics in its examples' uid order, with a
    digest of that order (two files answered the same examples where the digests match)."""
    labels = tuple(table.task.output.labels or ())
    cache_key = ("interval-statistics", table.task.perf_metric, labels, key)
    cached = ctx.cache.get(cache_key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    stored = f"{key}.{_digest(table.task.perf_metric, labels)[:16]}.statistics"
    result = _read_kept(ctx, stored)
    if result is None:  # not derived yet
        records = sorted(load_records(ctx, key), key=lambda r: str(r["uid"]))
        predictions = [table.task.prediction(r["output"]) for r in records]
        golds = [r["gold"] for r in records]
        stats = statistics(table.task.perf_metric, predictions, golds, labels=labels or None)
        result = (_uids_digest(str(r["uid"]) for r in records), stats)
        _keep(ctx, stored, *result)
    ctx.cache.put(cache_key, result, size=result[1].nbytes + 200)
    return result


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


def _constant_statistics(
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


def has_predictions(table: TaskTable, models: list[ModelEntry]) -> bool:
    """Whether every model kept its per-example predictions on every original scoring
    dataset: the bootstrap needs them all."""
    originals = table.originals
    return bool(originals) and all(d.name in m.predictions for m in models for d in originals)


def leaderboard_intervals(
    ctx: Context,
    table: TaskTable,
    models: list[ModelEntry],
    *,
    other_metrics: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    directions: Mapping[str, float],
    offsets: Mapping[str, float],
    baseline: float | None = None,
    dataset_weights: Mapping[str, float] | None = None,
    repeats: Mapping[str, Mapping[str, list[float]]] | None = None,
) -> BootstrapResult | None:
    """Perf intervals, gaps to the leader, rank intervals and ``p_first`` of ``models``,
    with the baseline floor at ``baseline`` and the originals weighed by
    ``dataset_weights`` (None: the table's); None when they cannot be computed."""
    originals = table.originals
    dataset_weights = table.dataset_weights if dataset_weights is None else dataset_weights
    if not models or not has_predictions(table, models):
        return None
    files = tuple((m.key, tuple(m.predictions[d.name] for d in originals)) for m in models)
    # What the resamples depend on besides the examples and the dataset weights. Keys as
    # digests: the cache measures and hashes a key at every request, and these name every
    # model's figures (repr gives each float exactly).
    figures = _digest(
        tuple(sorted((k, tuple(sorted(v.items()))) for k, v in other_metrics.items())),
        tuple(sorted(directions.items())),
        tuple(sorted(offsets.items())),
        baseline,
        table.majority_label,
        tuple(
            sorted(
                (k, tuple(sorted((m, tuple(v)) for m, v in measured.items())))
                for k, measured in (repeats or {}).items()
            )
        ),
    )
    cache_key = (
        "bootstrap",
        _digest(
            files, figures, tuple(sorted(weights.items())), tuple(sorted(dataset_weights.items()))
        ),
    )
    cached = ctx.cache.get(cache_key, MISSING)  # one call: None (no intervals) is cached too
    if cached is not MISSING:
        return cached  # type: ignore[no-any-return]
    try:
        examples: dict[str, dict[str, Any]] = {}
        uids: dict[str, str] = {}
        for model in models:
            examples[model.key] = {}
            for dataset in originals:
                ids, stats = _statistics(ctx, table, model.predictions[dataset.name])
                if uids.setdefault(dataset.name, ids) != ids:
                    return None
                examples[model.key][dataset.name] = stats
        floor = _constant_statistics(ctx, table, uids) if baseline is not None else None
        chosen = {d.name: dataset_weights[d.name] for d in originals}
        # What the bootstrap draws depends on the examples, not on any weight or other
        # metric, and each model's columns on its own examples only: kept per task, so
        # weights no request asked for before cost arithmetic, and a board that gains or
        # re-runs a model sums that model's resamples alone.
        draws_key = (
            "bootstrap-draws",
            _digest(
                table.task.id,
                table.task.perf_metric,
                tuple(table.task.output.labels or ()),
                tuple(d.sha256 for d in originals),
                floor is not None,
                N_RESAMPLES,
            ),
        )
        # Nor do the resamples' goods and AMRS depend on the metric weights: the last ones
        # kept per task, with the files, figures and dataset shares they were taken with.
        resamples_key = ("bootstrap-resamples", draws_key[1])
        arguments: dict[str, Any] = dict(
            metric=table.task.perf_metric,
            dataset_weights=chosen,
            baseline=floor if floor is not None else baseline,
            repeats=repeats,
            n_resamples=N_RESAMPLES,
            seed=0,
        )
        others: dict[str, Any] = dict(
            table=other_metrics, directions=directions, offsets=offsets, level=LEVEL
        )
        by_model = dict(files)
        kept_files, kept_figures, resamples = ctx.cache.get(resamples_key, ({}, None, None))
        if (
            resamples is None
            or kept_files != by_model
            or kept_figures != figures
            or not resamples.fits(examples, chosen, n=N_RESAMPLES, level=LEVEL, seed=0)
        ):
            drawn_files, draws = ctx.cache.get(draws_key, ({}, None))
            if drawn_files != by_model:
                kept = {key for key, f in by_model.items() if drawn_files.get(key) == f}
                draws = draw(examples, **arguments, previous=draws, kept=kept)
                ctx.cache.put(draws_key, (by_model, draws), size=approximate_size(draws))
            resamples = resample(examples, **arguments, **others, draws=draws)
            size = approximate_size(resamples)
            # At most a quarter of the budget, so that the draws, the board and its
            # rankings stay: at 10,000 models resamples are 154 MB, draws 108 MB and the
            # board 199 MB, and keeping all in the default 512 MB made every request evict
            # what the next one needed (a warm board took 10 s a request).
            if size <= ctx.cache.budget_bytes // 4:
                ctx.cache.put(resamples_key, (by_model, figures, resamples), size=size)
        result: BootstrapResult | None = bootstrap(
            examples, weights=weights, resamples=resamples, **arguments, **others
        )
    except (OSError, KeyError, ValueError, ScoringError) as exc:
        logger.warning("no intervals for task %s: %s", table.task.id, exc)
        result = None
    ctx.cache.put(cache_key, result, size=bootstrap_size(result))
    return result


def bootstrap_size(boot: BootstrapResult | None) -> int:
    """About the bytes ``boot`` holds: each of its per-model mappings and lists sampled and
    scaled, as walking 1,000 models' intervals took longer than bootstrapping them from
    kept draws."""
    if boot is None:
        return 0
    return sum(
        sampled_size(list(value.items()) if isinstance(value, dict) else value)
        if isinstance(value, dict | list)
        else approximate_size(value)
        for value in vars(boot).values()
    )


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()
