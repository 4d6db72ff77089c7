"""``evalboard model card``: edit a submitted model's card, publish or unpublish it, on the
server (its submitter's token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from evalboard.cli._output import console, print_json
from evalboard.cli._server import SERVER, TOKEN, ask
from evalboard.core.errors import UsageError

__all__ = ["card"]


def _read_card(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read the card file {path}: {exc}") from None


def card(
    submission: int = typer.Argument(..., min=1, help="The submission id."),
    params: int | None = typer.Option(None, "--params", min=1, help="Number of parameters."),
    license: str | None = typer.Option(None, "--license", help="SPDX id, e.g. apache-2.0."),
    source_url: str | None = typer.Option(None, "--source-url", help="Code or weights (http/s)."),
    paper_url: str | None = typer.Option(None, "--paper-url", help="The paper (http/s)."),
    languages: list[str] = typer.Option(  # noqa: B008 - typer's way
        [], "--language", help="A language code, e.g. en (repeat; replaces the list)."
    ),
    card_file: Path | None = typer.Option(
        None, "--card-file", help="A Markdown file: the card's text (replaces it)."
    ),
    anonymous: bool | None = typer.Option(
        None, "--anonymous/--named", help="Hide (or show) your name on the public board."
    ),
    published: bool | None = typer.Option(
        None, "--publish/--unpublish", help="Put the model on the public board, or take it off."
    ),
    server: str = SERVER,
    token: str | None = TOKEN,
    as_json: bool = typer.Option(False, "--json", help="Print the card as JSON."),
) -> None:
    """Show or edit a model's card (only what is given changes; its submitter only)."""
    change: dict[str, Any] = {
        key: value
        for key, value in {
            "params": params,
            "license": license,
            "source_url": source_url,
            "paper_url": paper_url,
            "languages": languages or None,
            "card": _read_card(card_file) if card_file is not None else None,
            "anonymous": anonymous,
            "published": published,
        }.items()
        if value is not None
    }
    method, body = ("PATCH", change) if change else ("GET", None)
    shown = ask(server, f"/submissions/{submission}/card", token=token, method=method, body=body)
    if as_json:
        print_json(shown)
        return
    facts = [
        f"{key}: {shown[key]}"
        for key in ("runtime", "params", "license", "source_url", "paper_url")
        if shown.get(key) not in (None, "")
    ]
    if shown.get("languages"):
        facts.append("languages: " + ", ".join(shown["languages"]))
    state = "published" if shown["published"] else "unpublished"
    who = "anonymous" if shown["anonymous"] else f"by {shown['user'] or 'unknown'}"
    console.print(
        f"Submission {shown['submission_id']} {shown['name']} ({state}, {who})", highlight=False
    )
    for fact in facts:
        console.print(f"  {fact}", highlight=False)
    if shown.get("card"):
        console.print(f"  card: {len(shown['card'])} characters of Markdown", highlight=False)
