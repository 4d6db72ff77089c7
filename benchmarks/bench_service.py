"""Benchmark the cost of the service's edge: the text check and the verified body cap.

Run: ``.venv/bin/python benchmarks/bench_service.py``. Sends requests in process (httpx's
ASGI transport) to a trivial endpoint, bare and wrapped in ``StrictTextMiddleware`` and
``BodyLimitMiddleware`` (which reads the caller's token from a SQLite database when a
body is over 64 KiB), and writes the median microseconds per request, and the ratios
wrapped/bare, to ``benchmarks/results/service.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from evalboard.core.context import Context
from evalboard.core.settings import Settings
from leaderboard.accounts import create_token, create_user
from leaderboard.body_limit import BodyLimitMiddleware
from leaderboard.strict_text import StrictTextMiddleware

RESULTS = Path(__file__).resolve().parent / "results" / "service.json"
REPEATS = 7
REQUESTS = 300


async def _echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"bytes": len(body)})


def _bare() -> ASGIApp:
    return Starlette(routes=[Route("/echo", _echo, methods=["GET", "POST"])])


def _wrapped(ctx: Context) -> ASGIApp:
    inner = StrictTextMiddleware(_bare())
    return BodyLimitMiddleware(inner, ctx=ctx, max_bytes=64 * 1024**2)


async def _per_request_us(app: ASGIApp, request: dict[str, Any], count: int) -> float:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        await client.request(**request)  # warm up
        start = time.perf_counter()
        for _ in range(count):
            response = await client.request(**request)
            assert response.status_code == 200, response.text
        return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        ctx = Context.from_settings(Settings(data_dir=Path(tmp), sandbox="local"))
        create_user(ctx, "bench")
        token, _ = create_token(ctx, "bench")
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        small = json.dumps({"label": "x" * 1000, "items": list(range(50))})
        large = json.dumps({"rows": [f"sentence number {i} is here" for i in range(40_000)]})
        escaped = json.dumps({"rows": [f"caf\u00e9 number {i}" for i in range(40_000)]})
        cases = {
            "get_no_body": ({"method": "GET", "url": "/echo"}, REQUESTS),
            "post_json_1kb": (
                {"method": "POST", "url": "/echo", "content": small, "headers": auth},
                REQUESTS,
            ),
            "post_json_1mb_verified": (
                {"method": "POST", "url": "/echo", "content": large, "headers": auth},
                REQUESTS // 10,
            ),
            "post_json_1mb_non_ascii_verified": (
                {"method": "POST", "url": "/echo", "content": escaped, "headers": auth},
                REQUESTS // 10,
            ),
        }
        bare, wrapped = _bare(), _wrapped(ctx)
        medians: dict[str, dict[str, float]] = {}
        for name, (request, count) in cases.items():
            runs = {"bare": [], "wrapped": []}  # type: dict[str, list[float]]
            for _ in range(REPEATS):  # interleaved, so drift hits both alike
                runs["bare"].append(asyncio.run(_per_request_us(bare, request, count)))
                runs["wrapped"].append(asyncio.run(_per_request_us(wrapped, request, count)))
            medians[name] = {k: round(statistics.median(v), 1) for k, v in runs.items()}
            medians[name]["ratio"] = round(medians[name]["wrapped"] / medians[name]["bare"], 3)
            print(f"{name}: {medians[name]}", flush=True)
        ctx.db.dispose()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "what": "microseconds per in-process request, bare vs StrictText+BodyLimit",
                "medians_us": medians,
                "repeats": REPEATS,
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
