"""Model cards: what a model is (its card), who may see it and its submitter's name, and
the card's Markdown rendered safely.

The card's fields and their checks are :class:`submission_sandbox.ModelCard`, the same
that the manifest uses; an edit after upload is stored whole on the submission and wins
over the manifest. Two rules live here and everything that shows a submission asks them:

- :func:`may_see` - a published model is everyone's; an unpublished one only its
  submitter's, the task owner's and an admin's (they see it on the board, marked).
- :func:`shown_user` - an anonymous model's submitter is named only to those same people.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import update

from evalboard.core.cache import MemoryCache, sampled_size
from evalboard.core.context import Context
from evalboard.core.errors import PermissionDenied, UsageError
from evalboard.core.tables import Submission
from evalboard.core.validation import describe_validation_error
from leaderboard.accounts import ANONYMOUS, Principal
from leaderboard.aggregates import source_digest
from leaderboard.table import ModelEntry, TaskTable, load_table, stored_card
from submission_sandbox import ModelCard, Runtime

__all__ = [
    "CardFilter",
    "CardUpdate",
    "may_see",
    "public_table",
    "render_markdown",
    "shown_user",
    "update_card",
    "visible_table",
]


class CardUpdate(BaseModel):
    """A change to a model card: only the fields given change (``null`` clears one)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    params: int | None = None
    license: str | None = None
    source_url: str | None = None
    paper_url: str | None = None
    languages: list[str] | None = None
    card: str | None = None
    anonymous: bool | None = None
    published: bool | None = Field(
        None, description="False takes the model off the public board; true puts it back."
    )


def may_see(
    principal: Principal, *, task_id: str, submitter_id: int | None, published: bool
) -> bool:
    """Whether ``principal`` sees a submission on boards and lists."""
    return published or principal.may_see_logs(task_id=task_id, submitter_id=submitter_id)


def shown_user(
    principal: Principal,
    *,
    task_id: str,
    submitter_id: int | None,
    name: str | None,
    anonymous: bool,
) -> str | None:
    """The submitter's name as ``principal`` may read it (None: hidden or no user)."""
    if anonymous and not principal.may_see_logs(task_id=task_id, submitter_id=submitter_id):
        return None
    return name


def visible_table(
    table: TaskTable, principal: Principal, *, cache: MemoryCache | None = None
) -> TaskTable:
    """``table`` as ``principal`` may see it: unpublished models only for those allowed,
    anonymous submitters' names blanked for the others. Rank among what is left, so the
    public board never depends on a model it does not show.

    With a ``cache``, a versioned table's visible rows are kept under the visible version,
    so a warm request walks no row. The list is shared between requests: never changed.
    """
    # Who may see what follows from the principal's grants: the same grants, the same rows.
    seen_by = [
        principal.user_id,
        principal.is_admin,
        sorted(map(repr, principal.roles)),
        sorted(principal.owned_tasks),
    ]
    version = source_digest(table.version, seen_by) if table.version else ""
    if cache is None or not version:
        return replace(table, models=_visible_models(table, principal)[0], version=version)
    cache_key = ("visible-rows", version)

    def made() -> tuple[list[ModelEntry], int]:
        models, renamed = _visible_models(table, principal)
        # The entries are the board's (counted there) but for those made anew here.
        return models, sys.getsizeof(models) + sampled_size(renamed)

    # Requests that miss at once walk the rows once.
    models = cache.made_once(cache_key, made, within=table.board_key)
    # What is derived from these rows (a ranking) holds the rows made anew here: kept
    # within them, which are kept within the board's.
    return replace(table, models=models, version=version, board_key=cache_key)


def _visible_models(
    table: TaskTable, principal: Principal
) -> tuple[list[ModelEntry], list[ModelEntry]]:
    """The table's models ``principal`` sees, and those of them made anew (a name blanked)."""
    task_id = table.task.id
    models: list[ModelEntry] = []
    renamed: list[ModelEntry] = []
    for entry in table.models:
        if entry.published and not entry.card.anonymous:  # what may_see and shown_user allow
            models.append(entry)
            continue
        if not may_see(
            principal, task_id=task_id, submitter_id=entry.user_id, published=entry.published
        ):
            continue
        user = shown_user(
            principal,
            task_id=task_id,
            submitter_id=entry.user_id,
            name=entry.user,
            anonymous=entry.card.anonymous,
        )
        if user != entry.user:
            entry = replace(entry, user=user, user_id=None)
            renamed.append(entry)
        models.append(entry)
    return models, renamed


def public_table(ctx: Context, task_id: str) -> TaskTable:
    """The task's table as an anonymous visitor sees it: what the CLI prints, snapshots
    freeze and ``promote --top`` picks targets from."""
    return visible_table(load_table(ctx, task_id), ANONYMOUS, cache=ctx.cache)


