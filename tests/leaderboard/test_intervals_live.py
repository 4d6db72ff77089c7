"""Against a real ``evalboard serve`` whose boards count as large: a storm of weightings.

Forty threads each ask for weights no one asked for before, hostile ones among them: every
answer is the API's (200 with its rows, or 422 for weights it refuses), the server keeps
answering, and the weights asked last get their intervals. The seeded task has one set a
viewer may weigh (a viewer's dataset weights leave the hidden set out), so each asks for
metric weights of its own as well.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.leaderboard.seeding import TASK

pytestmark = pytest.mark.slow

#: Refused with their reason (at 0, every set a viewer may weigh would weigh 0).
REFUSED = ["test:nan", "test:-1", "test:inf", "test:0"]
HOSTILE = [*REFUSED, "test:1e-320", "test:1e300", "test:1e-5"]


def _ask(url: str, weights: str, metric_weights: str = "") -> tuple[str, int, dict[str, object]]:
    params = {"dataset_weights": weights, **({"weights": metric_weights} if metric_weights else {})}
    response = httpx.get(f"{url}/tasks/{TASK}/leaderboard", params=params, timeout=60)
    body = response.json()
    return weights, response.status_code, body if isinstance(body, dict) else {}


def test_a_storm_of_new_weightings_is_answered_and_the_last_gets_its_intervals(
    large_board_server: str,
) -> None:
    asked = [(f"test:{0.05 + i / 100:g}", f"perf:1,throughput:{1 + i}") for i in range(33)]
    asked += [(weights, "") for weights in HOSTILE]
    with ThreadPoolExecutor(max_workers=40) as pool:
        answers = list(pool.map(lambda w: _ask(large_board_server, *w), asked))
    for weights, status, body in answers:
        if weights in REFUSED:
            assert status == 422, (weights, status, body)
            continue
        assert status == 200, (weights, status, body)
        assert body["rows"], weights
        if body["intervals_pending"]:
            assert all(r["rank_interval"] is None for r in body["rows"] if r["rank"])
    assert httpx.get(f"{large_board_server}/health", timeout=10).status_code == 200
    # The last asked waits least (the background takes the latest first): it comes.
    deadline = time.monotonic() + 60
    while True:
        _, status, body = _ask(large_board_server, *asked[-1])
        assert status == 200
        if not body["intervals_pending"]:
            break
        assert time.monotonic() < deadline, "the intervals never came"
        time.sleep(0.5)
    assert all(r["rank_interval"] is not None for r in body["rows"] if r["rank"])
