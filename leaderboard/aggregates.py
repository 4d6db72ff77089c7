"""Each submission's leaderboard row, derived once and read back with one query.

Deriving a row (:func:`leaderboard.entry.derive_entry`) loads every job, result and
dataset of the submission as ORM objects and parses each result: at 10,000 submissions
that is about 70,000 objects and seconds per request. Instead the row is derived once,
stored in ``board_entries`` with a digest of what it came from (:func:`source_digest`),
and read back with the task's other rows in one query, which also computes, per
submission, the facts the digest covers. A row whose digest no longer matches (a job
finished, failed or was re-run, the submission was renamed, its card was edited or it
was published or unpublished, a dataset of the task was added or re-weighted) is derived
again in that request and stored; nothing else has to invalidate it. The parsed rows are
kept in the context's derived-data cache, one entry per task under the board's version
(the digest of all those facts), so a warm request parses nothing, and the next version
reuses every row whose own digest still matches. A warm request does not run the query
either while the task's counter in ``board_versions`` (bumped by database triggers on
every write to those facts, migration ``0017_board_version``) is the one the cached rows
were read under; when it has moved, the query reads again only the submissions the same
triggers recorded as changed since (``board_row_versions``, migration
``0018_board_row_versions``), and every other row is the kept one.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import (
    CursorResult,
    Row,
    Table,
    Text,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from evalboard.core.cache import sampled_size
from evalboard.core.context import Context
from evalboard.core.errors import Busy, PlatformError
from evalboard.core.heap import paused_collection
from evalboard.core.states import JobStatus
from evalboard.core.tables import (
    BoardEntry,
    BoardRowVersion,
    BoardVersion,
    Dataset,
    Job,
    Result,
    Submission,
    User,
)
from leaderboard.entry import EntryDetails, ModelEntry, derive_entry
from scoring import METRICS
from submission_sandbox import ModelCard

__all__ = ["Board", "datasets_digest", "load_board", "load_entries", "source_digest"]

logger = logging.getLogger(__name__)

#: Submissions derived per query on the slow path (well under SQLite's bound on parameters).
_CHUNK = 500
#: Reads of a board that a write raced (:class:`_Raced`), the last one's race raised.
_READS = 3
#: At most this many submissions changed since a kept board are read again alone; more,
#: and the whole board is read in one query (about 1 s at 100,000 submissions).
_CHANGED_ALONE = 5_000
#: What a stored row holds; bumped when that changes (2: energy and each figure's method;
#: 3: the per-dataset figures and outcomes packed; 4: datasets averaged by their shares,
#: ``scoring.weighted_mean``), so rows stored by an older evalboard are derived again.
_FORMAT = 4


def datasets_digest(datasets: Iterable[Dataset]) -> str:
    """What of the task's datasets a row depends on: which count, and their weights."""
    facts = sorted(
        (d.id, d.name, d.sha256, d.access, float(d.weight), d.derived_from_id, d.perturbation)
        for d in datasets
    )
    return hashlib.sha256(repr(facts).encode()).hexdigest()


def source_digest(datasets: str, facts: Sequence[Any]) -> str:
    """The digest of one row's inputs: the datasets' digest and the submission's facts,
    and the board's metrics (a row packs its figures in their order)."""
    text = f"{_FORMAT}|{','.join(METRICS)}|{datasets}|{facts!r}"
    return hashlib.sha256(text.encode()).hexdigest()


def _who() -> tuple[Any, ...]:
    """Who a row's submission is, as every read of the board takes it from the submission
    as it is now (:func:`_from_stored` reads these by name; users joined as ``user``)."""
    return (
        Submission.id,
        Submission.name,
        Submission.user_id,
        User.name.label("user"),
        Submission.is_baseline,
        Submission.published,
    )


