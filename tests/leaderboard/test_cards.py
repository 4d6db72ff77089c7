"""Model cards: only the submitter edits them; anonymous hides the name from the public;
unpublished models leave the public board; the card's Markdown is rendered inert."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from leaderboard.cards import render_markdown
from submission_sandbox import ModelCard
from submission_sandbox.manifest import parse_manifest
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded

pytestmark = pytest.mark.anyio


def _as(app: FastAPI, seeded: Seeded, who: str | None) -> httpx.AsyncClient:
    return make_client(app, seeded.tokens[who] if who else None)


async def _patch(
    app: FastAPI, seeded: Seeded, who: str | None, sid: int, body: object
) -> httpx.Response:
    async with _as(app, seeded, who) as client:
        return await client.patch(f"/submissions/{sid}/card", json=body)


async def _board_users(app: FastAPI, seeded: Seeded, who: str | None) -> dict[str, str | None]:
    async with _as(app, seeded, who) as client:
        board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
    return {r["name"]: r["user"] for r in board["rows"] if r["kind"] != "majority"}


def test_the_manifest_carries_the_card_and_checks_it() -> None:
    base = {"name": "m", "task": "t", "runtime": "python", "entry": "handler:Model"}
    manifest = parse_manifest(
        {
            **base,
            "params": 110_000_000,
            "license": "apache-2.0",
            "languages": ["en", "pt-BR"],
            "source_url": "https://example.org/m",
            "card": "# M",
            "anonymous": True,
        }
    )
    assert ModelCard.of(manifest.model_dump()).params == 110_000_000
    with pytest.raises(Exception, match="source_url must be an http"):
        parse_manifest({**base, "source_url": "javascript:alert(1)"})


async def test_only_the_submitter_edits_the_card(app: FastAPI, seeded: Seeded) -> None:
    sid = seeded.submissions["bow-logreg"]  # alice's
    body = {"license": "mit", "params": 12000, "card": "Trained on **SST-2**."}
    for who, status in [(None, 401), ("bob", 403), ("owner", 403)]:
        assert (await _patch(app, seeded, who, sid, body)).status_code == status, who
    response = await _patch(app, seeded, "alice", sid, body)
    assert response.status_code == 200, response.text
    assert (response.json()["license"], response.json()["params"]) == ("mit", 12000)
    async with _as(app, seeded, None) as client:
        card = (await client.get(f"/submissions/{sid}/card")).json()
        board = (await client.get(f"/tasks/{TASK}/leaderboard", params={"license": "MIT"})).json()
    assert card["card"] == "Trained on **SST-2**." and card["user"] == "alice"
    assert [r["name"] for r in board["rows"] if r["kind"] != "majority"] == ["bow-logreg"]


async def test_a_bad_card_field_is_refused_with_the_field(app: FastAPI, seeded: Seeded) -> None:
    sid = seeded.submissions["bow-logreg"]
    response = await _patch(app, seeded, "alice", sid, {"paper_url": "javascript:alert(1)"})
    assert response.status_code == 400
    assert "paper_url" in response.json()["detail"]
    assert (await _patch(app, seeded, "alice", sid, {"stars": 5})).status_code == 422


async def test_anonymous_hides_the_name_but_not_from_submitter_owner_or_admin(
    app: FastAPI, seeded: Seeded
) -> None:
    sid = seeded.submissions["minilm-head"]  # bob's
    assert (await _patch(app, seeded, "bob", sid, {"anonymous": True})).status_code == 200
    for who in (None, "alice"):
        assert (await _board_users(app, seeded, who))["minilm-head"] is None, who
        async with _as(app, seeded, who) as client:
            assert (await client.get(f"/submissions/{sid}")).json()["user"] is None
            listed = (await client.get(f"/tasks/{TASK}/submissions")).json()
            csv_text = (await client.get(f"/tasks/{TASK}/leaderboard.csv")).text
        assert {s["name"]: s["user"] for s in listed}["minilm-head"] is None
        assert ",bob," not in csv_text
        # The others keep their names.
        assert (await _board_users(app, seeded, who))["roberta-large"] == "alice"
    for who in ("bob", "owner", "admin"):
        assert (await _board_users(app, seeded, who))["minilm-head"] == "bob", who


async def test_unpublished_leaves_the_public_board_only(app: FastAPI, seeded: Seeded) -> None:
    sid = seeded.submissions["roberta-large"]  # alice's
    assert (await _patch(app, seeded, "bob", sid, {"published": False})).status_code == 403
    assert (await _patch(app, seeded, "alice", sid, {"published": False})).status_code == 200
    for who in (None, "bob"):
        assert "roberta-large" not in await _board_users(app, seeded, who), who
        async with _as(app, seeded, who) as client:
            assert (await client.get(f"/submissions/{sid}")).status_code == 404
            assert (await client.get(f"/submissions/{sid}/card")).status_code == 404
            listed = (await client.get(f"/tasks/{TASK}/submissions")).json()
            page = await client.get(f"/ui/tasks/{TASK}/models/{sid}")
        assert "roberta-large" not in {s["name"] for s in listed}
        assert page.status_code == 404
    for who in ("alice", "owner", "admin"):
        async with _as(app, seeded, who) as client:
            board = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
        row = next(r for r in board["rows"] if r["name"] == "roberta-large")
        assert row["published"] is False
    assert (await _patch(app, seeded, "alice", sid, {"published": True})).status_code == 200
    assert "roberta-large" in await _board_users(app, seeded, None)


async def test_the_board_filters_by_runtime_and_size(app: FastAPI, seeded: Seeded) -> None:
    sid = seeded.submissions["minilm-head"]
    await _patch(app, seeded, "bob", sid, {"params": 22_000_000})
    async with _as(app, seeded, None) as client:
        whole = (await client.get(f"/tasks/{TASK}/leaderboard")).json()
        small = (
            await client.get(f"/tasks/{TASK}/leaderboard", params={"max_params": 50_000_000})
        ).json()
        python = (
            await client.get(f"/tasks/{TASK}/leaderboard", params={"runtime": "python"})
        ).json()
        onnx = (await client.get(f"/tasks/{TASK}/leaderboard", params={"runtime": "onnx"})).json()
        typo = await client.get(f"/tasks/{TASK}/leaderboard", params={"runtime": "onxx"})
    models = [r for r in small["rows"] if r["kind"] != "majority"]
    assert [r["name"] for r in models] == ["minilm-head"]
    # A filter shows part of one ranking: the row keeps its rank on the whole board.
    assert models[0]["rank"] == next(r["rank"] for r in whole["rows"] if r["name"] == "minilm-head")
    assert len(python["rows"]) == len(whole["rows"])
    assert [r["kind"] for r in onnx["rows"]] == ["majority"]
    assert typo.status_code == 400 and "known: python, onnx" in typo.json()["detail"]


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "[click](JAVASCRIPT:alert(1))",
        "[click](jav&#x09;ascript:alert(1))",
        "<img src=x onerror=alert(1)>",
        "![x](javascript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        '<a href="javascript:alert(1)">x</a>',
    ],
)
def test_card_markdown_is_rendered_inert(attack: str) -> None:
    html = str(render_markdown(attack))
    assert "<script" not in html and "<img" not in html
    assert 'href="javascript' not in html.lower() and 'href="data' not in html.lower()
    assert "onerror=" not in html or "&lt;img" in html


def test_card_markdown_keeps_web_links_and_formatting() -> None:
    html = str(render_markdown("**bold** and [paper](https://arxiv.org/abs/2106.06052)"))
    assert "<strong>bold</strong>" in html
    assert 'rel="nofollow noopener noreferrer" href="https://arxiv.org/abs/2106.06052"' in html


async def test_the_model_page_shows_the_card_inert(app: FastAPI, seeded: Seeded) -> None:
    sid = seeded.submissions["bow-logreg"]
    body = {"card": "## Data\n<script>alert(1)</script> [x](javascript:alert(1))"}
    assert (await _patch(app, seeded, "alice", sid, body)).status_code == 200
    async with _as(app, seeded, None) as client:
        page = await client.get(f"/ui/tasks/{TASK}/models/{sid}")
    assert page.status_code == 200
    assert "<h2>Data</h2>" in page.text
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert 'href="javascript' not in page.text


async def test_a_filtered_board_counts_and_pages_only_its_matches(
    app: FastAPI, seeded: Seeded
) -> None:
    for name in ("roberta-large", "bow-logreg"):
        patched = await _patch(app, seeded, "alice", seeded.submissions[name], {"license": "mit"})
        assert patched.status_code == 200
    url = f"/tasks/{TASK}/leaderboard"
    async with _as(app, seeded, None) as client:
        whole = (await client.get(url)).json()
        first = (await client.get(url, params={"license": "mit", "limit": 1})).json()
        second = (await client.get(url, params={"license": "mit", "limit": 1, "offset": 1})).json()
    ranks = {r["name"]: r["rank"] for r in whole["rows"] if r["rank"] is not None}
    assert whole["total"] == len(ranks) > 2
    # The filter picks before paging: total counts the matches, ranks stay the whole board's.
    assert first["total"] == second["total"] == 2
    paged = [(r["name"], r["rank"]) for r in first["rows"] + second["rows"] if r["rank"]]
    assert paged == [(n, ranks[n]) for n in ("roberta-large", "bow-logreg")]


async def test_an_unpublished_model_is_neither_sent_nor_counted_for_others(
    app: FastAPI, seeded: Seeded
) -> None:
    bow = seeded.submissions["bow-logreg"]
    assert (await _patch(app, seeded, "alice", bow, {"published": False})).status_code == 200
    url = f"/tasks/{TASK}/leaderboard"
    async with _as(app, seeded, None) as client:
        public = (await client.get(url, params={"q": "bow"})).json()
    async with _as(app, seeded, "alice") as client:
        own = (await client.get(url, params={"q": "bow"})).json()
    assert public["total"] == 0 and public["rows"] == []
    assert own["total"] == 1 and own["rows"][0]["published"] is False