def update_card(
    ctx: Context, principal: Principal, submission: Submission, change: CardUpdate
) -> Submission:
    """Apply ``change`` to the card of ``submission``: its submitter (or an admin) only.

    Raises:
        PermissionDenied: the caller did not submit the model.
        UsageError: a field fails the card's checks (the field, the value, the rule).
    """
    principal.require_signed_in()
    if not (principal.is_admin or submission.user_id == principal.user_id):
        raise PermissionDenied(
            f"Submission {submission.id} is not yours; only its submitter edits its card and "
            "publishes or unpublishes it"
        )
    fields = change.model_dump(exclude_unset=True)
    published = fields.pop("published", None)
    merged: dict[str, Any] = {**stored_card(submission).model_dump(mode="json"), **fields}
    if merged.get("languages") is None:
        merged["languages"] = []
    if merged.get("card") is None:
        merged["card"] = ""
    if merged.get("anonymous") is None:
        merged["anonymous"] = False
    try:
        card = ModelCard.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            line.strip(" -") for line in describe_validation_error(exc).splitlines() if line.strip()
        )
        raise UsageError(f"Not a valid model card: {problems}") from None
    values: dict[str, Any] = {"card": card.model_dump(mode="json")}
    if published is not None:
        values["published"] = bool(published)
    with ctx.db.session() as session:
        session.execute(update(Submission).where(Submission.id == submission.id).values(**values))
    submission.card = values["card"]
    if published is not None:
        submission.published = bool(published)
    return submission


def _web_links_only(url: str) -> bool:
    # markdown-it's own check lets relative and mailto: links through; a card may link to
    # the web only (no javascript:, data:, vbscript:, file:, nor tricks with case or
    # whitespace, which markdown-it has normalised away before this is asked).
    return url.lower().startswith(("http://", "https://"))


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")  # an image would make every viewer fetch from the card's host
    md.validateLink = _web_links_only  # type: ignore[method-assign]
    return md


_MARKDOWN = _markdown()


def render_markdown(text: str) -> Markup:
    """A card's Markdown as HTML that is safe to put in a page.

    Raw HTML is escaped (``html`` off), links go to http(s) only (others stay text), and
    every link opens without a referrer or access to this page.
    """
    html = _MARKDOWN.render(text)
    html = html.replace("<a href=", '<a rel="nofollow noopener noreferrer" href=')
    return Markup(html)  # noqa: S704 - markdown-it escaped the text and checked the links


@dataclass(frozen=True)
class CardFilter:
    """Which models a board shows by their card and two flags: the one rule for the API
    and the pages. A size bound leaves out models whose card gives no size;
    ``baselines=False`` leaves out the task's baselines, ``busy=False`` the models whose
    throughput was measured on a busy worker (``evaluator.CONTENDED_SHARE``).

    Raises:
        UsageError: an unknown runtime (the known ones are listed).
    """

    runtime: str | None = None
    license: str | None = None
    min_params: int | None = None
    max_params: int | None = None
    baselines: bool = True
    busy: bool = True

    def __post_init__(self) -> None:
        if self.runtime is not None and self.runtime not in {r.value for r in Runtime}:
            known = ", ".join(r.value for r in Runtime)
            raise UsageError(f"Unknown runtime {self.runtime!r}; known: {known}")

    @property
    def active(self) -> bool:
        """Whether any model may be left out."""
        return (
            any(
                v is not None
                for v in (self.runtime, self.license, self.min_params, self.max_params)
            )
            or not self.baselines
            or not self.busy
        )

    def matches(self, *, runtime: str | None, license: str | None, params: int | None) -> bool:
        """Whether a model of this runtime, license and size is shown."""
        if self.runtime is not None and runtime != self.runtime:
            return False
        if self.license is not None and (license or "").lower() != self.license.lower():
            return False
        if (self.min_params is not None or self.max_params is not None) and params is None:
            return False
        if self.min_params is not None and params is not None and params < self.min_params:
            return False
        return not (self.max_params is not None and params is not None and params > self.max_params)

    @property
    def keep(self) -> Callable[[ModelEntry], bool] | None:
        """``build_leaderboard``'s ``keep``: :meth:`keeps`, or None when nothing is left out."""
        return self.keeps if self.active else None

    def keeps(self, entry: ModelEntry) -> bool:
        """Whether the model of ``entry`` is shown (``build_leaderboard``'s ``keep``)."""
        if not self.baselines and entry.is_baseline:
            return False
        if not self.busy and entry.contended:
            return False
        return self.matches(
            runtime=entry.runtime, license=entry.card.license, params=entry.card.params
        )
