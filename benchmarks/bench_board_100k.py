"""Benchmark the leaderboard at 100,000 submissions with the default cache.

The same requests as ``bench_leaderboard.py`` (its :func:`run_size`: synthetic rows
through the project's own storage, each request through the whole app in process), at
100,000 finished submissions without predictions, with the default
``EVALBOARD_CACHE_BYTES`` (1 GiB), which holds the board's rows (about 0.35 GB, packed:
``leaderboard.entry.EntryDetails``); ``--cache-bytes`` runs other budgets beside it.
Fewer repetitions than at 10,000: seeding and the first requests take minutes.

Run: ``.venv/bin/python benchmarks/bench_board_100k.py [--repeats N] [--cache-bytes B ...]``.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--cache-bytes",
        type=int,
        nargs="+",
        default=[DEFAULT_CACHE_BYTES],
        help="the derived-data cache's budgets to run (default: the settings' default)",
    )
    args = parser.parse_args()
    report = {
        "benchmark": "leaderboard_100k",
        "what": "bench_leaderboard.py's requests at 100,000 submissions (no predictions), "
        "with each derived-data cache budget",
        "submissions": SUBMISSIONS,
        "repeats": args.repeats,
        "cache_bytes": {
            str(budget): run_size(SUBMISSIONS, args.repeats, cache_bytes=budget)
            for budget in args.cache_bytes
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
