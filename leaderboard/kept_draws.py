"""A board's bootstrap draws kept on disk, so that a server started again resamples from
them instead of drawing every model's columns anew.

The draws (:class:`scoring.bootstrap.Draws`) are held in the derived-data cache while the
server runs; a server started again had only the per-example statistics files to draw
from: at 10,000 models, 20,000 files read and summed in 1,000 resamples, tens of seconds
before the board had intervals. The draws are stored here, one file per task (written
again, never beside an old one), with what they were drawn from: the task's key (its
examples, metric and labels: :func:`leaderboard.intervals.board_resamples`), each
model's prediction files and each dataset's examples' digest. A later server takes the
columns of the models whose files are the same, as a running server takes its cached
draws (``draw(..., previous=, kept=)``), and draws the rest.

Writing costs about what the draws hold (114 MB at 10,000 models), so they are written
when most of their columns were drawn anew, not every time one model joins: a board
that grew since keeps its older models' columns all the same. A file that cannot be read
back as draws of this task (another task key, a format of another version, a truncated
or foreign file) is ignored: the draws are made from the statistics, as without it.
"""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from scoring import Draws

__all__ = ["KeptDraws", "load_draws", "save_draws", "worth_saving"]

logger = logging.getLogger(__name__)

#: Bumped when the file's layout changes: an older file is then ignored.
_FORMAT = 1

#: Model key -> its prediction files; dataset name -> its examples' digest; the draws.
KeptDraws = tuple[dict[str, tuple[str, ...]], dict[str, str], Draws]


def _key(task_id: str) -> str:
    return f"bootstrap-draws/{task_id}.npz"


def worth_saving(columns: int, drawn: int) -> bool:
    """Whether draws of ``columns`` columns, ``drawn`` of them drawn anew, are worth
    writing: when at least a tenth of them are new (a first bootstrap, a server's start,
    a board grown by a tenth), not for each model that joins."""
    return drawn > 0 and drawn * 10 >= columns


def save_draws(
    ctx: Context,
    task_id: str,
    task_key: str,
    files: Mapping[str, tuple[str, ...]],
    uids: Mapping[str, str],
    draws: Draws,
) -> None:
    """Store ``draws`` for ``task_id``; a store that cannot take them (full, read-only)
    costs drawing them again after a start, never the request."""
    picks = list(draws.picks.items())
    header = {
        "format": _FORMAT,
        "task_key": task_key,
        "files": {model: list(keys) for model, keys in files.items()},
        "uids": dict(uids),
        "metric": draws.metric,
        "datasets": list(draws.datasets),
        "columns": list(draws.columns),
        "n_resamples": draws.n_resamples,
        "seed": draws.seed,
        "whole": draws.whole,
        "picks": [[model, metric, int(array.shape[1])] for (model, metric), array in picks],
    }
    arrays: dict[str, Any] = {
        "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        # Every measurement's picks side by side: one member, not one per model.
        "picks": (
            np.concatenate([array for _, array in picks], axis=1)
            if picks
            else np.zeros((draws.n_resamples, 0), dtype=np.intp)
        ),
    }
    for d in range(len(draws.datasets)):
        arrays[f"counts{d}"] = draws.counts[d]
        arrays[f"perf{d}"] = draws.perf[d]
        arrays[f"estimate{d}"] = draws.estimate[d]
    try:
        with ctx.artifacts.open_write(_key(task_id)) as handle:
            np.savez(handle, allow_pickle=False, **arrays)
    except (PlatformError, OSError) as exc:  # never the request's intervals
        logger.warning("bootstrap draws of task %s not stored: %s", task_id, exc)


def load_draws(ctx: Context, task_id: str, task_key: str) -> KeptDraws | None:
    """The draws :func:`save_draws` stored for ``task_id`` under ``task_key``; None where
    none are, or what is there is not draws of that key."""
    key = _key(task_id)
    if not ctx.artifacts.exists(key):
        return None
    try:
        # Read from the file, each array once (not the whole file into memory first).
        with ctx.artifacts.open(key) as handle, np.load(handle, allow_pickle=False) as stored:
            header = json.loads(bytes(stored["header"]).decode())
            if header.get("format") != _FORMAT or header.get("task_key") != task_key:
                return None
            return _read(header, stored)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        logger.warning("bootstrap draws of task %s not read back: %s", task_id, exc)
        return None


def _read(header: dict[str, Any], stored: Any) -> KeptDraws:
    """The draws from an open file, every shape checked (ValueError where one is off)."""
    n, columns = int(header["n_resamples"]), tuple(header["columns"])
    datasets = tuple(header["datasets"])
    counts, perf, estimate = [], [], []
    for d in range(len(datasets)):
        counts.append(stored[f"counts{d}"])
        perf.append(stored[f"perf{d}"])
        estimate.append(stored[f"estimate{d}"])
        if (
            counts[d].ndim != 2
            or counts[d].shape[0] != n
            or perf[d].shape != (n, len(columns))
            or estimate[d].shape != (len(columns),)
        ):
            raise ValueError(f"dataset {d}'s arrays are not of {n} resamples x {len(columns)}")
    together = stored["picks"]
    sizes = [int(size) for _, _, size in header["picks"]]
    if together.shape != (n, sum(sizes)):
        raise ValueError("the measurements' picks do not add up")
    ends = np.cumsum(sizes)
    picks = {
        (str(model), str(metric)): together[:, end - size : end]
        for (model, metric, size), end in zip(header["picks"], ends.tolist(), strict=True)
    }
    draws = Draws(
        metric=str(header["metric"]),
        datasets=datasets,
        columns=columns,
        n_resamples=n,
        seed=int(header["seed"]),
        counts=tuple(counts),
        perf=tuple(perf),
        estimate=tuple(estimate),
        picks=picks,
        whole=bool(header["whole"]),
    )
    files = {str(model): tuple(keys) for model, keys in header["files"].items()}
    return files, {str(k): str(v) for k, v in header["uids"].items()}, draws
