"""The guarded write of ``update`` and ``expire_many``: new fields for a memory, applied
only while it is still the memory they were computed from.

Both read a memory, then write to it and to what depends on where it lives (the sorted
sets that score it by its expiry, its namespace's term statistics). A write under the
same id landing in between (an import, ``remember(..., id=...)``) replaces the memory,
possibly in another namespace, agent or thread: the guard sees its location or its
write ``seq`` changed, and the script writes nothing (see
:data:`~agent_memory.schema.scripts.UPDATE_GUARDED`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.core.effects import Command
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.store.ops.forget import expected_value

# What a write under the memory's id changes: where the memory is listed, and the write
# number every write takes (created_at may repeat: same millisecond, or an import).
IDENTITY = (L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SEQ)


def guarded_update(
    key: str,
    memory_id: str,
    read: Mapping[str, Any],
    *,
    guard: Sequence[str] = IDENTITY,
    ttl_ms: int = 0,
    writes: Sequence[str | bytes] = (),
    term_stats: str | None = None,
    terms: Mapping[str, int] | None = None,
    listings: Sequence[str] = (),
    score: int | None = None,
) -> Command:
    """The script writing ``writes`` (field, value, ...) to the memory at ``key`` (and
    its TTL when ``ttl_ms``) only while the fields ``guard`` hold what ``read`` holds
    (raw values; a field missing from it must be absent). In the same step, on a
    standalone server: ``terms`` added to ``term_stats``, ``listings`` re-scored to
    ``score``. The reply: 1 written, 0 the memory is gone, -1 it changed."""
    if listings and score is None:
        raise ValueError("re-scored listings need their score")
    traded = sorted((terms or {}).items()) if term_stats is not None else []
    return Command(
        (
            "EVAL", scripts.UPDATE_GUARDED,
            str(1 + (term_stats is not None) + len(listings)),
            key, *((term_stats,) if term_stats is not None else ()), *listings,
            str(ttl_ms), str(len(listings)), str(score if score is not None else 0), memory_id,
            str(len(guard)), *guard, *(expected_value(read.get(name)) for name in guard),
            str(len(traded)), *(x for name, amount in traded for x in (name, str(amount))),
            *writes,
        )
    )  # fmt: skip


__all__ = ["IDENTITY", "guarded_update"]
