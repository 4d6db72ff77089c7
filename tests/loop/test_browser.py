"""The annotator page in a real browser against a real server: write an example, see the
target's prediction and probabilities at once, say why it fooled the model."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.states import ExampleStatus
from evalboard.core.tables import Example
from leaderboard import create_app
from leaderboard.loop import open_round
from leaderboard.loop.rounds import current_round
from tests.helpers.browser import ARTIFACTS, sign_in, watched_page
from tests.loop.platform import Platform, build_platform

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(ctx: Context, tmp_path: Path) -> Iterator[tuple[str, Platform]]:
    """The app served by uvicorn on localhost, in a thread (its lifespan closes the targets)."""
    uvicorn = pytest.importorskip("uvicorn")
    platform = build_platform(ctx, tmp_path)
    open_round(ctx, "sentiment", submission_ids=[platform.submissions["vader"]])
    port = _free_port()
    config = uvicorn.Config(
        create_app(ctx), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", platform
    running.should_exit = True
    thread.join(timeout=20)


def test_an_annotator_collects_one_example_in_the_browser(
    server: tuple[str, Platform], ctx: Context, browser: Any
) -> None:
    base, _ = server
    page = browser.new_page()
    page.goto(f"{base}/ui/tasks/sentiment/collect")
    # Not signed in: the page sends the annotator to sign in, then back.
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/ui/tasks/sentiment/collect")
    assert "Round 1" in page.inner_text("main")

    # No label is chosen for the annotator, and the browser will not send the form without one.
    assert page.input_value("#label") == ""
    page.fill("#in_statement", "Oh great, the flight is delayed again.")
    page.click("#submit-example")
    assert page.evaluate("document.getElementById('label').validity.valueMissing")
    assert page.inner_text("main").count("You fooled the model!") == 0
    page.select_option("#label", "negative")
    page.click("#submit-example")

    assert page.inner_text("#verdict") == "You fooled the model!"
    # The card repeats what was written, beside the model's answer.
    assert "Oh great, the flight is delayed again." in page.inner_text("#written")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "collect-result.png"), full_page=True)
    assert page.inner_text("#prediction") == "positive"
    probs = page.locator("#probs tbody tr")
    assert probs.count() == 3
    shown = {row.split()[0] for row in probs.all_inner_texts()}
    assert shown == {"negative", "neutral", "positive"}

    page.fill("#explain-text", "Sarcasm: 'great' means the opposite here.")
    page.click("text=Save the explanation")
    page.wait_for_selector(".flash")
    assert "Explanation of example" in page.inner_text(".flash")

    with ctx.db.session() as session:
        (example,) = session.scalars(select(Example)).all()
    assert example.inputs == {"statement": "Oh great, the flight is delayed again."}
    assert example.gold == {"label": "negative"}
    assert example.fooled and example.status == ExampleStatus.PENDING
    assert example.explanation == "Sarcasm: 'great' means the opposite here."

    # A validator sees the example with three verdict buttons of one visual weight.
    validator = browser.new_context().new_page()
    validator.goto(f"{base}/ui/tasks/sentiment/validate")
    validator.fill("input[name=name]", "val1")
    validator.fill("input[name=password]", "correct-horse-battery")
    validator.click("button[type=submit]")
    validator.wait_for_url(f"{base}/ui/tasks/sentiment/validate")
    looks = validator.eval_on_selector_all(
        "button[name=verdict]",
        "buttons => buttons.map(b => { const s = getComputedStyle(b); "
        "return [s.backgroundColor, s.color, s.borderColor, s.fontWeight].join(); })",
    )
    assert len(looks) == 3 and len(set(looks)) == 1, looks
    validator.context.close()


def test_the_owner_confirms_closing_and_fixes_a_form_in_place(
    server: tuple[str, Platform], ctx: Context, browser: Any
) -> None:
    base, _ = server
    with watched_page(browser) as watched:
        page = watched.page
        sign_in(page, base, "owner", "correct-horse-battery", "/ui/tasks/sentiment/manage")
        # The dataset-name pattern compiles in Chromium (no console error), and an invalid
        # form comes back with the error beside it and what was typed.
        page.set_input_files(
            "#dataset-form input[type=file]",
            files=[{"name": "r9.jsonl", "mimeType": "application/json", "buffer": b"not json\n"}],
        )
        page.fill("#dataset-form input[name=name]", "r9-test")
        page.fill("#dataset-form input[name=weight]", "2")
        page.fill("#dataset-form input[name=mapping]", "statement=text")
        page.click("#dataset-form button[type=submit]")
        page.wait_for_selector("#dataset-error")
        assert page.input_value("#dataset-form input[name=name]") == "r9-test"
        assert page.input_value("#dataset-form input[name=weight]") == "2"
        assert page.input_value("#dataset-form input[name=mapping]") == "statement=text"
        assert watched.problems == []

        page.goto(f"{base}/ui/tasks/sentiment/rounds")
        assert "0 verified example(s)" in page.inner_text("#closing-preview")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "rounds-close-preview.png"), full_page=True)
        asked: list[str] = []

        def dismiss(dialog: Any) -> None:
            asked.append(dialog.message)
            dialog.dismiss()

        page.once("dialog", dismiss)
        page.click("#close-form button[type=submit]")
        assert asked and asked[0].startswith("Close round 1 into dataset round-1")
        assert current_round(ctx, "sentiment") is not None, "dismissed, yet closed"
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#close-form button[type=submit]")
        page.wait_for_selector(".flash")
        assert current_round(ctx, "sentiment") is None
        assert watched.problems == []
