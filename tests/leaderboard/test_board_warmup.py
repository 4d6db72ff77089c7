"""A started server's first visitors: boards read as it starts, and read once however many
requests ask for them at once (``leaderboard.warmup``, ``MemoryCache.one_at_a_time``).

Eight requests for a 10,000-model board that a restarted server had not read yet each
read and ranked it, all at once: 6.4 s each on two cores, where one alone took 1.1 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from evalboard.core import cache as cache_module
from evalboard.core.cache import MemoryCache
from evalboard.core.context import Context
from evalboard.core.settings import Settings
from leaderboard import aggregates, create_app, ranking
from leaderboard import table as table_module
from leaderboard.accounts import ANONYMOUS
from leaderboard.cards import visible_table
from leaderboard.ranking import build_leaderboard
from leaderboard.table import load_table
from leaderboard.warmup import warm_boards
from tests.leaderboard.conftest import serve
from tests.leaderboard.seeding import TASK, Seeded
from tests.leaderboard.test_board_cache import _from_scratch
from tests.leaderboard.test_board_version import _scans, _statements

THREADS = 6


def _restarted(ctx: Context) -> Context:
    """A context on the same storage with nothing in memory: a server started again."""
    return Context.from_settings(Settings(**ctx.settings.model_dump()))


def _at_once(work: Callable[[int], Any], threads: int = THREADS) -> list[Any]:
    """``work(i)`` in threads ``i`` let go together; what each returned."""
    start = threading.Barrier(threads)
    found: list[Any] = [None] * threads
    failed: list[BaseException] = []

    def run(i: int) -> None:
        start.wait()
        try:
            found[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - raised below, in the test's thread
            failed.append(exc)

    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers), "threads still waiting"
    if failed:
        raise failed[0]
    return found


class _WaitedLock:
    """A flight's lock that counts the threads waiting to take it."""

    def __init__(self) -> None:
        self.waiting = 0
        self._lock = threading.Lock()
        self._count = threading.Lock()

    def __enter__(self) -> None:
        with self._count:
            self.waiting += 1
        self._lock.acquire()
        with self._count:
            self.waiting -= 1

    def __exit__(self, *_exc: object) -> None:
        self._lock.release()