def _board_query(task_id: str, ids: Sequence[int] | None = None) -> Any:
    """One row per submission of the task (or of those of ``ids``): who, its stored
    entry, and per-status job counts with its results' count and newest id (what a
    stored entry must still match).

    One flat GROUP BY that walks each submission's jobs by their (submission, dataset)
    index: a grouped subquery joined back would be materialised and indexed on every
    request."""
    per_status = [
        func.sum(case((Job.status == status.value, 1), else_=0)).label(f"n_{status.value}")
        for status in JobStatus
    ]
    return (
        select(
            *_who(),
            # As text: the digest needs its bytes, not a parsed card per row.
            cast(Submission.card, Text).label("card"),
            BoardEntry.source,
            func.count(Job.id).label("n_jobs"),
            *per_status,
            func.count(Result.id).label("n_results"),
            func.max(Result.id).label("last_result"),
        )
        .outerjoin(User, User.id == Submission.user_id)
        .outerjoin(BoardEntry, BoardEntry.submission_id == Submission.id)
        .outerjoin(Job, Job.submission_id == Submission.id)
        .outerjoin(Result, Result.job_id == Job.id)
        .where(
            Submission.task_id == task_id, *([Submission.id.in_(ids)] if ids is not None else [])
        )
        .group_by(Submission.id, User.name, BoardEntry.source)
        .order_by(Submission.id)
    )


def _facts(row: Row[Any]) -> tuple[Any, ...]:
    """Who the submission is, its card and whether it is published, and how its jobs
    stand: the query's columns but its id and the stored digest (sums are None for a
    submission without jobs, read as 0). An edited card thus refreshes the row."""
    values: tuple[Any, ...] = tuple(row)
    counts: tuple[Any, ...] = tuple(int(n or 0) for n in values[8:-1])
    return values[1:7] + counts + values[-1:]


def load_entries(
    ctx: Context,
    task_id: str,
    *,
    datasets: list[Dataset],
    scoring: list[Dataset],
) -> list[ModelEntry]:
    """The task's rows in submission order: stored ones whose digest still matches,
    the others derived now (and stored for the next request)."""
    return load_board(ctx, task_id, datasets=datasets, scoring=scoring).models


class Board(NamedTuple):
    """A task's board as :func:`load_board` read it."""

    #: The digest of every fact the rows were derived from.
    version: str
    #: The rows, in submission order; shared between requests: never changed.
    models: list[ModelEntry]
    #: The derived-data cache's key for the rows: what is derived from them and holds
    #: them is kept ``within`` it (:meth:`~evalboard.core.cache.MemoryCache.put`).
    cache_key: tuple[str, str, str]


def load_board(
    ctx: Context,
    task_id: str,
    *,
    datasets: list[Dataset],
    scoring: list[Dataset],
) -> Board:
    """The board's version and its rows in submission order (:func:`_read_board`).

    The board kept in memory while the task's counter has not moved; otherwise read by
    one thread at a time (requests that find it changed at once, after a restart or a new
    result, read it once: the others wait and find it kept), and read again when a write
    raced the read (:class:`_Raced`): that write moved the counter, so the next read sees
    it. Raced every time: :class:`_Raced`, a 503 to ask again."""
    digest = _digest(datasets, scoring)
    with ctx.db.session() as session:
        board = _kept_board(ctx, task_id, digest, _counter(session, task_id))
    if board is not None:
        return board
    with ctx.cache.one_at_a_time(("board-read", task_id)):
        for _ in range(_READS - 1):
            try:
                return _read_board(ctx, task_id, digest, datasets=datasets, scoring=scoring)
            except _Raced:
                logger.info("task %s's board changed while it was read: read again", task_id)
        return _read_board(ctx, task_id, digest, datasets=datasets, scoring=scoring)


def _digest(datasets: list[Dataset], scoring: list[Dataset]) -> str:
    """What of the datasets every row depends on. Which sets count changes when a phase
    is revealed to the public, not the datasets."""
    return source_digest(datasets_digest(datasets), sorted(d.id for d in scoring))


def _counter(session: Session, task_id: str) -> int | None:
    """The task's board counter (``board_versions``): None before its first write."""
    return session.scalar(select(BoardVersion.version).where(BoardVersion.task_id == task_id))


