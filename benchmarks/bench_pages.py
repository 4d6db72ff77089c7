"""Benchmark what the viewer's pages weigh and how soon they load, in headless Chromium.

Run: ``.venv/bin/python benchmarks/bench_pages.py [--repeats N]``. Seeds the realistic
sentiment platform of the tests (four ranked models with per-example predictions), starts
a real ``evalboard serve`` on a free port, and loads the model page and the task page in
a fresh browser context each time (nothing cached), at desktop (1366x900) and mobile
(390x844) sizes. Per page and size it writes the median and spread of: the bytes that
went over the wire (every request of the page, compressed where it was), the time to
DOMContentLoaded (and the first byte, the server's share of it), and for the model page
the time until every chart is drawn. Side by side, the model page as main served it
before (the full plotly.min.js of the plotly package, uncompressed, in <head>), made by
rewriting the page in the browser. Written to ``benchmarks/results/pages.json``; the goal
(issue 19) is a model page under 1 MB and 500 ms to DOMContentLoaded.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import plotly  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from benchmarks._report import machine, save  # noqa: E402
from evalboard.core.context import Context  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from tests.helpers.browser import CHROMIUM_ARGS, SIZES, chromium_path  # noqa: E402
from tests.leaderboard.conftest import serve  # noqa: E402
from tests.leaderboard.seeding import TASK, seed  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "pages.json"
CHARTS = 5
FULL_PLOTLY = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

_TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {ttfb_ms: nav.responseStart - nav.startTime,
          dcl_ms: nav.domContentLoadedEventEnd - nav.startTime,
          load_ms: nav.loadEventEnd - nav.startTime};
}"""


def _as_before(page: Any) -> None:
    """Make the page what main served: the full bundle, uncompressed, blocking in <head>."""

    def rewrite(route: Any) -> None:
        answer = route.fetch()
        head = '<script src="/static/vendor/plotly-basic.min.js"></script></head>'
        route.fulfill(response=answer, body=re.sub("</head>", head, answer.text(), count=1))

    page.route(re.compile(r".*/ui/tasks/[^/]+/models/\d+$"), rewrite)
    page.route(
        "**/static/vendor/plotly-basic.min.js",
        lambda route: route.fulfill(path=FULL_PLOTLY, content_type="text/javascript"),
    )


def _load(
    browser: Any, url: str, size: str, charts: bool, before: bool = False
) -> dict[str, float]:
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    if before:
        _as_before(page)
    sizes: list[int] = []
    page.on("requestfinished", lambda request: sizes.append(request.sizes()["responseBodySize"]))
    try:
        page.goto(url)
        if charts:
            page.wait_for_function(
                f"() => document.querySelectorAll('.chart .main-svg').length >= {CHARTS}",
                timeout=60_000,
            )
            drawn = float(page.evaluate("() => performance.now()"))
        page.wait_for_load_state("networkidle")
        timing: dict[str, float] = page.evaluate(_TIMING)
        figures = {"bytes": float(sum(sizes)), "requests": float(len(sizes)), **timing}
        if charts:
            figures["charts_drawn_ms"] = drawn
        return figures
    finally:
        context.close()


def _summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    return {
        name: {
            "median": statistics.median(r[name] for r in runs),
            "min": min(r[name] for r in runs),
            "max": max(r[name] for r in runs),
        }
        for name in runs[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-pages-") as tmp:
        settings = make_settings(Path(tmp))
        ctx = Context.from_settings(settings)
        seeded = seed(ctx, Path(tmp))
        model = seeded.submissions["roberta-large"]
        pages = {
            "model": (f"/ui/tasks/{TASK}/models/{model}", True),
            "task": (f"/ui/tasks/{TASK}", False),
        }
        results: dict[str, Any] = {}
        with (
            serve(settings.data_dir, Path(tmp) / "server.log", args=("--no-worker",)) as (url, _),
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
            try:
                for name, (path, charts) in pages.items():
                    for size in SIZES:
                        _load(browser, url + path, size, charts)  # warm the server's caches
                        runs = [
                            _load(browser, url + path, size, charts) for _ in range(args.repeats)
                        ]
                        results[f"{name}_{size}"] = _summary(runs)
                        if not charts:
                            continue
                        # Before, measured alternately with now's so that both see one load.
                        before = [
                            _load(browser, url + path, size, charts, before=True)
                            for _ in range(args.repeats)
                        ]
                        results[f"{name}_{size}_as_before"] = _summary(before)
            finally:
                browser.close()
        ctx.db.dispose()
    report = {
        "benchmark": "pages",
        "what": "the viewer's pages in headless Chromium against a real evalboard serve, a "
        "fresh context per load (no cache): bytes over the wire, DOMContentLoaded, charts drawn",
        "repeats": args.repeats,
        "pages": results,
        "goal": {"model_page_bytes_below": 1_000_000, "model_page_dcl_ms_below": 500},
        **machine(),
    }
    save(RESULTS, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
