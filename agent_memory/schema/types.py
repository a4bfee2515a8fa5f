"""Value objects of the long-term memory store: scopes, items, hits and results."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

from agent_memory.errors import InvalidInputError

Durability = Literal["shared", "session"]

_SCOPE_FIELDS = ("namespace", "agent_id", "thread_id", "session_id")
MAX_SCOPE_VALUE_CHARS = 512


def _check_scope_value(name: str, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidInputError(
            f"Scope.{name} must be a string or None, got {type(value).__name__}", field=name
        )
    if value == "":
        raise InvalidInputError(f"Scope.{name} must not be empty (use None)", field=name)
    if len(value) > MAX_SCOPE_VALUE_CHARS:
        raise InvalidInputError(
            f"Scope.{name} is longer than {MAX_SCOPE_VALUE_CHARS} characters", field=name
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"Scope.{name} is not valid Unicode: {exc}", field=name) from exc


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a memory belongs and who may see it.

    Attributes:
        namespace: hard tenant boundary. A recall, list or forget only ever touches the
            namespace it names; ``None`` is the default namespace, itself a boundary
            (it never sees memories of a named namespace).
        agent_id: the agent the memory belongs to; ``None`` in a query means any agent.
        thread_id: the conversation thread; ``None`` in a query means any thread.
        session_id: session-scoped memories are visible only to recalls that pass the
            same session id. A recall with a session id searches the shared pool and
            that session separately and merges them.

    Any Unicode string (up to 512 characters) is a valid value, including filter
    metacharacters: values are encoded before they reach a query, so they can never
    widen a filter.
    """

    namespace: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        for name in _SCOPE_FIELDS:
            _check_scope_value(name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """A stored memory as read back from the server.

    Timestamps are epoch milliseconds (the BetterDB layout). ``expires_at`` is ``None``
    for a memory without TTL. ``exposures`` counts how often recalls returned it
    (observability only), ``utility`` is its learned usefulness in [-1, 1] (0 when
    unknown), ``feedback`` the manual value set by ``feedback()``, and ``retention`` its
    retention under the store's forgetting policy (1 without forgetting); memories below
    the retention threshold are suppressed from recall. ``sequence`` orders memories
    written in the same millisecond: the store numbers its writes in the order they
    reach the server (0 for memories written by another library).
    """

    id: str
    content: str
    importance: float
    tags: tuple[str, ...]
    scope: Scope
    created_at: int
    last_accessed_at: int
    access_count: int
    durability: Durability = "shared"
    source: str | None = None
    subject: str | None = None
    date: str | None = None
    expires_at: int | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exposures: int = 0
    utility: float = 0.0
    feedback: float | None = None
    retention: float = 1.0
    sequence: int = 0


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One recalled memory.

    Attributes:
        item: the memory.
        score: the composite ranking score (higher is better).
        distance: cosine distance between query and memory, 0 (same direction) to 2.
            For a memory found only by the lexical channel (``matched ==
            {"lexical"}``) it is a lower bound: the largest distance among the semantic
            candidates of the same recall (the memory was not among them).
        similarity: cosine similarity, ``1 - distance`` (-1 to 1).
        matched: the channels that found the memory: ``"semantic"`` (among the nearest
            vectors) and/or ``"lexical"`` (shares analysed terms with the query).
        lexical_score: BM25 of the memory's text for the query (0 without shared terms,
            and always 0 when hybrid recall is off).
    """

    item: MemoryItem
    score: float
    distance: float
    similarity: float
    matched: frozenset[str] = frozenset({"semantic"})
    lexical_score: float = 0.0


class RecallResult(Sequence[MemoryHit]):
    """The hits of one recall, best first, with the ``selection_id`` naming this recall.

    Behaves as an immutable sequence of :class:`MemoryHit`.

    Attributes:
        selection_id: id to pass to ``complete()`` with the outcome of this recall.
        candidates: how many candidates the search returned before the threshold.
        nearest_distance: distance of the nearest candidate (``None`` when none).
        near_miss: nothing passed the threshold but the nearest candidate lay within
            twice of it (a sign of a mis-set threshold).
        backend: the backend that served the recall.
    """

    __slots__ = ("_hits", "backend", "candidates", "near_miss", "nearest_distance", "selection_id")

    def __init__(
        self,
        hits: Sequence[MemoryHit],
        *,
        selection_id: str,
        candidates: int,
        nearest_distance: float | None,
        near_miss: bool,
        backend: str,
    ) -> None:
        self._hits = tuple(hits)
        self.selection_id = selection_id
        self.candidates = candidates
        self.nearest_distance = nearest_distance
        self.near_miss = near_miss
        self.backend = backend

    @overload
    def __getitem__(self, index: int) -> MemoryHit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[MemoryHit]: ...
    def __getitem__(self, index: int | slice) -> MemoryHit | Sequence[MemoryHit]:
        return self._hits[index]

    def __len__(self) -> int:
        return len(self._hits)

    def __iter__(self) -> Iterator[MemoryHit]:
        return iter(self._hits)

    def __repr__(self) -> str:
        return (
            f"RecallResult(hits={len(self._hits)}, selection_id={self.selection_id!r}, "
            f"backend={self.backend!r})"
        )

    @property
    def items(self) -> tuple[MemoryItem, ...]:
        """The recalled memories, best first."""
        return tuple(hit.item for hit in self._hits)


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of :meth:`MemoryStore.list`: ``items`` and the ``total`` matching."""

    items: tuple[MemoryItem, ...]
    total: int