def _kept_board(ctx: Context, task_id: str, digest: str, counter: int | None) -> Board | None:
    """The board kept in memory, where it was read at this counter and datasets' digest."""
    current = ctx.cache.get(("board", task_id))
    if current is None or current[1] != (counter, digest):
        return None
    key = ("board-rows", task_id, current[0])
    kept = ctx.cache.get(key)
    return Board(current[0], kept.models, key) if kept is not None else None


class _Raced(Busy):
    """A row the board query read was deleted, or derived again, before its stored entry
    was read: the board changed while it was being read."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"The board of task {task_id!r} changed while it was read: ask again")


def _read_board(
    ctx: Context,
    task_id: str,
    digest: str,
    *,
    datasets: list[Dataset],
    scoring: list[Dataset],
) -> Board:
    """The board's version and its rows in submission order.

    The version is the digest of every fact the rows were derived from (the datasets' and
    each submission's, as one query reads them; a row derived from facts written after
    the query read them is marked ``raced at N`` instead, :func:`_entries`): the same
    version, the same rows, so a
    warm request hashes the query's rows once and parses and checks nothing per row.

    A warm request does not even run that query: the task's stored counter
    (``board_versions``, bumped by triggers in every writing transaction) and the
    datasets' digest still being those the cached board was read under means no fact has
    changed since. When the counter has moved but the datasets' digest has not, the query
    reads only the submissions recorded as changed since the kept board's counter
    (:func:`_changed`), and every other row is the kept one. The counter is read before
    the query, so a write in between leaves the cached board under the older counter,
    and the next request reads that write again.

    Two cache entries: the rows of each version (immutable, what derived values are kept
    within), and which version the task's counter was last read at. A write that changes
    no row (the counter moved, the version did not) replaces only the latter, so what
    was derived from the rows stays.
    """
    current = ctx.cache.get(("board", task_id))
    kept_key = ("board-rows", task_id, current[0]) if current is not None else None
    kept = ctx.cache.get(kept_key) if kept_key is not None else None
    with ctx.db.session() as session:
        stored = _counter(session, task_id)
        board = _kept_board(ctx, task_id, digest, stored)
        if board is not None:  # read by the thread this one waited for
            return board
        since = current[1][0] if kept is not None and kept.digest == digest else None
        changed = (
            _changed(session, task_id, since) if since is not None and stored is not None else None
        )
        # What the rows read now are merged into: the kept board, or with nothing kept
        # (a server started again, the board evicted) the stored rows still current. A
        # cache of no bytes reads every row's facts: the board as derived from nothing.
        base = kept if changed is not None else None
        if kept is None and stored is not None and ctx.cache.budget_bytes:
            base, changed = _stored_board(session, task_id, digest)
        # Core, not the ORM: plain rows, no per-row ORM bookkeeping.
        rows = (
            session.connection().execute(_board_query(task_id)).all()
            if changed is None
            else changed[1]
        )
    sources, read_as = _sources(rows, digest, base or kept)
    if changed is not None:
        assert base is not None
        sources, read_as = _merged(base, changed[0], sources, read_as)
    version = _version(digest, sources)
    cache_key = ("board-rows", task_id, version)
    # The rows of this version may be kept though the note of which version is current
    # was evicted, or another request has just read them: not derived again.
    found = kept if kept is not None and current[0] == version else ctx.cache.get(cache_key)
    if found is None:
        # Rows are reused by the next version where their own digest still matches, so
        # one finished job re-derives one row; the older version is then let go.
        reused = base or kept
        previous: dict[int, tuple[str, ModelEntry]] = reused.entries if reused else {}
        with paused_collection():  # 10,000 rows made: see evalboard.core.heap
            entries, raced = _entries(
                ctx,
                task_id,
                rows,
                sources,
                previous,
                _Read(stored, digest),
                datasets=datasets,
                scoring=scoring,
            )
            if changed is not None:  # the rows read again, the kept ones for the others
                entries = {sid: entries.get(sid) or previous[sid] for sid in sources}
        if raced:
            # Derived from facts written after the query read them: served under a digest
            # no facts have, so that no read takes them for the facts the query read (a
            # write back to those would keep them for good), and derived again next time.
            mark = f"raced at {stored}"
            for sid in raced:
                sources[sid], entries[sid] = mark, (mark, entries[sid][1])
                read_as.pop(sid, None)
            version = _version(digest, sources)
            cache_key = ("board-rows", task_id, version)
        models = [entry for _, entry in entries.values()]
        # keep, not put: a request that read the same version at once keeps its rows,
        # and what is kept within them.
        found = ctx.cache.keep(
            cache_key,
            _Kept(entries, models, digest, read_as),
            size=sampled_size(list(entries.items()))
            + sys.getsizeof(models)
            + sampled_size(list(read_as.items())),
        )
    if kept_key is not None and kept_key != cache_key:
        ctx.cache.discard(kept_key)
    ctx.cache.put(("board", task_id), (version, (stored, digest)))
    return Board(version, found.models, cache_key)


class _Kept(NamedTuple):
    """A version's rows as :func:`load_board` keeps them."""

    #: Each submission's row digest and entry, in submission order.
    entries: dict[int, tuple[str, ModelEntry]]
    models: list[ModelEntry]
    #: The datasets' digest the rows were read under, and each query row's ``hash``.
    digest: str
    read_as: dict[int, int]


