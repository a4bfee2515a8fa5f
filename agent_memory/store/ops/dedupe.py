"""De-duplication on write: a memory within a small cosine distance of one already in
the same exact scope refreshes that one instead of being stored twice."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent_memory.backends.base import KnnQuery
from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import integer, optional_text
from agent_memory.errors import AgentMemoryError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.encoding import encode_value
from agent_memory.schema.filters import scope_filter
from agent_memory.schema.records import NewMemory
from agent_memory.store.ops.settle import execute_writes

DEFAULT_DEDUPE_DISTANCE = 0.05
"""Cosine distance under which two texts count as the same memory. Measured with
all-MiniLM-L6-v2: re-wordings that add or drop a word or fix a typo sit at 0.01-0.05,
while different facts about the same subject start around 0.15."""

_NEIGHBOURS = 8


def _tokens(memory: NewMemory) -> tuple[str, str | None, str | None, str]:
    scope = memory.scope
    return (
        memory.namespace_token,
        encode_value(scope.agent_id) if scope.agent_id is not None else None,
        encode_value(scope.thread_id) if scope.thread_id is not None else None,
        memory.session_token,
    )


def find_duplicates(
    ctx: StoreContext, memories: Sequence[NewMemory], distance: float
) -> Operation[list[str | None]]:
    """For each memory: the id it collapses into (stored or earlier in the batch), or None."""
    assert ctx.backend is not None
    queries = [
        KnnQuery(
            scope_filter(
                m.scope, (), session=m.scope.session_id if m.durability == "session" else None
            ),
            _NEIGHBOURS,
            m.vector,
        )
        for m in memories
    ]
    results = yield from ctx.backend.knn(ctx, queries)
    out: list[str | None] = []
    for index, (memory, matches) in enumerate(zip(memories, results, strict=True)):
        wanted = _tokens(memory)
        match_id = None
        for match in matches:  # nearest first
            if match.distance > distance:
                break
            found = (
                optional_text(match.fields.get(L.F_NAMESPACE)),
                optional_text(match.fields.get(L.F_AGENT)),
                optional_text(match.fields.get(L.F_THREAD)),
                optional_text(match.fields.get(L.F_SESSION)),
            )
            if found == wanted:
                match_id = match.id
                break
        if match_id is None:
            for earlier in range(index):
                other = memories[earlier]
                if (
                    _tokens(other) == wanted
                    and float(
                        1.0
                        - np.dot(other.vector.astype(np.float64), memory.vector.astype(np.float64))
                    )
                    <= distance
                ):
                    match_id = out[earlier] or other.id
                    break
        out.append(match_id)
    return out


def refresh_existing(
    ctx: StoreContext, refreshes: Sequence[tuple[str, float]]
) -> Operation[set[str]]:
    """Refresh ``(id, importance)`` duplicates; returns the ids that no longer exist."""
    if not refreshes:
        return set()
    now = str(ctx.now_ms())
    replies = yield from execute_writes(
        ctx,
        [
            Command(("EVAL", scripts.REFRESH_DUPLICATE, "1", ctx.keys.memory(mid), now, repr(imp)))
            for mid, imp in refreshes
        ],
    )
    gone = set()
    for (mid, _), reply in zip(refreshes, replies, strict=True):
        if isinstance(reply, AgentMemoryError):
            raise reply
        if not integer(reply):
            gone.add(mid)
    return gone
