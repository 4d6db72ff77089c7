"""Private phases: hidden sets whose scores stay withheld until the task owner reveals them.

A phase names some of a task's hidden sets and a per-user submission limit. While it is
open (not revealed):

- its sets (and their perturbed copies) are left out of every board, for everyone: the
  board ranks on the other scoring sets, and says how many hidden sets it withholds;
- their scores are shown to the task owner only, never to the submitter;
- each user may make ``submission_limit`` submissions that reach its sets: every bundle
  submission (a bundle is evaluated on every dataset of the task), and each predictions
  submission that gives a file for one of its sets (a file refused there counts as well,
  so a refusal is no free oracle on the set). The owner and admins have no limit.

Revealing a phase closes it (its limit no longer applies; a predictions file for its sets
is refused) and shows each submitter their own scores on its sets; with ``public`` its sets
also count on the public board from then on. A hidden set in no phase counts at once, as
before phases existed. Putting a hidden set in a phase makes its name known to signed-in
users (they must name it to submit predictions for it); never its size, examples or labels.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from datasets_registry import list_datasets
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, QuotaExceeded, UsageError
from evalboard.core.states import Access
from evalboard.core.tables import Dataset, Phase, PhaseDataset, PhaseEntry, utcnow
from leaderboard.accounts import Principal
from leaderboard.schemas import PhasePublic, from_row

__all__ = [
    "MAX_SUBMISSION_LIMIT",
    "PHASE_NAME",
    "check_phase_limits",
    "create_phase",
    "enter_phases",
    "get_phase",
    "list_phases",
    "open_phase_of",
    "phase_public",
    "refused_attempt",
    "reveal_phase",
    "shown_phase",
    "revealed_dataset_ids",
    "withheld_dataset_ids",
]

PHASE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
"""A phase's name: lower-case letters, digits, ``-`` and ``_``, at most 64."""

MAX_SUBMISSION_LIMIT = 1000


def _phase_sets(session: Session, task_id: str) -> list[tuple[Phase, int]]:
    rows = session.execute(
        select(Phase, PhaseDataset.dataset_id)
        .join(PhaseDataset, PhaseDataset.phase_id == Phase.id)
        .where(Phase.task_id == task_id)
    ).all()
    return [(phase, dataset_id) for phase, dataset_id in rows]


def _with_copies(ids: set[int], datasets: Iterable[Dataset]) -> set[int]:
    return ids | {d.id for d in datasets if d.derived_from_id in ids}


def withheld_dataset_ids(ctx: Context, task_id: str, datasets: Iterable[Dataset]) -> set[int]:
    """The task's datasets no board counts now: those of phases not revealed to the public
    (with their perturbed copies)."""
    with ctx.db.session() as session:
        ids = {d for phase, d in _phase_sets(session, task_id) if not phase.public}
    return _with_copies(ids, datasets) if ids else set()


def shown_phase(ctx: Context, task_id: str) -> str:
    """What the public board shows, in words: ``public``, then each phase revealed onto it."""
    with ctx.db.session() as session:
        names = session.scalars(
            select(Phase.name)
            .where(Phase.task_id == task_id, Phase.public.is_(True))
            .order_by(Phase.revealed_at, Phase.id)
        ).all()
    return " + ".join(["public", *names])


def revealed_dataset_ids(session: Session, task_id: str, datasets: Iterable[Dataset]) -> set[int]:
    """The datasets of the task's revealed phases (with their copies): their scores go to
    their submitters."""
    ids = {d for phase, d in _phase_sets(session, task_id) if phase.revealed}
    return _with_copies(ids, datasets) if ids else set()


def _names(session: Session, phase_ids: Collection[int]) -> dict[int, list[str]]:
    rows = session.execute(
        select(PhaseDataset.phase_id, Dataset.name)
        .join(Dataset, Dataset.id == PhaseDataset.dataset_id)
        .where(PhaseDataset.phase_id.in_(list(phase_ids)))
        .order_by(Dataset.name)
    ).all()
    found: dict[int, list[str]] = {}
    for phase_id, name in rows:
        found.setdefault(phase_id, []).append(name)
    return found


