"""Reading memory hashes in one round trip, tolerating records that are not hashes.

Shared by the backends (the portable mirror's refresh) and the store's reads.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command
from agent_memory.errors import AgentMemoryError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts

logger = logging.getLogger("agent_memory.store")


def fields_of(values: Sequence[Any] | None, names: Sequence[str] = L.ITEM_FIELDS) -> dict[str, Any]:
    """Zip an HMGET reply with its field names, dropping missing fields."""
    return {n: v for n, v in zip(names, values or [], strict=False) if v is not None}


def read_many(ctx: StoreContext, keys: Sequence[str], names: Sequence[str]) -> list[Command]:
    """Commands reading ``names`` of every hash in ``keys`` (one script on a standalone
    server, one HMGET per key on a cluster); :func:`read_many_replies` parses them."""
    if not keys:
        return []
    if ctx.settings.cluster:
        return [Command(("HMGET", key, *names)) for key in keys]
    return [Command(("EVAL", scripts.HMGET_MANY, str(len(keys)), *keys, *names))]


class Unreadable:
    """Stands for a record that could not be read: its key holds no hash."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE = Unreadable()


def read_many_replies(
    ctx: StoreContext, replies: Sequence[Any], count: int
) -> list[list[Any] | Unreadable]:
    """Each hash's HMGET values, in order, from the replies of :func:`read_many`;
    :data:`UNREADABLE` for a key that holds another type (any other error is raised)."""
    if count == 0:
        return []
    entries = list(replies) if ctx.settings.cluster else replies[0]
    if isinstance(entries, AgentMemoryError):
        raise entries
    out: list[list[Any] | Unreadable] = []
    for entry in list(entries or []):
        if isinstance(entry, AgentMemoryError) and not isinstance(entry, WrongTypeError):
            raise entry
        out.append(list(entry) if isinstance(entry, (list, tuple)) else UNREADABLE)
    return out


def unreadable(ctx: StoreContext, memory_id: str, why: object) -> None:
    """Log and count a stored record the store cannot read (it is skipped)."""
    logger.warning("memory %s of store %s is unreadable: %s", memory_id, ctx.keys.name, why)
    ctx.count("corrupt_records")


def damaged(ctx: StoreContext, memory_id: str, part: str, why: str, *, outcome: str) -> None:
    """Log and count a damaged ``part`` of a stored record that is used without it
    (``outcome`` says how, e.g. "ranked without it")."""
    logger.warning(
        "memory %s of store %s: %s is damaged (%s); %s",
        memory_id, ctx.keys.name, part, why, outcome,
    )  # fmt: skip
    ctx.count("corrupt_records")
