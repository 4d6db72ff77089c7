"""``evalboard demo`` end to end in a fresh data directory, then its page in a browser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalboard.core.context import Context
from evalboard.core.settings import Settings
from evalboard.demo import DEMO_MODELS, DEMO_TASK_ID
from evalboard.demo.generative import GEN_MODELS, GEN_TASK_ID

EVALBOARD = [sys.executable, "-c", "from evalboard.cli import entry; entry()"]
MODEL_NAMES = {model.name for model in DEMO_MODELS}


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALBOARD_")}
    env.update(EVALBOARD_DATA_DIR=str(data_dir), COLUMNS="200")
    return env


def _demo(data_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVALBOARD, "demo", "--sandbox", "local", *args],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    """One cold run of the demo, shared by the tests of this module."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    started = time.monotonic()
    done = _demo(data_dir, "--no-serve")
    return data_dir, done, time.monotonic() - started


@pytest.fixture
def demo_ctx(demo_run: tuple[Path, subprocess.CompletedProcess[str], float]) -> Iterator[Context]:
    data_dir, done, _ = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    context = Context.from_settings(Settings(data_dir=data_dir))
    yield context
    context.db.dispose()


@pytest.mark.slow
def test_demo_ranks_three_models_with_every_metric(
    demo_run: tuple[Path, subprocess.CompletedProcess[str], float], demo_ctx: Context
) -> None:
    from leaderboard import build_leaderboard, load_table

    _, done, seconds = demo_run
    assert seconds < 300, f"the demo took {seconds:.0f} s; it must stay under five minutes"
    assert "does not isolate" in done.stderr or "no isolation" in done.stderr
    board = build_leaderboard(demo_ctx, load_table(demo_ctx, DEMO_TASK_ID), intervals=False)
    models = [row for row in board.rows if row.kind == "model"]
    assert {row.name for row in models} == MODEL_NAMES
    assert sorted(row.rank for row in models if row.rank is not None) == [1, 2, 3]
    for row in models:
        for metric in board.metrics:
            if metric.weighable:
                assert row.metrics.get(metric.name) is not None, (row.name, metric.name)
    assert not board.pending
    for name in MODEL_NAMES:
        assert name in done.stdout


@pytest.mark.slow
def test_demo_ranks_the_template_text_model_on_its_generative_task(
    demo_run: tuple[Path, subprocess.CompletedProcess[str], float], demo_ctx: Context
) -> None:
    from leaderboard import build_leaderboard, load_table

    _, done, _ = demo_run
    # The local sandbox runs models with this Python, which has no torch: GPT-2 is left
    # out and says so; the template model is evaluated and ranked with every metric.
    assert "tiny-gpt2 is left out" in done.stderr
    board = build_leaderboard(demo_ctx, load_table(demo_ctx, GEN_TASK_ID), intervals=False)
    [row] = [row for row in board.rows if row.kind == "model"]
    assert row.name == "overlap-answer" and row.rank == 1
    for metric in board.metrics:
        if metric.weighable:
            assert row.metrics.get(metric.name) is not None, metric.name
    # The CLI prints the generative board after the sentiment one.
    assert done.stdout.count("Dynascore") == 2 and "overlap-answer" in done.stdout


@pytest.mark.slow
def test_demo_round_becomes_a_scored_dataset(demo_ctx: Context) -> None:
    from datasets_registry import list_datasets
    from leaderboard.loop import list_rounds, round_vmer

    (round_,) = list_rounds(demo_ctx, DEMO_TASK_ID)
    assert round_.number == 3 and round_.status == "closed"
    assert len(round_.target_submission_ids) == 1
    vmer = round_vmer(demo_ctx, DEMO_TASK_ID, 3)
    assert vmer.collected == 20 and 0 < vmer.verified <= vmer.fooled
    datasets = {d.name: d for d in list_datasets(demo_ctx, DEMO_TASK_ID)}
    assert datasets["round-3"].rows == vmer.verified
    assert {"round-1", "round-2", "static", "robustness-round-3"} <= set(datasets)


@pytest.mark.slow
def test_second_run_reuses_everything(
    demo_run: tuple[Path, subprocess.CompletedProcess[str], float], demo_ctx: Context
) -> None:
    data_dir, _, _ = demo_run
    started = time.monotonic()
    again = _demo(data_dir, "--no-serve", timeout=120)
    seconds = time.monotonic() - started
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 built, 3 reused" in again.stderr
    assert "0 submitted, 3 already submitted" in again.stderr
    assert "round 3 already closed" in again.stderr
    assert seconds < 60


