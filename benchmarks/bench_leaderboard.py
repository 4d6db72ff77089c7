"""Benchmark the leaderboard at scale: the API and the task page at 1k and 10k submissions.

Synthetic rows go through the project's own storage (the real tables via SQLAlchemy, on
SQLite in a temporary folder): one task, one 500-example scoring round and its perturbed
copies (two rounds for the boards with intervals, predictions on both, so that new dataset
weights move perf), and ``n`` finished submissions with a result on each. Each request goes
through the whole app in process (httpx's ASGI transport): ``GET /tasks/T/leaderboard``
(the API) and ``GET /ui/tasks/T`` (the page, time to the last byte, which bounds its first
byte since the page is rendered in one piece), and a model's page
(``GET /ui/tasks/T/models/N``, a model from the middle of the board: its row, card, charts
and first examples). Cold: the first request after seeding, which derives and stores
every row (a backfill, as after an upgrade that changes the rows' format); restart: the
first requests of a new :class:`~evalboard.core.context.Context` on the stored rows and
the bootstrap's draws kept on disk (empty derived-data cache); warm: the requests after
it, with default weights, with new dataset weights asked for again (``api_new_weights``,
the cached ranking after its first request), with dataset or metric weights no request
asked for before (``api_fresh_weights``, ``api_fresh_metric_weights``, ranked anew each
time), with every round weighed alike by a weight not asked for before
(``api_same_shares_weights``: the owner's shares, so the kept resamples serve it);
after_new_result: the first request after one more submission finished (a new version of
the board: ranked, and with predictions bootstrapped, again). A board of 1,000 models or
more answers a weighting whose resamples are not kept before its intervals
(``intervals_pending``; ``EVALBOARD_INTERVALS_INLINE_MODELS``): for the fresh dataset
weights, the cold and restarted server and after a new result the time until the API
answers with them is measured too (``*intervals_ready*``: asked again every 0.1 s; boards
with predictions only), and waited for before the next request.
One request's time is also split into loading the table, ranking and JSON, so the figure
says where the time goes.

Run: ``.venv/bin/python benchmarks/bench_leaderboard.py [--sizes 1000 10000 100000]
[--interval-sizes 1000 10000] [--repeats N] [--out PATH]``.
Writes ``benchmarks/results/leaderboard.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from benchmarks._report import load_average, machine  # noqa: E402
from datasets_registry import (  # noqa: E402
    add_dataset,
    create_task,
    list_datasets,
    parse_task_spec,
    read_examples,
)
from evalboard.core.context import Context  # noqa: E402
from evalboard.core.settings import Settings  # noqa: E402
from evalboard.core.states import JobStatus  # noqa: E402
from evalboard.core.tables import Job, Result, Submission, utcnow  # noqa: E402
from evaluator.result import SCHEMA_VERSION, DatasetMetrics  # noqa: E402
from leaderboard import build_leaderboard, create_app  # noqa: E402
from leaderboard.paging import DEFAULT_LIMIT, BoardQuery  # noqa: E402
from leaderboard.table import load_table  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "leaderboard.json"
#: Rounds of the boards with intervals: with two, new dataset weights move each round's
#: share of perf, so the board resamples (with one, they change no figure).
INTERVAL_ROUNDS = 2
TASK_ID = "bench"
EXAMPLES = 500
LABELS = ["negative", "neutral", "positive"]
TASK = {
    "id": TASK_ID,
    "name": "Benchmark",
    "input": [{"name": "statement"}],
    "output": {"type": "multiclass", "labels": LABELS},
    "perf_metric": "macro_f1",
}
_SUBJECTS = ["She", "He", "Mary", "John", "My sister", "Her brother"]
_PHRASES = {
    "positive": "said the food was wonderful",
    "negative": "said the service was terrible",
    "neutral": "said the hotel is on Main Street",
}


def _dataset_file(folder: Path, round_: int = 1) -> Path:
    path = folder / f"r{round_}-test.jsonl"
    rows = []
    for i in range(EXAMPLES):
        label = LABELS[(i * 7 + round_ - 1) % 3]
        text = f"{_SUBJECTS[i % len(_SUBJECTS)]} {_PHRASES[label]} ({round_}.{i})."
        rows.append({"uid": f"r{round_}-u{i}", "statement": text, "label": label})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _metrics(i: int, perturbation: str | None) -> dict[str, Any]:
    """A plausible result for submission ``i`` on one dataset (deterministic)."""
    spread = (i * 2654435761) % 1000 / 1000  # a cheap well-mixed number in [0, 1)
    throughput = 10 + 4000 * spread
    figures: dict[str, Any] = {}
    if perturbation is None:
        figures["perf"] = 35 + 55 * ((i * 40503) % 997 / 997)
    else:
        figures[perturbation] = 60 + 40 * spread
    metrics = DatasetMetrics(
        perf_metric="macro_f1",
        examples=EXAMPLES,
        throughput=throughput,
        batch_size=32,
        predict_s=EXAMPLES / throughput,
        startup_s=1.0,
        latency_p50_s=32 / throughput,
        latency_p95_s=40 / throughput,
        memory_gib=0.1 + 8 * ((i * 7919) % 101 / 101),
        cpu_seconds=EXAMPLES / 50,
        throughput_runs=[throughput * f for f in (0.97, 1.0, 1.03)],
        **figures,
    )
    return {"schema_version": SCHEMA_VERSION, **metrics.model_dump(mode="json")}


def _predictions(ctx: Context, sid: int, dataset: str, examples: list[dict[str, Any]]) -> str:
    """Submission ``sid``'s per-example predictions on the original ``dataset``, stored as
    the evaluator stores them; returns the artifact key."""
    records = []
    salt = len(dataset) * 13 + ord(dataset[1])  # each round its own right answers
    for i, example in enumerate(examples):
        right = (sid * 31 + i * 17 + salt) % 100 < 50 + sid % 40
        label = example["label"] if right else LABELS[(LABELS.index(example["label"]) + 1) % 3]
        records.append(
            {"uid": example["uid"], "gold": example["label"], "output": {"label": label}}
        )
    key = f"predictions/{sid}/{dataset}.jsonl"
    ctx.artifacts.put_bytes(key, "".join(json.dumps(r) + "\n" for r in records).encode())
    return key


def seed_board(
    ctx: Context, folder: Path, submissions: int, *, predictions: bool = False, rounds: int = 1
) -> dict[str, int]:
    """The task, its ``rounds`` rounds (``r1-test``, ``r2-test``, ...) and their copies,
    and ``submissions`` finished models, in bulk inserts through the real tables (with
    per-example predictions on the originals when ``predictions``, so the board
    bootstraps intervals). Returns the count of rows."""
    create_task(ctx, parse_task_spec(TASK))
    for r in range(1, rounds + 1):
        add_dataset(ctx, task_id=TASK_ID, name=f"r{r}-test", path=_dataset_file(folder, r), round=r)
    return add_submissions(ctx, range(submissions), predictions=predictions)


def add_submissions(ctx: Context, numbers: range, *, predictions: bool = False) -> dict[str, int]:
    """Finished models ``model-<n>`` for each of ``numbers``, with a result on every
    dataset of the task, as finished jobs leave them (bulk inserts)."""
    datasets = list_datasets(ctx, TASK_ID)
    now = utcnow()
    with ctx.db.session() as session:
        ids = list(
            session.scalars(
                insert(Submission).returning(Submission.id),
                [
                    {
                        "task_id": TASK_ID,
                        "name": f"model-{i:06d}",
                        "bundle_sha256": "0" * 64,
                        "artifact_key": f"bundles/{i}.tar.gz",
                        "manifest": {"name": f"model-{i:06d}", "task": TASK_ID},
                        "is_baseline": False,
                    }
                    for i in numbers
                ],
            )
        )
        jobs = session.execute(
            insert(Job).returning(Job.id, Job.submission_id, Job.dataset_id),
            [
                {
                    "submission_id": sid,
                    "dataset_id": d.id,
                    "status": JobStatus.FINISHED.value,
                    "progress": 1.0,
                    "attempts": 1,
                    "finished_at": now,
                }
                for sid in ids
                for d in datasets
            ],
        ).all()
        by_id = {d.id: d for d in datasets}
        examples = {
            d.id: list(read_examples(ctx, d))
            for d in datasets
            if predictions and d.perturbation is None
        }
        session.execute(
            insert(Result),
            [
                {
                    "job_id": job_id,
                    "submission_id": sid,
                    "dataset_id": did,
                    "metrics": _metrics(sid, by_id[did].perturbation),
                    "provenance": {"seeded": True},
                    "predictions_key": (
                        _predictions(ctx, sid, by_id[did].name, examples[did])
                        if did in examples
                        else None
                    ),
                }
                for job_id, sid, did in jobs
            ],
        )
    return {"submissions": len(ids), "datasets": len(datasets), "results": len(jobs)}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(_percentile(ms, 0.95), 1),
        "min_ms": round(min(ms), 1),
        "max_ms": round(max(ms), 1),
        "n": len(ms),
    }


async def _timed(client: httpx.AsyncClient, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    response = await client.get(url)
    seconds = time.perf_counter() - start
    response.raise_for_status()
    return seconds, len(response.content)


#: How often a client asks again for intervals being computed (the page waits 0.5-3 s).
POLL_S = 0.1


async def _intervals_ready(
    client: httpx.AsyncClient, url: str, start: float, *, predictions: bool
) -> float | None:
    """Seconds from ``start`` until ``url`` answers with its intervals: a large board's
    first answer for new weights comes before them (``intervals_pending``). None on a
    board without ``predictions`` (no intervals to wait for)."""
    if not predictions:
        return None
    while True:
        response = await client.get(url)
        response.raise_for_status()
        if not response.json().get("intervals_pending"):
            return time.perf_counter() - start
        await asyncio.sleep(POLL_S)


async def _measure(
    settings: Settings, repeats: int, *, submissions: int, predictions: bool, rounds: int
) -> dict[str, Any]:
    ctx = Context.from_settings(settings)
    app = create_app(ctx)
    transport = httpx.ASGITransport(app=app)
    api = f"/tasks/{TASK_ID}/leaderboard"
    page = f"/ui/tasks/{TASK_ID}"
    reweighted = f"{api}?dataset_weights=r1-test:0.5"
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        started = time.perf_counter()
        cold_api, api_bytes = await _timed(client, api)
        cold_ready = await _intervals_ready(client, api, started, predictions=predictions)
        cold_page, page_bytes = await _timed(client, page)
        rss_after_cold = _rss_gib()
        runs: dict[str, list[float]] = {
            "api": [],
            "page": [],
            "api_new_weights": [],
            "api_fresh_weights": [],
            "api_fresh_metric_weights": [],
            "api_same_shares_weights": [],
            "model_page": [],
        }
        ready: list[float | None] = []  # new dataset weights: until their intervals are in
        # A model's page: one from the middle of the board (its row, its charts).
        listed = (await client.get(f"{api}?offset={submissions // 2}&limit=1")).json()
        model = f"/ui/tasks/{TASK_ID}/models/{listed['rows'][0]['submission_id']}"
        for i in range(repeats):  # interleaved, so a neighbour's load falls on all alike
            runs["api"].append((await _timed(client, api))[0])
            runs["page"].append((await _timed(client, page))[0])
            runs["model_page"].append((await _timed(client, model))[0])
            runs["api_new_weights"].append((await _timed(client, reweighted))[0])
            # Weights no request asked for before: ranked again, not read from the cache.
            fresh = f"{api}?dataset_weights=r1-test:{0.6 + i / 100:g}"
            started = time.perf_counter()
            runs["api_fresh_weights"].append((await _timed(client, fresh))[0])
            # Waited for, so that the next requests do not share the CPU with the making.
            ready.append(await _intervals_ready(client, fresh, started, predictions=predictions))
            metric_weights = f"{api}?weights=perf:4,throughput:{1 + i / 100:g},memory:1"
            runs["api_fresh_metric_weights"].append((await _timed(client, metric_weights))[0])
            # Every round weighed alike, with a weight not asked for before: the same
            # shares as the owner's, so every figure stays (its resamples are kept).
            alike = ",".join(f"r{r}-test:{2 + i}" for r in range(1, rounds + 1))
            runs["api_same_shares_weights"].append(
                (await _timed(client, f"{api}?dataset_weights={alike}"))[0]
            )
        rss_after_warm = _rss_gib()
        # A job finishes: the next request ranks (and bootstraps) the board's new version.
        after: list[float] = []
        after_ready: list[float | None] = []
        for i in range(min(repeats, 5)):
            added = range(submissions + i, submissions + i + 1)
            add_submissions(ctx, added, predictions=predictions)
            started = time.perf_counter()
            after.append((await _timed(client, api))[0])
            after_ready.append(
                await _intervals_ready(client, api, started, predictions=predictions)
            )
    out["cold"] = {
        "api_ms": round(cold_api * 1000, 1),
        "page_ms": round(cold_page * 1000, 1),
        **_ready_ms(cold_ready),
    }
    out["warm"] = {name: _summary(seconds) for name, seconds in runs.items()}
    out["after_new_result"] = _summary(after)
    if predictions:
        out["fresh_weights_intervals_ready"] = _summary([r for r in ready if r is not None])
        out["after_new_result_intervals_ready"] = _summary(
            [r for r in after_ready if r is not None]
        )
    out["bytes"] = {"api": api_bytes, "page": page_bytes}
    # The process's resident memory: what the cache keeps, and anything kept beside it.
    out["rss_gib"] = {"after_cold": rss_after_cold, "after_warm": rss_after_warm}
    out["split_ms"] = _split(ctx)
    ctx.db.dispose()
    return out


def _rss_gib() -> float:
    return round(float(psutil.Process().memory_info().rss) / 1024**3, 2)


def _split(ctx: Context) -> dict[str, float]:
    """One request's parts: loading the warm table, ranking it (the API's default page;
    ranked from scratch, since the table as loaded, not as a visitor sees it, is a version
    of its own), JSON."""
    start = time.perf_counter()
    table = load_table(ctx, TASK_ID)
    loaded = time.perf_counter()
    board = build_leaderboard(ctx, table, query=BoardQuery(limit=DEFAULT_LIMIT))
    ranked = time.perf_counter()
    board.model_dump_json()
    dumped = time.perf_counter()
    return {
        "load_table": round((loaded - start) * 1000, 1),
        "build_leaderboard": round((ranked - loaded) * 1000, 1),
        "json": round((dumped - ranked) * 1000, 1),
    }


def run_size(
    submissions: int,
    repeats: int,
    *,
    predictions: bool = False,
    rounds: int = 1,
    cache_bytes: int | None = None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        folder = Path(tmp)
        settings = Settings(data_dir=folder / "data", sandbox="local")
        if cache_bytes is not None:
            settings = settings.model_copy(update={"cache_bytes": cache_bytes})
        ctx = Context.from_settings(settings)
        start = time.perf_counter()
        counts = seed_board(ctx, folder, submissions, predictions=predictions, rounds=rounds)
        seeded_s = time.perf_counter() - start
        ctx.db.dispose()
        result = asyncio.run(
            _measure(
                settings, repeats, submissions=submissions, predictions=predictions, rounds=rounds
            )
        )
        restart = asyncio.run(_restart(settings, predictions=predictions))
        return {
            "rows": counts,
            "rounds": rounds,
            "seed_s": round(seeded_s, 1),
            **result,
            "restart": restart,
        }


def _ready_ms(seconds: float | None) -> dict[str, float]:
    return {} if seconds is None else {"intervals_ready_ms": round(seconds * 1000, 1)}


#: Requests a restarted server gets at once (``restart.at_once``).
AT_ONCE = 8


async def _restart(settings: Settings, *, predictions: bool) -> dict[str, Any]:
    """The first requests of a server started again: its rows stored, nothing in memory.
    Three servers, each started afresh: the first API request and the page after it;
    ``AT_ONCE`` API requests at once (they share one read of the board); and the first
    request after the warm-up a served app makes as it starts (``leaderboard.warmup``)."""
    ctx = Context.from_settings(settings)
    transport = httpx.ASGITransport(app=create_app(ctx))
    url = f"/tasks/{TASK_ID}/leaderboard"
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        started = time.perf_counter()
        api, _ = await _timed(client, url)
        page, _ = await _timed(client, f"/ui/tasks/{TASK_ID}")
        ready = await _intervals_ready(client, url, started, predictions=predictions)
    ctx.db.dispose()
    out: dict[str, Any] = {
        "api_ms": round(api * 1000, 1),
        "page_ms": round(page * 1000, 1),
        **_ready_ms(ready),
    }

    ctx = Context.from_settings(settings)
    transport = httpx.ASGITransport(app=create_app(ctx))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        # The app's endpoints run in its thread pool: these are requests at once.
        at_once = await asyncio.gather(*(_timed(client, url) for _ in range(AT_ONCE)))
    ctx.background.wait_idle(timeout=600)
    ctx.db.dispose()
    out["at_once"] = _summary([seconds for seconds, _ in at_once])

    ctx = Context.from_settings(settings)
    app = create_app(ctx)
    transport = httpx.ASGITransport(app=app)
    started = time.perf_counter()
    # The served app's start: its lifespan starts the warm-up in a thread of its own.
    async with app.router.lifespan_context(app):
        app.state.warmup.join()
        warmed = time.perf_counter() - started
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            after, _ = await _timed(client, url)
            page_after, _ = await _timed(client, f"/ui/tasks/{TASK_ID}")
        ctx.background.wait_idle(timeout=600)
    ctx.db.dispose()
    out["warmup_ms"] = round(warmed * 1000, 1)
    out["api_after_warmup_ms"] = round(after * 1000, 1)
    out["page_after_warmup_ms"] = round(page_after * 1000, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--interval-sizes",
        type=int,
        nargs="*",
        default=[1_000, 10_000],
        help="sizes also run with per-example predictions, so the board bootstraps intervals",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument(
        "--cache-bytes",
        type=int,
        default=None,
        help="the derived-data cache's budget (EVALBOARD_CACHE_BYTES; default: the settings')",
    )
    args = parser.parse_args()
    load_before = load_average()
    report: dict[str, Any] = {
        "benchmark": "leaderboard",
        "what": "GET /tasks/T/leaderboard (default page of 100) and GET /ui/tasks/T in "
        "process, SQLite; sizes: one round, no predictions; with_intervals: two rounds, "
        "predictions on both originals; api_new_weights: the same new dataset weights each "
        "time, api_fresh_weights: dataset weights not asked for before (round 1's share "
        "moves), api_same_shares_weights: every round weighed alike with a weight not asked "
        "for before (the owner's shares), api_fresh_metric_weights: metric weights not "
        "asked for before; cold: the first requests after seeding (every row derived and "
        "stored); restart: the first requests of a new server on those rows (and 8 at once, "
        "and the first after the warm-up a served app starts with, each on a new server); "
        "after_new_result: the first request after one more submission finished",
        "repeats": args.repeats,
        "cache_bytes": args.cache_bytes or Settings().cache_bytes,
        "sizes": {
            str(n): run_size(n, args.repeats, cache_bytes=args.cache_bytes) for n in args.sizes
        },
        "with_intervals": {
            str(n): run_size(
                n,
                args.repeats,
                predictions=True,
                rounds=INTERVAL_ROUNDS,
                cache_bytes=args.cache_bytes,
            )
            for n in args.interval_sizes
        },
        "goal": {"api_p95_ms_below": 100, "page_first_byte_ms_below": 200, "at": 10_000},
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