def _sources(
    rows: Sequence[Row[Any]], digest: str, kept: _Kept | None
) -> tuple[dict[int, str], dict[int, int]]:
    """Each row's digest (:func:`source_digest` of its facts), and each query row's hash.

    A row the query reads exactly as it did for the kept version (its hash the same, the
    datasets' digest the same) keeps that version's digest: after one more result at
    100,000 submissions a sha256 per row was 0.56 s of the request, hashing the rows 14
    ms. Two different rows of equal hash (64 bits) would keep a stale digest until the
    row changes again: about one chance in 10^19 for each row that changes."""
    earlier, entries = (
        (kept.read_as, kept.entries) if kept is not None and kept.digest == digest else ({}, {})
    )
    sources: dict[int, str] = {}
    read_as: dict[int, int] = {}
    for row in rows:
        read_as[row.id] = key = hash(row)
        if earlier.get(row.id) == key:
            sources[row.id] = entries[row.id][0]
        else:
            sources[row.id] = source_digest(digest, _facts(row))
    return sources, read_as


def _changed(session: Session, task_id: str, since: int) -> tuple[list[int], list[Row[Any]]] | None:
    """The submissions whose rows changed since the task's counter was ``since`` (the
    triggers record each, migration ``0018_board_row_versions``) and their query rows (a
    deleted one has none); None when more changed than are worth reading alone (a
    dataset added gives every submission a job: the whole board is read at once)."""
    ids = list(
        session.scalars(
            select(BoardRowVersion.submission_id).where(
                BoardRowVersion.task_id == task_id, BoardRowVersion.version > since
            )
        )
    )
    if len(ids) > _CHANGED_ALONE:
        return None
    return ids, _rows_of(session, task_id, ids)


def _rows_of(session: Session, task_id: str, ids: list[int]) -> list[Row[Any]]:
    """The board query's rows of these submissions (one query over the whole board where
    they are too many to name), in submission order."""
    if len(ids) > _CHANGED_ALONE:
        wanted = set(ids)
        rows = session.connection().execute(_board_query(task_id)).all()
        return [row for row in rows if row.id in wanted]
    found: list[Row[Any]] = []
    for start in range(0, len(ids), _CHUNK):
        query = _board_query(task_id, ids[start : start + _CHUNK])
        found += session.connection().execute(query).all()
    return sorted(found, key=lambda row: row.id)