@pytest.mark.slow
@pytest.mark.browser
def test_the_served_page_shows_the_three_models_with_all_metrics(
    demo_run: tuple[Path, subprocess.CompletedProcess[str], float],
    demo_ctx: Context,
    browser: Any,
) -> None:
    data_dir, _, _ = demo_run
    server = subprocess.Popen(
        [*EVALBOARD, "demo", "--sandbox", "local", "--port", "0"],
        env=_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = _served_url(server)
        page = browser.new_page()
        page.goto(url)
        rows = page.locator('#board tr[data-kind="model"]')
        rows.first.wait_for()
        assert rows.count() == 3
        shown = set()
        for index in range(3):
            row = rows.nth(index)
            shown.add(row.locator("td.name").inner_text().split("\n")[0].strip())
            cells = row.locator("td.metric")
            assert cells.count() >= 5
            for cell in range(cells.count()):
                text = cells.nth(cell).inner_text()
                assert re.search(r"\d", text), (index, cell, text)
        assert shown == MODEL_NAMES
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()


def _served_url(server: subprocess.Popen[str]) -> str:
    """Read the demo's output until it prints the leaderboard's address, then wait for it."""
    assert server.stdout is not None
    deadline = time.monotonic() + 120
    url = None
    while url is None and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line and server.poll() is not None:
            raise AssertionError(f"the demo exited with {server.returncode} before serving")
        found = re.search(r"Leaderboard: (http://\S+)", line)
        url = found.group(1) if found else None
    assert url is not None, "the demo never printed the leaderboard's address"
    base = url.split("/ui/")[0]
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"{base}/health never answered")


def _cache_gpt2(data_dir: Path, bundle: Path) -> None:
    """Lay the session's trained GPT-2 in the demo's model cache, fingerprint and all, so
    the demo reuses it instead of training it a second time in this run."""
    import json

    from evalboard.demo.gpt2 import write_gpt2_bundle
    from evalboard.demo.models import fingerprint

    cache = data_dir / "demo" / "models"
    report = json.loads((bundle / "train.json").read_text())
    write_gpt2_bundle(cache / "tiny-gpt2", bundle / "model", report, task_id=GEN_TASK_ID)
    (cache / "tiny-gpt2.fingerprint").write_text(fingerprint(GEN_MODELS[1], GEN_TASK_ID) + "\n")


@pytest.mark.slow
@pytest.mark.docker
def test_demo_in_the_docker_sandbox(tmp_path: Path, gpt2_bundle: Path) -> None:
    from leaderboard import build_leaderboard, load_table
    from submission_sandbox import docker_client

    try:
        docker_client(timeout=10).images.get(Settings().base_image)
    except Exception as exc:  # no engine, or no runtime image
        pytest.skip(f"the Docker sandbox is not usable here: {exc}")
    data_dir = tmp_path / "data"
    _cache_gpt2(data_dir, gpt2_bundle)
    done = subprocess.run(
        [*EVALBOARD, "demo", "--no-serve", "--sandbox", "docker"],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Evaluating in the docker sandbox" in done.stderr
    context = Context.from_settings(Settings(data_dir=data_dir))
    try:
        board = build_leaderboard(context, load_table(context, DEMO_TASK_ID), intervals=False)
        ranked = {row.name for row in board.rows if row.kind == "model" and row.rank}
        assert ranked == MODEL_NAMES
        for row in board.rows:
            if row.kind == "model":
                assert row.metrics["memory"] is not None and row.metrics["memory"] > 0
        # The generative task: GPT-2 (transformers, torch image) and the template model.
        assert "Generative task: building text models" in done.stderr
        assert "1 built, 1 reused" in done.stderr  # GPT-2 from the cache laid above
        text_board = build_leaderboard(context, load_table(context, GEN_TASK_ID), intervals=False)
        text_rows = [row for row in text_board.rows if row.kind == "model"]
        assert {row.name for row in text_rows if row.rank} == {m.name for m in GEN_MODELS}
        for row in text_rows:
            for metric in text_board.metrics:
                if metric.weighable:
                    assert row.metrics.get(metric.name) is not None, (row.name, metric.name)
    finally:
        context.db.dispose()