def _used(session: Session, phase_id: int, user_id: int) -> int:
    count = session.scalar(
        select(func.count(PhaseEntry.id)).where(
            PhaseEntry.phase_id == phase_id, PhaseEntry.user_id == user_id
        )
    )
    return int(count or 0)


def phase_public(
    phase: Phase, datasets: list[str], *, used: int | None, owner: bool
) -> PhasePublic:
    return from_row(
        PhasePublic,
        phase,
        datasets=datasets,
        used=used,
        remaining=None if used is None or owner else max(phase.submission_limit - used, 0),
    )


def list_phases(ctx: Context, principal: Principal, task_id: str) -> list[PhasePublic]:
    """The task's phases, oldest first; a signed-in user also sees how much of each limit
    they have used."""
    owner = principal.owns(task_id)
    with ctx.db.session() as session:
        phases = list(
            session.scalars(select(Phase).where(Phase.task_id == task_id).order_by(Phase.id))
        )
        names = _names(session, [p.id for p in phases])
        return [
            phase_public(
                p,
                names.get(p.id, []),
                used=_used(session, p.id, principal.user_id)
                if principal.user_id is not None
                else None,
                owner=owner,
            )
            for p in phases
        ]


def get_phase(session: Session, task_id: str, name: str) -> Phase:
    phase = session.scalar(select(Phase).where(Phase.task_id == task_id, Phase.name == name))
    if phase is None:
        known = session.scalars(
            select(Phase.name).where(Phase.task_id == task_id).order_by(Phase.id)
        ).all()
        raise NotFound.among(f"Phase {name!r} of task {task_id!r}", known)
    return phase


def create_phase(
    ctx: Context,
    principal: Principal,
    task_id: str,
    *,
    name: str,
    datasets: list[str],
    submission_limit: int,
) -> PhasePublic:
    """Open a private phase over some of the task's hidden sets (task owner).

    Raises:
        UsageError: a bad name or limit, no dataset, a dataset that is not one of the
            task's hidden originals.
        Conflict: the name is taken, or a dataset is in another phase already.
    """
    principal.require_owner(task_id, doing="create phases")
    if not PHASE_NAME.fullmatch(name):
        raise UsageError(
            f"Phase name {name!r} is not usable; use 1-64 lower-case letters, digits, '-' or "
            "'_', starting with a letter or digit (e.g. 'test-2027')"
        )
    if not 1 <= submission_limit <= MAX_SUBMISSION_LIMIT:
        raise UsageError(
            f"Submission limit {submission_limit} is out of range; give 1 to "
            f"{MAX_SUBMISSION_LIMIT} submissions per user"
        )
    chosen = list(dict.fromkeys(datasets))
    if not chosen:
        raise UsageError("Name at least one hidden dataset of the task for the phase")
    by_name = {d.name: d for d in list_datasets(ctx, task_id)}
    hidden = sorted(
        n for n, d in by_name.items() if d.access == Access.HIDDEN and d.perturbation is None
    )
    for dataset in chosen:
        found = by_name.get(dataset)
        if found is None or found.access != Access.HIDDEN or found.perturbation is not None:
            raise UsageError(
                f"{dataset!r} is not a hidden original dataset of task {task_id!r}; a phase "
                f"holds hidden sets only (the task's: {', '.join(hidden) or 'none'})"
            )
    try:
        with ctx.db.session() as session:
            phase = Phase(task_id=task_id, name=name, submission_limit=submission_limit)
            session.add(phase)
            session.flush()
            taken = session.scalars(
                select(Dataset.name)
                .join(PhaseDataset, PhaseDataset.dataset_id == Dataset.id)
                .where(Dataset.id.in_([by_name[n].id for n in chosen]))
            ).all()
            if taken:
                raise Conflict(
                    f"{', '.join(sorted(taken))} is in another phase already; a dataset is in "
                    "one phase at most"
                )
            session.add_all(
                PhaseDataset(phase_id=phase.id, dataset_id=by_name[n].id) for n in chosen
            )
            session.flush()
            return phase_public(phase, sorted(chosen), used=None, owner=True)
    except IntegrityError:
        raise Conflict(
            f"Task {task_id!r} already has a phase {name!r}, or one of its datasets was put in "
            "another phase just now; list them with `evalboard phase list`"
        ) from None