def _stored_board(
    session: Session, task_id: str, digest: str
) -> tuple[_Kept, tuple[list[int], list[Row[Any]]]]:
    """With nothing kept in memory: the stored rows still current, as a kept board, and
    the other submissions with their board query rows (read again, as after a change).

    A stored row is current where it was stored or checked under these datasets (its
    ``digest``) at a counter value (``read_at``) no write to its submission has passed
    since (``board_row_versions``): the triggers record each such write, as they do for
    a kept board. Such a row is read as stored, its submission's facts not queried nor
    hashed: at 100,000 submissions the board query and the hashing were 4 of the 10 s a
    restarted server took to read the board. Who the row is (name, owner, published) is
    read from the submission as it is now, like every row."""
    current = (
        select(
            *_who(),
            BoardEntry.source,
            cast(BoardEntry.entry, Text).label("entry"),
        )
        .join(BoardEntry, BoardEntry.submission_id == Submission.id)
        .join(
            BoardRowVersion,
            (BoardRowVersion.task_id == Submission.task_id)
            & (BoardRowVersion.submission_id == Submission.id),
        )
        .outerjoin(User, User.id == Submission.user_id)
        .where(
            Submission.task_id == task_id,
            BoardEntry.digest == digest,
            BoardRowVersion.version <= BoardEntry.read_at,
        )
        .order_by(Submission.id)
    )
    entries: dict[int, tuple[str, ModelEntry]] = {}
    with paused_collection():  # 100,000 rows made: see evalboard.core.heap
        stored: CursorResult[Any] = session.connection().execute(current)
        for part in stored.partitions(_CHUNK):
            for row in part:
                entries[row.id] = (row.source, _from_stored(row, row.entry))
    ids = session.scalars(
        select(Submission.id).where(Submission.task_id == task_id).order_by(Submission.id)
    ).all()
    others = [sid for sid in ids if sid not in entries]
    kept = _Kept(entries, [entry for _, entry in entries.values()], digest, {})
    return kept, (others, _rows_of(session, task_id, others))


def _merged(
    kept: _Kept, changed: list[int], sources: dict[int, str], read_as: dict[int, int]
) -> tuple[dict[int, str], dict[int, int]]:
    """The kept version's row digests and query hashes with those of the rows read again
    (``sources``, ``read_as``): a changed submission the query no longer finds was
    deleted and is dropped, a new one takes its place in submission order."""
    merged = {sid: entry[0] for sid, entry in kept.entries.items()}
    hashes = dict(kept.read_as)
    for sid in changed:
        if sid not in sources:
            merged.pop(sid, None)
            hashes.pop(sid, None)
    last = next(reversed(kept.entries), None)
    merged.update(sources)
    hashes.update(read_as)
    if any(last is not None and sid < last and sid not in kept.entries for sid in sources):
        # Committed out of id order (two writers at once): submission order again.
        merged, hashes = dict(sorted(merged.items())), dict(sorted(hashes.items()))
    return merged, hashes


def _version(digest: str, sources: dict[int, str]) -> str:
    """The board's version: the datasets' digest and each submission's row digest (which
    covers every fact of the row), in submission order."""
    text = digest + "|" + ",".join(f"{sid}:{source}" for sid, source in sources.items())
    return hashlib.sha256(text.encode()).hexdigest()


class _Read(NamedTuple):
    """Under what a board was read: what its stored rows are marked current at."""

    #: The task's counter read before the board's facts; None: no write to it yet.
    counter: int | None
    #: The datasets' digest (:func:`_digest`).
    digest: str


