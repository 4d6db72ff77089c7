"""The loop's pages: write an example (the annotator's page), validate, and the owner's rounds.

Forms post back to ``/ui/...`` with the session's CSRF token; the target's answer is
rendered in the response to the example's own post, so the annotator sees the prediction,
its probabilities and whether the model was fooled at once. An author edits or retracts
their own pending example until someone judges it. A validator may skip an example: it is
not shown to them again in this browser session (the ids are kept in the signed session
cookie, at most :data:`MAX_SKIPPED` per task) and stays in everyone else's queue.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from datasets_registry import TaskSpec, get_task
from evalboard.core.context import Context
from evalboard.core.errors import InvalidWeights, PermissionDenied, UsageError
from evalboard.core.states import ExampleStatus, RoundStatus, Verdict
from evalboard.core.tables import Example, Submission, User, Validation
from leaderboard.accounts import Principal
from leaderboard.auth import CtxDep, PrincipalDep
from leaderboard.loop.access import may_annotate
from leaderboard.loop.collection import (
    Collected,
    collect_example,
    edit_example,
    explain_example,
    get_example,
    retract_example,
)
from leaderboard.loop.content import content_version
from leaderboard.loop.rounds import (
    close_round,
    closing_preview,
    current_round,
    list_rounds,
    open_round,
)
from leaderboard.loop.targets import warm_quietly
from leaderboard.loop.validation import (
    queue_counts,
    validate_example,
    validation_queue,
    verdicts_of,
)
from leaderboard.loop.vmer import round_vmer
from leaderboard.routes._loop_deps import PoolDep
from leaderboard.routes._page import FORM_AGAIN, flash, form_csrf, redirect, render, signed_in

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)


#: The most skipped examples a session remembers per task (the cookie stays small).
MAX_SKIPPED = 200


def _my_examples(
    ctx: Context, round_id: int, user_id: int | None
) -> tuple[list[Example], set[int]]:
    """The author's latest examples in the round, and which of them have a verdict."""
    with ctx.db.session() as session:
        mine = list(
            session.scalars(
                select(Example)
                .where(Example.round_id == round_id, Example.author_id == user_id)
                .order_by(Example.id.desc())
                .limit(10)
            )
        )
        judged = set(
            session.scalars(
                select(Validation.example_id).where(Validation.example_id.in_([e.id for e in mine]))
            )
        )
    return mine, judged


def _skipped(request: Request, task_id: str) -> list[int]:
    kept = request.session.get("skipped")
    ids = kept.get(task_id) if isinstance(kept, dict) else None
    return [i for i in ids if isinstance(i, int)] if isinstance(ids, list) else []


def _set_skipped(request: Request, task_id: str, ids: list[int]) -> None:
    kept = request.session.get("skipped")
    kept = dict(kept) if isinstance(kept, dict) else {}
    if ids:
        kept[task_id] = ids[-MAX_SKIPPED:]
    else:
        kept.pop(task_id, None)
    request.session["skipped"] = kept


def _collect_page(
    request: Request,
    ctx: CtxDep,
    principal: Principal,
    task_id: str,
    collected: Collected | None = None,
    **extra: Any,
) -> HTMLResponse:
    """The collect page; after a write, ``collected`` shows the target's answer to it."""
    if collected is not None:
        extra.update(result=collected.example, latency_ms=collected.latency_s * 1000)
    spec = get_task(ctx, task_id)
    open_round_ = current_round(ctx, task_id)
    mine, judged = (
        _my_examples(ctx, open_round_.id, principal.user_id) if open_round_ else ([], set())
    )
    return render(
        request,
        "loop/collect.html",
        principal,
        task=spec,
        round=open_round_,
        mine=mine,
        judged=judged,
        pending_status=ExampleStatus.PENDING.value,
        **extra,
    )


def _written(spec: TaskSpec, form: dict[str, Any]) -> dict[str, Any]:
    """What the example form holds: the ``inputs``, the intended answer (``gold``), the
    ``explanation``."""
    inputs = {name: str(form.get(f"in_{name}", "")) for name in spec.input_names}
    if spec.output.type == "span":
        gold: dict[str, Any] = {"answer": str(form.get("answer", "")).strip()}
    else:
        gold = {"label": str(form.get("label", ""))}
    return {"inputs": inputs, "gold": gold, "explanation": str(form.get("explanation", ""))}


def _kept(written: dict[str, Any]) -> dict[str, Any]:
    """The form's fields again as written (the template's ``kept``), after an error."""
    return {"inputs": written["inputs"], **written["gold"], "explanation": written["explanation"]}


@router.get("/tasks/{task_id}/collect", response_class=HTMLResponse)
def collect_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    get_task(ctx, task_id)
    signed_in(principal)
    may_annotate(principal, task_id)
    return _collect_page(request, ctx, principal, task_id)