@pytest.fixture
def waited_flights(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cache's flights (:meth:`MemoryCache.one_at_a_time`) count who waits on them."""
    flight = cache_module._Flight
    monkeypatch.setattr(cache_module, "_Flight", lambda: flight(lock=_WaitedLock()))


class _Gate:
    """Holds the first thread to arrive (to call a spied function) until every one of
    ``threads`` threads is known to ask meanwhile: waiting behind it on a flight of
    ``cache`` (of ``key`` where given; :func:`waited_flights` counts them), or arrived too
    (nothing made them wait). Then the gate stays open. No sleep long enough for the
    others: the outcome does not depend on how the threads are scheduled, and where they
    never all ask the test fails, not passes."""

    def __init__(self, cache: MemoryCache, threads: int = THREADS, key: Any = None) -> None:
        self.calls = 0
        self._cache, self._threads, self._key = cache, threads, key
        self._lock = threading.Lock()
        self._open = threading.Event()

    def spy(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, its callers arriving at this gate first."""

        def spied(*args: Any, **kwargs: Any) -> Any:
            self.arrive()
            return function(*args, **kwargs)

        return spied

    def arrive(self) -> None:
        """Count this thread in, and wait until the gate opens."""
        with self._lock:
            self.calls += 1
        deadline = time.monotonic() + 30
        while not self._open.wait(0.001):  # polled: a flight signals no one
            with self._lock:
                arrived = self.calls
            with self._cache._lock:
                flights = [f for k, f in self._cache._flights.items() if self._key in (None, k)]
            waiting = max((f.lock.waiting for f in flights), default=0)
            if arrived >= self._threads or arrived + waiting >= self._threads:
                self._open.set()
            elif time.monotonic() > deadline:
                raise AssertionError(
                    f"{self._threads} threads never all asked: {arrived} arrived, {waiting} waiting"
                )


@pytest.mark.usefixtures("waited_flights")
def test_one_at_a_time_runs_one_thread_per_key_and_keeps_no_lock_after() -> None:
    cache = MemoryCache()
    gates = {key: _Gate(cache, threads=4, key=key) for key in "ab"}
    inside: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}
    guard = threading.Lock()

    def work(key: str) -> Callable[[], None]:
        def run() -> None:
            with cache.one_at_a_time(key):
                with guard:
                    inside[key] += 1
                    most[key] = max(most[key], inside[key])
                gates[key].arrive()  # until the key's other three threads ask too
                with guard:
                    inside[key] -= 1

        return run

    _at_once(lambda i: work("ab"[i % 2])(), threads=8)
    assert most == {"a": 1, "b": 1}
    assert cache._flights == {}  # nothing left behind for keys no thread waits on


def test_one_at_a_time_lets_other_keys_run_meanwhile() -> None:
    cache = MemoryCache()
    entered = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with cache.one_at_a_time("a"):
            entered.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(10)
    with cache.one_at_a_time("b"):  # not behind "a"
        assert holder.is_alive() and not release.is_set()
    release.set()
    holder.join(10)
    assert cache._flights == {}


@pytest.mark.usefixtures("waited_flights")
def test_requests_that_miss_a_board_at_once_read_it_once(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    restarted = _restarted(seeded.ctx)
    # Held once its rows are read, before it keeps them: the board is read where every
    # other request asks meanwhile, and nothing it read is kept yet.
    gate = _Gate(restarted.cache)
    monkeypatch.setattr(aggregates, "_sources", gate.spy(aggregates._sources))
    try:
        with _statements(restarted) as seen:
            tables = _at_once(lambda _: load_table(restarted, TASK))
        assert len(_scans(seen)) == 1  # one whole-board query, not one per request
        assert len({table.version for table in tables}) == 1
        assert all(table.models is tables[0].models for table in tables)  # the same rows
    finally:
        restarted.db.dispose()


@pytest.mark.usefixtures("waited_flights")
def test_requests_that_miss_a_ranking_at_once_rank_it_once(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = seeded.ctx
    table = visible_table(load_table(ctx, TASK), ANONYMOUS, cache=ctx.cache)
    gate = _Gate(ctx.cache)
    monkeypatch.setattr(ranking, "_rank", gate.spy(ranking._rank))
    weights = {"perf": 3.0, "throughput": 1.0}
    boards = _at_once(lambda _: build_leaderboard(ctx, table, weights).model_dump(mode="json"))
    assert gate.calls == 1
    assert all(board == boards[0] for board in boards)
    assert boards[0] == _from_scratch(ctx, weights=weights)


@pytest.mark.usefixtures("waited_flights")
def test_requests_that_ask_a_new_versions_timed_runs_at_once_make_them_once(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page of a new version asks for each row's slowest and fastest timed run,
    made from every row's runs (``leaderboard.table.timed_runs``): at 100,000 rows eight
    requests at once each made them, 2.5 s each, where one took 0.3 s."""
    ctx = seeded.ctx
    table = visible_table(load_table(ctx, TASK), ANONYMOUS, cache=ctx.cache)
    gate = _Gate(ctx.cache)
    ranked = ranking._kept_ranking(
        ctx, table, None, dataset_weights=None, intervals=False, wait_for_intervals=True
    )
    ctx.cache.discard(("timed", ranked.table.version))  # as a new version finds it
    monkeypatch.setattr(table_module._Timed, "of", gate.spy(table_module._Timed.of))
    runs = _at_once(lambda _: table_module.timed_runs(ranked.table, ranked.figures, ctx.cache))
    assert gate.calls == 1
    assert all(found.tolist() == runs[0].tolist() for found in runs)


def test_a_started_server_has_read_its_boards_before_its_first_visitor(seeded: Seeded) -> None:
    restarted = _restarted(seeded.ctx)
    try:
        with TestClient(create_app(restarted)) as client:  # the lifespan runs: the warm-up
            client.app.state.warmup.join(timeout=60)  # type: ignore[attr-defined]
            assert client.app.state.warmup.state == "warm"  # type: ignore[attr-defined]
            assert client.get("/ready").json()["boards"] == "warm"
            with _statements(restarted) as seen:
                board = client.get(f"/tasks/{TASK}/leaderboard?limit=1000")
            assert board.status_code == 200
            assert _scans(seen) == []  # read as the server started
            assert board.json()["rows"] == _from_scratch(seeded.ctx)["rows"]
    finally:
        restarted.db.dispose()


def test_a_started_server_has_made_its_routes_and_templates_before_its_first_visitor(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastAPI builds an included route's handling when a request first meets it, Jinja
    compiles a template on its first page: the warm-up makes both (the first board request
    after a start took 106 ms, not 13; the first task page 266 ms, not 31)."""
    import fastapi.routing
    import jinja2

    built: list[str] = []
    get_dependant = fastapi.routing.get_dependant
    compile_template = jinja2.Environment.compile

    def counted_dependant(*args: Any, **kwargs: Any) -> Any:
        built.append(f"route {kwargs.get('path')}")
        return get_dependant(*args, **kwargs)

    def counted_compile(self: jinja2.Environment, *args: Any, **kwargs: Any) -> Any:
        built.append(f"template {kwargs.get('name', args[1] if len(args) > 1 else '?')}")
        return compile_template(self, *args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "get_dependant", counted_dependant)
    monkeypatch.setattr(jinja2.Environment, "compile", counted_compile)
    restarted = _restarted(seeded.ctx)
    try:
        app = create_app(restarted)
        built.clear()  # the routes' own dependencies, built as the app is made
        with TestClient(app) as client:
            client.app.state.warmup.join(timeout=60)  # type: ignore[attr-defined]
            # The spies see what the warm-up makes: a test of nothing otherwise.
            assert any(b.startswith("route") for b in built)
            assert any(b.startswith("template") for b in built)
            before = len(built)
            for path in (f"/tasks/{TASK}/leaderboard", f"/ui/tasks/{TASK}", "/ui", "/ui/login"):
                assert client.get(path).status_code == 200, path
            assert built[before:] == []
            assert client.get("/openapi.json").json()["info"]["title"] == "Evalboard"
    finally:
        restarted.db.dispose()


def test_a_warm_up_on_a_database_that_does_not_answer_logs_and_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url="postgresql+psycopg://nobody@127.0.0.1:9/none",
        sandbox="local",
    )
    ctx = Context.from_settings(settings)
    try:
        assert warm_boards(ctx) == (0, -1)
    finally:
        ctx.db.dispose()
    assert "boards not read as the server starts" in caplog.text


def test_evalboard_serve_says_when_its_boards_are_read(seeded: Seeded, tmp_path: Path) -> None:
    seeded.ctx.db.dispose()
    # No worker: its reaper would send the seeded board's stale job back to the queue
    # while the requests read the board.
    with serve(seeded.ctx.settings.data_dir, tmp_path / "serve.log", args=("--no-worker",)) as (
        url,
        _process,
    ):
        deadline = time.monotonic() + 30
        states = []
        while time.monotonic() < deadline:
            ready = httpx.get(f"{url}/ready", timeout=10)
            assert ready.status_code == 200  # reading the boards is no reason to be unready
            states.append(ready.json()["boards"])
            if states[-1] == "warm":
                break
            time.sleep(0.05)
        assert states[-1] == "warm"
        assert set(states) <= {"warming", "warm"}
        board = httpx.get(f"{url}/tasks/{TASK}/leaderboard?limit=1000", timeout=30)
        assert board.json()["rows"] == _from_scratch(seeded.ctx)["rows"]


def test_evalboard_serve_answers_requests_at_once_as_it_starts(
    seeded: Seeded, tmp_path: Path
) -> None:
    """Eight requests the moment a real server answers, while it reads its boards: each
    is answered, with the board a server that read nothing would give."""
    seeded.ctx.db.dispose()
    # No worker: its reaper would send the seeded board's stale job back to the queue
    # while the requests read the board.
    with serve(seeded.ctx.settings.data_dir, tmp_path / "serve.log", args=("--no-worker",)) as (
        url,
        _process,
    ):
        pages = _at_once(
            lambda i: httpx.get(
                f"{url}/tasks/{TASK}/leaderboard" if i % 2 else f"{url}/ui/tasks/{TASK}",
                params={"limit": 1000} if i % 2 else None,
                timeout=60,
            ),
            threads=8,
        )
    assert [page.status_code for page in pages] == [200] * 8
    boards = [page.json() for page in pages[1::2]]
    assert all(board == boards[0] for board in boards)
    assert boards[0]["rows"] == _from_scratch(seeded.ctx)["rows"]