@dataclass(frozen=True, slots=True)
class RecallWeights:
    """Weights of the composite score; each must be finite and >= 0, and the first
    three must not all be 0.

    ``score = similarity * rel + recency * 2^(-age/half_life) + importance * importance``
    where ``rel`` is the hybrid relevance in [0, 1]: ``(1 - lexical) * mm(1 - d) +
    lexical * mm(bm25)`` over the candidate pool (min-max normalised channels, see
    :mod:`agent_memory.store.fusion`). ``lexical`` (0..1) is the lexical channel's share;
    ``lexical=0`` turns hybrid recall off: then ``rel = 1 - d/2`` and no lexical search
    is sent (the BetterDB formula; pass ``RecallWeights(0.6, 0.25, 0.15, lexical=0)``
    for BetterDB's exact ranking).

    The defaults 0.75 / 0.10 / 0.15 (half-life 7 days) were chosen on LoCoMo
    (``benchmarks/quality/RESULTS.md``): recency 0.10 costs at most 0.001 of
    recall@10 on a months-long history, 0.25 costs 0.044. The lexical share 0.6 is the
    one leave-one-conversation-out selection picks in 4 of 5 folds (MRR@10 0.471
    against 0.441 with 0.5; ``benchmarks/quality/PRECISION.md``).

    ``utility`` weighs learned usefulness (only with ``reinforcement=True``) and
    ``labels`` the share of the query's labeler labels a memory carries; both only
    reorder memories that passed the gate.
    """

    similarity: float = 0.75
    recency: float = 0.10
    importance: float = 0.15
    utility: float = 0.2
    labels: float = 0.1
    lexical: float = 0.6

    def __post_init__(self) -> None:
        values = (self.similarity, self.recency, self.importance)
        extra = (self.utility, self.labels)
        names = ("similarity", "recency", "importance", "utility", "labels")
        for name, value in zip(names, values + extra, strict=True):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidInputError(f"weight {name} must be a number", field="weights")
            if not math.isfinite(value) or value < 0:
                raise InvalidInputError(
                    f"weight {name} must be finite and >= 0, got {value}", field="weights"
                )
        if sum(values) <= 0:
            raise InvalidInputError("at least one weight must be > 0", field="weights")
        lexical = self.lexical
        if isinstance(lexical, bool) or not isinstance(lexical, (int, float)):
            raise InvalidInputError("weight lexical must be a number", field="weights")
        if not 0.0 <= lexical <= 1.0:
            raise InvalidInputError(
                f"weight lexical must be within [0, 1], got {lexical}", field="weights"
            )


#: Rank by cosine similarity only: no recency, importance, utility, labels or lexical
#: channel (the order the frameworks' own vector stores give).
SIMILARITY_ONLY = RecallWeights(
    similarity=1.0, recency=0.0, importance=0.0, utility=0.0, labels=0.0, lexical=0.0
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact extracted by ``consolidate(mode="facts")``.

    Attributes:
        subject: what the fact is about; reconciliation matches subjects ignoring case
            and surrounding space.
        statement: the fact itself.
        date: when it was stated (ISO date or datetime), used to pick the newest.
        tombstone: retract the subject instead of stating something about it.
    """

    subject: str
    statement: str = ""
    date: str | None = None
    tombstone: bool = False