@router.post("/tasks/{task_id}/collect", response_class=HTMLResponse)
async def collect(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep, pool: PoolDep
) -> HTMLResponse:
    form = await form_csrf(request)
    may_annotate(principal, task_id)
    assert principal.user_id is not None
    spec = get_task(ctx, task_id)
    open_round_ = current_round(ctx, task_id)
    if open_round_ is None:
        raise UsageError(f"Task {task_id!r} has no open round; the owner opens one")
    written = _written(spec, form)
    try:
        collected = await run_in_threadpool(
            collect_example,
            ctx,
            task_id,
            open_round_.number,
            author_id=principal.user_id,
            predictor=pool,
            **written,
        )
    except UsageError as error:
        # The form again, with what was written and the error beside it: nothing is lost.
        return _collect_page(
            request,
            ctx,
            principal,
            task_id,
            status_code=FORM_AGAIN,
            error=str(error),
            kept=_kept(written),
        )
    return _collect_page(request, ctx, principal, task_id, collected=collected)


@router.post("/examples/{example_id}/explain")
async def explain(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    author_id = principal.require_signed_in()
    explanation = str(form.get("explanation", ""))
    example = explain_example(ctx, example_id, author_id=author_id, explanation=explanation)
    flash(request, f"Explanation of example {example_id} saved.")
    return redirect(f"/ui/tasks/{example.task_id}/collect")


@router.post("/examples/{example_id}/retract")
async def retract(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    await form_csrf(request)
    example = retract_example(ctx, example_id, author_id=principal.require_signed_in())
    flash(
        request,
        f"Example {example_id} is retracted: it will not be validated (it still counts "
        "among the examples you wrote).",
    )
    return redirect(f"/ui/tasks/{example.task_id}/collect")


def _edit_page(
    request: Request, ctx: Context, principal: Principal, example: Example, **extra: Any
) -> HTMLResponse:
    return render(
        request,
        "loop/edit.html",
        principal,
        task=get_task(ctx, example.task_id),
        example=example,
        **extra,
    )


@router.get("/examples/{example_id}/edit", response_class=HTMLResponse)
def edit_page(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    signed_in(principal)
    example = get_example(ctx, example_id)
    if example.author_id != principal.user_id:
        raise PermissionDenied(f"Only the author of example {example_id} may edit it")
    return _edit_page(request, ctx, principal, example)


@router.post("/examples/{example_id}/edit", response_class=HTMLResponse)
async def edit(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep, pool: PoolDep
) -> HTMLResponse:
    form = await form_csrf(request)
    author_id = principal.require_signed_in()
    example = get_example(ctx, example_id)
    spec = get_task(ctx, example.task_id)
    written = _written(spec, form)
    try:
        edited = await run_in_threadpool(
            edit_example, ctx, example_id, author_id=author_id, predictor=pool, **written
        )
    except UsageError as error:
        return _edit_page(
            request,
            ctx,
            principal,
            example,
            status_code=FORM_AGAIN,
            error=str(error),
            kept=_kept(written),
        )
    return _collect_page(request, ctx, principal, example.task_id, collected=edited, edited=True)


@router.post("/examples/{example_id}/skip")
async def skip(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    task_id = get_example(ctx, example_id).task_id
    may_annotate(principal, task_id)
    skipped = [i for i in _skipped(request, task_id) if i != example_id] + [example_id]
    _set_skipped(request, task_id, skipped)
    flash(request, f"Skipped example {example_id}; others will still judge it.")
    suffix = "?flagged=true" if form.get("flagged") == "true" else ""
    return redirect(f"/ui/tasks/{task_id}/validate{suffix}")


@router.post("/tasks/{task_id}/validate/unskip")
async def unskip(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    await form_csrf(request)
    get_task(ctx, task_id)
    may_annotate(principal, task_id)
    _set_skipped(request, task_id, [])
    flash(request, "The examples you skipped are back in your queue.")
    return redirect(f"/ui/tasks/{task_id}/validate")


@router.get("/tasks/{task_id}/validate", response_class=HTMLResponse)
def validate_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep, flagged: bool = False
) -> HTMLResponse:
    spec = get_task(ctx, task_id)
    user_id = signed_in(principal)
    may_annotate(principal, task_id)
    if flagged:
        principal.require_owner(task_id, doing="review flagged examples")
    skipped = _skipped(request, task_id)
    waiting = validation_queue(
        ctx, task_id, user_id=user_id, limit=1, flagged=flagged, skipped=skipped
    )
    is_owner = principal.owns(task_id)
    return render(
        request,
        "loop/validate.html",
        principal,
        task=spec,
        example=waiting[0] if waiting else None,
        version=content_version(waiting[0]) if waiting else None,
        # The owner's verdict settles the example: they see what the others said first.
        votes=_votes(ctx, waiting[0].id) if waiting and is_owner else [],
        flagged=flagged,
        is_owner=is_owner,
        counts=queue_counts(ctx, task_id, user_id=user_id, skipped=skipped),
    )


def _votes(ctx: Context, example_id: int) -> list[tuple[str, str, bool]]:
    """(validator, verdict, by the owner) for each verdict on the example, oldest first."""
    verdicts = verdicts_of(ctx, example_id)
    with ctx.db.session() as session:
        names = dict(
            session.execute(
                select(User.id, User.name).where(User.id.in_([v.user_id for v in verdicts]))
            ).all()
        )
    return [(names.get(v.user_id, "unknown"), v.label or v.verdict, v.by_owner) for v in verdicts]


@router.post("/examples/{example_id}/validate")
async def validate(
    example_id: int, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> RedirectResponse:
    form = await form_csrf(request)
    task_id = get_example(ctx, example_id).task_id
    may_annotate(principal, task_id)
    assert principal.user_id is not None
    label = str(form["label"]) if form.get("label") else None
    verdict = None
    if label is None:
        choices = (Verdict.CORRECT, Verdict.INCORRECT, Verdict.FLAGGED)
        try:
            verdict = Verdict(str(form.get("verdict", "")))
        except ValueError:
            verdict = None
        if verdict not in choices:
            raise UsageError(
                f"verdict must be one of {', '.join(v.value for v in choices)}, or give a label"
            )
    example = validate_example(
        ctx,
        example_id,
        user_id=principal.user_id,
        verdict=verdict,
        label=label,
        as_owner=principal.owns(task_id),
        seen_version=str(form["version"]) if form.get("version") else None,
    )
    given = label if label is not None else verdict
    flash(request, f"Example {example_id}: {given} recorded; it is {example.status}.")
    suffix = "?flagged=true" if form.get("flagged") == "true" else ""
    return redirect(f"/ui/tasks/{task_id}/validate{suffix}")


@router.get("/tasks/{task_id}/rounds", response_class=HTMLResponse)
def rounds_page(
    task_id: str, request: Request, ctx: CtxDep, principal: PrincipalDep
) -> HTMLResponse:
    spec = get_task(ctx, task_id)
    signed_in(principal)
    principal.require_owner(task_id, doing="manage its rounds")
    rounds = list_rounds(ctx, task_id)
    with ctx.db.session() as session:
        submissions = session.execute(
            select(Submission.id, Submission.name)
            .where(Submission.task_id == task_id)
            .order_by(Submission.id)
        ).all()
    opened = next((r for r in rounds if r.status == RoundStatus.OPEN.value), None)
    return render(
        request,
        "loop/rounds.html",
        principal,
        task=spec,
        rounds=[(r, round_vmer(ctx, task_id, r.number)) for r in reversed(rounds)],
        # Closing is irreversible: the owner sees what it would write first.
        preview=closing_preview(ctx, task_id, opened) if opened else None,
        submissions=submissions,
        open_status=RoundStatus.OPEN.value,
    )


@router.post("/tasks/{task_id}/rounds")
async def open_(
    task_id: str,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    pool: PoolDep,
    background: BackgroundTasks,
) -> RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="open a round")
    ids_text = str(form.get("submission_ids", "")).replace(",", " ").split()
    top_text = str(form.get("top", "")).strip()
    try:
        ids = [int(i) for i in ids_text] or None
        top = int(top_text) if top_text and ids is None else None
    except ValueError:
        raise UsageError("Targets are submission ids (numbers) or a top K number") from None
    opened = open_round(ctx, task_id, submission_ids=ids, top=top)
    background.add_task(
        warm_quietly, ctx, pool, opened.id, [int(i) for i in opened.target_submission_ids]
    )
    flash(
        request,
        f"Round {opened.number} is open with targets "
        f"{', '.join(map(str, opened.target_submission_ids))}.",
    )
    return redirect(f"/ui/tasks/{task_id}/rounds")


@router.post("/tasks/{task_id}/rounds/{number}/close")
async def close(
    task_id: str,
    number: int,
    request: Request,
    ctx: CtxDep,
    principal: PrincipalDep,
    pool: PoolDep,
) -> RedirectResponse:
    form = await form_csrf(request)
    principal.require_owner(task_id, doing="close a round")
    text = str(form.get("weight", "") or "").strip()
    try:
        weight = float(text) if text else None
    except ValueError:
        raise InvalidWeights(
            f"Weight {text!r} is not a number; leave it blank for the default"
        ) from None
    closed = await run_in_threadpool(close_round, ctx, task_id, number, weight=weight)
    pool.release(closed.round.id)
    what = (
        f"dataset {closed.dataset.name} ({closed.examples} examples, weight "
        f"{closed.dataset.weight:g}); "
        f"{len(closed.jobs)} evaluation jobs queued"
        if closed.dataset is not None
        else "no verified example, so no dataset"
    )
    flash(request, f"Round {number} closed: {what}.")
    return redirect(f"/ui/tasks/{task_id}/rounds")
