"""Exact cosine KNN computed client-side, for servers without a search module.

The ids of each namespace live in a sorted set scored by expiry time
(``{name}:__mem_reg:{ns}``); the vectors and filter tokens of those ids are read once
and kept in a per-store mirror, refreshed incrementally: a recall reads the namespace's
change tokens (membership and vectors, :mod:`agent_memory.schema.versions`; one round
trip), re-reads the live id list only when membership changed and fetches only ids it
has not seen (skipped when nothing changed), computes exact cosine distances with numpy,
and reads the returned fields of the nearest candidates (one round trip). With a warm
mirror the tokens travel with that read, and the search is redone on a refreshed mirror
only when they moved: the search of a namespace nobody wrote to since costs one round
trip. Writes that change a stored vector or filter field change the epoch token, which drops the mirror
of that namespace. The tokens are random, so a server that restarted empty or from an
older snapshot is never mistaken for the state the mirror holds. Results and ranking
rules are those of the FT backend.

The mirror also holds each memory's hashed term vector (``lex``; zeros for a memory
without one): a lexical query ranks the namespace by exact inner product, keeps positive
scores and breaks ties by id, as the FT backend's ``FLAT`` ``IP`` field does. The
scoring and selection over a namespace's snapshot live in
:mod:`agent_memory.backends.snapshot`; this module keeps the mirrors current.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnMatch, KnnQuery, SearchOutcome
from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import (
    Unreadable,
    damaged,
    fields_of,
    read_many,
    read_many_replies,
    unreadable,
)
from agent_memory.backends.snapshot import Entry, Snapshot, lexical_top, nearest
from agent_memory.backends.upgrade import ensure_lexical
from agent_memory.core.effects import (
    Command,
    InFlight,
    Operation,
    command,
    execute_batch,
    in_turns,
    pause,
)
from agent_memory.core.replies import (
    lenient_text,
    optional_text,
    raw_bytes,
    text,
)
from agent_memory.errors import AgentMemoryError, ReplyParseError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema.lexical import LEX_DIM, VECTOR_FORM
from agent_memory.schema.records import blob_vector
from agent_memory.schema.versions import fresh_token

_MIRROR_FIELDS = (L.F_VECTOR, L.F_LEX, *L.FILTER_FIELDS)
_FETCH_CHUNK = 2000
# A recall finding another one refreshing its namespace's mirror waits for it rather
# than reading every vector too; past this deadline it refreshes itself.
_LOAD_WAIT_SECONDS = 10.0
_PARSE_TURN = 200  # vectors parsed per event-loop turn while a mirror loads
_LIST_TURN = 4096  # registry members parsed per event-loop turn (~1 ms)
_NO_LEX = np.zeros(LEX_DIM, dtype=np.float32)
# Extra round trips a recall spends replacing candidates found gone (deleted or evicted
# outside the library): each marks what it found dead in the mirror, so the next recall
# picks past them from the start.
_GHOST_ROUNDS = 3
# Namespaces whose mirrors a store keeps (least recently recalled dropped first): a
# store recalling in many namespaces (one per user, say) keeps the busiest only.
MAX_MIRRORS = 64

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _NamespaceMirror:
    epoch: str | None = None  # change tokens (agent_memory.schema.versions)
    version: str | None = None
    snapshot: Snapshot | None = None
    # Listed records left out under this epoch: those reported unreadable, and those a
    # recall found gone (deleted or evicted outside the library, so no change token
    # moved). A record changes, or comes back under its id, only with the epoch
    # (agent_memory.schema.versions), so each is read and reported once.
    skipped: set[str] = field(default_factory=set)
    loading: InFlight = field(default_factory=InFlight)  # a refresh under way
    # Makes each change of the fields above one step: a refresh publishing its snapshot
    # checks the epoch and assigns under it, so a thread dropping the mirror for a new
    # epoch meanwhile cannot leave the old snapshot under the new epoch. Never held
    # across a round trip or the scoring.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def entries(self) -> Mapping[str, int]:
        """The mirrored memories (their rows), those of the last listing only."""
        return self.snapshot.row_of if self.snapshot is not None else {}


class PortableBackend:
    """Exact KNN over a client-side mirror of the stored vectors.

    Safe to share between threads and coroutines: each recall works on an immutable
    snapshot, and a mirror refresh only ever replaces whole objects (checking the epoch
    and publishing under the mirror's lock).
    """

    def __init__(self, name: str = "portable", max_mirrors: int = MAX_MIRRORS) -> None:
        self.name = name
        self.max_mirrors = max_mirrors
        self._mirrors: dict[str, _NamespaceMirror] = {}  # least recently used first
        self._lock = threading.Lock()  # the order of ``_mirrors``

    def _mirror(self, ns: str) -> _NamespaceMirror:
        """The mirror of ``ns``, now the most recently used; past ``max_mirrors`` the
        least recently used is dropped (its next recall loads it again)."""
        with self._lock:
            mirror = self._mirrors.pop(ns, None) or _NamespaceMirror()
            self._mirrors[ns] = mirror
            while len(self._mirrors) > max(1, self.max_mirrors):
                del self._mirrors[next(iter(self._mirrors))]
            return mirror

    def _forget_mirror(self, ns: str, mirror: _NamespaceMirror) -> None:
        with self._lock:
            if self._mirrors.get(ns) is mirror:
                del self._mirrors[ns]

    def prepare(self, ctx: StoreContext) -> Operation[bool]:
        """No index to create; records the analyzer (backfilling ``lex`` and the term
        statistics of a store written before hybrid recall or by a full-text server)."""
        ctx.lexical_form = VECTOR_FORM  # the mirror searches the hashed vectors
        yield from ensure_lexical(ctx)
        return False

    def drop(self, ctx: StoreContext) -> Operation[None]:
        with self._lock:
            self._mirrors.clear()
        return None
        yield

    def _token_reads(self, ctx: StoreContext, namespaces: Sequence[str]) -> list[Command]:
        """Reads of each namespace's vector epoch and membership version."""
        return [
            command(name, key)
            for ns in namespaces
            for name, key in (("GET", ctx.keys.epoch(ns)), ("GET", ctx.keys.registry_version(ns)))
        ]

    def _held(self, namespaces: Sequence[str]) -> dict[str, Snapshot] | None:
        """The mirrored snapshots of all ``namespaces`` (``None``: one is not mirrored)."""
        held: dict[str, Snapshot] = {}
        for ns in namespaces:
            mirror = self._mirrors.get(ns)
            if mirror is None or mirror.snapshot is None:
                return None
            held[ns] = mirror.snapshot
        return held

    def _still_current(
        self,
        namespaces: Sequence[str],
        held: dict[str, Snapshot],
        tokens: Sequence[tuple[str, str]],
    ) -> bool:
        """Whether the tokens just read are those of the snapshots a search used (the
        mirror's fields read in one step: a snapshot published between two reads would
        pass an old snapshot for the new version)."""
        for ns, (epoch, version) in zip(namespaces, tokens, strict=True):
            mirror = self._mirrors.get(ns)
            if mirror is None:
                return False
            with mirror.lock:
                current = (
                    mirror.snapshot is held[ns]
                    and mirror.epoch == epoch
                    and mirror.version == version
                )
            if not current:
                return False
        return True

    def _sync(
        self,
        ctx: StoreContext,
        namespaces: Sequence[str],
        tokens: Sequence[tuple[str, str]] | None = None,
    ) -> Operation[dict[str, Snapshot]]:
        """Bring each namespace's mirror up to date; returns their snapshots.

        One round trip reads the namespace's membership version and vector epoch (unless
        ``tokens`` holds them, just read: :func:`_tokens`); the id list is re-read only when membership
        changed, and vectors only for ids not seen before (or all of them after the
        epoch moved).
        """
        if tokens is None:
            counters = yield from execute_batch(self._token_reads(ctx, namespaces))
            tokens = _tokens(ctx, namespaces, counters)
        snapshots: dict[str, Snapshot] = {}
        for ns, (epoch, version) in zip(namespaces, tokens, strict=True):
            mirror = self._mirror(ns)
            if mirror.epoch != epoch:
                with mirror.lock:
                    if mirror.epoch != epoch:
                        mirror.snapshot = None
                        mirror.skipped = set()
                        mirror.epoch = epoch

            def same_epoch(m: _NamespaceMirror = mirror, e: str = epoch) -> bool:
                return m.epoch == e

            def stale(m: _NamespaceMirror = mirror, v: str = version) -> bool:
                return m.snapshot is None or m.version != v

            while True:
                yield from mirror.loading.wait(same_epoch)  # one recall reads for all
                with mirror.lock:  # one step: see _still_current
                    current, current_version = mirror.snapshot, mirror.version
                if current is not None and current_version == version:
                    snapshots[ns] = current
                    break
                claimed = mirror.loading.claim(stale, deadline=_LOAD_WAIT_SECONDS)
                if not claimed and same_epoch():
                    # Another thread claimed it after the wait (wait for that one), or
                    # it refreshed the mirror meanwhile (the check above finds it).
                    continue
                refresh = self._refresh(ctx, ns, mirror, epoch, version)
                # Unclaimed, the refresh under way is of an older epoch: do this one too.
                snapshots[ns] = yield from (
                    mirror.loading.claimed(refresh)
                    if claimed
                    else mirror.loading.run(refresh, deadline=_LOAD_WAIT_SECONDS)
                )
                if not snapshots[ns].row_of and not mirror.skipped:
                    self._forget_mirror(ns, mirror)  # nothing to keep: no memory listed
                break
        return snapshots

    def _refresh(
        self, ctx: StoreContext, ns: str, mirror: _NamespaceMirror, epoch: str, version: str
    ) -> Operation[Snapshot]:
        """The namespace's snapshot from a fresh listing of its registry, built on the
        mirrored one: only ids it does not hold are read, and its rows are reused. It is
        published with ``version`` (the membership version read before the listing)
        unless the epoch moved meanwhile, before the refresh's mark is cleared: a thread
        waiting for it then finds it current."""
        base = mirror.snapshot or Snapshot.empty(ctx.dim or 0)
        listing = yield from execute_batch(
            [
                command(
                    "ZRANGEBYSCORE", ctx.keys.registry(ns), f"({ctx.now_ms()}", "+inf", "WITHSCORES"
                )
            ]
        )
        if isinstance(listing[0], AgentMemoryError):
            raise listing[0]
        listed, expires, rows, bad = yield from _read_listing(listing[0], base)
        skipped = _still_listed(mirror.skipped, listed, bad)
        for member in bad:
            if member not in skipped:
                unreadable(ctx, member, "its registry entry is not valid UTF-8")
        skipped.update(bad)
        missing = [listed[i] for i in np.flatnonzero(rows < 0).tolist()]
        added = yield from self._fetch(ctx, [m for m in missing if m not in skipped], skipped)
        snapshot = yield from base.updated(listed, expires, rows, added)
        with mirror.lock:
            if mirror.epoch == epoch:
                mirror.snapshot = snapshot
                mirror.version = version
                mirror.skipped = skipped
        return snapshot

    @staticmethod
    def _fetch(ctx: StoreContext, ids: list[str], skipped: set[str]) -> Operation[dict[str, Entry]]:
        """The entries of ``ids``; those unreadable are reported and added to ``skipped``,
        those gone since the listing left out."""
        entries: dict[str, Entry] = {}
        for start in range(0, len(ids), _FETCH_CHUNK):
            chunk = ids[start : start + _FETCH_CHUNK]
            fetched = yield from execute_batch(
                [
                    Command(("HMGET", ctx.keys.memory(m), *_MIRROR_FIELDS), binary=True)
                    for m in chunk
                ]
            )
            for n, (memory_id, values) in enumerate(zip(chunk, fetched, strict=True)):
                if n and n % _PARSE_TURN == 0:
                    yield from pause()  # thousands of vectors: parsed in short turns
                entry = _fetched_entry(ctx, memory_id, values)
                if isinstance(entry, str):
                    unreadable(ctx, memory_id, entry)
                    skipped.add(memory_id)
                elif entry is not None:
                    entries[memory_id] = entry
        return entries

    def knn(
        self, ctx: StoreContext, queries: Sequence[KnnQuery]
    ) -> Operation[list[list[KnnMatch]]]:
        outcome = yield from self.search(ctx, queries, ())
        return outcome.matches

    def search(
        self, ctx: StoreContext, queries: Sequence[KnnQuery], extra: Sequence[Command]
    ) -> Operation[SearchOutcome]:
        """Exact KNN over the mirror, then one round trip for the candidates' fields.

        When every namespace is mirrored already, the change tokens travel in that same
        round trip: if they moved, the mirror is refreshed and the search runs again on
        the new snapshot, so a recall never answers from a snapshot older than the
        tokens it read (two round trips, as with a cold mirror), and a store nobody
        wrote to since answers in one.
        """
        namespaces = sorted({q.filter.namespace for q in queries})
        held = self._held(namespaces)
        tokens: list[tuple[str, str]] | None = None
        if held is not None:
            token_reads = self._token_reads(ctx, namespaces)
            picked = yield from self._pick(ctx, held, queries)
            reads, wanted, names = self._reads(ctx, queries, picked)
            replies = yield from execute_batch([*token_reads, *reads, *extra])
            tokens = _tokens(ctx, namespaces, replies[: len(token_reads)])
            if self._still_current(namespaces, held, tokens):
                fetched = replies[len(token_reads) :]
                outcome = yield from self._outcome(
                    ctx, held, queries, picked, wanted, names, fetched, len(reads)
                )
                return outcome
        snapshots = yield from self._sync(ctx, namespaces, tokens)
        picked = yield from self._pick(ctx, snapshots, queries)
        reads, wanted, names = self._reads(ctx, queries, picked)
        fetched = yield from execute_batch([*reads, *extra])
        outcome = yield from self._outcome(
            ctx, snapshots, queries, picked, wanted, names, fetched, len(reads)
        )
        return outcome

    def _pick(
        self, ctx: StoreContext, snapshots: dict[str, Snapshot], queries: Sequence[KnnQuery]
    ) -> Operation[list[list[tuple[str, float]]]]:
        """Each query's nearest (or best lexical) memories of its namespace's snapshot,
        in short event-loop turns (:meth:`Snapshot.scores` pauses before each product)."""
        now = ctx.now_ms()
        picked: list[list[tuple[str, float]]] = []
        # A recall's pools share their query vectors: score each namespace once per vector.
        scored: dict[tuple[str, bool, int], NDArray[np.float64]] = {}
        for q in queries:
            snap = snapshots[q.filter.namespace]
            mask = snap.mask(q.filter, now)
            if q.lexical and q.terms:
                mask &= snap.holding(q.terms)  # only where the query's rarest terms are
            rows = snap.selected(mask)
            if rows.size == 0:
                picked.append([])
                continue
            key = (q.filter.namespace, q.lexical, id(q.vector))
            if key not in scored:
                scored[key] = yield from snap.scores(q)
            chosen = lexical_top if q.lexical else nearest
            picked.append(chosen(snap, rows, q.k, scored[key][rows]))
        return picked

    @staticmethod
    def _reads(
        ctx: StoreContext, queries: Sequence[KnnQuery], picked: list[list[tuple[str, float]]]
    ) -> tuple[list[Command], list[str], tuple[str, ...]]:
        """The reads of the picked memories' fields: commands, ids and field names."""
        wanted = sorted({memory_id for chosen in picked for memory_id, _ in chosen})
        names = tuple(dict.fromkeys(name for q in queries for name in q.fields))
        return read_many(ctx, [ctx.keys.memory(m) for m in wanted], names), wanted, names

    def _outcome(
        self,
        ctx: StoreContext,
        snapshots: dict[str, Snapshot],
        queries: Sequence[KnnQuery],
        picked: list[list[tuple[str, float]]],
        wanted: list[str],
        names: tuple[str, ...],
        fetched: Sequence[Any],
        reads: int,
    ) -> Operation[SearchOutcome]:
        """The matches with their fields. Candidates found gone (deleted or evicted
        outside the library, which moves no change token) are marked dead in the mirror,
        reported, and a query they cost a hit picks again, on at most ``_GHOST_ROUNDS``
        more round trips: it returns what the FT backend's index would."""
        fields_by_id: dict[str, dict[str, Any]] = {}
        gone = yield from _parsed_fields(ctx, wanted, names, fetched[:reads], fields_by_id)
        for round_ in range(_GHOST_ROUNDS + 1):
            if not gone:
                break
            snapshots = self._mark_gone(ctx, snapshots, gone)
            short = [
                i for i, q in enumerate(queries)
                if len(picked[i]) == q.k and any(m in gone for m, _ in picked[i])
            ]  # fmt: skip
            if not short or round_ == _GHOST_ROUNDS:
                break
            again = yield from self._pick(ctx, snapshots, [queries[i] for i in short])
            for i, chosen in zip(short, again, strict=True):
                picked[i] = chosen
            more = sorted({m for c in again for m, _ in c if m not in fields_by_id} - gone)
            if not more:
                break
            replies = yield from execute_batch(
                read_many(ctx, [ctx.keys.memory(m) for m in more], names)
            )
            gone = yield from _parsed_fields(ctx, more, names, replies, fields_by_id)
        matches = [
            [KnnMatch(m, d, fields_by_id[m]) for m, d in chosen if m in fields_by_id]
            for chosen in picked
        ]
        return SearchOutcome(matches, list(fetched[reads:]))

    def _mark_gone(
        self, ctx: StoreContext, snapshots: dict[str, Snapshot], gone: set[str]
    ) -> dict[str, Snapshot]:
        """The snapshots with the rows of the ``gone`` memories dead, made the mirrors'
        (unless a refresh replaced them since) and the ids left out of the mirrors'
        refreshes; each is logged and counted (``ghost_entries``)."""
        logger.warning(
            "store %s: %d recall candidates name no stored memory (deleted or evicted "
            "outside the library; prune() unregisters them): skipped, e.g. %s",
            ctx.keys.name, len(gone), sorted(gone)[:5],
        )  # fmt: skip
        ctx.count("ghost_entries", len(gone))
        marked: dict[str, Snapshot] = {}
        for ns, snap in snapshots.items():
            rows = [row for m in gone if (row := snap.row_of.get(m)) is not None]
            marked[ns] = snap.without(rows) if rows else snap
            mirror = self._mirrors.get(ns)
            if not rows or mirror is None:
                continue
            with mirror.lock:
                if mirror.snapshot is snap:
                    mirror.snapshot = marked[ns]
                    mirror.skipped = mirror.skipped | {snap.ids[row] for row in rows}
        return marked


def _tokens(
    ctx: StoreContext, namespaces: Sequence[str], counters: Sequence[Any]
) -> list[tuple[str, str]]:
    """Each namespace's (epoch, membership version) from the replies of
    :meth:`PortableBackend._token_reads` (``""``: never written). A token another writer
    damaged (its key holds another type, or a value that is not UTF-8) is logged and
    counted (``corrupt_records``) and reads as a fresh token no mirror holds: the mirror
    of that namespace is refreshed on each recall until a write replaces it, instead of
    every recall failing (any other error is raised)."""
    for reply in counters:
        if isinstance(reply, AgentMemoryError) and not isinstance(reply, WrongTypeError):
            raise reply
    out: list[str] = []
    for i, reply in enumerate(counters):
        try:
            if isinstance(reply, AgentMemoryError):
                raise reply
            out.append(optional_text(reply) or "")
        except (WrongTypeError, ReplyParseError) as exc:
            key = ("epoch", "membership version")[i % 2]
            logger.warning(
                "store %s: the %s token of namespace %s is damaged (%s); its mirror is "
                "refreshed on each recall until a write replaces it",
                ctx.keys.name, key, namespaces[i // 2], exc,
            )  # fmt: skip
            ctx.count("corrupt_records")
            out.append(fresh_token())
    return [(out[2 * i], out[2 * i + 1]) for i in range(len(namespaces))]


def _parsed_fields(
    ctx: StoreContext,
    wanted: list[str],
    names: tuple[str, ...],
    replies: Sequence[Any],
    into: dict[str, dict[str, Any]],
) -> Operation[set[str]]:
    """Sub-operation: the fields of ``wanted`` from the replies of :func:`read_many`,
    added to ``into``, parsed in short event-loop turns; returns the ids found gone
    (records that are not hashes are reported, and neither kept nor gone)."""
    gone: set[str] = set()
    values_of = read_many_replies(ctx, replies, len(wanted))
    for n, part in enumerate(in_turns(list(zip(wanted, values_of, strict=True)))):
        if n:
            yield from pause()
        for memory_id, values in part:
            if isinstance(values, Unreadable):
                unreadable(ctx, memory_id, "its key holds no hash")
                continue
            fields = fields_of(values, names)
            if fields:
                into[memory_id] = fields
            else:  # deleted or expired since the mirror was read
                gone.add(memory_id)
    return gone


def _read_listing(
    reply: Any, base: Snapshot
) -> Operation[tuple[list[str], NDArray[np.float64], NDArray[np.intp], list[str]]]:
    """Sub-operation: ``ZRANGEBYSCORE ... WITHSCORES``, whatever the reply's shape, as
    its ids, their expiry scores and their rows in ``base`` (-1: not held), parsed
    ``_LIST_TURN`` members per event-loop turn; and the members that are not valid UTF-8
    (no memory of this library: left out)."""
    members, scores = _pairs(reply)
    listed: list[str] = []
    expires: list[NDArray[np.float64]] = []
    rows: list[NDArray[np.intp]] = []
    bad: list[str] = []
    for start in range(0, len(members), _LIST_TURN):
        if start:
            yield from pause()
        part = _texts(members[start : start + _LIST_TURN])
        stamps = _stamps(scores[start : start + _LIST_TURN])
        if None in part:
            bad += [repr(m)[:40] for m, t in zip(members[start:], part, strict=False) if t is None]
            stamps = stamps[[t is not None for t in part]]
        ids = [t for t in part if t is not None]
        listed += ids
        expires.append(stamps)
        rows.append(base.locate(ids))
    if not members:
        return listed, np.zeros(0), np.zeros(0, np.intp), bad
    return listed, np.concatenate(expires), np.concatenate(rows), bad


def _pairs(reply: Any) -> tuple[Sequence[Any], Sequence[Any]]:
    """The members and scores of a ``WITHSCORES`` reply: flat (RESP2) or pairs (RESP3)."""
    items = list(reply or [])
    if items and isinstance(items[0], (list, tuple)):
        members, scores = zip(*items, strict=True) if items else ((), ())
        return members, scores
    return items[0::2], items[1::2][: len(items) // 2]


def _texts(members: Sequence[Any]) -> list[str | None]:
    """``members`` as text (``None``: not UTF-8); bulk-decoded in the common cases, as
    tens of thousands of them are on a listing's path."""
    try:
        return list(map(bytes.decode, members))
    except (TypeError, UnicodeDecodeError):
        if all(type(m) is str for m in members):
            return list(members)
        return [lenient_text(m) for m in members]


def _stamps(scores: Sequence[Any]) -> NDArray[np.float64]:
    try:
        return np.fromiter(map(float, scores), np.float64, len(scores))
    except (TypeError, ValueError):
        return np.array([_score(s) for s in scores], dtype=np.float64)


def _still_listed(skipped: set[str], listed: list[str], bad: list[str]) -> set[str]:
    """The ``skipped`` records the listing still holds (a copy: a refresh races others)."""
    if not skipped:
        return set()
    return skipped & {*listed, *bad}


def _score(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    raw = text(value).lower()
    return math.inf if raw in {"inf", "+inf"} else float(raw)


def _fetched_entry(ctx: StoreContext, memory_id: str, values: Any) -> Entry | str | None:
    """:func:`_entry` of an ``HMGET`` reply, or why the record is unreadable."""
    if isinstance(values, AgentMemoryError):
        if not isinstance(values, WrongTypeError):
            raise values
        return "its key holds no hash"
    try:
        return _entry(ctx, memory_id, values)
    except ReplyParseError as exc:
        return str(exc)


def _entry(ctx: StoreContext, memory_id: str, values: Any) -> Entry | None:
    """A memory's mirror entry; ``None`` when it is gone.

    Raises:
        ReplyParseError: its vector is not one of the store's width (not searchable,
            as on FT servers: the caller reports it).
    """
    if not values or values[0] is None:
        return None  # expired or deleted since the registry was read
    vector = blob_vector(raw_bytes(values[0]), ctx.dim)
    lex = _NO_LEX
    if values[1] is not None:
        try:
            lex = blob_vector(raw_bytes(values[1]), LEX_DIM)
        except ReplyParseError as exc:  # found by the semantic channel only, as on FT
            outcome = "only the semantic search finds it"
            damaged(ctx, memory_id, "its term vector", str(exc), outcome=outcome)
    # A corrupt token matches no filter value, nothing more (as on FT servers).
    tokens = {name: lenient_text(v) for name, v in zip(L.FILTER_FIELDS, values[2:], strict=True)}
    return Entry(vector, tokens, lex)
