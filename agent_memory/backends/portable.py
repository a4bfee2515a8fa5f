"""Exact cosine KNN computed client-side, for servers without a search module.

The ids of each namespace live in a sorted set scored by expiry time
(``{name}:__mem_reg:{ns}``); the vectors and filter tokens of those ids are read once
and kept in a per-store mirror, refreshed incrementally: a recall reads the live id list
and the namespace's epoch counter (one round trip), fetches only ids it has not seen
(one round trip, skipped when nothing is new), computes exact cosine distances with
numpy, and reads the returned fields of the nearest candidates (one round trip). Writes
that change a stored vector or filter field bump the epoch, which drops the mirror of
that namespace. Results and ranking rules are those of the FT backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnMatch, KnnQuery
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.core.replies import integer, optional_text, raw_bytes, text
from agent_memory.errors import AgentMemoryError, ReplyParseError
from agent_memory.store import layout as L
from agent_memory.store.context import StoreContext
from agent_memory.store.filters import MemoryFilter
from agent_memory.store.records import blob_vector
from agent_memory.store.scoring import cosine_distances

_MIRROR_FIELDS = (L.F_VECTOR, *L.FILTER_FIELDS)
_FETCH_CHUNK = 2000


@dataclass(slots=True)
class _Entry:
    vector: NDArray[np.float32]
    tokens: dict[str, str | None]


@dataclass(slots=True)
class _NamespaceMirror:
    epoch: int = -1
    entries: dict[str, _Entry] = field(default_factory=dict)
    ids: tuple[str, ...] = ()
    matrix: NDArray[np.float32] | None = None
    columns: dict[str, NDArray[Any]] = field(default_factory=dict)

    def rebuild(self, ids: tuple[str, ...], dim: int) -> None:
        self.ids = ids
        if ids:
            self.matrix = np.stack([self.entries[i].vector for i in ids])
        else:
            self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.columns = {
            name: np.array([self.entries[i].tokens.get(name) for i in ids], dtype=object)
            for name in L.FILTER_FIELDS
        }

    def mask(self, flt: MemoryFilter) -> NDArray[np.bool_]:
        mask = np.ones(len(self.ids), dtype=bool)
        for value, name in (
            (flt.session, L.F_SESSION),
            (flt.agent, L.F_AGENT),
            (flt.thread, L.F_THREAD),
        ):
            if value is not None:
                mask &= self.columns[name] == value
        if flt.tags or flt.sources is not None or flt.exclude_sources:
            rows = np.nonzero(mask)[0]
            for row in rows:
                tokens = self.entries[self.ids[row]].tokens
                if not flt.matches(tokens):
                    mask[row] = False
        return mask


class PortableBackend:
    """Exact KNN over a client-side mirror of the stored vectors."""

    def __init__(self, name: str = "portable") -> None:
        self.name = name
        self._mirrors: dict[str, _NamespaceMirror] = {}

    def prepare(self, ctx: StoreContext) -> Operation[bool]:
        return False
        yield  # an operation without server work

    def drop(self, ctx: StoreContext) -> Operation[None]:
        self._mirrors.clear()
        return None
        yield

    def _sync(self, ctx: StoreContext, namespaces: Sequence[str]) -> Operation[None]:
        now = ctx.now_ms()
        listing = []
        for ns in namespaces:
            listing.append(Command(("ZRANGEBYSCORE", ctx.keys.registry(ns), f"({now}", "+inf")))
            listing.append(Command(("GET", ctx.keys.epoch(ns))))
        replies = yield from execute_batch(listing)
        for reply in replies:
            if isinstance(reply, AgentMemoryError):
                raise reply
        for i, ns in enumerate(namespaces):
            ids = tuple(text(x) for x in replies[2 * i] or [])
            epoch = integer(replies[2 * i + 1]) if replies[2 * i + 1] is not None else 0
            mirror = self._mirrors.setdefault(ns, _NamespaceMirror())
            if mirror.epoch != epoch:
                mirror.entries.clear()
                mirror.ids = ()
                mirror.epoch = epoch
            missing = [memory_id for memory_id in ids if memory_id not in mirror.entries]
            for start in range(0, len(missing), _FETCH_CHUNK):
                chunk = missing[start : start + _FETCH_CHUNK]
                fetched = yield from execute_batch(
                    [
                        Command(("HMGET", ctx.keys.memory(m), *_MIRROR_FIELDS), binary=True)
                        for m in chunk
                    ]
                )
                for memory_id, values in zip(chunk, fetched, strict=True):
                    if isinstance(values, AgentMemoryError):
                        raise values
                    self._absorb(mirror, memory_id, values, ctx.dim)
            live = tuple(m for m in ids if m in mirror.entries)
            if live != mirror.ids or mirror.matrix is None:
                mirror.rebuild(live, ctx.dim or 0)

    @staticmethod
    def _absorb(mirror: _NamespaceMirror, memory_id: str, values: Any, dim: int | None) -> None:
        if not values or values[0] is None:
            return  # expired or deleted since the registry was read
        try:
            vector = blob_vector(raw_bytes(values[0]), dim)
        except ReplyParseError:
            return  # a vector of another width is not searchable, as on FT servers
        tokens = {
            name: optional_text(value)
            for name, value in zip(L.FILTER_FIELDS, values[1:], strict=True)
        }
        mirror.entries[memory_id] = _Entry(vector, tokens)

    def knn(
        self, ctx: StoreContext, queries: Sequence[KnnQuery]
    ) -> Operation[list[list[KnnMatch]]]:
        namespaces = sorted({q.filter.namespace for q in queries})
        yield from self._sync(ctx, namespaces)
        picked: list[list[tuple[str, float]]] = []
        for q in queries:
            mirror = self._mirrors[q.filter.namespace]
            rows = np.nonzero(mirror.mask(q.filter))[0]
            if rows.size == 0 or mirror.matrix is None:
                picked.append([])
                continue
            distances = cosine_distances(mirror.matrix[rows], q.vector)
            take = min(q.k, rows.size)
            best = (
                np.argpartition(distances, take - 1)[:take]
                if take < rows.size
                else np.arange(rows.size)
            )
            best = best[np.lexsort((best, distances[best]))]
            picked.append([(mirror.ids[rows[b]], float(distances[b])) for b in best])
        wanted = sorted({memory_id for chosen in picked for memory_id, _ in chosen})
        fetched = yield from execute_batch(
            [Command(("HMGET", ctx.keys.memory(m), *L.ITEM_FIELDS)) for m in wanted]
        )
        fields_by_id: dict[str, dict[str, Any]] = {}
        for memory_id, values in zip(wanted, fetched, strict=True):
            if isinstance(values, AgentMemoryError):
                raise values
            fields = {
                name: value
                for name, value in zip(L.ITEM_FIELDS, values or [], strict=False)
                if value is not None
            }
            if L.F_CONTENT in fields:
                fields_by_id[memory_id] = fields
        return [
            [KnnMatch(m, d, fields_by_id[m]) for m, d in chosen if m in fields_by_id]
            for chosen in picked
        ]