def reveal_phase(
    ctx: Context, principal: Principal, task_id: str, name: str, *, public: bool
) -> PhasePublic:
    """Reveal (and close) a phase: each submitter sees their scores on its sets; with
    ``public`` its sets count on the public board too. Revealing again may only widen it
    (private to public), never take it back.

    Raises:
        NotFound: no such phase.
        Conflict: it was revealed to the public already and ``public`` is false.
    """
    principal.require_owner(task_id, doing="reveal phases")
    with ctx.db.session() as session:
        phase = get_phase(session, task_id, name)
        if phase.public and not public:
            raise Conflict(
                f"Phase {name!r} is on the public board already; a reveal cannot be taken back"
            )
        session.execute(
            update(Phase)
            .where(Phase.id == phase.id)
            .values(revealed=True, public=public, revealed_at=phase.revealed_at or utcnow())
        )
        session.flush()
        session.refresh(phase)
        names = _names(session, [phase.id]).get(phase.id, [])
        return phase_public(phase, names, used=None, owner=True)


def _open_phases(
    session: Session, task_id: str, dataset_ids: Collection[int] | None
) -> list[Phase]:
    query = (
        select(Phase).where(Phase.task_id == task_id, Phase.revealed.is_(False)).order_by(Phase.id)
    )
    if dataset_ids is not None:
        query = query.where(
            Phase.id.in_(
                select(PhaseDataset.phase_id).where(PhaseDataset.dataset_id.in_(list(dataset_ids)))
            )
        )
    return list(session.scalars(query))


def enter_phases(
    session: Session,
    principal: Principal,
    *,
    task_id: str,
    submission_id: int,
    dataset_ids: Collection[int] | None = None,
) -> None:
    """Count a new submission in each open phase it reaches (all of them when
    ``dataset_ids`` is None: a bundle is evaluated on every dataset), in the transaction that
    inserts it, after the user's row is locked (``submissions.lock_user``).

    Raises:
        QuotaExceeded: the user has used a phase's limit (the transaction is rolled back).
    """
    if principal.user_id is None or principal.owns(task_id):
        return
    for phase in _open_phases(session, task_id, dataset_ids):
        session.add(
            PhaseEntry(phase_id=phase.id, user_id=principal.user_id, submission_id=submission_id)
        )
        session.flush()
        used = _used(session, phase.id, principal.user_id)
        if used > phase.submission_limit:
            _refuse_spent(principal, task_id, phase)


def _refuse_spent(principal: Principal, task_id: str, phase: Phase) -> None:
    raise QuotaExceeded(
        f"{principal.name!r} has used the {phase.submission_limit} submission(s) of phase "
        f"{phase.name!r} of task {task_id!r}; it takes no more until the owner reveals it"
    )


def check_phase_limits(ctx: Context, principal: Principal, task_id: str) -> None:
    """Refuse a bundle upload early when an open phase's limit is spent: only a hint
    before the bytes are sent; :func:`enter_phases` counts again at the insert."""
    if principal.user_id is None or principal.owns(task_id):
        return
    with ctx.db.session() as session:
        for phase in _open_phases(session, task_id, None):
            if _used(session, phase.id, principal.user_id) >= phase.submission_limit:
                _refuse_spent(principal, task_id, phase)


def refused_attempt(
    ctx: Context, principal: Principal, *, task_id: str, dataset_ids: Collection[int]
) -> None:
    """Count a refused predictions file on an open phase's hidden set against the user's
    limit, in a transaction of its own (the refusal itself rolls back everything else)."""
    if principal.user_id is None or principal.owns(task_id):
        return
    with ctx.db.session() as session:
        session.add_all(
            PhaseEntry(phase_id=phase.id, user_id=principal.user_id, submission_id=None)
            for phase in _open_phases(session, task_id, dataset_ids)
        )


def open_phase_of(session: Session, dataset_id: int) -> Phase | None:
    """The open phase holding this dataset, if any."""
    return session.scalar(
        select(Phase)
        .join(PhaseDataset, PhaseDataset.phase_id == Phase.id)
        .where(PhaseDataset.dataset_id == dataset_id, Phase.revealed.is_(False))
    )
