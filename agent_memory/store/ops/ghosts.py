"""Registry entries that name no stored memory ("ghosts"), found and removed by ``prune``.

A cluster write registers a memory (namespace registry, agent and thread indexes, scope
bucket) in one round trip and stores its hash in the next, because the keys live in
different slots: a write cut short between the two (a node going down) leaves entries
naming a memory that was never stored. Readers skip them, but ``stats().items`` and
``list().total`` count them. A memory the server evicted (``maxmemory``) leaves the same
trace on any deployment.

An entry whose hash is missing may also be a write in flight, between its two round
trips: removing its registrations would leave a stored memory that nothing lists. So a
missing memory is first only *suspected* (``{name}:__mem_ghost:{ns}``: id -> when a
prune first saw it missing, by the pruning process's clock); a later prune that finds it
still missing at least :data:`GHOST_GRACE_MS` after that unregisters it everywhere. A
write completes its two round trips in milliseconds; only a writer stalled between them
for longer than the grace (and clocks of pruning processes skewed by as much) could lose
its memory's registrations.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.cache.keys import glob_escape
from agent_memory.core.effects import Command, Operation, command, execute_batch, scan_keys
from agent_memory.core.replies import integer, optional_text, pairs, raise_first_error, text
from agent_memory.errors import ReplyParseError
from agent_memory.schema.versions import bump

GHOST_GRACE_MS = 5 * 60 * 1000
"""How long a registry entry must have been seen naming no memory before a prune
unregisters it (a write in flight completes in milliseconds)."""

_CHUNK = 500
logger = logging.getLogger("agent_memory.store")


def missing(ctx: StoreContext, ids: Sequence[str]) -> Operation[set[str]]:
    """The ids among ``ids`` whose memory key does not exist (one pipelined ``EXISTS``
    per id, in chunks)."""
    gone: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        replies = yield from execute_batch([command("EXISTS", ctx.keys.memory(m)) for m in chunk])
        raise_first_error(replies)
        gone |= {m for m, r in zip(chunk, replies, strict=True) if integer(r) == 0}
    return gone


def _suspected_since(ctx: StoreContext, reply: Any) -> tuple[dict[str, int], list[Any]]:
    """The suspects hash: id -> first seen missing (ms), and the raw fields of entries
    that are not an id and a time (logged and counted; the sweep deletes them, and an
    absent id among them is suspected again from scratch)."""
    out: dict[str, int] = {}
    damaged: list[Any] = []
    for field, value in pairs(reply).items():
        try:
            out[text(field)] = integer(value)
        except ReplyParseError as exc:
            logger.warning(
                "store %s: a ghost-suspect entry %r is unreadable (%s); suspected anew",
                ctx.keys.name, field, exc,
            )  # fmt: skip
            ctx.count("corrupt_records")
            damaged.append(field)
    return out, damaged


def confirmed(suspects: dict[str, int], absent: set[str], now_ms: int) -> set[str]:
    """The absent ids suspected for at least the grace (pure)."""
    return {m for m in absent if m in suspects and now_ms - suspects[m] >= GHOST_GRACE_MS}


def sweep(
    ctx: StoreContext, namespace_token: str, registered: Sequence[str], now_ms: int
) -> Operation[int]:
    """Suspect the namespace's registered ids that name no memory, unregister those
    suspected long enough (see the module docstring); returns how many were removed."""
    suspects_key = ctx.keys.ghost_suspects(namespace_token)
    replies = yield from execute_batch([command("HGETALL", suspects_key)])
    raise_first_error(replies)
    suspects, damaged = _suspected_since(ctx, replies[0])
    absent = yield from missing(ctx, registered)
    ghosts = confirmed(suspects, absent, now_ms)
    fresh = sorted(absent - set(suspects))
    cleared = sorted(set(suspects) - (absent - ghosts))  # stored after all, gone, or removed
    updates: list[Command] = []
    if damaged:
        updates.append(command("HDEL", suspects_key, *damaged))  # before fresh ones are set
    if fresh:
        flat = [x for m in fresh for x in (m, str(now_ms))]
        updates.append(command("HSET", suspects_key, *flat))
    if ghosts:
        more = yield from _unregister(ctx, namespace_token, sorted(ghosts))
        updates += more
    if cleared:
        updates.append(command("HDEL", suspects_key, *cleared))
    if updates:
        done = yield from execute_batch(updates)
        raise_first_error(done)
    if ghosts:
        logger.info(
            "store %s: unregistered %d entries of namespace %s naming no memory (writes cut "
            "short, or evicted memories): %s",
            ctx.keys.name, len(ghosts), namespace_token, sorted(ghosts)[:5],
        )  # fmt: skip
        ctx.count("ghost_entries", len(ghosts))
    return len(ghosts)


def listing_sets(ctx: StoreContext, namespace_token: str) -> Operation[list[str]]:
    """Every set besides the registry that may list a memory of the namespace: each of
    its agent and thread indexes, and every scope bucket of the store (found with
    ``SCAN``: for ids whose record is gone, which could say which)."""
    patterns = [  # namespace tokens are letters, digits and "_": nothing to escape
        ctx.keys.agent_index(namespace_token, "*"),
        ctx.keys.thread_index(namespace_token, "*"),
        ctx.keys.scope_bucket("*"),
    ]
    keys: list[str] = []
    for pattern in patterns:
        found = yield from scan_keys(_glob_prefix(ctx, pattern))
        keys += sorted({optional_text(k) or "" for k in found} - {""})
    return keys


def _unregister(
    ctx: StoreContext, namespace_token: str, ids: list[str]
) -> Operation[list[Command]]:
    """The removals of ``ids`` from every set of the namespace that may list them (the
    registry and :func:`listing_sets`: a ghost has no record to say which)."""
    sets = yield from listing_sets(ctx, namespace_token)
    keys = [ctx.keys.registry(namespace_token), *sets]
    commands = [command("ZREM", key, *ids) for key in keys]
    commands.append(bump(ctx.keys.registry_version(namespace_token)))
    return commands


def _glob_prefix(ctx: StoreContext, pattern: str) -> str:
    """``pattern`` with the store name escaped for SCAN (the rest is already a glob)."""
    name = ctx.keys.name
    return glob_escape(name) + pattern[len(name) :]