def _entries(
    ctx: Context,
    task_id: str,
    rows: Sequence[Row[Any]],
    sources: dict[int, str],
    previous: dict[int, tuple[str, ModelEntry]],
    read: _Read,
    *,
    datasets: list[Dataset],
    scoring: list[Dataset],
) -> tuple[dict[int, tuple[str, ModelEntry]], set[int]]:
    """Each row's digest and entry, in submission order: from ``previous`` where the digest
    matches, else the stored row where it matches (marked current at ``read``), else
    derived now (and stored); and the rows derived from facts a write changed after the
    board query read them (:func:`_written_since`), not stored."""
    by_id = {d.id: d for d in datasets}
    with ctx.db.session() as session:
        stale = [row.id for row in rows if row.source != sources[row.id]]
        derived = _derive(session, stale, scoring, by_id) if stale else {}
        # _derive reads the facts again, in statements of its own, after the query's.
        raced = _written_since(session, task_id, read.counter, derived) if derived else set()
    if len(raced) < len(derived):  # stored once the reading session is closed: one writer
        to_store = {sid: (sources[sid], e) for sid, e in derived.items() if sid not in raced}
        _store(ctx, task_id, to_store, read)
    # One pass in submission order (100,000 rows after one more result: each pass over
    # them is a tenth of a second); the rows to parse keep their place, filled below.
    entries: dict[int, tuple[str, ModelEntry] | None] = {}
    unparsed: list[Row[Any]] = []
    for row in rows:
        source, made, kept = sources[row.id], derived.get(row.id), previous.get(row.id)
        if made is not None:
            entries[row.id] = (source, made)
        elif kept is not None and kept[0] == source:
            entries[row.id] = kept
        else:
            entries[row.id] = None
            unparsed.append(row)
    if unparsed:  # stored rows this process has not read yet: the JSON is read only now
        stored = _stored(ctx, {row.id: sources[row.id] for row in unparsed})
        if len(stored) < len(unparsed):
            raise _Raced(task_id)
        for row in unparsed:
            entries[row.id] = (sources[row.id], _from_stored(row, stored[row.id]))
        if ctx.cache.budget_bytes:  # a cache of no bytes never reads rows as stored
            # In the background: the write may wait on other writers' locks, and this
            # read holds the board's, which every request for it waits on.
            marks = {row.id: sources[row.id] for row in unparsed}
            ctx.background.submit(
                ("mark-current", task_id, read), lambda: _mark_current(ctx, marks, read)
            )
    return entries, raced  # type: ignore[return-value]  # every None was filled


def _written_since(
    session: Session, task_id: str, counter: int | None, ids: Iterable[int]
) -> set[int]:
    """Those of these submissions a write reached since the task's counter was
    ``counter``: the triggers record each such write above it (``board_row_versions``),
    in its transaction, so a statement that sees the write sees it recorded."""
    since = select(BoardRowVersion.submission_id).where(
        BoardRowVersion.task_id == task_id, BoardRowVersion.version > (counter or 0)
    )
    return set(ids) & set(session.scalars(since))


def _stored(ctx: Context, wanted: dict[int, str]) -> dict[int, str]:
    """The stored rows of these submissions as JSON text, where each is still stored with
    the digest wanted (the board query saw it so; a write since may have deleted or
    replaced it)."""
    ids = list(wanted)
    found: dict[int, str] = {}
    with ctx.db.session() as session:
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            rows = session.execute(
                select(
                    BoardEntry.submission_id, BoardEntry.source, cast(BoardEntry.entry, Text)
                ).where(BoardEntry.submission_id.in_(chunk))
            )
            found.update((sid, entry) for sid, source, entry in rows if wanted[sid] == source)
    return found


def _derive(
    session: Session, ids: list[int], scoring: list[Dataset], by_id: dict[int, Dataset]
) -> dict[int, ModelEntry]:
    derived: dict[int, ModelEntry] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        submissions = session.scalars(
            select(Submission)
            .where(Submission.id.in_(chunk))
            .options(
                selectinload(Submission.jobs).selectinload(Job.result),
                selectinload(Submission.jobs).selectinload(Job.dataset),
            )
        ).all()
        user_ids = {s.user_id for s in submissions if s.user_id is not None}
        users = dict(session.execute(select(User.id, User.name).where(User.id.in_(user_ids))).all())
        for submission in submissions:
            derived[submission.id] = derive_entry(submission, users, scoring, by_id)
    return derived


_DETAILS = TypeAdapter(EntryDetails)


def _to_stored(entry: ModelEntry) -> dict[str, Any]:
    return {
        "status": entry.status.value,
        "complete": entry.complete,
        "runtime": entry.runtime,
        "card": entry.card.model_dump(mode="json"),
        "metrics": entry.metrics,
        "methods": entry.methods,
        "predictions": entry.predictions,
        # Its packed bytes as base64, as _Stored reads them back.
        "details": _DETAILS.dump_python(entry.details, mode="json"),
        "predictions_only": entry.predictions_only,
    }


