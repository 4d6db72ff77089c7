"""Benchmark the leaderboard at 100,000 submissions, with the default cache and one that
holds the board.

The same requests as ``bench_leaderboard.py`` (its :func:`run_size`: synthetic rows
through the project's own storage, each request through the whole app in process), at
100,000 finished submissions without predictions, twice: with the default
``EVALBOARD_CACHE_BYTES`` (1 GiB), which the board's rows (about 2.1 GB) do not fit, so
every request reads them again, and with a budget that holds them (6 GiB). Fewer
repetitions than at 10,000: a request with the default budget takes seconds.

Run: ``.venv/bin/python benchmarks/bench_board_100k.py [--repeats N]``.
Writes ``benchmarks/results/leaderboard_100k.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_leaderboard import run_size  # noqa: E402
from evalboard.core.cache import DEFAULT_CACHE_BYTES  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "leaderboard_100k.json"
SUBMISSIONS = 100_000
#: A budget that holds a 100,000-submission board, its rankings and more.
LARGE_CACHE_BYTES = 6 * 1024**3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    report = {
        "benchmark": "leaderboard_100k",
        "what": "bench_leaderboard.py's requests at 100,000 submissions (no predictions), "
        "with the default derived-data cache and with one that holds the board",
        "submissions": SUBMISSIONS,
        "repeats": args.repeats,
        "cache_bytes": {
            str(budget): run_size(SUBMISSIONS, args.repeats, cache_bytes=budget)
            for budget in (DEFAULT_CACHE_BYTES, LARGE_CACHE_BYTES)
        },
        "goal": {"api_p95_ms_below": 1000, "at": SUBMISSIONS},
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