class _Stored(BaseModel):
    """A stored row as :func:`_to_stored` writes it, read from its JSON text in one pass
    (a server started again reads 10,000: parsing the JSON and then validating each card
    and outcome took 0.55 ms a row). The outcomes stay packed (:class:`EntryDetails`)."""

    status: JobStatus
    complete: bool
    runtime: str | None
    card: ModelCard
    metrics: dict[str, Any]
    methods: dict[str, Any] = {}
    predictions: dict[str, Any]
    details: EntryDetails
    predictions_only: bool = False


def _from_stored(row: Row[Any], text: str) -> ModelEntry:
    stored = _Stored.model_validate_json(text)
    return ModelEntry(
        key=str(row.id),
        submission_id=row.id,
        name=row.name,
        user=row.user,
        user_id=row.user_id,
        is_baseline=bool(row.is_baseline),
        status=stored.status,
        complete=stored.complete,
        runtime=stored.runtime,
        card=stored.card,
        published=bool(row.published),
        metrics=stored.metrics,
        methods=stored.methods,
        predictions=stored.predictions,
        details=stored.details,
        predictions_only=stored.predictions_only,
    )


def _mark_current(ctx: Context, sources: dict[int, str], read: _Read) -> None:
    """Mark stored rows whose facts were just read and still match (their digest the
    one stored) current at ``read``, so that a process with nothing kept reads them as
    stored (:func:`_stored_board`): rows stored before migration 0019, and rows a write
    reached without changing them. Never marks a row earlier than it is, nor one
    replaced meanwhile (its digest no longer the one read); in id order, as
    :func:`_store` writes, in batches, and on PostgreSQL giving up on a row another
    transaction holds (only saves work: a refused write is logged)."""
    if read.counter is None:
        return
    table = BoardEntry.__table__
    assert isinstance(table, Table)
    mark = (
        update(table)
        .where(
            table.c.submission_id == bindparam("sid"),
            table.c.source == bindparam("seen"),
            or_(table.c.read_at.is_(None), table.c.read_at < read.counter),
        )
        .values(read_at=read.counter, digest=read.digest)
    )
    ordered = [{"sid": sid, "seen": source} for sid, source in sorted(sources.items())]
    try:
        for start in range(0, len(ordered), _CHUNK):  # short transactions
            with ctx.db.session() as session:
                connection = session.connection()
                if connection.dialect.name == "postgresql":  # a row another holds: skipped
                    connection.exec_driver_sql("SET LOCAL lock_timeout = '1s'")
                connection.execute(mark, ordered[start : start + _CHUNK])
    except PlatformError as exc:  # only saves work: the read it follows stands
        logger.info("board rows not marked current: %s", exc.message)


def _store(
    ctx: Context, task_id: str, rows: dict[int, tuple[str, ModelEntry]], read: _Read
) -> None:
    """Replace the stored rows of these submissions, in a transaction of its own.

    Two requests may derive the same row at once; the loser's insert fails on the key and
    is dropped: the winner stored the same row, and the store only saves work.

    Everything in id order, and the submissions locked first (PostgreSQL: ``FOR KEY
    SHARE``), as a submission's deletion locks it before the stored rows it cascades to:
    locking the stored rows first and the submission (the insert's foreign key check)
    second, a store and a deletion at once waited on each other until PostgreSQL stopped
    one; two stores inserting the same new rows in different orders did the same.
    """
    ids = sorted(rows)
    try:
        with ctx.db.session() as session:
            session.execute(
                select(Submission.id)
                .where(Submission.id.in_(ids))
                .order_by(Submission.id)
                .with_for_update(read=True, key_share=True)
            )
            session.execute(delete(BoardEntry).where(BoardEntry.submission_id.in_(ids)))
            session.execute(
                insert(BoardEntry),
                [
                    {
                        "submission_id": sid,
                        "task_id": task_id,
                        "source": rows[sid][0],
                        "entry": _to_stored(rows[sid][1]),
                        "digest": read.digest,
                        "read_at": read.counter,
                    }
                    for sid in ids
                ],
            )
    except IntegrityError:
        # Another request stored the same rows, or a submission was deleted meanwhile.
        logger.info("board rows of task %s were not stored: stored or deleted meanwhile", task_id)
